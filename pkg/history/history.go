// Package history is the contract between the server's history services (Part 4
// §5.10.3 HistoryRead, §5.10.5 HistoryUpdate; Part 11) and the stores that keep the
// history of variables and event notifiers, plus the aggregates of Part 13 over raw
// values and a bounded in-memory store.
//
// A store keeps each node's values in the order of their SourceTimestamp (ties in the
// order they came). The operations are plain data, take a context and answer per item,
// so that a node manager, a process plugin or a historian behind one can implement
// Store as well as the stores shipped with the server.
package history

import (
	"context"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// Store keeps the value history of variables. Its methods are safe for concurrent use.
// An error means the store as a whole failed (closed, ctx ended); the items' outcomes are
// in the op's Results otherwise.
type Store interface {
	// Append records values as they happen (a variable with Historizing set changed).
	// Each value is appended after the node's values of the same SourceTimestamp.
	Append(ctx context.Context, values []Value) error
	// ReadRaw answers the raw and modified reads of op (Part 11 §6.5.3).
	ReadRaw(ctx context.Context, op *ReadRawOp) error
	// Update inserts, replaces or upserts the values of op (Part 11 §6.9.2).
	Update(ctx context.Context, op *UpdateOp) error
	// DeleteRaw deletes the raw or modified values in a time range (Part 11 §6.9.5).
	DeleteRaw(ctx context.Context, op *DeleteRawOp) error
	// DeleteAtTime deletes the raw values at given times (Part 11 §6.9.6).
	DeleteAtTime(ctx context.Context, op *DeleteAtTimeOp) error
}

// EventStore keeps the events of notifiers (Part 11 §6.5.2). It is an optional
// capability of a Store.
type EventStore interface {
	// AppendEvents records events as they are emitted.
	AppendEvents(ctx context.Context, events []Event) error
	// ReadEvents answers the event reads of op, oldest first or newest first.
	ReadEvents(ctx context.Context, op *ReadEventsOp) error
}

// Value is one value of a node's history.
type Value struct {
	Node  codec.NodeId
	Value codec.DataValue
}

// ReadRawOp is a batch of raw reads. Results has one entry per item, written by the
// store.
type ReadRawOp struct {
	Items   []RawRead
	Results []RawResult
}

// RawRead reads the values of Node from Start to End (Part 11 §6.5.3.1): Start is
// included and End is not. End before Start reads newest first; a zero End reads forward
// from Start and a zero Start backward from End, both until Max values. Bounds adds the
// bounding values (the nearest value at or outside each end, or one with
// BadBoundNotFound at that time). Modified reads the values that updates and deletes
// replaced, with their ModificationInfos, instead of the raw ones (no bounds).
type RawRead struct {
	Node       codec.NodeId
	Start, End codec.DateTime
	// Max is the most values returned, bounds included; 0 is no limit.
	Max      int
	Bounds   bool
	Modified bool
	// Position resumes a read that stopped at Max: the Next of its previous result.
	Position []byte
}

// RawResult is the answer to a RawRead. Status is Good, or BadNoData when the range
// holds no value, BadContinuationPointInvalid for a Position the store cannot resume
// from. Next is set when values remain; the store keeps nothing for it.
type RawResult struct {
	Status        status.Code
	Values        []codec.DataValue
	Modifications []ua.ModificationInfo // with Modified, one per value
	Next          []byte
}

// UpdateOp is a batch of updates, one result per item.
type UpdateOp struct {
	// User is the name recorded in the ModificationInfos.
	User    string
	Time    codec.DateTime // the ModificationTime
	Items   []Update
	Results []ItemResult
}

// Update is one UpdateDataDetails (Part 11 §6.9.2): Insert fails on a value with the
// same SourceTimestamp (BadEntryExists), Replace on none (BadNoEntryExists), Update
// does either.
type Update struct {
	Node   codec.NodeId
	Kind   ua.PerformUpdateType
	Values []codec.DataValue
}

// ItemResult is the outcome of one update or delete: Status for the item and, for
// updates and deletes at time, one code per value or time (GoodEntryInserted,
// GoodEntryReplaced, BadEntryExists, BadNoEntryExists...).
type ItemResult struct {
	Status     status.Code
	Operations []status.Code
}

// DeleteRawOp is a batch of range deletions, one result per item.
type DeleteRawOp struct {
	User    string
	Time    codec.DateTime
	Items   []DeleteRaw
	Results []ItemResult
}

// DeleteRaw deletes the values of Node with Start <= SourceTimestamp < End (Part 11
// §6.9.5); Modified deletes from the modified values instead. BadNoData when none.
type DeleteRaw struct {
	Node       codec.NodeId
	Start, End codec.DateTime
	Modified   bool
}

// DeleteAtTimeOp is a batch of deletions at given times, one result per item.
type DeleteAtTimeOp struct {
	User    string
	Time    codec.DateTime
	Items   []DeleteAtTime
	Results []ItemResult
}

// DeleteAtTime deletes the value of Node at each of Times (Part 11 §6.9.6).
type DeleteAtTime struct {
	Node  codec.NodeId
	Times []codec.DateTime
}

// Event is one event of a notifier: its time and its fields by key (the browse path
// of the field as the server's event filter names it, "0:Severity").
type Event struct {
	Notifier codec.NodeId
	Time     codec.DateTime
	Type     codec.NodeId
	Fields   []EventField
}

// EventField is one field of an Event.
type EventField struct {
	Key   string
	Value codec.Variant
}

// ReadEventsOp is a batch of event reads, one result per item.
type ReadEventsOp struct {
	Items   []EventRead
	Results []EventResult
}

// EventRead reads the events of Notifier as RawRead reads values (no bounds).
type EventRead struct {
	Notifier   codec.NodeId
	Start, End codec.DateTime
	Max        int
	Position   []byte
}

// EventResult is the answer to an EventRead.
type EventResult struct {
	Status status.Code
	Events []Event
	Next   []byte
}

// Historian bits of a DataValue's StatusCode (Part 4 §7.34.1, Part 11 §6.3): the
// info type DataValue, and how the value was made.
const (
	infoTypeDataValue status.Code = 0x0400
	// Calculated: an aggregate computed the value.
	Calculated = infoTypeDataValue | 0x01
	// Interpolated: the value lies between raw values.
	Interpolated = infoTypeDataValue | 0x02
	// Partial: the interval is not complete.
	Partial = infoTypeDataValue | 0x04
	// MultiValue: more than one raw value qualified (Minimum, Maximum).
	MultiValue = infoTypeDataValue | 0x10
)
