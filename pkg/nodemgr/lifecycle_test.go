package nodemgr

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
)

// bare serves a namespace and nothing else.
type bare struct{}

func (bare) Namespaces() []string { return []string{"urn:bare"} }

// readWatch reads and watches.
type readWatch struct{ bare }

func (readWatch) Read(context.Context, *ReadOp, func()) {}
func (readWatch) Watch(context.Context, *WatchSet)      {}

// lifecycle starts, closes and reports its health.
type lifecycle struct{ bare }

func (lifecycle) Start(context.Context, Host) error       { return nil }
func (lifecycle) Close(context.Context) error             { return nil }
func (lifecycle) Health(context.Context) Health           { return Health{} }
func (lifecycle) Mount([]uint16) []Mount                  { return nil }
func (lifecycle) Write(context.Context, *WriteOp, func()) {}

// modeled ships a model.
type modeled struct{ bare }

func (modeled) Models() []Model { return []Model{{Name: "m.xml"}} }

func TestCapabilitiesOf(t *testing.T) {
	t.Parallel()
	require.Equal(t, Capabilities(0), CapabilitiesOf(bare{}))
	require.Equal(t, CapRead|CapWatch, CapabilitiesOf(readWatch{}))
	require.Equal(t, CapStart|CapClose|CapHealth|CapMount|CapWrite, CapabilitiesOf(lifecycle{}))
	require.Equal(t, CapModels, CapabilitiesOf(modeled{}))
	require.Equal(t, CapHistory|CapHistoryEvents, CapabilitiesOf(historian{history.NewMemory(history.MemoryLimits{})}))
	require.Equal(t, CapHistory, CapabilitiesOf(valuesOnly{historian{}}))
}

// historian keeps history: a store of values and events.
type historian struct{ *history.Memory }

func (historian) Namespaces() []string { return nil }

// valuesOnly keeps the history of values, not of events.
type valuesOnly struct{ h historian }

func (valuesOnly) Namespaces() []string { return nil }
func (v valuesOnly) Append(ctx context.Context, vals []history.Value) error {
	return v.h.Append(ctx, vals)
}
func (v valuesOnly) ReadRaw(ctx context.Context, op *history.ReadRawOp) error {
	return v.h.ReadRaw(ctx, op)
}
func (v valuesOnly) Update(ctx context.Context, op *history.UpdateOp) error {
	return v.h.Update(ctx, op)
}
func (v valuesOnly) DeleteRaw(ctx context.Context, op *history.DeleteRawOp) error {
	return v.h.DeleteRaw(ctx, op)
}
func (v valuesOnly) DeleteAtTime(ctx context.Context, op *history.DeleteAtTimeOp) error {
	return v.h.DeleteAtTime(ctx, op)
}

func TestCapabilitiesString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "none", Capabilities(0).String())
	require.Equal(t, "Read|Watch", (CapRead | CapWatch).String())
	require.Equal(t, "Read|Write|Browse|Call|Mount|Start|Close|Watch|Health|Models|History|HistoryEvents", (capEnd - 1).String())
	require.Equal(t, "Health|0x1000", (CapHealth | 1<<12).String())
	require.Equal(t, "0x80000000", Capabilities(1<<31).String())
}

func TestWatchItemKey(t *testing.T) {
	t.Parallel()
	n := codec.NewStringNodeId(2, "x")
	require.Equal(t, WatchKey{NodeId: n, AttributeId: 13}, WatchItem{NodeId: n, AttributeId: 13, SamplingInterval: 100}.Key())
}
