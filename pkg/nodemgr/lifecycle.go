package nodemgr

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/status"
)

// Starter is a Manager that needs the server before it serves: to push values and
// events, to log, or to start its own goroutines (a device driver's poller).
type Starter interface {
	// Start is called once, after Mount and before the first operation. The manager
	// keeps host until Close returns; ctx bounds only the start-up itself and must not be
	// kept. An error fails the server's start-up; the server then does not call Close on
	// this manager, so Start releases whatever it took before it fails.
	Start(ctx context.Context, host Host) error
}

// Closer is a Manager that holds resources: goroutines, connections, a guest or a
// process.
type Closer interface {
	// Close is called once, when the server stops, after it has stopped starting
	// operations on the manager; operations still in flight have cancelled contexts and
	// their late results are dropped. Close releases everything and stops pushing; ctx
	// bounds how long the server waits.
	Close(ctx context.Context) error
}

// Host is what the server gives a Starter: its side of the contract. The server
// implements it; its methods are safe for concurrent use and valid from Start until
// Close returns.
type Host interface {
	// NamespaceIndexes returns the NamespaceArray index of each URI of the manager's
	// Namespaces, in that order (the indexes Mount was given). The caller must not
	// modify the slice.
	NamespaceIndexes() []uint16
	// Logger returns a logger named for the manager (it carries the manager's name as
	// an attribute).
	Logger() *slog.Logger
	// Now returns the server's clock, the one SourceTimestamps should agree with and
	// that tests may fake.
	Now() time.Time
	// Notifier returns where the manager pushes value changes and events.
	Notifier() Notifier
}

// Notifier takes the value changes and events a manager pushes to the server's
// monitored items (Part 4 §5.12). Its methods are safe for concurrent use and never
// wait on clients: the server copies the batch into a bounded queue and returns. When
// the queue is full it drops the batch, counts the drop in its metrics and logs it
// (at most once a minute), so a manager that pushes faster than clients take
// notifications loses values rather than stalls. Calls after Close returns are
// ignored.
type Notifier interface {
	// Changed offers new values of (node, attribute) pairs. The server copies changes
	// before it returns, so the caller may reuse the slice; the values are shared, so an
	// array a Variant holds must not be modified afterwards. Only watched pairs (see
	// Watcher) reach monitored items; the rest are dropped without cost.
	Changed(changes []DataChange)
	// Emit reports events, owned as Changed's changes are.
	Emit(events []Event)
}

// DataChange is a new value of one attribute of one node, as a device or a guest
// reports it. AttributeId is usually Value (13).
type DataChange struct {
	NodeId      codec.NodeId
	AttributeId uint32
	Value       codec.DataValue
}

// Event is one occurrence of an event (Part 3 §6.4.2, Part 5 §6.4.2) as plain data.
//
// The server fills what the manager leaves out of Fields: EventId (fresh random
// bytes), EventType and SourceNode (from the fields below), Time and ReceiveTime (when
// it took the event). Event items select fields by browse path from the event type
// (Part 4 §7.22.3), so a path the manager does not send is null for them.
type Event struct {
	// EventType is the event's type, BaseEventType (i=2041) or a subtype the server can
	// find, in namespace 0 or in the manager's namespaces.
	EventType codec.NodeId
	// SourceNode is the node the event is about.
	SourceNode codec.NodeId
	// Notifiers are the nodes the event is reported on: the source's notifier and those
	// above it in the manager's namespaces, nearest first. The server adds the Server
	// object (i=2253), which every event reaches.
	Notifiers []codec.NodeId
	// Fields are the event's field values by browse path, such as [Message] or
	// [Severity]; each path is unique.
	Fields []EventField
}

// EventField is the value of one field of an event: the BrowseNames from the event
// type to the field's instance declaration, and its value.
type EventField struct {
	BrowsePath []codec.QualifiedName
	Value      codec.Variant
}

// Watcher is a Manager told which of its (node, attribute) pairs clients monitor, so
// that a device driver polls only those and pushes what changes through its
// Notifier. The server does not sample a watched pair with Reads: its values reach
// monitored items only through the Notifier (a new monitored item takes its first
// value from a Read). A manager that is not a Watcher is sampled with Reads at each
// item's sampling interval.
type Watcher interface {
	// Watch applies a change of the watched set. The server calls it from one goroutine
	// at a time, in order, between Start and Close; the first call lists everything
	// monitored, and a pair is removed only after it was added. Watch must return
	// without waiting (as an operation's method) and copy what it keeps: the server
	// reuses set once it returns.
	Watch(ctx context.Context, set *WatchSet)
}

// WatchSet is a batch of changes to the set of watched pairs.
type WatchSet struct {
	// Add lists pairs that are now monitored, or whose fastest sampling interval changed
	// (then the pair is already watched and the new interval replaces the old).
	Add []WatchItem
	// Remove lists pairs that nobody monitors any more.
	Remove []WatchKey
}

// WatchKey names one attribute of one node.
type WatchKey struct {
	NodeId      codec.NodeId
	AttributeId uint32
}

// WatchItem is a watched pair and how often it must be sampled.
type WatchItem struct {
	NodeId      codec.NodeId
	AttributeId uint32
	// SamplingInterval is the fastest revised sampling interval, in milliseconds, of the
	// monitored items on the pair that are not disabled (Part 4 §5.12.1.2). 0 asks for
	// every change as it happens; a driver that polls polls at this interval, and
	// pushes its first sample once it has one.
	SamplingInterval float64
}

// Key returns the pair w watches.
func (w WatchItem) Key() WatchKey { return WatchKey{NodeId: w.NodeId, AttributeId: w.AttributeId} }

// HealthReporter is a Manager that can say whether it works: whether its device
// answers, its guest runs, its process lives.
type HealthReporter interface {
	// Health returns the manager's current health. It is safe for concurrent use with
	// every operation and returns without waiting on a device: it reports what the
	// manager last saw.
	Health(ctx context.Context) Health
}

// Health is a manager's report on itself.
type Health struct {
	// Status is Good when the manager serves as it should, Uncertain when it serves
	// stale or partial data, Bad when it cannot serve (BadCommunicationError,
	// BadResourceUnavailable, ...).
	Status status.Code
	// Message explains Status to an operator; it may be empty.
	Message string
	// Time is when the manager last confirmed Status (its last good poll, for a driver);
	// zero when it does not say.
	Time codec.DateTime
}

// Capabilities says which optional interfaces a Manager implements, as bits.
type Capabilities uint32

// The capabilities, one per optional interface.
const (
	CapRead          Capabilities = 1 << iota // Reader
	CapWrite                                  // Writer
	CapBrowse                                 // Browser
	CapCall                                   // Caller
	CapMount                                  // Mounter
	CapStart                                  // Starter
	CapClose                                  // Closer
	CapWatch                                  // Watcher
	CapHealth                                 // HealthReporter
	CapModels                                 // Modeler
	CapHistory                                // history.Store
	CapHistoryEvents                          // history.EventStore, with history.Store
	capEnd
)

var capNames = [...]string{"Read", "Write", "Browse", "Call", "Mount", "Start", "Close", "Watch", "Health", "Models", "History", "HistoryEvents"}

// CapabilitiesOf returns the capabilities m implements, found by type assertion as the
// server finds them.
func CapabilitiesOf(m Manager) Capabilities {
	var c Capabilities
	has := func(ok bool, bit Capabilities) {
		if ok {
			c |= bit
		}
	}
	_, ok := m.(Reader)
	has(ok, CapRead)
	_, ok = m.(Writer)
	has(ok, CapWrite)
	_, ok = m.(Browser)
	has(ok, CapBrowse)
	_, ok = m.(Caller)
	has(ok, CapCall)
	_, ok = m.(Mounter)
	has(ok, CapMount)
	_, ok = m.(Starter)
	has(ok, CapStart)
	_, ok = m.(Closer)
	has(ok, CapClose)
	_, ok = m.(Watcher)
	has(ok, CapWatch)
	_, ok = m.(HealthReporter)
	has(ok, CapHealth)
	_, ok = m.(Modeler)
	has(ok, CapModels)
	st, ok := m.(history.Store)
	has(ok, CapHistory)
	_, ok = st.(history.EventStore)
	has(ok, CapHistoryEvents)
	return c
}

// String returns the names of the capabilities joined by "|", such as "Read|Browse",
// or "none".
func (c Capabilities) String() string {
	if c == 0 {
		return "none"
	}
	var b strings.Builder
	for i, name := range capNames {
		if c&(1<<i) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString(name)
	}
	if rest := c &^ (capEnd - 1); rest != 0 {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString("0x")
		b.WriteString(strconv.FormatUint(uint64(rest), 16))
	}
	return b.String()
}
