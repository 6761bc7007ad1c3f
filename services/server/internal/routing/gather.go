package routing

import "sync/atomic"

// gather asks the owners of items for their results and calls finish with all of them in
// request order once the last owner has called done. Items are split by ownerOf, in
// order of first appearance; each owner gets one call of ask with its items (in request
// order) and a result slot per item, and must call done once, from any goroutine. A
// second done is ignored. gather returns when every owner's method has returned, and
// owners do not wait in them (nodemgr), so it runs within a queue job without holding
// the worker, or within another owner's done (browse rounds, target descriptions).
func gather[I, R any](items []I, ownerOf func(*I) *owner, ask func(o *owner, items []I, results []R, done func()), finish func([]R)) {
	type group struct {
		owner *owner
		index []int
	}
	var groups []group
	for i := range items {
		o := ownerOf(&items[i])
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
	results := make([]R, len(items))
	if len(groups) == 0 {
		finish(results)
		return
	}
	var left atomic.Int32
	left.Store(int32(len(groups)))
	for _, g := range groups {
		part, res := items, results
		if len(g.index) < len(items) {
			part, res = make([]I, len(g.index)), make([]R, len(g.index))
			for k, i := range g.index {
				part[k] = items[i]
			}
		}
		var once atomic.Bool
		ask(g.owner, part, res, func() {
			if !once.CompareAndSwap(false, true) {
				return // a second done from a faulty manager
			}
			if len(g.index) < len(items) {
				for k, i := range g.index {
					results[i] = res[k]
				}
			}
			if left.Add(-1) == 0 {
				finish(results)
			}
		})
	}
}
