package ua

// Checks specific to the namespace-0 types: what was generated, annotated wire bytes,
// the enumeration helpers, and the allocation budget of the hot paths.

import (
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua/id"
)

func TestGeneratedTypeCount(t *testing.T) {
	t.Parallel()
	// 329 StructuredTypes in Opc.Ua.Types.bsd less the 15 the codec implements by hand.
	require.Len(t, allTypes, 314)
	registered := 0
	for _, tc := range allTypes {
		if !tc.info.BinaryEncoding.IsNull() {
			registered++
		}
	}
	require.Equal(t, 314, registered, "every namespace-0 structure has a binary encoding")
}

func TestTypeInfoIDs(t *testing.T) {
	t.Parallel()
	info := (*ReadRequest)(nil).TypeInfo()
	require.Equal(t, "ReadRequest", info.Name)
	require.Equal(t, codec.NewNumericNodeId(0, id.ReadRequest), info.DataType)
	require.Equal(t, codec.NewNumericNodeId(0, id.ReadRequest_Encoding_DefaultBinary), info.BinaryEncoding)
	require.Equal(t, codec.NewNumericNodeId(0, id.ReadRequest_Encoding_DefaultXml), info.XMLEncoding)
	require.Equal(t, codec.NewNumericNodeId(0, id.ReadRequest_Encoding_DefaultJson), info.JSONEncoding)
	require.Same(t, info, codec.LookupType(codec.NewNumericNodeId(0, 631)), "ReadRequest_Encoding_DefaultBinary is i=631")
}

// readRequestWire is a ReadRequest for one Value, byte by byte.
var readRequestWire = []byte{
	// RequestHeader
	0x00, 0x00, // AuthenticationToken: TwoByte i=0
	0x00, 0xc0, 0x9d, 0xc8, 0x85, 0x73, 0xc0, 0x01, // Timestamp: 2001-01-01 00:00 UTC
	0x01, 0x00, 0x00, 0x00, // RequestHandle: 1
	0x00, 0x00, 0x00, 0x00, // ReturnDiagnostics: 0
	0xff, 0xff, 0xff, 0xff, // AuditEntryId: null
	0x10, 0x27, 0x00, 0x00, // TimeoutHint: 10000
	0x00, 0x00, 0x00, // AdditionalHeader: TypeId i=0, no body
	// ReadRequest
	0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x7f, 0x40, // MaxAge: 500.0
	0x02, 0x00, 0x00, 0x00, // TimestampsToReturn: Both
	0x01, 0x00, 0x00, 0x00, // NodesToRead: 1 element
	0x01, 0x00, 0xd2, 0x08, // NodeId: FourByte ns=0;i=2258
	0x0d, 0x00, 0x00, 0x00, // AttributeId: 13 (Value)
	0xff, 0xff, 0xff, 0xff, // IndexRange: null
	0x00, 0x00, 0xff, 0xff, 0xff, 0xff, // DataEncoding: ns 0, Name null
}

var readRequestValue = ReadRequest{
	RequestHeader: RequestHeader{
		Timestamp:     126227808000000000,
		RequestHandle: 1,
		TimeoutHint:   10000,
	},
	MaxAge:             500,
	TimestampsToReturn: TimestampsToReturnBoth,
	NodesToRead:        []ReadValueId{{NodeId: codec.NewNumericNodeId(0, id.Server_ServerStatus_CurrentTime), AttributeId: 13}},
}

func TestReadRequestWire(t *testing.T) {
	t.Parallel()
	require.Equal(t, readRequestWire, encodeBinary(t, &readRequestValue))
	var got ReadRequest
	d := codec.NewDecoder(readRequestWire)
	got.DecodeBinary(d)
	require.NoError(t, d.Err())
	require.Zero(t, d.Remaining())
	require.Equal(t, readRequestValue, got)
}

func TestDecodeRejectsImpossibleArrayLength(t *testing.T) {
	t.Parallel()
	// A NodesToRead length the remaining bytes cannot hold fails before allocating.
	b := append([]byte(nil), readRequestWire[:41]...)
	b = append(b, 0xff, 0xff, 0xff, 0x0f) // 268 million elements
	b = append(b, readRequestWire[45:]...)
	var got ReadRequest
	d := codec.NewDecoder(b)
	got.DecodeBinary(d)
	require.Error(t, d.Err())
	require.Nil(t, got.NodesToRead)
}

func TestEnumerationHelpers(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Both", TimestampsToReturnBoth.String())
	require.Equal(t, "TimestampsToReturn(9)", TimestampsToReturn(9).String())
	require.Equal(t, "Both", TimestampsToReturnName(2))
	require.Empty(t, TimestampsToReturnName(9))
	require.Equal(t, "Variable", NodeClassName(int64(NodeClassVariable)))
	require.Equal(t, NodeClass(0x80), NodeClassView)
}

func TestOptionSetHelpers(t *testing.T) {
	t.Parallel()
	require.Equal(t, "None", AccessLevelType(0).String())
	require.Equal(t, "CurrentRead|CurrentWrite", (AccessLevelTypeCurrentRead | AccessLevelTypeCurrentWrite).String())
	require.Equal(t, "CurrentRead|0x80", AccessLevelType(0x81).String())

	// Option sets are encoded as their unsigned integer: DataSetFieldFlags as a UInt16.
	v := FieldMetaData{FieldFlags: DataSetFieldFlagsPromotedField}
	b := encodeBinary(t, &v)
	require.Len(t, b, 42)
	require.Equal(t, []byte{0x01, 0x00}, b[5:7], "FieldFlags after Name (4 bytes) and Description (1 byte)")
	var got FieldMetaData
	d := codec.NewDecoder(b)
	got.DecodeBinary(d)
	require.NoError(t, d.Err())
	require.Equal(t, DataSetFieldFlagsPromotedField, got.FieldFlags)
}

func TestOpaqueTypesAreAliases(t *testing.T) {
	t.Parallel()
	var maxAge Duration = 250.5
	r := ReadRequest{MaxAge: maxAge}
	var at UtcTime = codec.DateTime(5)
	r.RequestHeader.Timestamp = at
	var token SessionAuthenticationToken = codec.NewNumericNodeId(1, 7)
	r.RequestHeader.AuthenticationToken = token
	var counter Counter = 3
	var _ uint32 = counter
	require.Equal(t, 250.5, r.MaxAge)
}

// readResponse returns a response with n numeric values and both timestamps, as a
// server answers a poll.
func readResponse(n int) *ReadResponse {
	r := &ReadResponse{ResponseHeader: ResponseHeader{Timestamp: 126227808000000000, RequestHandle: 7}}
	for i := range n {
		r.Results = append(r.Results, codec.DataValue{
			Value:           codec.DoubleVariant(float64(i) / 4),
			SourceTimestamp: 126227808000000000 + codec.DateTime(i),
			ServerTimestamp: 126227808000000000 + codec.DateTime(i),
		})
	}
	return r
}

func TestAllocations(t *testing.T) {
	// Not parallel: AllocsPerRun counts every allocation in the process.
	resp := readResponse(100)
	e := codec.NewEncoder(make([]byte, 0, 8192))
	encodes := testing.AllocsPerRun(100, func() {
		e.Reset(e.Bytes())
		resp.EncodeBinary(e)
	})
	require.Zero(t, encodes, "encoding into a buffer that has room")
	wire := append([]byte(nil), e.Bytes()...)

	var got ReadResponse
	d := codec.NewDecoder(nil)
	decodes := testing.AllocsPerRun(100, func() {
		d.Reset(wire)
		got.DecodeBinary(d)
	})
	require.NoError(t, d.Err())
	require.Zero(t, decodes, "decoding numbers into a value whose arrays have room")

	fresh := testing.AllocsPerRun(100, func() {
		var v ReadResponse
		d.Reset(wire)
		v.DecodeBinary(d)
	})
	require.LessOrEqual(t, fresh, 1.0, "decoding numbers into a fresh value: one allocation for Results")
}

func BenchmarkEncodeBinary(b *testing.B) {
	for _, c := range []struct {
		name string
		v    codec.Structure
	}{
		{"ReadRequest", &readRequestValue},
		{"ReadResponse100", readResponse(100)},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := codec.NewEncoder(make([]byte, 0, 8192))
			c.v.EncodeBinary(e)
			b.SetBytes(int64(e.Len()))
			b.ReportAllocs()
			for b.Loop() {
				e.Reset(e.Bytes())
				c.v.EncodeBinary(e)
			}
		})
	}
}

func BenchmarkDecodeBinary(b *testing.B) {
	e := codec.NewEncoder(nil)
	readResponse(100).EncodeBinary(e)
	wire := e.Bytes()
	b.Run("ReadResponse100/reused", func(b *testing.B) {
		var v ReadResponse
		d := codec.NewDecoder(nil)
		b.SetBytes(int64(len(wire)))
		b.ReportAllocs()
		for b.Loop() {
			d.Reset(wire)
			v.DecodeBinary(d)
		}
	})
	b.Run("ReadResponse100/fresh", func(b *testing.B) {
		d := codec.NewDecoder(nil)
		b.SetBytes(int64(len(wire)))
		b.ReportAllocs()
		for b.Loop() {
			var v ReadResponse
			d.Reset(wire)
			v.DecodeBinary(d)
		}
	})
}
