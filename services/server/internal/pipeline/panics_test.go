package pipeline

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/telemetry"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestHandlerPanics: a handler that panics is one failed request, on the channel's
// goroutine and on a worker alike: the request is answered with a ServiceFault
// BadInternalError carrying its handle, the panic is counted at its place and logged
// with the stack, and the channel's next request is served. A handler that answered
// before it panicked is not answered twice, and a done callback that panics on a
// manager's goroutine (Pending.Recover) answers its request in the same way.
func TestHandlerPanics(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	tel, err := telemetry.New(telemetry.Config{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	table := []Service[*testConn]{
		// Read: its first node's IndexRange says where it panics.
		Serves(func(r *Request[*testConn], m *ua.ReadRequest) {
			switch m.NodesToRead[0].IndexRange {
			case "inline":
				panicInHandler()
			case "after answer":
				r.Respond(&ua.ReadResponse{ResponseHeader: r.ResponseHeader(status.Good)})
				panicInHandler()
			case "job":
				r.Enqueue(1, func(*Pending) { panicInHandler() })
			case "done":
				r.Enqueue(1, func(p *Pending) {
					// A manager that completes from a goroutine of its own.
					go func() {
						defer p.Recover()
						panicInHandler()
					}()
				})
			default:
				r.Respond(&ua.ReadResponse{ResponseHeader: r.ResponseHeader(status.Good)})
			}
		}, NeedsSession),
		Answers(func(*Request[*testConn], *ua.BrowseRequest) codec.Structure { panicInHandler(); return nil }, OnWorker),
		Answers(func(*Request[*testConn], *ua.WriteRequest) codec.Structure { panicInHandler(); return nil }),
	}
	r := newRigWith(t, table, nil, tel.Panics())
	token := r.session(t, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	read := func(handle uint32, where string) (codec.Structure, error) {
		return r.ch.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: token, RequestHandle: handle},
			NodesToRead: []ua.ReadValueId{{IndexRange: where}}})
	}
	requireInternal := func(resp codec.Structure, err error, handle uint32) {
		t.Helper()
		require.ErrorIs(t, err, status.BadInternalError)
		f, ok := resp.(*ua.ServiceFault)
		require.True(t, ok, "got %T", resp)
		require.Equal(t, handle, f.ResponseHeader.RequestHandle)
	}
	requireServed := func(handle uint32) {
		t.Helper()
		resp, err := read(handle, "")
		require.NoError(t, err)
		require.Equal(t, handle, resp.(*ua.ReadResponse).ResponseHeader.RequestHandle)
	}

	resp, err := read(1, "inline")
	requireInternal(resp, err, 1)
	requireServed(2)
	resp, err = r.ch.Request(ctx, &ua.WriteRequest{RequestHeader: ua.RequestHeader{RequestHandle: 3}})
	requireInternal(resp, err, 3)
	requireServed(4)
	require.EqualValues(t, 2, tel.Panics().Count(telemetry.PlaceHandler))

	resp, err = read(5, "after answer")
	require.NoError(t, err, "answered once, before the panic")
	require.Equal(t, uint32(5), resp.(*ua.ReadResponse).ResponseHeader.RequestHandle)
	requireServed(6)
	require.EqualValues(t, 3, tel.Panics().Count(telemetry.PlaceHandler))

	resp, err = read(7, "job")
	requireInternal(resp, err, 7)
	resp, err = r.ch.Request(ctx, &ua.BrowseRequest{RequestHeader: ua.RequestHeader{RequestHandle: 8}})
	requireInternal(resp, err, 8)
	requireServed(9)
	require.EqualValues(t, 2, tel.Panics().Count(telemetry.PlaceWorker))

	resp, err = read(10, "done")
	requireInternal(resp, err, 10)
	requireServed(11)
	require.EqualValues(t, 1, tel.Panics().Count(telemetry.PlaceDone))

	require.EqualValues(t, 11, r.answered.Load(), "every request answered once")
	require.Contains(t, logs.String(), "pipeline.panicInHandler", "the log has the stack of the panic")
}

// panicInHandler is the frame the logged stack must show.
func panicInHandler() { panic("a bug in a handler") }

// TestQueueJobPanics: a job that panics does not end its worker: the only worker runs
// the next job, and the panic is counted at place worker.
func TestQueueJobPanics(t *testing.T) {
	t.Parallel()
	tel, err := telemetry.New(telemetry.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	q := NewQueue(4, 1, 1, time.Now)
	q.panics = tel.Panics()
	ran := make(chan struct{})
	ok, _ := q.Push(Job{Cost: 1, Stage: StageService, Run: panicInHandler})
	require.True(t, ok)
	ok, _ = q.Push(Job{Cost: 1, Stage: StageService, Run: func() { close(ran) }})
	require.True(t, ok)
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not run the job after the one that panicked")
	}
	q.Close()
	_, running, _ := q.Stats()
	require.Zero(t, running)
	require.EqualValues(t, 1, tel.Panics().Count(telemetry.PlaceWorker))
}
