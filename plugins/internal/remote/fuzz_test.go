package remote

import (
	"context"
	"testing"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/plugins/wire"
)

// FuzzReplies: whatever a guest answers, the host never panics and answers each
// operation at most once. The call is two Reads of one asker, merged, a Write and a
// history ReadRaw.
func FuzzReplies(f *testing.F) {
	good := func() []byte {
		var b wire.Batch
		_ = b.Add(&nodemgr.Frame{Kind: nodemgr.KindRead | nodemgr.KindReply, ID: 0, Body: &nodemgr.ReadResults{
			Results: []codec.DataValue{{Value: codec.Int32Variant(1)}, {Status: status.BadNodeIdUnknown}, {Value: codec.StringVariant("x")}}}})
		_ = b.Add(&nodemgr.Frame{Kind: nodemgr.KindWrite | nodemgr.KindReply, ID: 1, Body: &nodemgr.WriteResults{Results: []status.Code{status.Good}}})
		_ = b.Add(&nodemgr.Frame{Kind: nodemgr.KindHistoryReadRaw | nodemgr.KindReply, ID: 2, Body: &nodemgr.HistoryRawResults{Results: []history.RawResult{
			{Values: []codec.DataValue{{Value: codec.DoubleVariant(1)}}, Next: []byte{1}}, {Status: status.BadNoData}}}})
		return append([]byte(nil), b.Bytes()...)
	}()
	f.Add(good)
	f.Add([]byte{0, 0, 0, 0})
	f.Add(good[:len(good)-3])
	f.Fuzz(func(t *testing.T, out []byte) {
		ls := &laneState{d: codec.NewDecoderLimits(nil, wire.Limits)}
		ls.d.CacheNodeIds(16)
		answered := make([]int, 4)
		mk := func(i int, body nodemgr.Body, kind nodemgr.Kind) *pending {
			return &pending{ctx: context.Background(), frame: nodemgr.Frame{Kind: kind, Body: body}, done: func() { answered[i]++ }}
		}
		r1 := &nodemgr.ReadOp{Items: make([]ua.ReadValueId, 1), Results: make([]codec.DataValue, 1)}
		r2 := &nodemgr.ReadOp{Items: make([]ua.ReadValueId, 2), Results: make([]codec.DataValue, 2)}
		w := &nodemgr.WriteOp{Items: make([]ua.WriteValue, 1), Results: make([]status.Code, 1)}
		h := mk(3, &nodemgr.HistoryReadRaw{Items: make([]history.RawRead, 2)}, nodemgr.KindHistoryReadRaw)
		h.hist = rawResults(make([]history.RawResult, 2))
		ls.keep = []*pending{mk(0, r1, nodemgr.KindRead), mk(1, r2, nodemgr.KindRead), mk(2, w, nodemgr.KindWrite), h}
		ls.at = []int{0, 1, 0, 0}
		ls.reads = []nodemgr.ReadOp{{Items: make([]ua.ReadValueId, 3)}}
		ls.frames = []sentFrame{{first: 0, n: 2, merged: 0}, {first: 2, n: 1, merged: -1}, {first: 3, n: 1, merged: -1}}
		err := ls.answerAll(out)
		doneAll(ls.dones)
		if err != nil {
			endAll(ls.keep, codeOf(err))
		}
		for i, n := range answered {
			if n != 1 {
				t.Fatalf("operation %d answered %d times", i, n)
			}
		}
	})
}
