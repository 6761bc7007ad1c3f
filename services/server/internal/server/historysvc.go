package server

import (
	"context"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/pipeline"
	"uastack.dev/services/server/internal/subscription"
)

// maxProcessedRaw bounds the raw values one node's processed read takes from the store;
// a range holding more is BadResponseTooLarge.
const maxProcessedRaw = 1_000_000

// historyRead answers HistoryRead (Part 4 §5.10.3, Part 11 §6.5): raw and modified
// values, processed values, values at given times and events, from the history store.
// It runs on a worker, since a store may wait. Counts, TimestampsToReturn and details
// the server cannot read are ServiceFaults; access, a node that keeps no history and a
// continuation point not held are results of the node.
func (s *Server) historyRead(r *pipeline.Request[*conn], m *ua.HistoryReadRequest) codec.Structure {
	if code := pipeline.CheckCount(len(m.NodesToRead), s.cfg.History.MaxNodesPerRead); code != status.Good {
		return r.Fault(code)
	}
	if code := checkTimestamps(m.TimestampsToReturn); code != status.Good || m.TimestampsToReturn == ua.TimestampsToReturnNeither {
		return r.Fault(status.BadTimestampsToReturnInvalid)
	}
	results := make([]ua.HistoryReadResult, len(m.NodesToRead))
	respond := func() codec.Structure {
		return &ua.HistoryReadResponse{ResponseHeader: r.ResponseHeader(status.Good), Results: results}
	}
	if s.hist == nil {
		for i := range results {
			results[i].StatusCode = status.BadHistoryOperationUnsupported
		}
		return respond()
	}
	sess := r.Principal.SessionID
	if m.ReleaseContinuationPoints {
		// Part 11 §6.3: the points are released and no data is returned.
		for i, n := range m.NodesToRead {
			if len(n.ContinuationPoint) > 0 {
				if _, ok := s.hist.points.take(sess, n.ContinuationPoint); !ok {
					results[i].StatusCode = status.BadContinuationPointInvalid
				}
			}
		}
		return respond()
	}
	rd := historyReader{s: s, ctx: r.Ctx, p: r.Principal, m: m, results: results}
	var code status.Code
	switch d := m.HistoryReadDetails.Value.(type) {
	case *ua.ReadRawModifiedDetails:
		code = rd.raw(d)
	case *ua.ReadProcessedDetails:
		code = rd.processed(d)
	case *ua.ReadAtTimeDetails:
		code = rd.atTime(d)
	case *ua.ReadEventDetails:
		code = rd.events(d)
	case nil:
		code = status.BadHistoryOperationInvalid
	default:
		code = status.BadHistoryOperationUnsupported
	}
	if code != status.Good {
		return r.Fault(code)
	}
	return respond()
}

// historyReader is one HistoryRead on its way.
type historyReader struct {
	s       *Server
	ctx     context.Context
	p       *nodemgr.Principal
	m       *ua.HistoryReadRequest
	results []ua.HistoryReadResult
	// access is the outcome of the access check of each node, made once (check).
	access []status.Code
}

// limit is the values per node of a page: the client's NumValuesPerNode (0: all) within
// history.maxValuesPerRead and the node's share of history.maxValuesPerResponse, so
// that one answer holds a bounded number of values however many nodes it reads.
func (rd *historyReader) limit(n uint32) int {
	h := rd.s.cfg.History
	max := min(h.MaxValuesPerRead, max(1, h.MaxValuesPerResponse/len(rd.m.NodesToRead)))
	if n > 0 && int64(n) < int64(max) {
		return int(n)
	}
	return max
}

// fits reports whether perNode values for each node read stay within
// history.maxValuesPerResponse.
func (rd *historyReader) fits(perNode int) bool {
	return int64(perNode)*int64(len(rd.m.NodesToRead)) <= int64(rd.s.cfg.History.MaxValuesPerResponse)
}

// check answers the node's result with a code when the read cannot go on: a
// continuation point given where the read takes none, an index range or data encoding
// history does not serve, or access (historyAccessAll, once for all the nodes).
func (rd *historyReader) check(i int, events bool) bool {
	n := &rd.m.NodesToRead[i]
	code := status.Good
	switch {
	case n.IndexRange != "":
		code = status.BadIndexRangeNoData
	case n.DataEncoding.Name != "" && n.DataEncoding.Name != "Default Binary":
		code = status.BadDataEncodingUnsupported
	default:
		if rd.access == nil {
			// One Read of the attributes of every node, through their owners.
			nodes := make([]codec.NodeId, len(rd.m.NodesToRead))
			for k := range nodes {
				nodes[k] = rd.m.NodesToRead[k].NodeId
			}
			rd.access = rd.s.historyAccessAll(rd.ctx, rd.p, nodes, events, false)
		}
		code = rd.access[i]
	}
	rd.results[i].StatusCode = code
	return code == status.Good
}

// timeArgs checks the times of a raw or event read (Part 11 §6.5.2-3): at least one,
// and NumValuesPerNode when only one is given.
func timeArgs(start, end codec.DateTime, perNode uint32) status.Code {
	if start == 0 && end == 0 || (start == 0 || end == 0) && perNode == 0 {
		return status.BadInvalidTimestampArgument
	}
	return status.Good
}

// raw reads raw or modified values (Part 11 §6.5.3).
func (rd *historyReader) raw(d *ua.ReadRawModifiedDetails) status.Code {
	if code := timeArgs(d.StartTime, d.EndTime, d.NumValuesPerNode); code != status.Good {
		return code
	}
	op := &history.ReadRawOp{}
	var at []int // the result index of each item of op
	for i, n := range rd.m.NodesToRead {
		var q history.RawRead
		if len(n.ContinuationPoint) > 0 {
			p, ok := rd.s.hist.points.take(rd.p.SessionID, n.ContinuationPoint)
			if !ok || p.raw == nil || p.node != n.NodeId {
				rd.results[i].StatusCode = status.BadContinuationPointInvalid
				continue
			}
			q = *p.raw
		} else {
			if !rd.check(i, false) {
				continue
			}
			q = history.RawRead{Node: n.NodeId, Start: d.StartTime, End: d.EndTime, Max: rd.limit(d.NumValuesPerNode),
				Bounds: d.ReturnBounds && !d.IsReadModified, Modified: d.IsReadModified}
		}
		op.Items = append(op.Items, q)
		at = append(at, i)
	}
	if len(op.Items) == 0 {
		return status.Good
	}
	op.Results = make([]history.RawResult, len(op.Items))
	if err := rd.s.hist.routed.ReadRaw(rd.ctx, op); err != nil {
		return pipeline.CodeOf(err, status.BadInternalError)
	}
	for k, res := range op.Results {
		i := at[k]
		out := &rd.results[i]
		out.StatusCode = res.Status
		if res.Status.IsBad() {
			continue
		}
		stampHistory(res.Values, rd.m.TimestampsToReturn)
		if op.Items[k].Modified {
			out.HistoryData = codec.NewExtensionObject(&ua.HistoryModifiedData{DataValues: res.Values, ModificationInfos: res.Modifications})
		} else {
			out.HistoryData = codec.NewExtensionObject(&ua.HistoryData{DataValues: res.Values})
		}
		if res.Next != nil {
			q := op.Items[k]
			q.Position = res.Next
			out.ContinuationPoint, out.StatusCode = rd.s.hist.points.save(rd.p.SessionID, &historyPoint{node: q.Node, raw: &q},
				rd.s.cfg.History.MaxContinuationPoints)
			if out.StatusCode != status.Good {
				out.HistoryData = codec.ExtensionObject{}
			}
		}
	}
	return status.Good
}

// processed computes aggregates over processing intervals (Part 11 §6.5.4, Part 13)
// from the raw values of the whole range with its bounds, one node at a time. The
// intervals of one read are bounded by history.maxValuesPerRead, and times the nodes by
// history.maxValuesPerResponse; no continuation point is given.
func (rd *historyReader) processed(d *ua.ReadProcessedDetails) status.Code {
	if len(d.AggregateType) != len(rd.m.NodesToRead) {
		return status.BadAggregateListMismatch
	}
	cfg, code := history.ConfigOf(&d.AggregateConfiguration)
	if code != status.Good {
		return code
	}
	ivs, code := history.Intervals(d.StartTime, d.EndTime, d.ProcessingInterval)
	if code != status.Good {
		return code
	}
	if len(ivs) > rd.s.cfg.History.MaxValuesPerRead || !rd.fits(len(ivs)) {
		return status.BadTooManyOperations
	}
	lo, hi := min(d.StartTime, d.EndTime), max(d.StartTime, d.EndTime)
	full := codec.DateTime(d.ProcessingInterval * 10_000)
	if full <= 0 || full > hi-lo {
		full = hi - lo
	}
	for i, n := range rd.m.NodesToRead {
		if len(n.ContinuationPoint) > 0 {
			rd.results[i].StatusCode = status.BadContinuationPointInvalid
			continue
		}
		if !rd.check(i, false) {
			continue
		}
		op := &history.ReadRawOp{Items: []history.RawRead{{Node: n.NodeId, Start: lo, End: hi, Bounds: true, Max: maxProcessedRaw}},
			Results: make([]history.RawResult, 1)}
		if err := rd.s.hist.routed.ReadRaw(rd.ctx, op); err != nil {
			return pipeline.CodeOf(err, status.BadInternalError)
		}
		if op.Results[0].Next != nil {
			rd.results[i].StatusCode = status.BadResponseTooLarge
			continue
		}
		out, code := history.Process(d.AggregateType[i], op.Results[0].Values, ivs, full, cfg)
		rd.results[i].StatusCode = code
		if code != status.Good {
			continue
		}
		stampHistory(out, rd.m.TimestampsToReturn)
		rd.results[i].HistoryData = codec.NewExtensionObject(&ua.HistoryData{DataValues: out})
	}
	return status.Good
}

// atTime reads the values at given times (Part 11 §6.5.5), each from a raw read around
// it (history.AtTime).
func (rd *historyReader) atTime(d *ua.ReadAtTimeDetails) status.Code {
	if code := pipeline.CheckCount(len(d.ReqTimes), rd.s.cfg.History.MaxValuesPerRead); code != status.Good {
		return code
	}
	if !rd.fits(len(d.ReqTimes)) {
		return status.BadTooManyOperations
	}
	for i, n := range rd.m.NodesToRead {
		if len(n.ContinuationPoint) > 0 {
			rd.results[i].StatusCode = status.BadContinuationPointInvalid
			continue
		}
		if !rd.check(i, false) {
			continue
		}
		op := &history.ReadRawOp{Items: make([]history.RawRead, len(d.ReqTimes)), Results: make([]history.RawResult, len(d.ReqTimes))}
		for k, t := range d.ReqTimes {
			op.Items[k] = history.RawRead{Node: n.NodeId, Start: t, End: t + 1, Bounds: true, Max: 3}
		}
		if err := rd.s.hist.routed.ReadRaw(rd.ctx, op); err != nil {
			return pipeline.CodeOf(err, status.BadInternalError)
		}
		out := make([]codec.DataValue, len(d.ReqTimes))
		for k, t := range d.ReqTimes {
			out[k] = history.AtTime(op.Results[k].Values, t, d.UseSimpleBounds)
		}
		stampHistory(out, rd.m.TimestampsToReturn)
		rd.results[i].HistoryData = codec.NewExtensionObject(&ua.HistoryData{DataValues: out})
	}
	return status.Good
}

// eventPoint is where an event read stopped, with its compiled filter.
type eventPoint struct {
	read   history.EventRead
	filter *subscription.EventFilter
}

// events reads the events of notifiers (Part 11 §6.5.2) and selects their fields with
// the request's EventFilter, as a subscription's event item would.
func (rd *historyReader) events(d *ua.ReadEventDetails) status.Code {
	if code := timeArgs(d.StartTime, d.EndTime, d.NumValuesPerNode); code != status.Good {
		return code
	}
	filter, _, code := subscription.CompileEventFilter(&d.Filter, rd.s.eventTypes)
	if code != status.Good {
		return code
	}
	for i, n := range rd.m.NodesToRead {
		var q history.EventRead
		f := filter
		if len(n.ContinuationPoint) > 0 {
			p, ok := rd.s.hist.points.take(rd.p.SessionID, n.ContinuationPoint)
			if !ok || p.event == nil || p.node != n.NodeId {
				rd.results[i].StatusCode = status.BadContinuationPointInvalid
				continue
			}
			q, f = p.event.read, p.event.filter
		} else {
			if !rd.check(i, true) {
				continue
			}
			q = history.EventRead{Notifier: n.NodeId, Start: d.StartTime, End: d.EndTime, Max: rd.limit(d.NumValuesPerNode)}
		}
		op := &history.ReadEventsOp{Items: []history.EventRead{q}, Results: make([]history.EventResult, 1)}
		// A notifier whose owner keeps no events answers BadHistoryOperationUnsupported.
		if err := rd.s.hist.routed.ReadEvents(rd.ctx, op); err != nil {
			return pipeline.CodeOf(err, status.BadInternalError)
		}
		res := op.Results[0]
		out := &rd.results[i]
		out.StatusCode = res.Status
		if res.Status.IsBad() {
			continue
		}
		lists := make([]ua.HistoryEventFieldList, 0, len(res.Events))
		for _, ev := range res.Events {
			fields := make(map[string]codec.Variant, len(ev.Fields))
			for _, x := range ev.Fields {
				fields[x.Key] = x.Value
			}
			if sel, ok := f.Select(&subscription.Event{Type: ev.Type, Fields: fields}); ok {
				lists = append(lists, ua.HistoryEventFieldList{EventFields: sel})
			}
		}
		out.HistoryData = codec.NewExtensionObject(&ua.HistoryEvent{Events: lists})
		if res.Next != nil {
			q.Position = res.Next
			out.ContinuationPoint, out.StatusCode = rd.s.hist.points.save(rd.p.SessionID,
				&historyPoint{node: q.Notifier, event: &eventPoint{read: q, filter: f}}, rd.s.cfg.History.MaxContinuationPoints)
			if out.StatusCode != status.Good {
				out.HistoryData = codec.ExtensionObject{}
			}
		}
	}
	return status.Good
}

// stampHistory keeps the timestamps of vals the client asked for.
func stampHistory(vals []codec.DataValue, ts ua.TimestampsToReturn) {
	for i := range vals {
		v := &vals[i]
		switch ts {
		case ua.TimestampsToReturnSource:
			v.ServerTimestamp, v.ServerPicoseconds = 0, 0
		case ua.TimestampsToReturnServer:
			v.SourceTimestamp, v.SourcePicoseconds = 0, 0
		}
	}
}
