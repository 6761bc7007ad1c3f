package mirror

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/services/server/internal/session"
)

func testEnvelope() envelope {
	return envelope{node: 3, creator: []byte("server certificate"), rec: session.Record{
		SessionID:           codec.NewGuidNodeId(0, codec.Guid{Data1: 1}),
		AuthenticationToken: codec.NewOpaqueNodeId(0, []byte("0123456789abcdef0123456789abcdef")),
		Name:                "s", Timeout: time.Minute, ServerNonce: []byte("nonce"), Activated: true,
		LocaleIDs: []string{"en"},
	}}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	v := testEnvelope()
	got, err := decodeEnvelope(v.encode())
	require.NoError(t, err)
	require.Equal(t, v, got)

	b := v.encode()
	b[0] = 9
	_, err = decodeEnvelope(b)
	require.Error(t, err, "an unknown version")
	_, err = decodeEnvelope(append(v.encode(), 0))
	require.Error(t, err, "trailing bytes")
}

func TestHashOfHidesTheToken(t *testing.T) {
	tok := codec.NewOpaqueNodeId(0, []byte("0123456789abcdef0123456789abcdef"))
	h := hashOf(tok)
	require.Len(t, h, 32)
	require.Equal(t, h, hashOf(tok))
	require.NotEqual(t, h, hashOf(codec.NewOpaqueNodeId(0, []byte("0123456789abcdef0123456789abcdeF"))))
	require.NotContains(t, h, "0123456789abcdef")
}

// FuzzDecodeEnvelope: a session record from the set never panics the decoder, and
// whatever decodes encodes back to the same bytes.
func FuzzDecodeEnvelope(f *testing.F) {
	v := testEnvelope()
	f.Add(v.encode())
	f.Add([]byte{envelopeVersion, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeEnvelope(b)
		if err != nil {
			return
		}
		again, err := decodeEnvelope(got.encode())
		require.NoError(t, err)
		require.Equal(t, got, again)
	})
}
