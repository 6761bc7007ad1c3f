package nodemgr

import (
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

// TestWireRead: a Read and its reply as they cross a boundary, byte by byte, checked in
// both directions.
func TestWireRead(t *testing.T) {
	t.Parallel()
	now := codec.DateTime(0x01DAB40A3F2A8000)
	tests := []struct {
		name  string
		frame Frame
		wire  []byte
	}{{
		name: "request",
		frame: Frame{Kind: KindRead, ID: 42, Body: &ReadOp{
			Principal: Principal{
				SessionID: codec.NewNumericNodeId(1, 7),
				UserName:  "op",
				Roles:     []codec.NodeId{codec.NewNumericNodeId(0, id.WellKnownRole_AuthenticatedUser)},
			},
			MaxAge:     500,
			Timestamps: ua.TimestampsToReturnBoth,
			Now:        now,
			Items:      []ua.ReadValueId{{NodeId: codec.NewStringNodeId(2, "T"), AttributeId: uint32(attr.Value)}},
		}},
		wire: []byte{
			0x01,                   // Version
			0x05,                   // Kind: Read
			0x2a, 0x00, 0x00, 0x00, // ID: 42
			0x01, 0x01, 0x07, 0x00, // Principal.SessionID: four-byte NodeId ns=1;i=7
			0x00,                             // Principal.Anonymous: false
			0x02, 0x00, 0x00, 0x00, 'o', 'p', // Principal.UserName: "op"
			0xff, 0xff, 0xff, 0xff, // Principal.Thumbprint: null
			0x01, 0x00, 0x00, 0x00, // Principal.Roles: 1
			0x01, 0x00, 0x28, 0x3d, // i=15656 (AuthenticatedUser)
			0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x7f, 0x40, // MaxAge: 500
			0x02, 0x00, 0x00, 0x00, // Timestamps: Both
			0x00, 0x80, 0x2a, 0x3f, 0x0a, 0xb4, 0xda, 0x01, // Now
			0x01, 0x00, 0x00, 0x00, // Items: 1
			0x03, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 'T', // Items[0].NodeId: ns=2;s=T
			0x0d, 0x00, 0x00, 0x00, // Items[0].AttributeId: Value (13)
			0xff, 0xff, 0xff, 0xff, // Items[0].IndexRange: null
			0x00, 0x00, 0xff, 0xff, 0xff, 0xff, // Items[0].DataEncoding: null QualifiedName
		},
	}, {
		name: "reply",
		frame: Frame{Kind: KindRead | KindReply, ID: 42, Body: &ReadResults{Results: []codec.DataValue{
			{Value: codec.DoubleVariant(21.5), SourceTimestamp: now},
		}}},
		wire: []byte{
			0x01,                   // Version
			0x85,                   // Kind: Read reply
			0x2a, 0x00, 0x00, 0x00, // ID: 42
			0x01, 0x00, 0x00, 0x00, // Results: 1
			0x05,                                                 // Results[0]: DataValue with Value and SourceTimestamp
			0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x35, 0x40, // Value: Double 21.5
			0x00, 0x80, 0x2a, 0x3f, 0x0a, 0xb4, 0xda, 0x01, // SourceTimestamp
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.wire, encodeFrame(t, &tc.frame), "encode")
			var got Frame
			require.NoError(t, got.Decode(tc.wire, codec.Limits{}), "decode")
			require.True(t, equalBits(withResults(tc.frame), got), "decode\nwant: %+v\ngot:  %+v", tc.frame.Body, got.Body)
		})
	}
}
