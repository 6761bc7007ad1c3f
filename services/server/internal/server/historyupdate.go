package server

import (
	"context"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/pipeline"
)

// historyUpdate answers HistoryUpdate (Part 4 §5.10.5, Part 11 §6.9): inserts,
// replacements and updates of values, deletions of a range and at given times, each
// with its own result. The principal needs HistoryWrite in the node's UserAccessLevel,
// checked for every detail in one Read. Event updates and deletions are
// BadHistoryOperationUnsupported. Consecutive details of one kind go to the stores as
// one operation (a crossing per owner for a plugin's nodes); the details are applied in
// request order, since one may undo what another did.
func (s *Server) historyUpdate(r *pipeline.Request[*conn], m *ua.HistoryUpdateRequest) codec.Structure {
	if code := pipeline.CheckCount(len(m.HistoryUpdateDetails), s.cfg.History.MaxNodesPerUpdate); code != status.Good {
		return r.Fault(code)
	}
	results := make([]ua.HistoryUpdateResult, len(m.HistoryUpdateDetails))
	respond := func() codec.Structure {
		return &ua.HistoryUpdateResponse{ResponseHeader: r.ResponseHeader(status.Good), Results: results}
	}
	if s.hist == nil {
		for i := range results {
			results[i].StatusCode = status.BadHistoryOperationUnsupported
		}
		return respond()
	}
	var nodes []codec.NodeId
	var at []int // the detail of each of nodes
	for i := range m.HistoryUpdateDetails {
		var node codec.NodeId
		switch d := m.HistoryUpdateDetails[i].Value.(type) {
		case *ua.UpdateDataDetails:
			node = d.NodeId
		case *ua.DeleteRawModifiedDetails:
			node = d.NodeId
		case *ua.DeleteAtTimeDetails:
			node = d.NodeId
		case *ua.UpdateStructureDataDetails, *ua.UpdateEventDetails, *ua.DeleteEventDetails:
			results[i].StatusCode = status.BadHistoryOperationUnsupported
			continue
		default:
			results[i].StatusCode = status.BadHistoryOperationInvalid
			continue
		}
		nodes = append(nodes, node)
		at = append(at, i)
	}
	u := updater{s: s, ctx: r.Ctx, results: results, user: r.Principal.UserName, now: codec.DateTimeOf(s.now())}
	for k, code := range s.historyAccessAll(r.Ctx, r.Principal, nodes, false, true) {
		i := at[k]
		if code != status.Good {
			results[i].StatusCode = code
			continue
		}
		u.add(i, m.HistoryUpdateDetails[i].Value)
	}
	u.flush()
	return respond()
}

// updater gathers consecutive details of one kind into one store operation.
type updater struct {
	s       *Server
	ctx     context.Context
	results []ua.HistoryUpdateResult
	user    string
	now     codec.DateTime

	kind    int   // of the details gathered: 0 none, 1 update, 2 delete raw, 3 delete at time
	at      []int // the detail of each item gathered
	updates []history.Update
	raws    []history.DeleteRaw
	times   []history.DeleteAtTime
}

// add gathers detail i, d, after checking its arguments; a detail of another kind than
// those gathered sends them first.
func (u *updater) add(i int, d any) {
	limit := u.s.cfg.History.MaxValuesPerRead
	res := &u.results[i]
	switch d := d.(type) {
	case *ua.UpdateDataDetails:
		if res.StatusCode = pipeline.CheckCount(len(d.UpdateValues), limit); res.StatusCode != status.Good {
			return
		}
		u.switchTo(1)
		u.updates = append(u.updates, history.Update{Node: d.NodeId, Kind: d.PerformInsertReplace, Values: d.UpdateValues})
	case *ua.DeleteRawModifiedDetails:
		if d.StartTime == 0 && d.EndTime == 0 {
			res.StatusCode = status.BadInvalidTimestampArgument
			return
		}
		u.switchTo(2)
		u.raws = append(u.raws, history.DeleteRaw{Node: d.NodeId, Start: d.StartTime, End: d.EndTime, Modified: d.IsDeleteModified})
	case *ua.DeleteAtTimeDetails:
		if res.StatusCode = pipeline.CheckCount(len(d.ReqTimes), limit); res.StatusCode != status.Good {
			return
		}
		u.switchTo(3)
		u.times = append(u.times, history.DeleteAtTime{Node: d.NodeId, Times: d.ReqTimes})
	}
	u.at = append(u.at, i)
}

// switchTo sends what is gathered when it is of another kind than kind.
func (u *updater) switchTo(kind int) {
	if u.kind != kind {
		u.flush()
		u.kind = kind
	}
}

// flush sends the details gathered to the stores of their nodes' owners and answers
// them.
func (u *updater) flush() {
	if len(u.at) == 0 {
		return
	}
	res := make([]history.ItemResult, len(u.at))
	var err error
	switch u.kind {
	case 1:
		err = u.s.hist.routed.Update(u.ctx, &history.UpdateOp{User: u.user, Time: u.now, Items: u.updates, Results: res})
	case 2:
		err = u.s.hist.routed.DeleteRaw(u.ctx, &history.DeleteRawOp{User: u.user, Time: u.now, Items: u.raws, Results: res})
	case 3:
		err = u.s.hist.routed.DeleteAtTime(u.ctx, &history.DeleteAtTimeOp{User: u.user, Time: u.now, Items: u.times, Results: res})
	}
	for k, i := range u.at {
		out := &u.results[i]
		if err != nil {
			out.StatusCode = pipeline.CodeOf(err, status.BadInternalError)
			continue
		}
		out.StatusCode, out.OperationResults = res[k].Status, res[k].Operations
	}
	u.at, u.updates, u.raws, u.times = u.at[:0], nil, nil, nil
}
