package routing

import (
	"context"
	"fmt"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// owner is a node manager as the server routes to it: the capabilities it has, found by
// type assertion once, when it is mounted. A missing capability answers each item with a
// Bad StatusCode (see the nodemgr package doc).
type owner struct {
	name    string // for errors: the manager's type or configured name
	local   bool   // the server's own address space, answered on the channel's goroutine
	reader  nodemgr.Reader
	writer  nodemgr.Writer
	browser nodemgr.Browser
	caller  nodemgr.Caller
	// watch delivers the watch set of a started nodemgr.Watcher; nil otherwise.
	watch *watcher
}

// Named is a node manager with the name logs, errors and metrics give it: its
// configuration entry's name (addressSpace.nodeManagers[].name), or its Go type for one
// mounted from code (Unnamed).
type Named struct {
	Name    string
	Manager nodemgr.Manager
	// Setting is the configuration entry it comes from, for errors; empty for one
	// mounted from code.
	Setting string
}

// Unnamed names managers by their Go types.
func Unnamed(ms ...nodemgr.Manager) []Named {
	out := make([]Named, len(ms))
	for i, m := range ms {
		out[i] = Named{Name: fmt.Sprintf("%T", m), Manager: m}
	}
	return out
}

func newOwner(name string, m nodemgr.Manager, local bool) *owner {
	o := &owner{name: name, local: local}
	o.reader, _ = m.(nodemgr.Reader)
	o.writer, _ = m.(nodemgr.Writer)
	o.browser, _ = m.(nodemgr.Browser)
	o.caller, _ = m.(nodemgr.Caller)
	return o
}

func (o *owner) read(ctx context.Context, op *nodemgr.ReadOp, done func()) {
	if o.reader == nil {
		for i := range op.Results {
			op.Results[i] = codec.DataValue{Status: status.BadNotReadable}
		}
		done()
		return
	}
	o.reader.Read(ctx, op, done)
}

func (o *owner) write(ctx context.Context, op *nodemgr.WriteOp, done func()) {
	if o.writer == nil {
		for i := range op.Results {
			op.Results[i] = status.BadNotWritable
		}
		done()
		return
	}
	o.writer.Write(ctx, op, done)
}

func (o *owner) browse(ctx context.Context, op *nodemgr.BrowseOp, done func()) {
	if o.browser == nil {
		for i := range op.Results {
			op.Results[i] = nodemgr.BrowseResult{Status: status.BadNodeIdUnknown}
		}
		done()
		return
	}
	o.browser.Browse(ctx, op, done)
}

func (o *owner) call(ctx context.Context, op *nodemgr.CallOp, done func()) {
	if o.caller == nil {
		for i := range op.Results {
			op.Results[i] = ua.CallMethodResult{StatusCode: status.BadNotExecutable}
		}
		done()
		return
	}
	o.caller.Call(ctx, op, done)
}
