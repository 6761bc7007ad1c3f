package remote

import (
	"context"

	"uastack.dev/pkg/history"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
)

// The history operations of the served manager (history.Store, history.EventStore):
// a guest that says CapHistory is a historian. Their requests carry no results, so the
// reply goes to a histResults of the operation; a Fault, a deadline or Close answers
// every item with its code, as for the other operations. The store's methods wait:
// the server calls them on a worker.

// histResults receives the reply of one history operation.
type histResults interface {
	// fill answers every item with code.
	fill(code status.Code)
	// apply copies the reply's results; false when they are not the operation's.
	apply(reply nodemgr.Body) bool
}

type rawResults []history.RawResult

func (r rawResults) fill(code status.Code) {
	for i := range r {
		r[i] = history.RawResult{Status: code}
	}
}

func (r rawResults) apply(reply nodemgr.Body) bool {
	res, ok := reply.(*nodemgr.HistoryRawResults)
	if !ok || len(res.Results) != len(r) {
		return false
	}
	copy(r, res.Results)
	return true
}

type itemResults []history.ItemResult

func (r itemResults) fill(code status.Code) {
	for i := range r {
		r[i] = history.ItemResult{Status: code}
	}
}

func (r itemResults) apply(reply nodemgr.Body) bool {
	res, ok := reply.(*nodemgr.HistoryItemResults)
	if !ok || len(res.Results) != len(r) {
		return false
	}
	copy(r, res.Results)
	return true
}

type eventResults []history.EventResult

func (r eventResults) fill(code status.Code) {
	for i := range r {
		r[i] = history.EventResult{Status: code}
	}
}

func (r eventResults) apply(reply nodemgr.Body) bool {
	res, ok := reply.(*nodemgr.HistoryEventResults)
	if !ok || len(res.Results) != len(r) {
		return false
	}
	copy(r, res.Results)
	return true
}

// appended is the outcome of an append.
type appended struct{ code status.Code }

func (a *appended) fill(code status.Code) { a.code = code }

func (a *appended) apply(reply nodemgr.Body) bool {
	o, ok := reply.(*nodemgr.Outcome)
	if ok {
		a.code = o.Status
	}
	return ok
}

// store sends one history operation and waits for its answer. A guest without the
// capability answers BadHistoryOperationUnsupported (not reached through Served).
func (m *Manager) store(ctx context.Context, kind nodemgr.Kind, capability nodemgr.Capabilities, req nodemgr.Body, res histResults) {
	if m.info.Capabilities&capability == 0 {
		res.fill(status.BadHistoryOperationUnsupported)
		return
	}
	done := make(chan struct{})
	p := &pending{ctx: ctx, frame: nodemgr.Frame{Kind: kind, Body: req}, hist: res, done: func() { close(done) }}
	m.submit(p)
	<-done
}

func (m *Manager) appendValues(ctx context.Context, values []history.Value) error {
	a := &appended{}
	m.store(ctx, nodemgr.KindHistoryAppend, nodemgr.CapHistory, &nodemgr.HistoryValues{Values: values}, a)
	if a.code.IsBad() {
		return a.code
	}
	return nil
}

func (m *Manager) readRaw(ctx context.Context, op *history.ReadRawOp) error {
	m.store(ctx, nodemgr.KindHistoryReadRaw, nodemgr.CapHistory, &nodemgr.HistoryReadRaw{Items: op.Items}, rawResults(op.Results))
	return nil
}

func (m *Manager) update(ctx context.Context, op *history.UpdateOp) error {
	m.store(ctx, nodemgr.KindHistoryUpdate, nodemgr.CapHistory,
		&nodemgr.HistoryUpdate{User: op.User, Time: op.Time, Items: op.Items}, itemResults(op.Results))
	return nil
}

func (m *Manager) deleteRaw(ctx context.Context, op *history.DeleteRawOp) error {
	m.store(ctx, nodemgr.KindHistoryDeleteRaw, nodemgr.CapHistory,
		&nodemgr.HistoryDeleteRaw{User: op.User, Time: op.Time, Items: op.Items}, itemResults(op.Results))
	return nil
}

func (m *Manager) deleteAtTime(ctx context.Context, op *history.DeleteAtTimeOp) error {
	m.store(ctx, nodemgr.KindHistoryDeleteAtTime, nodemgr.CapHistory,
		&nodemgr.HistoryDeleteAtTime{User: op.User, Time: op.Time, Items: op.Items}, itemResults(op.Results))
	return nil
}

func (m *Manager) appendEvents(ctx context.Context, events []history.Event) error {
	a := &appended{}
	m.store(ctx, nodemgr.KindHistoryAppendEvents, nodemgr.CapHistoryEvents, &nodemgr.HistoryEvents{Events: events}, a)
	if a.code.IsBad() {
		return a.code
	}
	return nil
}

func (m *Manager) readEvents(ctx context.Context, op *history.ReadEventsOp) error {
	m.store(ctx, nodemgr.KindHistoryReadEvents, nodemgr.CapHistoryEvents, &nodemgr.HistoryReadEvents{Items: op.Items}, eventResults(op.Results))
	return nil
}
