package uacp

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// wireCases are annotated encodings checked in both directions.
var wireCases = []struct {
	name string
	msg  Message
	wire []byte
}{
	{
		name: "Hello",
		msg: &Hello{
			ProtocolVersion: 0, ReceiveBufferSize: 65536, SendBufferSize: 65535,
			MaxMessageSize: 16777216, MaxChunkCount: 5000, EndpointURL: "opc.tcp://h:4840",
		},
		wire: []byte{
			'H', 'E', 'L', // MessageType
			'F',                    // Reserved / chunk type
			0x30, 0x00, 0x00, 0x00, // MessageSize = 48
			0x00, 0x00, 0x00, 0x00, // ProtocolVersion = 0
			0x00, 0x00, 0x01, 0x00, // ReceiveBufferSize = 65536
			0xFF, 0xFF, 0x00, 0x00, // SendBufferSize = 65535
			0x00, 0x00, 0x00, 0x01, // MaxMessageSize = 16 MiB
			0x88, 0x13, 0x00, 0x00, // MaxChunkCount = 5000
			0x10, 0x00, 0x00, 0x00, // EndpointUrl length = 16
			'o', 'p', 'c', '.', 't', 'c', 'p', ':', '/', '/', 'h', ':', '4', '8', '4', '0',
		},
	},
	{
		name: "HelloNullURL",
		msg:  &Hello{ReceiveBufferSize: 8192, SendBufferSize: 8192},
		wire: []byte{
			'H', 'E', 'L', 'F', // MessageType, chunk type
			0x20, 0x00, 0x00, 0x00, // MessageSize = 32
			0x00, 0x00, 0x00, 0x00, // ProtocolVersion = 0
			0x00, 0x20, 0x00, 0x00, // ReceiveBufferSize = 8192
			0x00, 0x20, 0x00, 0x00, // SendBufferSize = 8192
			0x00, 0x00, 0x00, 0x00, // MaxMessageSize = 0 (no limit)
			0x00, 0x00, 0x00, 0x00, // MaxChunkCount = 0 (no limit)
			0xFF, 0xFF, 0xFF, 0xFF, // EndpointUrl = null
		},
	},
	{
		name: "Acknowledge",
		msg: &Acknowledge{
			ProtocolVersion: 0, ReceiveBufferSize: 65535, SendBufferSize: 65536,
			MaxMessageSize: 4194304, MaxChunkCount: 0,
		},
		wire: []byte{
			'A', 'C', 'K', 'F', // MessageType, chunk type
			0x1C, 0x00, 0x00, 0x00, // MessageSize = 28
			0x00, 0x00, 0x00, 0x00, // ProtocolVersion = 0
			0xFF, 0xFF, 0x00, 0x00, // ReceiveBufferSize = 65535
			0x00, 0x00, 0x01, 0x00, // SendBufferSize = 65536
			0x00, 0x00, 0x40, 0x00, // MaxMessageSize = 4 MiB
			0x00, 0x00, 0x00, 0x00, // MaxChunkCount = 0 (no limit)
		},
	},
	{
		name: "Error",
		msg:  &Error{Code: status.BadTcpEndpointUrlInvalid, Reason: "no"},
		wire: []byte{
			'E', 'R', 'R', 'F', // MessageType, chunk type
			0x12, 0x00, 0x00, 0x00, // MessageSize = 18
			0x00, 0x00, 0x83, 0x80, // Error = BadTcpEndpointUrlInvalid 0x80830000
			0x02, 0x00, 0x00, 0x00, // Reason length = 2
			'n', 'o',
		},
	},
	{
		name: "ReverseHello",
		msg:  &ReverseHello{ServerURI: "urn:s", EndpointURL: "opc.tcp://c"},
		wire: []byte{
			'R', 'H', 'E', 'F', // MessageType, chunk type
			0x20, 0x00, 0x00, 0x00, // MessageSize = 32
			0x05, 0x00, 0x00, 0x00, // ServerUri length = 5
			'u', 'r', 'n', ':', 's',
			0x0B, 0x00, 0x00, 0x00, // EndpointUrl length = 11
			'o', 'p', 'c', '.', 't', 'c', 'p', ':', '/', '/', 'c',
		},
	},
}

func TestWireEncode(t *testing.T) {
	t.Parallel()
	for _, tc := range wireCases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.wire, tc.msg.Append(nil))
			// Appending keeps what is already in the buffer.
			require.Equal(t, append([]byte("xy"), tc.wire...), tc.msg.Append([]byte("xy")))
		})
	}
}

func TestWireDecode(t *testing.T) {
	t.Parallel()
	for _, tc := range wireCases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := DecodeMessage(tc.wire)
			require.NoError(t, err)
			require.Equal(t, tc.msg, m)
			require.Equal(t, tc.msg.MessageType(), m.MessageType())
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	hello := wireCases[0].wire
	longURL := strings.Repeat("u", MaxURLLength+1)
	patch := func(b []byte, at int, v ...byte) []byte {
		b = append([]byte(nil), b...)
		copy(b[at:], v)
		return b
	}
	cases := []struct {
		name string
		wire []byte
		want status.Code
	}{
		{"short header", hello[:5], status.BadDecodingError},
		{"MSG is not a UACP message", patch(hello, 0, 'M', 'S', 'G'), status.BadTcpMessageTypeInvalid},
		{"garbage type", []byte("GET / HTTP/1.1\r\n\r\n"), status.BadTcpMessageTypeInvalid},
		{"chunk type C", patch(hello, 3, 'C'), status.BadTcpMessageTypeInvalid},
		{"size larger than bytes", patch(hello, 4, 0x31), status.BadDecodingError},
		{"size smaller than bytes", patch(hello, 4, 0x2F), status.BadDecodingError},
		{"truncated body", patch(hello[:40], 4, 40), status.BadDecodingError},
		{"trailing bytes v0", patch(append(append([]byte(nil), hello...), 0), 4, 49), status.BadDecodingError},
		{"URL too long", (&Hello{EndpointURL: longURL}).Append(nil), status.BadTcpEndpointUrlInvalid},
		{"RHE ServerUri too long", (&ReverseHello{ServerURI: longURL}).Append(nil), status.BadTcpEndpointUrlInvalid},
		{"RHE EndpointUrl too long", (&ReverseHello{EndpointURL: longURL}).Append(nil), status.BadTcpEndpointUrlInvalid},
		{"ACK short", patch(wireCases[2].wire[:24], 4, 24), status.BadDecodingError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeMessage(tc.wire)
			require.ErrorIs(t, err, tc.want)
			require.Equal(t, tc.want, StatusOf(err))
		})
	}
}

func TestDecodeLenient(t *testing.T) {
	t.Parallel()
	// A later protocol version may append fields: they are ignored.
	b := (&Hello{ProtocolVersion: 1, ReceiveBufferSize: 8192, SendBufferSize: 8192}).Append(nil)
	b = append(b, 1, 2, 3)
	b[4] += 3
	m, err := DecodeMessage(b)
	require.NoError(t, err)
	require.Equal(t, uint32(1), m.(*Hello).ProtocolVersion)

	// A URL of exactly 4096 bytes is accepted.
	url := strings.Repeat("u", MaxURLLength)
	hel, err := DecodeHello((&Hello{EndpointURL: url}).Append(nil))
	require.NoError(t, err)
	require.Equal(t, url, hel.EndpointURL)

	// A reason over 4096 bytes is ignored by the receiver and cut by the sender.
	long := strings.Repeat("r", MaxReasonLength+10)
	raw := appendMessage(nil, TypeError, func(e *codec.Encoder) { e.StatusCode(status.BadTimeout); e.String(long) })
	m, err = DecodeMessage(raw)
	require.NoError(t, err)
	require.Equal(t, &Error{Code: status.BadTimeout}, m)
	m, err = DecodeMessage((&Error{Code: status.BadTimeout, Reason: long}).Append(nil))
	require.NoError(t, err)
	require.Len(t, m.(*Error).Reason, MaxReasonLength)

	// Truncation keeps UTF-8 whole.
	require.Equal(t, "a", truncateUTF8("aé", 2))
	require.Equal(t, "aé", truncateUTF8("aé", 3))

	_, err = DecodeHello(wireCases[2].wire)
	require.ErrorIs(t, err, status.BadTcpMessageTypeInvalid)
}

func TestErrorAndStatusOf(t *testing.T) {
	t.Parallel()
	e := &Error{Code: status.BadTcpServerTooBusy, Reason: "later"}
	require.ErrorIs(t, e, status.BadTcpServerTooBusy)
	require.Equal(t, status.BadTcpServerTooBusy, StatusOf(e))
	require.Contains(t, e.Error(), "BadTcpServerTooBusy")
	require.Contains(t, e.Error(), "later")
	require.Equal(t, status.Good, StatusOf(nil))
	require.Equal(t, status.BadTcpInternalError, StatusOf(&Error{Code: status.Good}))
	require.Equal(t, "HEL", TypeHello.String())
	require.Equal(t, "MessageType(0x000001)", MessageType(1).String())
}
