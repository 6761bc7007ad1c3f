package ua_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// budgetCorpus is what real clients and servers send: the fuzz seeds and the shapes of the
// benchmarks (a Read of 1,000 nodes, a Publish response, Writes of arrays and of scalars).
func budgetCorpus() map[string][]byte {
	hdr := ua.RequestHeader{AuthenticationToken: codec.NewNumericNodeId(1, 123456), Timestamp: 133800000000000000, RequestHandle: 42, TimeoutHint: 10000}
	rhdr := ua.ResponseHeader{Timestamp: 133800000000000000, RequestHandle: 42}
	const ts = codec.DateTime(133800000000000000)

	readNumeric := &ua.ReadRequest{RequestHeader: hdr, TimestampsToReturn: ua.TimestampsToReturnBoth}
	readString := &ua.ReadRequest{RequestHeader: hdr, TimestampsToReturn: ua.TimestampsToReturnBoth}
	register := &ua.RegisterNodesRequest{RequestHeader: hdr}
	monitor := &ua.CreateMonitoredItemsRequest{RequestHeader: hdr, SubscriptionId: 1, TimestampsToReturn: ua.TimestampsToReturnBoth}
	writeScalars := &ua.WriteRequest{RequestHeader: hdr}
	writeBooleans := &ua.WriteRequest{RequestHeader: hdr}
	readResponse := &ua.ReadResponse{ResponseHeader: rhdr}
	dcn := &ua.DataChangeNotification{}
	for i := range 1000 {
		numeric := codec.NewNumericNodeId(2, uint32(1000+i))
		readNumeric.NodesToRead = append(readNumeric.NodesToRead, ua.ReadValueId{NodeId: numeric, AttributeId: 13})
		readString.NodesToRead = append(readString.NodesToRead, ua.ReadValueId{
			NodeId: codec.NewStringNodeId(2, fmt.Sprintf("Line1.Station%03d.Temperature", i)), AttributeId: 13})
		register.NodesToRegister = append(register.NodesToRegister, numeric)
		monitor.ItemsToCreate = append(monitor.ItemsToCreate, ua.MonitoredItemCreateRequest{
			ItemToMonitor:       ua.ReadValueId{NodeId: numeric, AttributeId: 13},
			MonitoringMode:      ua.MonitoringModeReporting,
			RequestedParameters: ua.MonitoringParameters{ClientHandle: uint32(i), SamplingInterval: 250, QueueSize: 1, DiscardOldest: true},
		})
		writeScalars.NodesToWrite = append(writeScalars.NodesToWrite, ua.WriteValue{NodeId: numeric, AttributeId: 13,
			Value: codec.DataValue{Value: codec.DoubleVariant(float64(i)), SourceTimestamp: ts}})
		// Coils written without timestamps: the most compact write a client sends.
		writeBooleans.NodesToWrite = append(writeBooleans.NodesToWrite, ua.WriteValue{NodeId: numeric, AttributeId: 13,
			Value: codec.DataValue{Value: codec.BooleanVariant(i%2 == 0)}})
		readResponse.Results = append(readResponse.Results, codec.DataValue{Value: codec.Int32Variant(int32(i)), SourceTimestamp: ts, ServerTimestamp: ts})
		dcn.MonitoredItems = append(dcn.MonitoredItems, ua.MonitoredItemNotification{ClientHandle: uint32(i),
			Value: codec.DataValue{Value: codec.DoubleVariant(float64(i)), SourceTimestamp: ts, ServerTimestamp: ts}})
	}
	writeArrays := &ua.WriteRequest{RequestHeader: hdr}
	for i := range 10 {
		doubles := make([]float64, 1000)
		names := make([]string, 100)
		for j := range names {
			names[j] = fmt.Sprintf("recipe-%d", j)
		}
		writeArrays.NodesToWrite = append(writeArrays.NodesToWrite,
			ua.WriteValue{NodeId: codec.NewNumericNodeId(2, uint32(i)), AttributeId: 13, Value: codec.DataValue{Value: codec.MustVariant(doubles)}},
			ua.WriteValue{NodeId: codec.NewNumericNodeId(2, uint32(100+i)), AttributeId: 13, Value: codec.DataValue{Value: codec.MustVariant(names)}})
	}
	publish := &ua.PublishResponse{ResponseHeader: rhdr, SubscriptionId: 7, AvailableSequenceNumbers: []uint32{41, 42},
		NotificationMessage: ua.NotificationMessage{SequenceNumber: 42, PublishTime: ts, NotificationData: []codec.ExtensionObject{codec.NewExtensionObject(dcn)}},
		Results:             []status.Code{}}
	call := &ua.CallRequest{RequestHeader: hdr, MethodsToCall: []ua.CallMethodRequest{{
		ObjectId: codec.NewNumericNodeId(2, 1), MethodId: codec.NewNumericNodeId(2, 2),
		InputArguments: []codec.Variant{codec.StringVariant("start"), codec.Int32Variant(3), codec.MustVariant([]float64{1, 2, 3})},
	}}}

	corpus := map[string][]byte{}
	for i, b := range messageSeeds() {
		corpus[fmt.Sprintf("seed %d", i)] = b
	}
	for name, m := range map[string]codec.Structure{
		"Read of 1,000 numeric nodes":                readNumeric,
		"Read of 1,000 string nodes":                 readString,
		"RegisterNodes of 1,000 numeric nodes":       register,
		"CreateMonitoredItems of 1,000":              monitor,
		"Write of 1,000 Doubles with timestamps":     writeScalars,
		"Write of 1,000 Booleans without timestamps": writeBooleans,
		"Write of 20 arrays":                         writeArrays,
		"Call":                                       call,
		"ReadResponse of 1,000":                      readResponse,
		"PublishResponse of 1,000":                   publish,
	} {
		e := codec.NewEncoder(nil)
		e.Message(m)
		corpus[name] = append([]byte(nil), e.Bytes()...)
	}
	return corpus
}

// decodedBytes returns the bytes a message charges against its decode budget: the
// smallest MinDecodeBudget it decodes within, with no multiple beyond its own size.
func decodedBytes(t *testing.T, wire []byte) int {
	fits := func(budget int) bool {
		d := codec.NewDecoderLimits(wire, codec.Limits{MaxDecodeMultiple: 1, MinDecodeBudget: budget})
		d.Message()
		if err := d.Err(); err != nil {
			require.Equal(t, status.BadEncodingLimitsExceeded, err)
			return false
		}
		return true
	}
	lo, hi := 1, 200*len(wire)
	require.True(t, fits(hi))
	for lo < hi {
		mid := (lo + hi) / 2
		if fits(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// benchmarkShapes are the messages of the benchmarks, which the default MaxDecodeMultiple
// must admit twice over.
var benchmarkShapes = map[string]bool{
	"Read of 1,000 numeric nodes": true, "Read of 1,000 string nodes": true, "PublishResponse of 1,000": true,
	"Write of 20 arrays": true, "Write of 1,000 Doubles with timestamps": true, "ReadResponse of 1,000": true,
}

// TestDecodeMultipleHeadroom measures the memory each message of the corpus takes per byte
// on the wire and checks it against what the decoder really allocates. The default
// MaxDecodeMultiple must be at least twice the ratio of the benchmark messages and above
// that of any message of the corpus.
func TestDecodeMultipleHeadroom(t *testing.T) {
	// Not parallel: it reads the allocation counters of the process.
	worst, worstName := 0.0, ""
	for name, wire := range budgetCorpus() {
		charged := decodedBytes(t, wire)
		// The counters are the process's: another goroutine's allocation (the runtime's,
		// an earlier test's) may land in the window. The least of three decodes is the
		// decoder's own.
		allocated := -1
		for range 3 {
			var before, after runtime.MemStats
			d := codec.NewDecoder(wire)
			runtime.ReadMemStats(&before)
			m := d.Message()
			runtime.ReadMemStats(&after)
			require.NoError(t, d.Err(), name)
			require.NotNil(t, m)
			if a := int(after.TotalAlloc - before.TotalAlloc); allocated < 0 || a < allocated {
				allocated = a
			}
		}
		// The charge counts what the decoder asks for; the allocator rounds up to its size
		// classes.
		require.LessOrEqual(t, allocated, charged+charged/4+1024, "%s: allocations beyond the charge", name)
		ratio := float64(charged) / float64(len(wire))
		t.Logf("%-44s %8d bytes on the wire, %9d charged (%5.2f×), %9d allocated", name, len(wire), charged, ratio, allocated)
		if ratio > worst {
			worst, worstName = ratio, name
		}
		if benchmarkShapes[name] {
			require.LessOrEqual(t, 2*ratio, float64(codec.DefaultDecodeMultiple), name)
		}
	}
	t.Logf("largest ratio %.2f (%s); default MaxDecodeMultiple %d", worst, worstName, codec.DefaultDecodeMultiple)
	require.Less(t, worst, float64(codec.DefaultDecodeMultiple))
}
