package nodemgrtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
)

// Managers that break one rule each, made from the reference memory manager.

// doneTwice calls Read's done twice.
type doneTwice struct{ *memory }

func (m doneTwice) Read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	m.memory.Read(ctx, op, func() { done(); done() })
}

// missingResult leaves the last result of a Read unset.
type missingResult struct{ *memory }

func (m missingResult) Read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	if len(op.Items) == 0 {
		m.memory.Read(ctx, op, done)
		return
	}
	n := len(op.Items) - 1
	part := *op
	part.Items, part.Results = op.Items[:n], op.Results[:n]
	m.memory.Read(ctx, &part, done)
}

// wrongStatus answers a Read of an unknown node with BadNodeIdInvalid.
type wrongStatus struct{ *memory }

func (m wrongStatus) Read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	m.memory.Read(ctx, op, func() {
		for i := range op.Results {
			if op.Results[i].Status == status.BadNodeIdUnknown {
				op.Results[i].Status = status.BadNodeIdInvalid
			}
		}
		done()
	})
}

// neverDone forgets done when a Read has an unknown node.
type neverDone struct{ *memory }

func (m neverDone) Read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	m.memory.Read(ctx, op, func() {
		for i := range op.Results {
			if op.Results[i].Status == status.BadNodeIdUnknown {
				return
			}
		}
		done()
	})
}

// blocking waits in Read while stalled instead of returning.
type blocking struct{ *memory }

func (m blocking) Read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	m.mu.Lock()
	stall := m.stalled
	m.mu.Unlock()
	if stall != nil {
		<-stall
	}
	m.memory.Read(ctx, op, done)
}

// ignoresDeadline waits for a stall's release even when the Read's context ends.
type ignoresDeadline struct{ *memory }

func (m ignoresDeadline) Read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	m.mu.Lock()
	stall := m.stalled
	m.mu.Unlock()
	if stall == nil {
		m.memory.Read(ctx, op, done)
		return
	}
	go func() {
		<-stall
		m.memory.Read(context.WithoutCancel(ctx), op, done)
	}()
}

// doneUnderLock calls Read's done while it holds a lock of its own.
type doneUnderLock struct {
	*memory
	mu *sync.Mutex // guards nothing: held across done on purpose
}

func (m doneUnderLock) Read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.memory.Read(ctx, op, done)
}

// noPush ignores Watch, so it never pushes.
type noPush struct{ *memory }

func (noPush) Watch(context.Context, *nodemgr.WatchSet) {}

// keepsPushing ignores the removals of Watch.
type keepsPushing struct{ *memory }

func (m keepsPushing) Watch(ctx context.Context, set *nodemgr.WatchSet) {
	m.memory.Watch(ctx, &nodemgr.WatchSet{Add: set.Add})
}

// noHealth lacks the HealthReporter its fixture expects.
type noHealth struct {
	nodemgr.Reader
	nodemgr.Writer
	nodemgr.Browser
	nodemgr.Caller
	nodemgr.Mounter
	nodemgr.Starter
	nodemgr.Closer
	nodemgr.Watcher
	m *memory
}

func (m noHealth) Namespaces() []string { return m.m.Namespaces() }
func (m noHealth) Bump()                { m.m.Bump() }
func (m noHealth) Stall() func()        { return m.m.Stall() }

// brokenCase is a broken manager and the rules the kit must find broken, and some it
// must find kept (so that a failure is the rule's, not the whole kit's).
type brokenCase struct {
	name       string
	manager    func() nodemgr.Manager
	fail, pass []string
}

var brokenCases = []brokenCase{
	{"done-twice", func() nodemgr.Manager { return doneTwice{newMemory()} },
		[]string{"Read/Good", "Read/Mixed", "Cancel/Cancelled/Read", "Done/Reentrant"}, []string{"Browse/Good", "Call/Good"}},
	{"missing-result", func() nodemgr.Manager { return missingResult{newMemory()} },
		[]string{"Read/Good", "Read/Mixed", "Read/Large", "Cancel/Deadline/Read"}, []string{"Read/Empty", "Write/NotWritable"}},
	{"wrong-status", func() nodemgr.Manager { return wrongStatus{newMemory()} },
		[]string{"Read/UnknownNode", "Read/Mixed", "Read/Large", "Encoding/Read", "Concurrent"}, []string{"Read/Good", "Write/UnknownNode"}},
	{"never-done", func() nodemgr.Manager { return neverDone{newMemory()} },
		[]string{"Read/UnknownNode", "Read/Mixed"}, []string{"Read/Good", "Browse/UnknownNode"}},
	{"blocking", func() nodemgr.Manager { return blocking{newMemory()} },
		[]string{"Done/NotWaiting/Read", "Cancel/Stalled/Read"}, []string{"Read/Good", "Done/NotWaiting/Write", "Close"}},
	{"ignores-deadline", func() nodemgr.Manager { return ignoresDeadline{newMemory()} },
		[]string{"Cancel/Stalled/Read"}, []string{"Done/NotWaiting/Read", "Cancel/Stalled/Write"}},
	{"done-under-lock", func() nodemgr.Manager { return doneUnderLock{newMemory(), new(sync.Mutex)} },
		[]string{"Done/Reentrant"}, []string{"Read/Good", "Concurrent", "Close"}},
	{"no-push", func() nodemgr.Manager { return noPush{newMemory()} },
		[]string{"Push/Changed"}, []string{"Read/Good"}},
	{"keeps-pushing", func() nodemgr.Manager { return keepsPushing{newMemory()} },
		[]string{"Push/StopsAfterRemove"}, []string{"Push/Changed"}},
	{"no-health", func() nodemgr.Manager {
		m := newMemory()
		return noHealth{m, m, m, m, m, m, m, m, m}
	}, []string{"Capabilities"}, []string{"Read/Good", "Push/Changed"}},
}

// childEnv makes the test binary run TestBrokenManagers for TestKitCatchesBrokenManagers.
const childEnv = "NODEMGRTEST_BROKEN_CHILD"

// TestBrokenManagers runs the kit against every broken manager. It fails, on purpose,
// so it runs only as the child process of TestKitCatchesBrokenManagers, which reads
// which rules failed.
func TestBrokenManagers(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("runs only as the child process of TestKitCatchesBrokenManagers")
	}
	for _, bc := range brokenCases {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			fx := memoryFixture(bc.manager)
			fx.Timeout = time.Second
			Run(t, fx)
		})
	}
}

// TestKitCatchesBrokenManagers: the kit fails each broken manager on the rules it
// breaks, and passes it on rules it keeps.
func TestKitCatchesBrokenManagers(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenManagers$", "-test.v", "-test.parallel=4", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if _, exited := err.(*exec.ExitError); !exited {
		t.Fatalf("the child did not run and fail: %v\n%s", err, out)
	}
	log := string(out)
	for _, bc := range brokenCases {
		t.Run(bc.name, func(t *testing.T) {
			for _, rule := range bc.fail {
				if !strings.Contains(log, "--- FAIL: TestBrokenManagers/"+bc.name+"/"+rule+" (") {
					t.Errorf("the kit did not fail %s on %s", bc.name, rule)
				}
			}
			for _, rule := range bc.pass {
				if !strings.Contains(log, "--- PASS: TestBrokenManagers/"+bc.name+"/"+rule+" (") {
					t.Errorf("the kit did not pass %s on %s, a rule it keeps", bc.name, rule)
				}
			}
		})
	}
	if t.Failed() {
		t.Logf("child output:\n%s", log)
	}
}
