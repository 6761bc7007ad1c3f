package server

import (
	"context"
	"fmt"
	"sync/atomic"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/status"
	"uastack.dev/services/server/internal/addrspace"
)

// mountManagers returns the NamespaceArray (the namespaces of space, then those of
// managers) and, by namespace index, the Reader of each manager that has one. A URI
// served twice is an error.
func mountManagers(space *addrspace.Space, managers []nodemgr.Manager) ([]string, []nodemgr.Reader, error) {
	uris := append([]string(nil), space.Namespaces()...)
	seen := make(map[string]bool, len(uris))
	for _, u := range uris {
		seen[u] = true
	}
	var readers []nodemgr.Reader
	for _, m := range managers {
		r, _ := m.(nodemgr.Reader)
		for _, u := range m.Namespaces() {
			if seen[u] {
				return nil, nil, fmt.Errorf("node manager %T: namespace %q is served twice", m, u)
			}
			seen[u] = true
			if r != nil {
				readers = append(readers, make([]nodemgr.Reader, len(uris)+1-len(readers))...)
				readers[len(uris)] = r
			}
			uris = append(uris, u)
		}
	}
	if len(uris) > 0xffff {
		return nil, nil, fmt.Errorf("%d namespaces: more than a NamespaceIndex can address", len(uris))
	}
	return uris, readers, nil
}

// readerOf returns the Reader of namespace ns other than the in-memory Space, or nil.
func (s *Server) readerOf(ns uint16) nodemgr.Reader {
	if int(ns) < len(s.readers) {
		return s.readers[ns]
	}
	return nil
}

// routesRead reports whether m reads a node of a mounted node manager, so that it must
// go through the request queue. Without managers it costs one length check.
func (s *Server) routesRead(m *ua.ReadRequest) bool {
	if len(s.readers) == 0 {
		return false
	}
	for i := range m.NodesToRead {
		if s.readerOf(m.NodesToRead[i].NodeId.Namespace()) != nil {
			return true
		}
	}
	return false
}

// readGroup is the part of a routed Read that one node manager answers: the indexes of
// its items in the request.
type readGroup struct {
	reader nodemgr.Reader
	index  []int
}

// readRouted answers a Read some of whose items belong to mounted node managers
// (Part 4 §5.10.2). The checks run inline; then a job of the request queue hands each
// manager (and the Space, for the other items) one ReadOp and returns, so a manager that
// waits on a device holds no worker. The response is sent when the last manager calls
// done, or BadTimeout when the request's TimeoutHint passes first; a late result is
// dropped.
func (s *Server) readRouted(ctx context.Context, req uasc.Request, m *ua.ReadRequest) {
	h := m.RequestHeader
	principal, code := s.checkRead(req.Channel, m)
	if code != status.Good {
		s.respond(req, s.fault(h, code))
		return
	}
	s.enqueue(ctx, req, h, func(p *pending) {
		var groups []readGroup
		for i := range m.NodesToRead {
			r := s.readerOf(m.NodesToRead[i].NodeId.Namespace())
			if r == nil {
				r = s.space
			}
			g := -1
			for j := range groups {
				if groups[j].reader == r {
					g = j
					break
				}
			}
			if g < 0 {
				g = len(groups)
				groups = append(groups, readGroup{reader: r})
			}
			groups[g].index = append(groups[g].index, i)
		}
		results := make([]codec.DataValue, len(m.NodesToRead))
		var left atomic.Int32
		left.Store(int32(len(groups)))
		for _, g := range groups {
			op := &nodemgr.ReadOp{
				Principal:  principal,
				MaxAge:     m.MaxAge,
				Timestamps: m.TimestampsToReturn,
				Items:      make([]ua.ReadValueId, len(g.index)),
				Results:    make([]codec.DataValue, len(g.index)),
			}
			for k, i := range g.index {
				op.Items[k] = m.NodesToRead[i]
			}
			var once atomic.Bool
			g.reader.Read(p.ctx, op, func() {
				if !once.CompareAndSwap(false, true) {
					return // a second done from a faulty manager
				}
				for k, i := range g.index {
					results[i] = op.Results[k]
				}
				if left.Add(-1) == 0 {
					p.answer(&ua.ReadResponse{ResponseHeader: s.header(h, status.Good), Results: results})
				}
			})
		}
	})
}
