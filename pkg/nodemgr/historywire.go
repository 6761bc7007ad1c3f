package nodemgr

// The bodies of the history kinds: the operations of history.Store and
// history.EventStore across a boundary, so that a WASM guest or a plugin process can be
// a historian. A request carries an operation's fields but Results; its reply carries
// the Results, one per item, which the host checks against the items it sent. Fields
// are laid out in declaration order as in binary.go.

import (
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/ua"
)

// Smallest encodings of the history elements, in bytes.
const (
	minHistValue    = minNodeId + minDataValue
	minRawRead      = minNodeId + 8 + 8 + 4 + 1 + 1 + 4
	minRawResult    = 4 + 4 + 4 + 4
	minModInfo      = 8 + 4 + 4 // ModificationInfo: time, type, null user name
	minUpdate       = minNodeId + 4 + 4
	minItemResult   = 4 + 4
	minDeleteRaw    = minNodeId + 8 + 8 + 1
	minDeleteAtTime = minNodeId + 4
	minDateTime     = 8
	minHistField    = minString + minVariant
	minHistEvent    = minNodeId + 8 + minNodeId + 4
	minEventRead    = minNodeId + 8 + 8 + 4 + 4
	minEventResult  = 4 + 4 + 4
)

// HistoryValues is the request of KindHistoryAppend: the values of Store.Append.
type HistoryValues struct {
	Values []history.Value
}

// EncodeBinary appends v: Values, each Node and Value.
func (v *HistoryValues) EncodeBinary(e *codec.Encoder) { encodeArray(e, v.Values, encHistValue) }

// DecodeBinary reads v as EncodeBinary writes it.
func (v *HistoryValues) DecodeBinary(d *codec.Decoder) {
	v.Values = decodeArray(d, v.Values, minHistValue, decHistValue)
}

func encHistValue(v *history.Value, e *codec.Encoder) {
	e.NodeId(v.Node)
	e.DataValue(&v.Value)
}

func decHistValue(v *history.Value, d *codec.Decoder) {
	v.Node = d.NodeId()
	d.DataValue(&v.Value)
}

// HistoryReadRaw is the request of KindHistoryReadRaw: the items of a ReadRawOp.
type HistoryReadRaw struct {
	Items []history.RawRead
}

// EncodeBinary appends r: Items, each Node, Start, End, Max (Int32), Bounds, Modified,
// Position.
func (r *HistoryReadRaw) EncodeBinary(e *codec.Encoder) { encodeArray(e, r.Items, encRawRead) }

// DecodeBinary reads r as EncodeBinary writes it.
func (r *HistoryReadRaw) DecodeBinary(d *codec.Decoder) {
	r.Items = decodeArray(d, r.Items, minRawRead, decRawRead)
}

func encRawRead(v *history.RawRead, e *codec.Encoder) {
	e.NodeId(v.Node)
	e.DateTime(v.Start)
	e.DateTime(v.End)
	e.Int32(clampInt32(v.Max))
	e.Boolean(v.Bounds)
	e.Boolean(v.Modified)
	e.ByteString(v.Position)
}

func decRawRead(v *history.RawRead, d *codec.Decoder) {
	v.Node = d.NodeId()
	v.Start = d.DateTime()
	v.End = d.DateTime()
	v.Max = max(0, int(d.Int32()))
	v.Bounds = d.Boolean()
	v.Modified = d.Boolean()
	v.Position = d.ByteString()
}

// clampInt32 is n within an Int32: Max beyond it reads as much as an Int32 says.
func clampInt32(n int) int32 {
	return int32(min(max(n, 0), 1<<31-1))
}

// HistoryRawResults is the reply to KindHistoryReadRaw: the ReadRawOp's Results.
type HistoryRawResults struct {
	Results []history.RawResult
}

// EncodeBinary appends r: Results, each Status, Values, Modifications, Next.
func (r *HistoryRawResults) EncodeBinary(e *codec.Encoder) { encodeArray(e, r.Results, encRawResult) }

// DecodeBinary reads r as EncodeBinary writes it.
func (r *HistoryRawResults) DecodeBinary(d *codec.Decoder) {
	r.Results = decodeArray(d, r.Results, minRawResult, decRawResult)
}

func encRawResult(v *history.RawResult, e *codec.Encoder) {
	e.StatusCode(v.Status)
	encodeArray(e, v.Values, encDataValue)
	encodeArray(e, v.Modifications, encModInfo)
	e.ByteString(v.Next)
}

func decRawResult(v *history.RawResult, d *codec.Decoder) {
	v.Status = d.StatusCode()
	v.Values = decodeArray(d, v.Values, minDataValue, decDataValue)
	v.Modifications = decodeArray(d, v.Modifications, minModInfo, decModInfo)
	v.Next = d.ByteString()
}

func encModInfo(v *ua.ModificationInfo, e *codec.Encoder) { v.EncodeBinary(e) }
func decModInfo(v *ua.ModificationInfo, d *codec.Decoder) { v.DecodeBinary(d) }

// HistoryUpdate is the request of KindHistoryUpdate: an UpdateOp but its Results.
type HistoryUpdate struct {
	User  string
	Time  codec.DateTime
	Items []history.Update
}

// EncodeBinary appends u: User, Time, Items, each Node, Kind (Int32), Values.
func (u *HistoryUpdate) EncodeBinary(e *codec.Encoder) {
	e.String(u.User)
	e.DateTime(u.Time)
	encodeArray(e, u.Items, encUpdate)
}

// DecodeBinary reads u as EncodeBinary writes it.
func (u *HistoryUpdate) DecodeBinary(d *codec.Decoder) {
	u.User = d.String()
	u.Time = d.DateTime()
	u.Items = decodeArray(d, u.Items, minUpdate, decUpdate)
}

func encUpdate(v *history.Update, e *codec.Encoder) {
	e.NodeId(v.Node)
	e.Int32(int32(v.Kind))
	encodeArray(e, v.Values, encDataValue)
}

func decUpdate(v *history.Update, d *codec.Decoder) {
	v.Node = d.NodeId()
	v.Kind = ua.PerformUpdateType(d.Int32())
	v.Values = decodeArray(d, v.Values, minDataValue, decDataValue)
}

// HistoryItemResults is the reply to KindHistoryUpdate, KindHistoryDeleteRaw and
// KindHistoryDeleteAtTime: the op's Results.
type HistoryItemResults struct {
	Results []history.ItemResult
}

// EncodeBinary appends r: Results, each Status, Operations.
func (r *HistoryItemResults) EncodeBinary(e *codec.Encoder) {
	encodeArray(e, r.Results, encItemResult)
}

// DecodeBinary reads r as EncodeBinary writes it.
func (r *HistoryItemResults) DecodeBinary(d *codec.Decoder) {
	r.Results = decodeArray(d, r.Results, minItemResult, decItemResult)
}

func encItemResult(v *history.ItemResult, e *codec.Encoder) {
	e.StatusCode(v.Status)
	encodeArray(e, v.Operations, encStatus)
}

func decItemResult(v *history.ItemResult, d *codec.Decoder) {
	v.Status = d.StatusCode()
	v.Operations = decodeArray(d, v.Operations, minStatus, decStatus)
}

// HistoryDeleteRaw is the request of KindHistoryDeleteRaw: a DeleteRawOp but its
// Results.
type HistoryDeleteRaw struct {
	User  string
	Time  codec.DateTime
	Items []history.DeleteRaw
}

// EncodeBinary appends r: User, Time, Items, each Node, Start, End, Modified.
func (r *HistoryDeleteRaw) EncodeBinary(e *codec.Encoder) {
	e.String(r.User)
	e.DateTime(r.Time)
	encodeArray(e, r.Items, encDeleteRaw)
}

// DecodeBinary reads r as EncodeBinary writes it.
func (r *HistoryDeleteRaw) DecodeBinary(d *codec.Decoder) {
	r.User = d.String()
	r.Time = d.DateTime()
	r.Items = decodeArray(d, r.Items, minDeleteRaw, decDeleteRaw)
}

func encDeleteRaw(v *history.DeleteRaw, e *codec.Encoder) {
	e.NodeId(v.Node)
	e.DateTime(v.Start)
	e.DateTime(v.End)
	e.Boolean(v.Modified)
}

func decDeleteRaw(v *history.DeleteRaw, d *codec.Decoder) {
	v.Node = d.NodeId()
	v.Start = d.DateTime()
	v.End = d.DateTime()
	v.Modified = d.Boolean()
}

// HistoryDeleteAtTime is the request of KindHistoryDeleteAtTime: a DeleteAtTimeOp but
// its Results.
type HistoryDeleteAtTime struct {
	User  string
	Time  codec.DateTime
	Items []history.DeleteAtTime
}

// EncodeBinary appends r: User, Time, Items, each Node, Times.
func (r *HistoryDeleteAtTime) EncodeBinary(e *codec.Encoder) {
	e.String(r.User)
	e.DateTime(r.Time)
	encodeArray(e, r.Items, encDeleteAtTime)
}

// DecodeBinary reads r as EncodeBinary writes it.
func (r *HistoryDeleteAtTime) DecodeBinary(d *codec.Decoder) {
	r.User = d.String()
	r.Time = d.DateTime()
	r.Items = decodeArray(d, r.Items, minDeleteAtTime, decDeleteAtTime)
}

func encDeleteAtTime(v *history.DeleteAtTime, e *codec.Encoder) {
	e.NodeId(v.Node)
	encodeArray(e, v.Times, encDateTime)
}

func decDeleteAtTime(v *history.DeleteAtTime, d *codec.Decoder) {
	v.Node = d.NodeId()
	v.Times = decodeArray(d, v.Times, minDateTime, decDateTime)
}

func encDateTime(v *codec.DateTime, e *codec.Encoder) { e.DateTime(*v) }
func decDateTime(v *codec.DateTime, d *codec.Decoder) { *v = d.DateTime() }

// HistoryEvents is the request of KindHistoryAppendEvents: the events of
// EventStore.AppendEvents.
type HistoryEvents struct {
	Events []history.Event
}

// EncodeBinary appends ev: Events, each Notifier, Time, Type, Fields (Key, Value).
func (ev *HistoryEvents) EncodeBinary(e *codec.Encoder) { encodeArray(e, ev.Events, encHistEvent) }

// DecodeBinary reads ev as EncodeBinary writes it.
func (ev *HistoryEvents) DecodeBinary(d *codec.Decoder) {
	ev.Events = decodeArray(d, ev.Events, minHistEvent, decHistEvent)
}

func encHistEvent(v *history.Event, e *codec.Encoder) {
	e.NodeId(v.Notifier)
	e.DateTime(v.Time)
	e.NodeId(v.Type)
	encodeArray(e, v.Fields, encHistField)
}

func decHistEvent(v *history.Event, d *codec.Decoder) {
	v.Notifier = d.NodeId()
	v.Time = d.DateTime()
	v.Type = d.NodeId()
	v.Fields = decodeArray(d, v.Fields, minHistField, decHistField)
}

func encHistField(v *history.EventField, e *codec.Encoder) {
	e.String(v.Key)
	e.Variant(&v.Value)
}

func decHistField(v *history.EventField, d *codec.Decoder) {
	v.Key = d.String()
	d.Variant(&v.Value)
}

// HistoryReadEvents is the request of KindHistoryReadEvents: the items of a
// ReadEventsOp.
type HistoryReadEvents struct {
	Items []history.EventRead
}

// EncodeBinary appends r: Items, each Notifier, Start, End, Max (Int32), Position.
func (r *HistoryReadEvents) EncodeBinary(e *codec.Encoder) { encodeArray(e, r.Items, encEventRead) }

// DecodeBinary reads r as EncodeBinary writes it.
func (r *HistoryReadEvents) DecodeBinary(d *codec.Decoder) {
	r.Items = decodeArray(d, r.Items, minEventRead, decEventRead)
}

func encEventRead(v *history.EventRead, e *codec.Encoder) {
	e.NodeId(v.Notifier)
	e.DateTime(v.Start)
	e.DateTime(v.End)
	e.Int32(clampInt32(v.Max))
	e.ByteString(v.Position)
}

func decEventRead(v *history.EventRead, d *codec.Decoder) {
	v.Notifier = d.NodeId()
	v.Start = d.DateTime()
	v.End = d.DateTime()
	v.Max = max(0, int(d.Int32()))
	v.Position = d.ByteString()
}

// HistoryEventResults is the reply to KindHistoryReadEvents: the ReadEventsOp's
// Results.
type HistoryEventResults struct {
	Results []history.EventResult
}

// EncodeBinary appends r: Results, each Status, Events, Next.
func (r *HistoryEventResults) EncodeBinary(e *codec.Encoder) {
	encodeArray(e, r.Results, encEventResult)
}

// DecodeBinary reads r as EncodeBinary writes it.
func (r *HistoryEventResults) DecodeBinary(d *codec.Decoder) {
	r.Results = decodeArray(d, r.Results, minEventResult, decEventResult)
}

func encEventResult(v *history.EventResult, e *codec.Encoder) {
	e.StatusCode(v.Status)
	encodeArray(e, v.Events, encHistEvent)
	e.ByteString(v.Next)
}

func decEventResult(v *history.EventResult, d *codec.Decoder) {
	v.Status = d.StatusCode()
	v.Events = decodeArray(d, v.Events, minHistEvent, decHistEvent)
	v.Next = d.ByteString()
}
