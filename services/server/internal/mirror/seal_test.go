package mirror

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSealOpens(t *testing.T) {
	s, err := newSealer(bytes.Repeat([]byte{7}, KeySize))
	require.NoError(t, err)
	sealed := s.seal("k1", []byte("a session"))
	plain, err := s.open("k1", sealed)
	require.NoError(t, err)
	require.Equal(t, "a session", string(plain))
	require.NotEqual(t, sealed, s.seal("k1", []byte("a session")), "a fresh nonce each time")
}

// A record sealed with another key, moved to another key, or changed on the way does
// not open, and the error says it is the cluster key's doing.
func TestSealRefuses(t *testing.T) {
	s, _ := newSealer(bytes.Repeat([]byte{7}, KeySize))
	other, _ := newSealer(bytes.Repeat([]byte{8}, KeySize))
	sealed := s.seal("k1", []byte("a session"))

	_, err := other.open("k1", sealed)
	require.ErrorIs(t, err, ErrSeal)
	_, err = s.open("k2", sealed)
	require.ErrorIs(t, err, ErrSeal)
	changed := bytes.Clone(sealed)
	changed[len(changed)-1] ^= 1
	_, err = s.open("k1", changed)
	require.ErrorIs(t, err, ErrSeal)
	_, err = s.open("k1", sealed[:10])
	require.ErrorIs(t, err, ErrSeal)

	_, err = newSealer([]byte("short"))
	require.Error(t, err)
}
