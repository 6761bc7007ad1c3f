package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUsersFromYAML(t *testing.T) {
	t.Parallel()
	hash := testHash(t)
	file := writeYAML(t, "security:\n  users:\n    - name: operator\n      passwordHash: '"+hash+"'\n      roles: [Operator, Engineer]\n")
	c, err := Load([]string{"--config", file}, nil)
	require.NoError(t, err)
	require.Equal(t, []User{{Name: "operator", PasswordHash: hash, Roles: []string{"Operator", "Engineer"}}}, c.Security.Users)
	require.NoError(t, CheckPassword(c.Security.Users[0].PasswordHash, "secret"))
}

func TestPasswords(t *testing.T) {
	t.Parallel()
	h, err := HashPassword("correct horse")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(h, "$2a$12$"))
	require.NoError(t, ValidPasswordHash(h))
	require.NoError(t, CheckPassword(h, "correct horse"))
	require.ErrorIs(t, CheckPassword(h, "correct horsE"), ErrPasswordMismatch)

	_, err = HashPassword(strings.Repeat("x", 73))
	require.Error(t, err, "bcrypt must not silently truncate")

	// argon2id, PHC form: RFC 9106 parameters computed with x/crypto/argon2
	// (password "password", salt "somesalt").
	const argon = "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
	require.NoError(t, ValidPasswordHash(argon))
	require.NoError(t, CheckPassword(argon, "password"))
	require.ErrorIs(t, CheckPassword(argon, "Password"), ErrPasswordMismatch)

	for _, bad := range []string{
		"", "secret", "{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=",
		"$argon2i$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
		"$argon2id$v=19$m=999999999,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
		"$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$short",
		"$2a$10$tooshort",
	} {
		require.Error(t, ValidPasswordHash(bad), bad)
		require.Error(t, CheckPassword(bad, "secret"), bad)
		require.NotErrorIs(t, CheckPassword(bad, "secret"), ErrPasswordMismatch, bad)
	}
}
