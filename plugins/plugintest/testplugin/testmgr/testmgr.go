// Package testmgr is the node manager of the test plugin: nodes whose reads and calls
// behave well or badly on purpose, for the tests of the hosts. Nodes are named by
// their string identifier in any namespace:
//
//   - "pid": reads the process's id (Int64);
//   - "block": a read waits 1 s, then answers Good; when its context ends first, it
//     answers BadTimeout;
//   - "panic": a read panics (a plugin process dies of it);
//   - any other: reads a counter of the reads answered (Int64), Good.
//
// A Call of the method "exit" exits the process with status 3. As a Watcher it pushes
// a DataChange of every watched node every PushEvery. At Start it logs one line at
// each level, with attributes, and writes a raw line to stderr. With the option
// History it is a historian (Historian): a history store in memory, its nodes variables
// whose history anyone may read and write.
package testmgr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
)

// Options are the test plugin's options (Setup.Options, JSON).
type Options struct {
	// FailSetup, when set, makes the factory fail with this message.
	FailSetup string `json:"failSetup,omitempty"`
	// PushEveryMs is the interval of the pushes of watched nodes; zero means 50.
	PushEveryMs int `json:"pushEveryMs,omitempty"`
	// History makes the manager a historian: a history.Store and EventStore in memory.
	History bool `json:"history,omitempty"`
}

// New builds the manager from its Setup (an sdk.Factory).
func New(s nodemgr.Setup) (nodemgr.Manager, error) {
	var o Options
	if len(s.Options) > 0 {
		if err := json.Unmarshal(s.Options, &o); err != nil {
			return nil, fmt.Errorf("options: %w", err)
		}
	}
	if o.FailSetup != "" {
		return nil, errors.New(o.FailSetup)
	}
	every := 50 * time.Millisecond
	if o.PushEveryMs > 0 {
		every = time.Duration(o.PushEveryMs) * time.Millisecond
	}
	m := &Manager{ns: s.NamespaceURI, every: every, watched: map[nodemgr.WatchKey]bool{}}
	if o.History {
		return &Historian{m, history.NewMemory(history.MemoryLimits{PerNode: 100_000, Total: 1_000_000, EventsPerNotifier: 1000})}, nil
	}
	return m, nil
}

// Historian is the manager with a history store of its own. Its nodes are variables
// whose history everyone may read and write.
type Historian struct {
	*Manager
	*history.Memory
}

// Read answers the NodeClass, AccessLevel and UserAccessLevel the server's history
// checks read; other attributes as the Manager does.
func (h *Historian) Read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	const access = ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeHistoryRead | ua.AccessLevelTypeHistoryWrite
	for _, it := range op.Items {
		switch attr.ID(it.AttributeId) {
		case attr.NodeClass, attr.AccessLevel, attr.UserAccessLevel:
		default:
			h.Manager.Read(ctx, op, done)
			return
		}
	}
	for i, it := range op.Items {
		v := codec.ByteVariant(byte(access))
		if attr.ID(it.AttributeId) == attr.NodeClass {
			v = codec.Int32Variant(int32(ua.NodeClassVariable))
		}
		op.Results[i] = codec.DataValue{Value: v}
	}
	done()
}

// Manager is the test plugin's manager.
type Manager struct {
	ns    string
	every time.Duration
	reads atomic.Int64

	stop chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex // guards watched
	watched map[nodemgr.WatchKey]bool
}

// Namespaces returns the namespace of the Setup.
func (m *Manager) Namespaces() []string { return []string{m.ns} }

// Read answers as the package doc says.
func (m *Manager) Read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	block := false
	for _, it := range op.Items {
		switch it.NodeId.StringID() {
		case "panic":
			panic("testmgr: a read of the panic node")
		case "block":
			block = true
		}
	}
	answer := func() {
		for i, it := range op.Items {
			v := codec.Int64Variant(m.reads.Add(1))
			if it.NodeId.StringID() == "pid" {
				v = codec.Int64Variant(int64(os.Getpid()))
			}
			op.Results[i] = codec.DataValue{Value: v, Status: status.Good}
		}
		done()
	}
	if !block {
		answer()
		return
	}
	go func() {
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-ctx.Done():
			// Give up, as a manager that waits does (package nodemgr).
			for i := range op.Results {
				op.Results[i] = codec.DataValue{Status: status.BadTimeout}
			}
			done()
		case <-t.C:
			answer()
		}
	}()
}

// Call exits the process for the method "exit"; other methods are unknown.
func (m *Manager) Call(_ context.Context, op *nodemgr.CallOp, done func()) {
	for i, it := range op.Items {
		if it.MethodId.StringID() == "exit" {
			os.Exit(3)
		}
		op.Results[i].StatusCode = status.BadMethodInvalid
	}
	done()
}

// Start logs at each level and starts the pusher.
func (m *Manager) Start(ctx context.Context, host nodemgr.Host) error {
	log := host.Logger()
	log.Debug("testmgr: debug", "n", 1)
	log.Info("testmgr: started", "namespace", m.ns, "n", 2)
	log.Warn("testmgr: warn", "n", 3)
	log.Error("testmgr: error", "n", 4, "err", "boom")
	fmt.Fprintln(os.Stderr, "testmgr: a raw line on stderr")
	m.stop = make(chan struct{})
	m.wg.Add(1)
	go m.push(host.Notifier())
	return nil
}

// Close stops the pusher.
func (m *Manager) Close(context.Context) error {
	close(m.stop)
	m.wg.Wait()
	return nil
}

// Watch records the watched set.
func (m *Manager) Watch(_ context.Context, set *nodemgr.WatchSet) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, it := range set.Add {
		m.watched[it.Key()] = true
	}
	for _, k := range set.Remove {
		delete(m.watched, k)
	}
}

// push pushes a DataChange of every watched node every m.every.
func (m *Manager) push(n nodemgr.Notifier) {
	defer m.wg.Done()
	t := time.NewTicker(m.every)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		m.mu.Lock()
		var changes []nodemgr.DataChange
		for k := range m.watched {
			changes = append(changes, nodemgr.DataChange{NodeId: k.NodeId, AttributeId: k.AttributeId,
				Value: codec.DataValue{Value: codec.Int64Variant(m.reads.Add(1)), Status: status.Good}})
		}
		m.mu.Unlock()
		if len(changes) > 0 {
			n.Changed(changes)
		}
	}
}

var (
	_ nodemgr.Reader  = (*Manager)(nil)
	_ nodemgr.Caller  = (*Manager)(nil)
	_ nodemgr.Starter = (*Manager)(nil)
	_ nodemgr.Closer  = (*Manager)(nil)
	_ nodemgr.Watcher = (*Manager)(nil)
)
