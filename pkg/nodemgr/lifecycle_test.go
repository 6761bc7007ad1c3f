package nodemgr

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
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
}

func TestCapabilitiesString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "none", Capabilities(0).String())
	require.Equal(t, "Read|Watch", (CapRead | CapWatch).String())
	require.Equal(t, "Read|Write|Browse|Call|Mount|Start|Close|Watch|Health|Models", (capEnd - 1).String())
	require.Equal(t, "Health|0x800", (CapHealth | 1<<11).String())
	require.Equal(t, "0x80000000", Capabilities(1<<31).String())
}

func TestWatchItemKey(t *testing.T) {
	t.Parallel()
	n := codec.NewStringNodeId(2, "x")
	require.Equal(t, WatchKey{NodeId: n, AttributeId: 13}, WatchItem{NodeId: n, AttributeId: 13, SamplingInterval: 100}.Key())
}
