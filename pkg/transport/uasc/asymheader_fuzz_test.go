package uasc

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

// realOPN returns an OpenSecureChannel request chunk as a client of policy pol sends it,
// sealed by the channel's own sealAsym.
func realOPN(t testing.TB, pol policy.Policy, mode ua.MessageSecurityMode) []byte {
	t.Helper()
	c := &channel{pol: pol, mode: mode, role: policy.Client, channelID: 0}
	c.neg.SendBufferSize = 65535
	if pol.Info().URI == policy.URINone {
		c.asym, _ = pol.NewAsymmetric(nil, nil)
	} else {
		asym, err := pol.NewAsymmetric(clientID.key, serverID.cert)
		require.NoError(t, err)
		c.asym, c.localCert, c.remoteCert = asym, clientID.der, serverID.cert
	}
	e := codec.NewEncoder(nil)
	e.Message(&ua.OpenSecureChannelRequest{
		RequestHeader: ua.RequestHeader{RequestHandle: 1, TimeoutHint: 10000},
		RequestType:   ua.SecurityTokenRequestTypeIssue, SecurityMode: mode,
		ClientNonce: bytes.Repeat([]byte{0xaa}, 32), RequestedLifetime: 60000,
	})
	require.NoError(t, e.Err())
	b, err := c.sealAsym(1, e.Bytes())
	require.NoError(t, err)
	return b
}

// FuzzAsymmetricHeader feeds chunks to the asymmetric security header parser (Part 6
// §6.7.2.3). Properties: it never panics; a refusal carries BadDecodingError; a header
// that parses lies within the input, honours the field limits, and re-encodes to the bytes
// it was read from (a null SecurityPolicyUri comes back empty: Table 54 gives both the
// same meaning). The seeds are real OPN chunks of every policy, sealed by sealAsym.
func FuzzAsymmetricHeader(f *testing.F) {
	ids(f)
	for _, p := range policy.All() {
		mode := ua.MessageSecurityModeSignAndEncrypt
		if p.Info().URI == policy.URINone {
			mode = ua.MessageSecurityModeNone
		}
		f.Add(realOPN(f, p, mode))
	}
	chain := append(append([]byte{}, clientID.der...), serverID.der...)
	tp := policy.Thumbprint(serverID.cert)
	for _, h := range []asymmetricHeader{
		{SecurityPolicyURI: policy.URIBasic256Sha256, SenderCertificate: chain, ReceiverCertificateThumbprint: tp[:]},
		{SenderCertificate: []byte{}, ReceiverCertificateThumbprint: []byte{}},
		{},
	} {
		b := make([]byte, channelHeaderLen)
		putHeader(b, uacp.TypeOpen, uacp.ChunkFinal, 0, 0)
		f.Add(appendAsymmetricHeader(b, &h))
	}
	f.Add([]byte("OPNF\x00\x00\x00\x00\x00\x00\x00\x00\xfe\xff\xff\xff")) // length -2
	f.Add([]byte("OPNF\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00")) // URI of 256 bytes
	f.Fuzz(func(t *testing.T, b []byte) {
		h, end, err := parseAsymmetricHeader(b)
		if err != nil {
			var code status.Code
			require.ErrorAs(t, err, &code)
			require.Equal(t, status.BadDecodingError, code)
			return
		}
		require.LessOrEqual(t, end, len(b))
		require.Equal(t, channelHeaderLen+h.encodedLen(), end)
		require.LessOrEqual(t, len(h.SecurityPolicyURI), maxSecurityPolicyURILen)
		want := b[:end]
		if binary.LittleEndian.Uint32(b[channelHeaderLen:]) == 0xffffffff {
			want = append(append(append([]byte{}, b[:channelHeaderLen]...), 0, 0, 0, 0), b[channelHeaderLen+4:end]...)
		}
		got := appendAsymmetricHeader(append([]byte{}, b[:channelHeaderLen]...), &h)
		require.Equal(t, want, got)
		if len(h.SenderCertificate) > 0 {
			// The parsed fields are copies, not views of the chunk buffer, which is reused.
			at := channelHeaderLen + 4 + len(h.SecurityPolicyURI) + 4
			require.NotSame(t, &b[at], &h.SenderCertificate[0])
		}
	})
}

// TestAsymmetricHeaderLimits checks the parser on real OPN chunks of every policy and at
// the limits of Part 6 Table 54.
func TestAsymmetricHeaderLimits(t *testing.T) {
	ids(t)
	for _, p := range policy.All() {
		mode := ua.MessageSecurityModeSignAndEncrypt
		if p.Info().URI == policy.URINone {
			mode = ua.MessageSecurityModeNone
		}
		h, _, err := parseAsymmetricHeader(realOPN(t, p, mode))
		require.NoError(t, err, p.Info().Name)
		require.Equal(t, p.Info().URI, h.SecurityPolicyURI)
		if p.Info().URI != policy.URINone {
			require.Equal(t, clientID.der, h.SenderCertificate)
			tp := policy.Thumbprint(serverID.cert)
			require.Equal(t, tp[:], h.ReceiverCertificateThumbprint)
		}
	}
	header := func(fields ...[]byte) []byte {
		b := make([]byte, channelHeaderLen)
		putHeader(b, uacp.TypeOpen, uacp.ChunkFinal, 0, 0)
		for _, f := range fields {
			b = append(b, f...)
		}
		return b
	}
	length := func(n int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(n)) }
	null := length(-1)
	uri255 := append(length(255), bytes.Repeat([]byte{'u'}, 255)...)
	uri256 := append(length(256), bytes.Repeat([]byte{'u'}, 256)...)
	tests := []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"AllNull", header(null, null, null), true},
		{"AllEmpty", header(length(0), length(0), length(0)), true},
		{"URI255", header(uri255, null, null), true},
		{"URI256", header(uri256, null, null), false},
		{"NegativeLength", header(length(-2), null, null), false},
		{"NegativeCertificateLength", header(length(0), length(-7), null), false},
		{"CertificatePastEnd", header(length(0), length(10), []byte{1, 2, 3}), false},
		{"MissingThumbprint", header(length(0), null), false},
		{"ShorterThanChannelHeader", []byte("OPNF"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, end, err := parseAsymmetricHeader(tc.b)
			if !tc.ok {
				require.ErrorIs(t, err, status.BadDecodingError)
				return
			}
			require.NoError(t, err)
			require.Equal(t, len(tc.b), end)
			require.Equal(t, tc.b[channelHeaderLen+4:], appendAsymmetricHeader(nil, &h)[4:], "fields after the URI written back as read")
		})
	}
}
