package ua_test

import (
	"runtime"
	"testing"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
)

// messageSeeds are encodings of service messages with their type ids, as they arrive in
// the body of a MSG chunk.
func messageSeeds() [][]byte {
	msgs := []codec.Structure{
		&ua.ReadRequest{NodesToRead: []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13}}},
		&ua.ReadResponse{Results: []codec.DataValue{{Value: codec.Int32Variant(5)}}},
		&ua.BrowseRequest{NodesToBrowse: []ua.BrowseDescription{{NodeId: codec.NewNumericNodeId(0, 85), IncludeSubtypes: true}}},
		&ua.CreateSessionRequest{SessionName: "s", RequestedSessionTimeout: 60000},
		&ua.ActivateSessionRequest{UserIdentityToken: codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: "anonymous"})},
		&ua.PublishResponse{NotificationMessage: ua.NotificationMessage{NotificationData: []codec.ExtensionObject{
			codec.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: []ua.MonitoredItemNotification{{ClientHandle: 1}}}),
		}}},
		&ua.WriteRequest{NodesToWrite: []ua.WriteValue{{Value: codec.DataValue{Value: codec.StringVariant("x")}}}},
		&ua.CallRequest{MethodsToCall: []ua.CallMethodRequest{{InputArguments: []codec.Variant{codec.DoubleVariant(1)}}}},
		&ua.CreateMonitoredItemsRequest{ItemsToCreate: []ua.MonitoredItemCreateRequest{{RequestedParameters: ua.MonitoringParameters{
			Filter: codec.NewExtensionObject(&ua.DataChangeFilter{DeadbandValue: 0.5})}}}},
	}
	var out [][]byte
	for _, m := range msgs {
		e := codec.NewEncoder(nil)
		e.Message(m)
		out = append(out, append([]byte(nil), e.Bytes()...))
	}
	return out
}

// FuzzDecodeMessage decodes any service message by its type id. A message that decodes
// must re-encode to bytes that decode to an equal message and re-encode identically.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range messageSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := codec.NewDecoder(b)
		m := d.Message()
		if d.Err() != nil {
			if m != nil {
				t.Fatal("a failed decode returned a message")
			}
			return
		}
		e := codec.NewEncoder(nil)
		e.Message(m)
		if e.Err() != nil {
			t.Fatalf("re-encode: %v", e.Err())
		}
		first := append([]byte(nil), e.Bytes()...)
		d2 := codec.NewDecoder(first)
		m2 := d2.Message()
		if d2.Err() != nil {
			t.Fatalf("decode of re-encoded %T: %v", m, d2.Err())
		}
		e.Reset(nil)
		e.Message(m2)
		if string(e.Bytes()) != string(first) {
			t.Fatalf("%T does not re-encode canonically", m)
		}
	})
}

// FuzzDecodeMessageBudget decodes any service message under a decode budget of a multiple
// (1 to 16, from the first byte) of its size and checks that the allocator hands out no
// more than that budget, but for the rounding of its size classes: every array, optional
// field and message the generated decoders make is charged.
func FuzzDecodeMessageBudget(f *testing.F) {
	for _, s := range messageSeeds() {
		f.Add(append([]byte{4}, s...))
	}
	for _, s := range budgetCorpus() {
		if len(s) < 1<<12 {
			f.Add(append([]byte{12}, s...))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		l := codec.Limits{MaxDecodeMultiple: 1 + int(data[0]%16), MinDecodeBudget: 1}
		wire := data[1:]
		budget := l.MaxDecodeMultiple * len(wire)
		d := codec.NewDecoderLimits(nil, l)
		measure := func() int {
			var before, after runtime.MemStats
			d.Reset(wire)
			runtime.ReadMemStats(&before)
			m := d.Message()
			runtime.ReadMemStats(&after)
			if d.Err() != nil && m != nil {
				t.Fatal("a failed decode returned a message")
			}
			return int(after.TotalAlloc - before.TotalAlloc)
		}
		// Size classes round an allocation up by at most 1/8. The counters are the
		// process's: another goroutine of the fuzzing engine may allocate meanwhile, but
		// what the decoder allocates comes back every time.
		bound := budget + budget/8 + 512
		spent := measure()
		for i := 0; i < 3 && spent > bound; i++ {
			spent = min(spent, measure())
		}
		if spent > bound {
			t.Fatalf("%d bytes allocated for %d on the wire, over the budget of %d×: %d\nbytes: % x",
				spent, len(wire), l.MaxDecodeMultiple, budget, wire)
		}
	})
}
