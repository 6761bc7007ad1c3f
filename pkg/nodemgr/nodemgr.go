// Package nodemgr is the contract between the server and the node managers that serve
// its namespaces.
//
// The server's own manager is its in-memory address space, which serves namespace 0 and
// the demo namespace; Go code mounts further managers through the server's options, and
// the configuration mounts managers that live elsewhere: WASM modules run under wazero
// and plugin processes run under hashicorp/go-plugin (module uastack.dev/plugins). For
// them every operation, result and lifecycle call has a binary encoding and a Frame to
// travel in, and package nodemgrtest is the conformance kit that every manager passes,
// in-process or behind a boundary.
//
// Operations are batched and context-first: the server groups the items of a request by
// namespace and hands each manager one operation holding its items and a result slot per
// item. Every result carries its own StatusCode, and a manager sets each result whole
// (its StatusCode included) rather than relying on the slots being zero. The operations
// are plain data built from codec and ua types, so that the same contract can cross a
// WASM sandbox or a process boundary unchanged: no closures, channels or pointers into
// server state travel inside them.
//
// Completion is explicit. A manager fills the results and calls done exactly once: before
// returning when it answers from memory, or later from any goroutine when it waits on a
// device, a guest or another process. The server releases its worker as soon as the
// method returns, so a manager that waits never holds one. The server may start further
// operations, on this manager too, from within done (a Browse's targets are described
// that way), so a manager must not hold its own locks while it calls done, and its
// methods must return without waiting. When ctx ends (the request timed out or its
// channel closed) a manager that waits gives up, fills the results it has not got (with
// BadTimeout, say) and calls done; the server drops results that come too late.
//
// Ownership: an operation and everything in it belong to the server. The manager reads
// the items and writes the results from the call until it calls done, and keeps
// nothing of the operation afterwards. Results may share memory with the manager's own
// state (the address space shares array values) only if that memory is never modified
// afterwards, since the server encodes the results after done.
//
// Concurrency: the server calls Read, Write, Browse, Call and Health from many goroutines
// at once; Watch from one goroutine at a time; Mount, Start and Close once each, alone.
// The order is Namespaces and Mount when the manager is registered, Start before the
// server serves, then operations, Watch and Health, and Close when the server stops.
//
// Every service goes through this contract, namespace 0 and the demo namespace included:
// the server routes each item of Read, Write, Call (by ObjectId) and Browse to the
// manager of its node's namespace. TranslateBrowsePathsToNodeIds needs no capability of
// its own: the server resolves each RelativePath step with a Browse of the current nodes
// by their owner, so a path may cross from one manager into another. BrowseNext never
// reaches a manager: the server holds the references left over by Browse.
//
// References may cross namespaces. A manager answers the references of its own nodes,
// including those whose targets belong to another namespace (the inverse Organizes to
// ObjectsFolder of a root, a HasTypeDefinition to a namespace 0 type). It need not know
// anything about such targets: the server asks their owner for NodeClass, BrowseName,
// DisplayName and TypeDefinition when the ResultMask wants them and applies the
// NodeClassMask itself, so it passes a mounted manager a NodeClassMask of 0. A Mounter
// names the references the server adds from nodes of other namespaces to its roots, so
// that its nodes are reachable from the Objects folder.
//
// Values reach monitored items in one of two ways. The server samples a manager with
// Reads at each item's sampling interval; or, for a Watcher, it says which (node,
// attribute) pairs are monitored and how fast, and the manager pushes their changes
// through the Notifier its Host gives it at Start. Events are always pushed, by a Starter.
//
// Optional capabilities are optional interfaces: Reader, Writer, Browser, Caller,
// Mounter, Starter, Closer, Watcher and HealthReporter (Capabilities names them as
// bits). The server asks for them with a type assertion once, when the manager is
// registered. For a manager without an operation's capability, the server answers every
// item of that service with a Bad StatusCode: BadNotReadable, BadNotWritable,
// BadNotExecutable, or BadNodeIdUnknown for Browse.
package nodemgr

import (
	"context"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// Manager serves the nodes of one or more namespaces.
type Manager interface {
	// Namespaces returns the URIs of the namespaces this manager serves. The server maps
	// them to indexes in its NamespaceArray and passes NodeIds with those indexes.
	Namespaces() []string
}

// Principal is who asks, as plain data: enough for a manager to decide access.
type Principal struct {
	// SessionID is the server-assigned NodeId of the session.
	SessionID codec.NodeId
	// Anonymous, UserName and Thumbprint tell how the user authenticated; UserName and
	// Thumbprint name the user where they apply.
	Anonymous  bool
	UserName   string
	Thumbprint string
	// Roles are the well-known role NodeIds granted to the user (Part 3 §4.9).
	Roles []codec.NodeId
}

// ReadOp reads attributes of nodes (Part 4 §5.10.2). Results[i] answers Items[i]; a
// manager sets every result, using the StatusCode for per-item failures such as
// BadNodeIdUnknown or BadAttributeIdInvalid.
type ReadOp struct {
	Principal  Principal
	MaxAge     float64
	Timestamps ua.TimestampsToReturn
	Items      []ua.ReadValueId
	Results    []codec.DataValue
	// Now is the time of the read, for ServerTimestamps: the server passes the time the
	// request arrived, so that a manager answering at once need not read the clock. Zero
	// means unknown; read the clock.
	Now codec.DateTime
}

// Reader answers reads.
type Reader interface {
	Read(ctx context.Context, op *ReadOp, done func())
}

// WriteOp writes attributes (Part 4 §5.10.4). Results[i] answers Items[i].
type WriteOp struct {
	Principal Principal
	Items     []ua.WriteValue
	Results   []status.Code
}

// Writer answers writes.
type Writer interface {
	Write(ctx context.Context, op *WriteOp, done func())
}

// BrowseOp asks for the references of nodes (Part 4 §5.9.2). A manager returns every
// reference that matches each description; the server applies MaxReferencesPerNode and
// holds continuation points, so managers need not keep browse state. The server passes
// NodeClassMask 0 and sets BrowseResultMaskNodeClass in ResultMask, then filters by
// the client's NodeClassMask on the NodeClass of each target (see the package doc for
// targets in other namespaces).
type BrowseOp struct {
	Principal Principal
	View      ua.ViewDescription
	Items     []ua.BrowseDescription
	Results   []BrowseResult
}

// BrowseResult is the answer for one BrowseDescription.
type BrowseResult struct {
	Status     status.Code
	References []ua.ReferenceDescription
}

// Browser answers browses.
type Browser interface {
	Browse(ctx context.Context, op *BrowseOp, done func())
}

// CallOp calls methods (Part 4 §5.11.2). Results[i] answers Items[i], with an argument
// result per input argument where arguments are checked.
type CallOp struct {
	Principal Principal
	Items     []ua.CallMethodRequest
	Results   []ua.CallMethodResult
}

// Caller answers method calls.
type Caller interface {
	Call(ctx context.Context, op *CallOp, done func())
}

// Mounter is a Manager whose nodes hang below nodes of other namespaces, typically its
// root Objects below the Objects folder (i=85) of namespace 0.
type Mounter interface {
	// Mount is called once, when the server registers the manager, with the
	// NamespaceArray index of each URI of Namespaces, in that order: the manager builds
	// its NodeIds with them. It returns the references the server adds from nodes of
	// other namespaces to nodes of this manager; the source must be a node of the
	// server's address space (namespace 0 or the demo namespace). The manager's own
	// Browse answers the inverse references of its nodes.
	Mount(indexes []uint16) []Mount
}

// Mount is a reference from a node of another namespace (SourceId) to a node of the
// mounting manager (TargetId), such as Organizes (i=35) from ObjectsFolder (i=85).
type Mount struct {
	SourceId        codec.NodeId
	ReferenceTypeId codec.NodeId
	TargetId        codec.NodeId
}
