package nodemgr

// The OPC UA binary encoding (Part 6 §5.2) of the contract's types, so that the same
// bytes cross a WASM sandbox or a process boundary. Items and results keep the encodings
// of the ua types they are; the rest is laid out field by field in declaration order,
// as Part 6 §5.2.6 lays out a structure, with arrays as an Int32 length (-1 for nil)
// and their elements.
//
// Encoding methods append to e and record failures in it (e.Err). Decoding methods
// read from d, record failures in it (d.Err: BadDecodingError, BadEncodingLimitsExceeded)
// and never panic; like the generated ua types, they overwrite every field and reuse
// the slices the value already holds when they have room. An operation's encoding is
// its request: every field but Results, which travel in ReadResults, WriteResults,
// BrowseResults and CallResults (frame.go). Decoding an operation gives it a zero result
// slot per item.

import (
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// Smallest encodings, in bytes, of array elements: a length that the bytes left
// cannot hold fails before anything is allocated.
const (
	minNodeId       = 2     // two-byte NodeId
	minQualified    = 2 + 4 // namespace, null name
	minStatus       = 4     // StatusCode
	minDataValue    = 1     // encoding mask
	minVariant      = 1     // encoding mask
	minString       = 4     // null String
	minReadValueId  = 16    // as ua.ReadRequest decodes them
	minWriteValue   = 11    // NodeId, AttributeId, IndexRange, DataValue
	minBrowseDesc   = 17    // NodeId, direction, type, subtypes, masks
	minRefDesc      = 18    // as ua.BrowseResult decodes them
	minCallRequest  = 8     // two NodeIds, InputArguments
	minCallResult   = 16    // as ua.CallResponse decodes them
	minBrowseResult = 4 + 4 // Status, References
	minMount        = 3 * minNodeId
	minWatchKey     = minNodeId + 4
	minWatchItem    = minWatchKey + 8
	minDataChange   = minNodeId + 4 + minDataValue
	minEventField   = 4 + minVariant
	minEvent        = 2*minNodeId + 4 + 4
	minUInt16       = 2
)

// encodeArray writes s as an array: its length (-1 for nil) and each element.
func encodeArray[T any](e *codec.Encoder, s []T, enc func(*T, *codec.Encoder)) {
	e.ArrayLength(len(s), s == nil)
	for i := range s {
		enc(&s[i], e)
	}
}

// decodeArray reads an array into s, reusing s when it has room; each element takes at
// least minSize bytes. A null array decodes to nil.
func decodeArray[T any](d *codec.Decoder, s []T, minSize int, dec func(*T, *codec.Decoder)) []T {
	n := d.ArrayLength(minSize)
	if n < 0 {
		return nil
	}
	if cap(s) < n || s == nil {
		s = make([]T, n)
	} else {
		s = s[:n]
	}
	for i := range s {
		dec(&s[i], d)
	}
	return s
}

// zeroResults returns s resized to n zero slots, reusing it when it has room.
func zeroResults[T any](s []T, n int) []T {
	if cap(s) < n || s == nil {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

func encNodeId(v *codec.NodeId, e *codec.Encoder)              { e.NodeId(*v) }
func decNodeId(v *codec.NodeId, d *codec.Decoder)              { *v = d.NodeId() }
func encQualified(v *codec.QualifiedName, e *codec.Encoder)    { e.QualifiedName(*v) }
func decQualified(v *codec.QualifiedName, d *codec.Decoder)    { *v = d.QualifiedName() }
func encStatus(v *status.Code, e *codec.Encoder)               { e.StatusCode(*v) }
func decStatus(v *status.Code, d *codec.Decoder)               { *v = d.StatusCode() }
func encDataValue(v *codec.DataValue, e *codec.Encoder)        { e.DataValue(v) }
func decDataValue(v *codec.DataValue, d *codec.Decoder)        { d.DataValue(v) }
func encString(v *string, e *codec.Encoder)                    { e.String(*v) }
func decString(v *string, d *codec.Decoder)                    { *v = d.String() }
func encUInt16(v *uint16, e *codec.Encoder)                    { e.UInt16(*v) }
func decUInt16(v *uint16, d *codec.Decoder)                    { *v = d.UInt16() }
func encReadValueId(v *ua.ReadValueId, e *codec.Encoder)       { v.EncodeBinary(e) }
func decReadValueId(v *ua.ReadValueId, d *codec.Decoder)       { v.DecodeBinary(d) }
func encWriteValue(v *ua.WriteValue, e *codec.Encoder)         { v.EncodeBinary(e) }
func decWriteValue(v *ua.WriteValue, d *codec.Decoder)         { v.DecodeBinary(d) }
func encBrowseDesc(v *ua.BrowseDescription, e *codec.Encoder)  { v.EncodeBinary(e) }
func decBrowseDesc(v *ua.BrowseDescription, d *codec.Decoder)  { v.DecodeBinary(d) }
func encRefDesc(v *ua.ReferenceDescription, e *codec.Encoder)  { v.EncodeBinary(e) }
func decRefDesc(v *ua.ReferenceDescription, d *codec.Decoder)  { v.DecodeBinary(d) }
func encCallRequest(v *ua.CallMethodRequest, e *codec.Encoder) { v.EncodeBinary(e) }
func decCallRequest(v *ua.CallMethodRequest, d *codec.Decoder) { v.DecodeBinary(d) }
func encCallResult(v *ua.CallMethodResult, e *codec.Encoder)   { v.EncodeBinary(e) }
func decCallResult(v *ua.CallMethodResult, d *codec.Decoder)   { v.DecodeBinary(d) }

// EncodeBinary appends p: SessionID, Anonymous, UserName, Thumbprint, Roles.
func (p *Principal) EncodeBinary(e *codec.Encoder) {
	e.NodeId(p.SessionID)
	e.Boolean(p.Anonymous)
	e.String(p.UserName)
	e.String(p.Thumbprint)
	encodeArray(e, p.Roles, encNodeId)
}

// DecodeBinary reads p as EncodeBinary writes it.
func (p *Principal) DecodeBinary(d *codec.Decoder) {
	p.SessionID = d.NodeId()
	p.Anonymous = d.Boolean()
	p.UserName = d.String()
	p.Thumbprint = d.String()
	p.Roles = decodeArray(d, p.Roles, minNodeId, decNodeId)
}

// EncodeBinary appends the request of op: Principal, MaxAge, Timestamps, Now, Items.
func (op *ReadOp) EncodeBinary(e *codec.Encoder) {
	op.Principal.EncodeBinary(e)
	e.Double(op.MaxAge)
	e.Int32(int32(op.Timestamps))
	e.DateTime(op.Now)
	encodeArray(e, op.Items, encReadValueId)
}

// DecodeBinary reads the request of op and gives it a zero result per item.
func (op *ReadOp) DecodeBinary(d *codec.Decoder) {
	op.Principal.DecodeBinary(d)
	op.MaxAge = d.Double()
	op.Timestamps = ua.TimestampsToReturn(d.Int32())
	op.Now = d.DateTime()
	op.Items = decodeArray(d, op.Items, minReadValueId, decReadValueId)
	op.Results = zeroResults(op.Results, len(op.Items))
}

// EncodeBinary appends the request of op: Principal, Items.
func (op *WriteOp) EncodeBinary(e *codec.Encoder) {
	op.Principal.EncodeBinary(e)
	encodeArray(e, op.Items, encWriteValue)
}

// DecodeBinary reads the request of op and gives it a zero result per item.
func (op *WriteOp) DecodeBinary(d *codec.Decoder) {
	op.Principal.DecodeBinary(d)
	op.Items = decodeArray(d, op.Items, minWriteValue, decWriteValue)
	op.Results = zeroResults(op.Results, len(op.Items))
}

// EncodeBinary appends the request of op: Principal, View, Items.
func (op *BrowseOp) EncodeBinary(e *codec.Encoder) {
	op.Principal.EncodeBinary(e)
	op.View.EncodeBinary(e)
	encodeArray(e, op.Items, encBrowseDesc)
}

// DecodeBinary reads the request of op and gives it a zero result per item.
func (op *BrowseOp) DecodeBinary(d *codec.Decoder) {
	op.Principal.DecodeBinary(d)
	op.View.DecodeBinary(d)
	op.Items = decodeArray(d, op.Items, minBrowseDesc, decBrowseDesc)
	op.Results = zeroResults(op.Results, len(op.Items))
}

// EncodeBinary appends r: Status, References.
func (r *BrowseResult) EncodeBinary(e *codec.Encoder) {
	e.StatusCode(r.Status)
	encodeArray(e, r.References, encRefDesc)
}

// DecodeBinary reads r as EncodeBinary writes it.
func (r *BrowseResult) DecodeBinary(d *codec.Decoder) {
	r.Status = d.StatusCode()
	r.References = decodeArray(d, r.References, minRefDesc, decRefDesc)
}

func encBrowseResult(v *BrowseResult, e *codec.Encoder) { v.EncodeBinary(e) }
func decBrowseResult(v *BrowseResult, d *codec.Decoder) { v.DecodeBinary(d) }

// EncodeBinary appends the request of op: Principal, Items.
func (op *CallOp) EncodeBinary(e *codec.Encoder) {
	op.Principal.EncodeBinary(e)
	encodeArray(e, op.Items, encCallRequest)
}

// DecodeBinary reads the request of op and gives it a zero result per item.
func (op *CallOp) DecodeBinary(d *codec.Decoder) {
	op.Principal.DecodeBinary(d)
	op.Items = decodeArray(d, op.Items, minCallRequest, decCallRequest)
	op.Results = zeroResults(op.Results, len(op.Items))
}

// EncodeBinary appends m: SourceId, ReferenceTypeId, TargetId.
func (m *Mount) EncodeBinary(e *codec.Encoder) {
	e.NodeId(m.SourceId)
	e.NodeId(m.ReferenceTypeId)
	e.NodeId(m.TargetId)
}

// DecodeBinary reads m as EncodeBinary writes it.
func (m *Mount) DecodeBinary(d *codec.Decoder) {
	m.SourceId = d.NodeId()
	m.ReferenceTypeId = d.NodeId()
	m.TargetId = d.NodeId()
}

func encMount(v *Mount, e *codec.Encoder) { v.EncodeBinary(e) }
func decMount(v *Mount, d *codec.Decoder) { v.DecodeBinary(d) }

// EncodeBinary appends w: NodeId, AttributeId.
func (w *WatchKey) EncodeBinary(e *codec.Encoder) {
	e.NodeId(w.NodeId)
	e.UInt32(w.AttributeId)
}

// DecodeBinary reads w as EncodeBinary writes it.
func (w *WatchKey) DecodeBinary(d *codec.Decoder) {
	w.NodeId = d.NodeId()
	w.AttributeId = d.UInt32()
}

// EncodeBinary appends w: NodeId, AttributeId, SamplingInterval.
func (w *WatchItem) EncodeBinary(e *codec.Encoder) {
	e.NodeId(w.NodeId)
	e.UInt32(w.AttributeId)
	e.Double(w.SamplingInterval)
}

// DecodeBinary reads w as EncodeBinary writes it.
func (w *WatchItem) DecodeBinary(d *codec.Decoder) {
	w.NodeId = d.NodeId()
	w.AttributeId = d.UInt32()
	w.SamplingInterval = d.Double()
}

func encWatchKey(v *WatchKey, e *codec.Encoder)   { v.EncodeBinary(e) }
func decWatchKey(v *WatchKey, d *codec.Decoder)   { v.DecodeBinary(d) }
func encWatchItem(v *WatchItem, e *codec.Encoder) { v.EncodeBinary(e) }
func decWatchItem(v *WatchItem, d *codec.Decoder) { v.DecodeBinary(d) }

// EncodeBinary appends s: Add, Remove.
func (s *WatchSet) EncodeBinary(e *codec.Encoder) {
	encodeArray(e, s.Add, encWatchItem)
	encodeArray(e, s.Remove, encWatchKey)
}

// DecodeBinary reads s as EncodeBinary writes it.
func (s *WatchSet) DecodeBinary(d *codec.Decoder) {
	s.Add = decodeArray(d, s.Add, minWatchItem, decWatchItem)
	s.Remove = decodeArray(d, s.Remove, minWatchKey, decWatchKey)
}

// EncodeBinary appends c: NodeId, AttributeId, Value.
func (c *DataChange) EncodeBinary(e *codec.Encoder) {
	e.NodeId(c.NodeId)
	e.UInt32(c.AttributeId)
	e.DataValue(&c.Value)
}

// DecodeBinary reads c as EncodeBinary writes it.
func (c *DataChange) DecodeBinary(d *codec.Decoder) {
	c.NodeId = d.NodeId()
	c.AttributeId = d.UInt32()
	d.DataValue(&c.Value)
}

func encDataChange(v *DataChange, e *codec.Encoder) { v.EncodeBinary(e) }
func decDataChange(v *DataChange, d *codec.Decoder) { v.DecodeBinary(d) }

// EncodeBinary appends f: BrowsePath, Value.
func (f *EventField) EncodeBinary(e *codec.Encoder) {
	encodeArray(e, f.BrowsePath, encQualified)
	e.Variant(&f.Value)
}

// DecodeBinary reads f as EncodeBinary writes it.
func (f *EventField) DecodeBinary(d *codec.Decoder) {
	f.BrowsePath = decodeArray(d, f.BrowsePath, minQualified, decQualified)
	d.Variant(&f.Value)
}

func encEventField(v *EventField, e *codec.Encoder) { v.EncodeBinary(e) }
func decEventField(v *EventField, d *codec.Decoder) { v.DecodeBinary(d) }

// EncodeBinary appends ev: EventType, SourceNode, Notifiers, Fields.
func (ev *Event) EncodeBinary(e *codec.Encoder) {
	e.NodeId(ev.EventType)
	e.NodeId(ev.SourceNode)
	encodeArray(e, ev.Notifiers, encNodeId)
	encodeArray(e, ev.Fields, encEventField)
}

// DecodeBinary reads ev as EncodeBinary writes it.
func (ev *Event) DecodeBinary(d *codec.Decoder) {
	ev.EventType = d.NodeId()
	ev.SourceNode = d.NodeId()
	ev.Notifiers = decodeArray(d, ev.Notifiers, minNodeId, decNodeId)
	ev.Fields = decodeArray(d, ev.Fields, minEventField, decEventField)
}

func encEvent(v *Event, e *codec.Encoder) { v.EncodeBinary(e) }
func decEvent(v *Event, d *codec.Decoder) { v.DecodeBinary(d) }

// EncodeBinary appends h: Status, Message, Time.
func (h *Health) EncodeBinary(e *codec.Encoder) {
	e.StatusCode(h.Status)
	e.String(h.Message)
	e.DateTime(h.Time)
}

// DecodeBinary reads h as EncodeBinary writes it.
func (h *Health) DecodeBinary(d *codec.Decoder) {
	h.Status = d.StatusCode()
	h.Message = d.String()
	h.Time = d.DateTime()
}
