package codec

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJSONBufferZeroedBeforePool checks that a buffer the encoder hands back to the pool,
// or drops after outgrowing it, holds no byte of what was encoded (it may have held key
// material).
func TestJSONBufferZeroedBeforePool(t *testing.T) {
	secret := "s3cr3t-" + strings.Repeat("k", 100)

	var out bytes.Buffer
	e := NewJSONEncoder(&out, false)
	e.String(secret)
	require.NotNil(t, e.buf, "the buffer comes from the pool")
	pooled := e.buf
	backing := e.b[:cap(e.b)]
	require.Contains(t, string(backing), secret)
	require.NoError(t, e.Flush())
	require.Nil(t, e.b, "Flush returns the buffer")
	require.Equal(t, make([]byte, cap(backing)), backing, "returned buffer not zeroed")
	require.Zero(t, len(*pooled))
	require.Contains(t, out.String(), secret)

	// A value larger than the pooled buffer: the outgrown buffer is zeroed when it is
	// replaced, the large one when it is released.
	out.Reset()
	e.Reset(&out)
	e.BeginObject()
	e.FieldString("a", secret)
	small := e.b[:cap(e.b)]
	huge := strings.Repeat(secret, 1+jsonPoolMaxCap/len(secret))
	e.FieldString("b", huge)
	large := e.b[:cap(e.b)]
	require.Greater(t, cap(large), jsonPoolMaxCap)
	require.Equal(t, make([]byte, len(small)), small, "outgrown buffer not zeroed")
	e.EndObject()
	require.NoError(t, e.Flush())
	require.Equal(t, make([]byte, len(large)), large, "dropped buffer not zeroed")
	require.Equal(t, `{"a":"`+secret+`","b":"`+huge+`"}`, out.String())

	// Reset drops unflushed output and zeroes the buffer too.
	e.Reset(&out)
	e.String(secret)
	backing = e.b[:cap(e.b)]
	e.Reset(&out)
	require.Equal(t, make([]byte, len(backing)), backing)
}

// TestJSONFlushOnlyAtBoundaries drives the boundary check directly: a token that crosses
// the threshold is completed before anything is written.
func TestJSONFlushOnlyAtBoundaries(t *testing.T) {
	var w bytes.Buffer
	e := NewJSONEncoder(&w, false)
	e.SetFlushThreshold(8)
	e.BeginObject()
	require.Zero(t, w.Len())
	e.FieldString("k", "0123456789") // crosses 8 inside the token
	require.Equal(t, `{"k":"0123456789"`, w.String(), "written once the member ended")
	e.Field("n")
	require.Equal(t, `{"k":"0123456789"`, w.String(), "a member name alone is no boundary")
	e.Int32(1)
	require.Equal(t, `{"k":"0123456789"`, w.String(), "below the threshold again")
	e.EndObject()
	require.NoError(t, e.Flush())
	require.Equal(t, `{"k":"0123456789","n":1}`, w.String())
}
