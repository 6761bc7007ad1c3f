package routing

import (
	"context"
	"errors"
	"sync"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/status"
)

// History sends the items of history operations to the stores of their nodes' owners:
// the server's own store for the address space, the manager's for a manager that
// implements history.Store (history.EventStore for events). The items of one operation
// are batched per owner, as Read's are, and their results scattered back in order. An
// owner without a store answers its items BadHistoryOperationUnsupported. Its methods
// wait for the stores, so they run on a worker.
type History struct {
	r      *Routes
	local  history.Store      // nil: the server keeps no history
	events history.EventStore // nil: the server keeps no events
}

// History routes to local (and events) for the address space's nodes and to the
// managers' stores for theirs.
func (r *Routes) History(local history.Store, events history.EventStore) *History {
	return &History{r: r, local: local, events: events}
}

// stores returns the value and event stores of o.
func (h *History) stores(o *owner) (history.Store, history.EventStore) {
	if o.local {
		return h.local, h.events
	}
	return o.history, o.historyEvents
}

// Serves reports whether the owner of node keeps its history: of values, or of events.
func (h *History) Serves(node codec.NodeId, events bool) bool {
	st, ev := h.stores(h.r.nodeOwner(node))
	if events {
		return ev != nil
	}
	return st != nil
}

// ReadRaw answers op's reads from the stores of their nodes' owners.
func (h *History) ReadRaw(ctx context.Context, op *history.ReadRawOp) error {
	return scatterHistory(h, op.Items, op.Results, func(q *history.RawRead) codec.NodeId { return q.Node }, false,
		history.RawResult{Status: status.BadHistoryOperationUnsupported},
		func(st history.Store, _ history.EventStore, items []history.RawRead, results []history.RawResult) error {
			return st.ReadRaw(ctx, &history.ReadRawOp{Items: items, Results: results})
		})
}

// Update applies op's updates through the stores of their nodes' owners.
func (h *History) Update(ctx context.Context, op *history.UpdateOp) error {
	return scatterHistory(h, op.Items, op.Results, func(u *history.Update) codec.NodeId { return u.Node }, false,
		history.ItemResult{Status: status.BadHistoryOperationUnsupported},
		func(st history.Store, _ history.EventStore, items []history.Update, results []history.ItemResult) error {
			return st.Update(ctx, &history.UpdateOp{User: op.User, Time: op.Time, Items: items, Results: results})
		})
}

// DeleteRaw deletes op's ranges through the stores of their nodes' owners.
func (h *History) DeleteRaw(ctx context.Context, op *history.DeleteRawOp) error {
	return scatterHistory(h, op.Items, op.Results, func(d *history.DeleteRaw) codec.NodeId { return d.Node }, false,
		history.ItemResult{Status: status.BadHistoryOperationUnsupported},
		func(st history.Store, _ history.EventStore, items []history.DeleteRaw, results []history.ItemResult) error {
			return st.DeleteRaw(ctx, &history.DeleteRawOp{User: op.User, Time: op.Time, Items: items, Results: results})
		})
}

// DeleteAtTime deletes op's values through the stores of their nodes' owners.
func (h *History) DeleteAtTime(ctx context.Context, op *history.DeleteAtTimeOp) error {
	return scatterHistory(h, op.Items, op.Results, func(d *history.DeleteAtTime) codec.NodeId { return d.Node }, false,
		history.ItemResult{Status: status.BadHistoryOperationUnsupported},
		func(st history.Store, _ history.EventStore, items []history.DeleteAtTime, results []history.ItemResult) error {
			return st.DeleteAtTime(ctx, &history.DeleteAtTimeOp{User: op.User, Time: op.Time, Items: items, Results: results})
		})
}

// ReadEvents answers op's reads from the event stores of their notifiers' owners.
func (h *History) ReadEvents(ctx context.Context, op *history.ReadEventsOp) error {
	return scatterHistory(h, op.Items, op.Results, func(q *history.EventRead) codec.NodeId { return q.Notifier }, true,
		history.EventResult{Status: status.BadHistoryOperationUnsupported},
		func(_ history.Store, ev history.EventStore, items []history.EventRead, results []history.EventResult) error {
			return ev.ReadEvents(ctx, &history.ReadEventsOp{Items: items, Results: results})
		})
}

// scatterHistory splits items by the owner of their nodes and runs each owner's part
// on its store, the owners' parts side by side. An owner without the store answers
// unsupported. The server's own store failing is the error of the whole operation (as
// it was before managers had stores); a manager's store that fails or panics answers
// its own items with the error's code (BadInternalError when it has none), so that one
// manager cannot fail the items of another.
func scatterHistory[I, R any](h *History, items []I, results []R, nodeOf func(*I) codec.NodeId, events bool,
	unsupported R, run func(history.Store, history.EventStore, []I, []R) error) error {
	type group struct {
		owner *owner
		index []int
	}
	var groups []group
	for i := range items {
		o := h.r.nodeOwner(nodeOf(&items[i]))
		g := len(groups)
		for j := range groups {
			if groups[j].owner == o {
				g = j
				break
			}
		}
		if g == len(groups) {
			groups = append(groups, group{owner: o})
		}
		groups[g].index = append(groups[g].index, i)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex // guards localErr
		localErr error
	)
	for _, g := range groups {
		st, ev := h.stores(g.owner)
		if !events && st == nil || events && ev == nil {
			for _, i := range g.index {
				results[i] = unsupported
			}
			continue
		}
		part, res := items, results
		if len(g.index) < len(items) {
			part, res = make([]I, len(g.index)), make([]R, len(g.index))
			for k, i := range g.index {
				part[k] = items[i]
			}
		}
		wg.Add(1)
		work := func() {
			defer wg.Done()
			var err error
			panicked := g.owner.run(func(func()) { err = run(st, ev, part, res) }, func() {})
			if g.owner.local && err != nil {
				mu.Lock()
				localErr = err
				mu.Unlock()
				return
			}
			if panicked || err != nil {
				code := status.Code(status.BadInternalError)
				var c status.Code
				if errors.As(err, &c) {
					code = c
				}
				fillStatus(res, code)
			}
			if len(g.index) < len(items) {
				for k, i := range g.index {
					results[i] = res[k]
				}
			}
		}
		if len(groups) == 1 {
			work()
		} else {
			go work()
		}
	}
	wg.Wait()
	return localErr
}

// fillStatus answers every result of a history operation with code.
func fillStatus[R any](results []R, code status.Code) {
	for i := range results {
		switch r := any(&results[i]).(type) {
		case *history.RawResult:
			*r = history.RawResult{Status: code}
		case *history.ItemResult:
			*r = history.ItemResult{Status: code}
		case *history.EventResult:
			*r = history.EventResult{Status: code}
		}
	}
}
