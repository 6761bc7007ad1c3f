package config

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// PasswordCost is the bcrypt cost HashPassword uses.
const PasswordCost = 12

// ErrPasswordMismatch is returned by CheckPassword when the password does not
// match the hash.
var ErrPasswordMismatch = errors.New("config: password does not match")

// HashPassword returns the bcrypt hash (cost [PasswordCost]) of password, for
// the passwordHash of a [User]. bcrypt reads at most 72 bytes; a longer
// password is an error rather than silently truncated.
func HashPassword(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), PasswordCost)
	if err != nil {
		return "", fmt.Errorf("config: hash password: %w", err)
	}
	return string(h), nil
}

// CheckPassword reports whether password matches hash, a bcrypt or argon2id
// hash as accepted by [ValidPasswordHash]. It returns nil on a match,
// ErrPasswordMismatch on a mismatch and another error for a malformed hash.
// The comparison takes the same time whatever the password.
func CheckPassword(hash, password string) error {
	if strings.HasPrefix(hash, "$argon2id$") {
		p, err := parseArgon2id(hash)
		if err != nil {
			return err
		}
		got := argon2.IDKey([]byte(password), p.salt, p.time, p.memory, p.threads, uint32(len(p.key)))
		if subtle.ConstantTimeCompare(got, p.key) != 1 {
			return ErrPasswordMismatch
		}
		return nil
	}
	if err := bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)); err != nil {
		if errors.Is(err, bcrypt.ErrMismatchedHashAndPassword) {
			return ErrPasswordMismatch
		}
		return fmt.Errorf("config: check password: %w", err)
	}
	return nil
}

// ValidPasswordHash returns nil when hash is a bcrypt hash ($2a$, $2b$ or
// $2y$) or an argon2id hash in PHC form
// ($argon2id$v=19$m=<KiB>,t=<passes>,p=<threads>$<salt>$<key>, unpadded
// base64), and an error saying what is wrong otherwise.
func ValidPasswordHash(hash string) error {
	switch {
	case strings.HasPrefix(hash, "$argon2id$"):
		_, err := parseArgon2id(hash)
		return err
	case strings.HasPrefix(hash, "$2a$"), strings.HasPrefix(hash, "$2b$"), strings.HasPrefix(hash, "$2y$"):
		if len(hash) != 60 {
			return fmt.Errorf("malformed bcrypt hash: %d characters, want 60", len(hash))
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return fmt.Errorf("malformed bcrypt hash: %w", err)
		}
		return nil
	default:
		return errors.New("not a bcrypt ($2a$, $2b$, $2y$) or argon2id ($argon2id$) hash; store a hash, never the password (make one with config.HashPassword or `htpasswd -nbBC 12 user`)")
	}
}

type argon2Params struct {
	memory, time uint32
	threads      uint8
	salt, key    []byte
}

// maxArgon2Memory bounds m (KiB) so that a configured hash cannot make a
// login commit more than 1 GiB.
const maxArgon2Memory = 1 << 20

func parseArgon2id(hash string) (argon2Params, error) {
	var p argon2Params
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return p, errors.New("malformed argon2id hash: want $argon2id$v=19$m=..,t=..,p=..$salt$key")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return p, fmt.Errorf("malformed argon2id hash: want version v=%d, got %q", argon2.Version, parts[2])
	}
	var threads uint32
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.memory, &p.time, &threads); err != nil {
		return p, fmt.Errorf("malformed argon2id hash: parameters %q: %w", parts[3], err)
	}
	if p.time < 1 || threads < 1 || threads > 255 || p.memory < 8*threads || p.memory > maxArgon2Memory {
		return p, fmt.Errorf("malformed argon2id hash: parameters %q out of range (t ≥ 1, 1 ≤ p ≤ 255, 8p ≤ m ≤ %d KiB)", parts[3], maxArgon2Memory)
	}
	p.threads = uint8(threads)
	var err error
	if p.salt, err = base64.RawStdEncoding.DecodeString(parts[4]); err != nil || len(p.salt) < 8 {
		return p, errors.New("malformed argon2id hash: salt must be at least 8 bytes of unpadded base64")
	}
	if p.key, err = base64.RawStdEncoding.DecodeString(parts[5]); err != nil || len(p.key) < 16 {
		return p, errors.New("malformed argon2id hash: key must be at least 16 bytes of unpadded base64")
	}
	return p, nil
}
