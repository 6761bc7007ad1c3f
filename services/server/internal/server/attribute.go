package server

import (
	"slices"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/diagnostics"
	"uastack.dev/services/server/internal/pipeline"
)

// read answers Read (Part 4 §5.10.2): inline from the address space, or through the
// request queue when an item reaches a mounted node manager (readRouted). Per-item
// failures such as BadNodeIdUnknown and BadAttributeIdInvalid come from the owners.
func (s *Server) read(r *pipeline.Request[*conn], m *ua.ReadRequest) {
	h := r.Header // m is recycled only after the response is encoded
	if code := s.checkRead(m); code != status.Good {
		r.Respond(r.Fault(code))
		r.Req.Recycle()
		return
	}
	if !s.routes.Local(len(m.NodesToRead), func(i int) uint16 { return m.NodesToRead[i].NodeId.Namespace() }) {
		s.readRouted(r, m)
		return
	}
	// Answered at once: the time the request was read stands for now throughout.
	now := r.Now()
	rs := &r.Conn.read
	// Field by field: release left the rest as it must be.
	rs.op.Principal = *r.Principal
	rs.op.MaxAge, rs.op.Timestamps = m.MaxAge, m.TimestampsToReturn
	rs.op.Items = m.NodesToRead
	rs.op.Results = slices.Grow(rs.results[:0], len(m.NodesToRead))[:len(m.NodesToRead)]
	rs.op.Now = codec.DateTimeOf(now)
	// The Space answers before Read returns, and Send has encoded the response before it
	// returns: after that nothing refers to rs, the request or its slices.
	s.space.Read(r.Ctx, &rs.op, func() {
		// Field by field: the header's other fields stay zero, and a whole-struct store
		// costs a bulk write barrier.
		rh := &rs.resp.ResponseHeader
		rh.Timestamp, rh.RequestHandle, rh.ServiceResult = codec.DateTimeOf(now), h.RequestHandle, status.Good
		rs.resp.Results = rs.op.Results
		if s.diag.Enabled() {
			r.Conn.countersOf(s, &h.AuthenticationToken).Count(diagnostics.SvcRead, status.Good)
		}
		r.Send(&rs.resp)
	})
	rs.release()
	r.Req.Recycle()
}

// countersOf returns the diagnostics counters of the session the channel remembers,
// whose authentication token the request named: looked up again only when the session
// changed.
func (c *conn) countersOf(s *Server, token *codec.NodeId) *diagnostics.Counters {
	if live := c.pipe.Memory.Session(); live != c.counted {
		c.counters, c.counted = s.diag.CountersOf(*token), live
	}
	return c.counters
}

// readState is the memory of one inline Read: the operation handed to the Space and the
// response encoded from its Results. A channel has one, in use from the start of a Read
// until release, which follows the encoding of the response.
type readState struct {
	op      nodemgr.ReadOp
	resp    ua.ReadResponse
	results []codec.DataValue
}

// maxKeptResults bounds the Results slice a readState keeps between Reads.
const maxKeptResults = 1024

// release clears what of rs refers to values of the Space or to the request, field by
// field: a whole-struct reset of memory with pointers costs a bulk write barrier per Read.
// The rest (the Principal, MaxAge, the response's header) is set anew by the next Read.
func (rs *readState) release() {
	results := rs.op.Results
	clear(results)
	if cap(results) > maxKeptResults {
		results = nil
	}
	rs.results = results[:0]
	rs.op.Items, rs.op.Results, rs.resp.Results = nil, nil, nil
}

// checkRead makes the checks of a Read that come before any node is read, after the
// session's: BadNothingToDo and BadTooManyOperations (OperationLimits.MaxNodesPerRead),
// MaxAge and TimestampsToReturn.
func (s *Server) checkRead(m *ua.ReadRequest) status.Code {
	code := pipeline.CheckCount(len(m.NodesToRead), s.cfg.OperationLimits.MaxNodesPerRead)
	if code == status.Good && m.MaxAge < 0 {
		code = status.BadMaxAgeInvalid
	}
	if code == status.Good {
		code = checkTimestamps(m.TimestampsToReturn)
	}
	return code
}

// checkTimestamps is BadTimestampsToReturnInvalid for an unknown TimestampsToReturn.
func checkTimestamps(ts ua.TimestampsToReturn) status.Code {
	if ts < ua.TimestampsToReturnSource || ts > ua.TimestampsToReturnNeither {
		return status.BadTimestampsToReturnInvalid
	}
	return status.Good
}

// write answers Write (Part 4 §5.10.4): BadNothingToDo and BadTooManyOperations
// (OperationLimits.MaxNodesPerWrite) as a ServiceFault, then one WriteOp to each owner of
// the nodes: inline when the Space owns them all, through the request queue when a
// mounted manager owns one (writeRouted). Per-item failures such as BadNodeIdUnknown,
// BadNotWritable and BadTypeMismatch come from the owners.
func (s *Server) write(r *pipeline.Request[*conn], m *ua.WriteRequest) {
	if code := pipeline.CheckCount(len(m.NodesToWrite), s.cfg.OperationLimits.MaxNodesPerWrite); code != status.Good {
		r.Respond(r.Fault(code))
		return
	}
	if !s.routes.Local(len(m.NodesToWrite), func(i int) uint16 { return m.NodesToWrite[i].NodeId.Namespace() }) {
		s.writeRouted(r, m)
		return
	}
	op := &nodemgr.WriteOp{
		Principal: *r.Principal,
		Items:     m.NodesToWrite,
		Results:   make([]status.Code, len(m.NodesToWrite)),
	}
	s.space.Write(r.Ctx, op, func() {
		if s.mirror != nil {
			s.mirrorWrites(r.Ctx, op)
		}
		r.Respond(&ua.WriteResponse{ResponseHeader: r.ResponseHeader(status.Good), Results: op.Results})
	})
}
