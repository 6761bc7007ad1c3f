package codec

import (
	"fmt"
	"testing"

	gua "github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

const baseTime = codec.DateTime(133800000000000000)

func requestHeader() ua.RequestHeader {
	return ua.RequestHeader{
		AuthenticationToken: codec.NewNumericNodeId(1, 123456),
		Timestamp:           baseTime,
		RequestHandle:       42,
		TimeoutHint:         10000,
	}
}

func responseHeader() ua.ResponseHeader {
	return ua.ResponseHeader{Timestamp: baseTime, RequestHandle: 42}
}

// readRequest100 reads the Value of 100 string-addressed nodes, as a SCADA poll does.
func readRequest100() *ua.ReadRequest {
	r := &ua.ReadRequest{RequestHeader: requestHeader(), TimestampsToReturn: ua.TimestampsToReturnBoth}
	for i := 0; i < 100; i++ {
		r.NodesToRead = append(r.NodesToRead, ua.ReadValueId{
			NodeId:      codec.NewStringNodeId(2, fmt.Sprintf("Line1.Station%02d.Temperature", i)),
			AttributeId: 13,
		})
	}
	return r
}

// mixedValue returns the i-th of a rotation of scalar types.
func mixedValue(i int) codec.Variant {
	switch i % 6 {
	case 0:
		return codec.DoubleVariant(20.5 + float64(i))
	case 1:
		return codec.Int32Variant(int32(i * 1000))
	case 2:
		return codec.BooleanVariant(i%4 == 1)
	case 3:
		return codec.FloatVariant(float32(i) / 3)
	case 4:
		return codec.StringVariant(fmt.Sprintf("state-%d", i))
	default:
		return codec.UInt16Variant(uint16(i))
	}
}

// readResponse100 answers 100 values of mixed scalar types with both timestamps.
func readResponse100() *ua.ReadResponse {
	r := &ua.ReadResponse{ResponseHeader: responseHeader()}
	for i := 0; i < 100; i++ {
		r.Results = append(r.Results, codec.DataValue{
			Value:           mixedValue(i),
			SourceTimestamp: baseTime + codec.DateTime(i),
			ServerTimestamp: baseTime + codec.DateTime(2*i),
		})
	}
	return r
}

// publishResponse1000 carries one DataChangeNotification of 1,000 monitored items.
func publishResponse1000() *ua.PublishResponse {
	dcn := &ua.DataChangeNotification{}
	for i := 0; i < 1000; i++ {
		dcn.MonitoredItems = append(dcn.MonitoredItems, ua.MonitoredItemNotification{
			ClientHandle: uint32(i + 1),
			Value: codec.DataValue{
				Value:           codec.DoubleVariant(float64(i) * 0.25),
				SourceTimestamp: baseTime + codec.DateTime(i),
				ServerTimestamp: baseTime + codec.DateTime(i),
			},
		})
	}
	return &ua.PublishResponse{
		ResponseHeader:           responseHeader(),
		SubscriptionId:           7,
		AvailableSequenceNumbers: []uint32{41, 42},
		NotificationMessage: ua.NotificationMessage{
			SequenceNumber:   42,
			PublishTime:      baseTime,
			NotificationData: []codec.ExtensionObject{codec.NewExtensionObject(dcn)},
		},
		Results: []status.Code{},
	}
}

// browseResponse100 returns 100 references, as a Browse of a populated folder does.
func browseResponse100() *ua.BrowseResponse {
	res := ua.BrowseResult{ContinuationPoint: []byte{1, 2, 3, 4}}
	for i := 0; i < 100; i++ {
		name := fmt.Sprintf("Device%03d", i)
		res.References = append(res.References, ua.ReferenceDescription{
			ReferenceTypeId: codec.NewNumericNodeId(0, id.Organizes),
			IsForward:       true,
			NodeId:          codec.ExpandedNodeId{NodeId: codec.NewStringNodeId(2, name)},
			BrowseName:      codec.QualifiedName{NamespaceIndex: 2, Name: name},
			DisplayName:     codec.LocalizedText{Text: name},
			NodeClass:       ua.NodeClassObject,
			TypeDefinition:  codec.ExpandedNodeId{NodeId: codec.NewNumericNodeId(0, id.BaseObjectType)},
		})
	}
	return &ua.BrowseResponse{ResponseHeader: responseHeader(), Results: []ua.BrowseResult{res}}
}

// message is one benchmark message in both libraries' types.
type message struct {
	name   string
	ours   codec.Structure
	theirs any
	wire   []byte
}

// messages builds the four benchmark messages; gopcua's values are decoded from our
// bytes, which the oracle tests show to be the same value.
func messages(t testing.TB) []message {
	list := []message{
		{name: "ReadRequest100", ours: readRequest100(), theirs: new(gua.ReadRequest)},
		{name: "ReadResponse100", ours: readResponse100(), theirs: new(gua.ReadResponse)},
		{name: "PublishResponse1000", ours: publishResponse1000(), theirs: new(gua.PublishResponse)},
		{name: "BrowseResponse100", ours: browseResponse100(), theirs: new(gua.BrowseResponse)},
	}
	for i := range list {
		list[i].wire = encodeOurs(t, list[i].ours)
		n, err := gua.Decode(list[i].wire, list[i].theirs)
		require.NoError(t, err, list[i].name)
		require.Equal(t, len(list[i].wire), n)
	}
	return list
}
