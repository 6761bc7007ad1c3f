package device_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/nodemgr/nodemgrtest"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/plugins/examples/device"
	"uastack.dev/plugins/plugintest"
	"uastack.dev/plugins/processhost"
	"uastack.dev/plugins/wasmhost"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

// TestConformanceAsWASM runs the conformance kit against the device built as a WASM
// module and served by the WASM host: the same rules the device passes in-process.
func TestConformanceAsWASM(t *testing.T) {
	path := plugintest.WASM(t, "uastack.dev/plugins/examples/device/wasm")
	nodemgrtest.Run(t, hostedFixture(func(t testing.TB) nodemgr.Manager {
		m, err := wasmhost.Open(context.Background(), wasmhost.Config{Name: "device", Path: path,
			Setup: nodemgr.Setup{NamespaceURI: "urn:test:device"}})
		require.NoError(t, err)
		return m.Served()
	}))
}

// TestConformanceAsProcess runs the same kit against the device built as a plugin
// executable (./process) and served by the process host.
func TestConformanceAsProcess(t *testing.T) {
	path := plugintest.Process(t, "uastack.dev/plugins/examples/device/process")
	nodemgrtest.Run(t, hostedFixture(func(t testing.TB) nodemgr.Manager {
		m, err := processhost.Open(context.Background(), processhost.Config{Name: "device", Path: path,
			Setup: nodemgr.Setup{NamespaceURI: "urn:test:device"}})
		require.NoError(t, err)
		return m.Served()
	}))
}

// TestModelsAcrossHosts: the model the device ships reaches the server as it left the
// guest, from a WASM module and from a plugin process.
func TestModelsAcrossHosts(t *testing.T) {
	d, err := device.New("urn:test:device", nil)
	require.NoError(t, err)
	want := d.Models()
	require.Len(t, want, 1)
	require.Contains(t, string(want[0].NodeSet), device.TypesURI)

	wasm, err := wasmhost.Open(context.Background(), wasmhost.Config{Name: "device", Path: plugintest.WASM(t, "uastack.dev/plugins/examples/device/wasm"),
		Setup: nodemgr.Setup{NamespaceURI: "urn:test:device"}})
	require.NoError(t, err)
	defer wasm.Close(context.Background())
	proc, err := processhost.Open(context.Background(), processhost.Config{Name: "device", Path: plugintest.Process(t, "uastack.dev/plugins/examples/device/process"),
		Setup: nodemgr.Setup{NamespaceURI: "urn:test:device"}})
	require.NoError(t, err)
	defer proc.Close(context.Background())
	for name, served := range map[string]nodemgr.Manager{"wasm": wasm.Served(), "process": proc.Served()} {
		m, ok := served.(nodemgr.Modeler)
		require.True(t, ok, "%s: the served manager is a Modeler", name)
		require.Equal(t, want, m.Models(), name)
	}
}

// hostedFixture is the kit's fixture of the device behind a host, built by newManager.
func hostedFixture(newManager func(t testing.TB) nodemgr.Manager) nodemgrtest.Fixture {
	node := func(name string) codec.NodeId { return device.NodeID(2, name) }
	return nodemgrtest.Fixture{
		New:              newManager,
		NamespaceIndexes: []uint16{2},
		// The host adds Close (it holds the instances or the process) and answers for the capabilities
		// a guest lacks with the server's Bad codes.
		Capabilities: nodemgr.CapRead | nodemgr.CapWrite | nodemgr.CapBrowse | nodemgr.CapCall |
			nodemgr.CapMount | nodemgr.CapStart | nodemgr.CapClose | nodemgr.CapHealth | nodemgr.CapModels,
		Principal:   nodemgr.Principal{Anonymous: true},
		Readable:    node(device.NameSine),
		Writable:    node(device.NameSetpoint),
		WriteValue:  codec.DoubleVariant(21.5),
		NotWritable: node(device.NameSine),
		Browsable:   node(device.NameDevice),
		Unknown:     node("NoSuchNode"),
		Call: &ua.CallMethodRequest{ObjectId: node(device.NameDevice), MethodId: node(device.NameStep),
			InputArguments: []codec.Variant{codec.DoubleVariant(0.5)}},
	}
}

// benchHost is the Host of a benchmark: the clock, and nothing recorded.
type benchHost struct{}

func (benchHost) NamespaceIndexes() []uint16 { return []uint16{2} }
func (benchHost) Logger() *slog.Logger       { return slog.New(slog.DiscardHandler) }
func (benchHost) Now() time.Time             { return time.Now() }
func (benchHost) Notifier() nodemgr.Notifier { return nopNotifier{} }

type nopNotifier struct{}

func (nopNotifier) Changed([]nodemgr.DataChange) {}
func (nopNotifier) Emit([]nodemgr.Event)         {}

// BenchmarkWASMReads is what a Read of the device costs through the WASM host: 64
// concurrent one-item Reads of its four variables by ten sessions, as the server hands
// them over, coalesced into calls.
func BenchmarkWASMReads(b *testing.B) {
	path := plugintest.WASM(b, "uastack.dev/plugins/examples/device/wasm")
	m, err := wasmhost.Open(context.Background(), wasmhost.Config{Name: "device", Path: path,
		Setup: nodemgr.Setup{NamespaceURI: "urn:bench:device"}})
	require.NoError(b, err)
	defer m.Close(context.Background())
	served := m.Served()
	served.(nodemgr.Mounter).Mount([]uint16{2})
	require.NoError(b, served.(nodemgr.Starter).Start(context.Background(), benchHost{}))
	reader := served.(nodemgr.Reader)
	const n = 64
	names := []string{device.NameSine, device.NameRamp, device.NameCounter, device.NameSetpoint}
	ops := make([]*nodemgr.ReadOp, n)
	for i := range ops {
		ops[i] = &nodemgr.ReadOp{
			Principal:  nodemgr.Principal{SessionID: codec.NewNumericNodeId(1, uint32(1000+i%10)), Anonymous: true},
			Timestamps: ua.TimestampsToReturnBoth,
			Items:      []ua.ReadValueId{{NodeId: device.NodeID(2, names[i%len(names)]), AttributeId: 13}},
			Results:    make([]codec.DataValue, 1),
			Now:        codec.DateTimeOf(time.Now()), // as the server passes it
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	var wg sync.WaitGroup
	b.ReportAllocs()
	for b.Loop() {
		wg.Add(n)
		for _, op := range ops {
			reader.Read(ctx, op, wg.Done)
		}
		wg.Wait()
	}
	b.StopTimer()
	for _, op := range ops {
		require.Equal(b, status.Good, op.Results[0].Status)
	}
	calls, reads := m.Stats()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/read")
	b.ReportMetric(float64(reads)/float64(calls), "ops/call")
}
