package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzStripPadding checks that arbitrary decrypted bytes never make
// StripPadding panic or return a length outside the input, and that
// whatever WritePadding produces is accepted.
func FuzzStripPadding(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0}, false)
	f.Add([]byte{5, 5, 5, 5, 5, 5}, false)
	f.Add([]byte{9, 2, 2, 2, 0}, true)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, b []byte, extra bool) {
		n, err := StripPadding(b, extra)
		if err == nil {
			require.GreaterOrEqual(t, n, 0)
			require.LessOrEqual(t, n+paddingFields(extra), len(b))
		}
		size := len(b) % 300
		if !extra {
			size %= 256
		}
		msg := append([]byte(nil), b...)
		msg = append(msg, make([]byte, PaddingLen(size, extra))...)
		WritePadding(msg[len(b):], size, extra)
		n, err = StripPadding(msg, extra)
		require.NoError(t, err)
		require.Equal(t, len(b), n)
	})
}
