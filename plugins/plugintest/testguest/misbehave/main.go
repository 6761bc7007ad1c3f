//go:build wasip1

// Command misbehave is a WASM guest for the host's tests: a manager of one namespace
// whose options pick, per node, how a Read behaves, including the ways a guest can
// fail (a panic, a trap, an endless loop, memory without end).
//
// Options are JSON: {"nodes": {"<string identifier>": "<behaviour>"}}, where a
// behaviour is one of
//
//	value      the Read answers the identifier as a String
//	panic      a Go panic
//	nil        a nil pointer dereference
//	oob        a load past the end of linear memory: a WebAssembly trap
//	loop       an endless loop that never calls the host
//	alloc      allocates until the memory limit is hit
//	log        logs one record at each level, then answers like value
//	now        answers the host's clock as a DateTime
//	env:NAME   answers the environment variable NAME, BadNotFound when unset
//	file:PATH  answers the file's contents as a String, BadNotFound when unreadable
//
// With "history": true the manager is also a historian: a history.Store and EventStore
// in memory.
//
// A Write to any known node pushes its value as a DataChange and emits an event about
// the node, then answers Good. The module also exports bench_hash and bench_loop for
// the host's benchmarks of compute-heavy guests.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"unsafe"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/plugins/sdk/wasm"
)

func init() { wasm.Register(newManager) }

func main() {}

type options struct {
	Nodes   map[string]string `json:"nodes"`
	History bool              `json:"history"`
}

// historian is the manager with a history store of its own.
type historian struct {
	*manager
	*history.Memory
}

type manager struct {
	ns    string
	nodes map[string]string
	host  nodemgr.Host
	log   *slog.Logger
}

func newManager(s nodemgr.Setup) (nodemgr.Manager, error) {
	var o options
	if len(s.Options) > 0 {
		if err := json.Unmarshal(s.Options, &o); err != nil {
			return nil, fmt.Errorf("options: %w", err)
		}
	}
	m := &manager{ns: s.NamespaceURI, nodes: o.Nodes}
	if o.History {
		return &historian{m, history.NewMemory(history.MemoryLimits{PerNode: 10_000, Total: 100_000, EventsPerNotifier: 100})}, nil
	}
	return m, nil
}

func (m *manager) Namespaces() []string { return []string{m.ns} }

func (m *manager) Start(_ context.Context, host nodemgr.Host) error {
	m.host, m.log = host, host.Logger()
	return nil
}

// sink keeps what the misbehaviours compute alive, so the compiler keeps them.
var (
	sink  []byte
	sinkN int
	hog   [][]byte
)

func (m *manager) Read(_ context.Context, op *nodemgr.ReadOp, done func()) {
	for i, it := range op.Items {
		id := it.NodeId.StringID()
		behaviour, ok := m.nodes[id]
		if !ok {
			op.Results[i] = codec.DataValue{Status: status.BadNodeIdUnknown}
			continue
		}
		op.Results[i] = m.read(id, behaviour)
	}
	done()
}

func (m *manager) read(id, behaviour string) codec.DataValue {
	switch {
	case behaviour == "panic":
		panic("misbehave: panic reading " + id)
	case behaviour == "nil":
		var p *options
		sinkN += len(p.Nodes)
	case behaviour == "oob":
		// Past the 4 GiB a 32-bit linear memory can hold: the load traps. The address is
		// made from a real pointer so that vet sees no integer turned into a pointer.
		p := unsafe.Pointer(&sinkN)
		sinkN += int(*(*byte)(unsafe.Add(p, 0xFFFFFFF0-uintptr(p))))
	case behaviour == "loop":
		for {
			sinkN++
		}
	case behaviour == "alloc":
		for {
			hog = append(hog, make([]byte, 1<<20))
		}
	case behaviour == "log":
		m.log.Debug("misbehave: debug", "node", id)
		m.log.Info("misbehave: info", "node", id, "n", 1)
		m.log.Warn("misbehave: warn", "node", id)
		m.log.Error("misbehave: error", "node", id)
	case behaviour == "now":
		return codec.DataValue{Value: codec.DateTimeVariant(codec.DateTimeOf(m.host.Now()))}
	case strings.HasPrefix(behaviour, "env:"):
		v, ok := os.LookupEnv(strings.TrimPrefix(behaviour, "env:"))
		if !ok {
			return codec.DataValue{Status: status.BadNotFound}
		}
		return codec.DataValue{Value: codec.StringVariant(v)}
	case strings.HasPrefix(behaviour, "file:"):
		b, err := os.ReadFile(strings.TrimPrefix(behaviour, "file:"))
		if err != nil {
			return codec.DataValue{Status: status.BadNotFound}
		}
		return codec.DataValue{Value: codec.StringVariant(string(b))}
	}
	return codec.DataValue{Value: codec.StringVariant(id)}
}

func (m *manager) Write(_ context.Context, op *nodemgr.WriteOp, done func()) {
	for i, it := range op.Items {
		if _, ok := m.nodes[it.NodeId.StringID()]; !ok {
			op.Results[i] = status.BadNodeIdUnknown
			continue
		}
		m.host.Notifier().Changed([]nodemgr.DataChange{{NodeId: it.NodeId, AttributeId: it.AttributeId, Value: it.Value}})
		m.host.Notifier().Emit([]nodemgr.Event{{
			EventType:  codec.NewNumericNodeId(0, 2041), // BaseEventType
			SourceNode: it.NodeId,
			Fields: []nodemgr.EventField{{
				BrowsePath: []codec.QualifiedName{{Name: "Message"}},
				Value:      codec.StringVariant("written"),
			}},
		}})
		op.Results[i] = status.Good
	}
	done()
}

// benchHash hashes 64 KiB n times: compute-heavy guest code with calls and loops.
//
//go:wasmexport bench_hash
func benchHash(n uint32) uint32 {
	if sink == nil {
		sink = make([]byte, 64<<10)
	}
	var sum [32]byte
	for range n {
		sum = sha256.Sum256(sink)
		sink[0] = sum[0]
	}
	return uint32(sum[0])
}

// benchLoop runs a tight arithmetic loop of n rounds without calls.
//
//go:wasmexport bench_loop
func benchLoop(n uint32) uint32 {
	x := uint32(1)
	for i := range n {
		x = x*1664525 + 1013904223 + i
	}
	return x
}

var (
	_ nodemgr.Starter = (*manager)(nil)
	_ nodemgr.Reader  = (*manager)(nil)
	_ nodemgr.Writer  = (*manager)(nil)
)
