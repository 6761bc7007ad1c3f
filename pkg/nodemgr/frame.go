package nodemgr

import (
	"strconv"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// Version is the version of the frame layout and of the bodies' encodings. A change
// that an older peer would misread takes a new version.
const Version byte = 1

// Kind says what a Frame carries. A request kind names a call of the contract; its
// reply has the same kind with KindReply set and the request's ID.
type Kind byte

// The kinds. Bodies are listed as request / reply; "none" is a frame without a body.
const (
	KindInfo        Kind = 0x01 // *Setup / *Info: set up the manager, then its namespaces and capabilities
	KindMount       Kind = 0x02 // *MountRequest / *Mounts: Mounter.Mount
	KindStart       Kind = 0x03 // *StartParams / *Outcome: Starter.Start
	KindClose       Kind = 0x04 // none / *Outcome: Closer.Close
	KindRead        Kind = 0x05 // *ReadOp / *ReadResults: Reader.Read
	KindWrite       Kind = 0x06 // *WriteOp / *WriteResults: Writer.Write
	KindBrowse      Kind = 0x07 // *BrowseOp / *BrowseResults: Browser.Browse
	KindCall        Kind = 0x08 // *CallOp / *CallResults: Caller.Call
	KindWatch       Kind = 0x09 // *WatchSet / none (an acknowledgement the host may ask for): Watcher.Watch
	KindHealth      Kind = 0x0A // none / *Health: HealthReporter.Health
	KindCancel      Kind = 0x0B // none, one-way: cancel the context of the request with this ID
	KindDataChanges Kind = 0x0C // *DataChanges, one-way from the manager: Notifier.Changed
	KindEvents      Kind = 0x0D // *Events, one-way from the manager: Notifier.Emit
	KindModels      Kind = 0x0E // none / *Models: Modeler.Models

	// The history kinds (historywire.go): history.Store and history.EventStore. A store
	// that fails as a whole answers KindFault.
	KindHistoryAppend       Kind = 0x0F // *HistoryValues / *Outcome: Store.Append
	KindHistoryReadRaw      Kind = 0x10 // *HistoryReadRaw / *HistoryRawResults: Store.ReadRaw
	KindHistoryUpdate       Kind = 0x11 // *HistoryUpdate / *HistoryItemResults: Store.Update
	KindHistoryDeleteRaw    Kind = 0x12 // *HistoryDeleteRaw / *HistoryItemResults: Store.DeleteRaw
	KindHistoryDeleteAtTime Kind = 0x13 // *HistoryDeleteAtTime / *HistoryItemResults: Store.DeleteAtTime
	KindHistoryAppendEvents Kind = 0x14 // *HistoryEvents / *Outcome: EventStore.AppendEvents
	KindHistoryReadEvents   Kind = 0x15 // *HistoryReadEvents / *HistoryEventResults: EventStore.ReadEvents

	// KindReply marks the reply to a request of the kind in the low bits.
	KindReply Kind = 0x80
	// KindFault is the reply to a request that failed as a whole (it could not be
	// decoded, or its kind is unknown to the manager): *Outcome.
	KindFault Kind = 0xFF
)

var kindNames = [...]string{
	KindInfo: "Info", KindMount: "Mount", KindStart: "Start", KindClose: "Close",
	KindRead: "Read", KindWrite: "Write", KindBrowse: "Browse", KindCall: "Call",
	KindWatch: "Watch", KindHealth: "Health", KindCancel: "Cancel",
	KindDataChanges: "DataChanges", KindEvents: "Events", KindModels: "Models",
	KindHistoryAppend: "HistoryAppend", KindHistoryReadRaw: "HistoryReadRaw", KindHistoryUpdate: "HistoryUpdate",
	KindHistoryDeleteRaw: "HistoryDeleteRaw", KindHistoryDeleteAtTime: "HistoryDeleteAtTime",
	KindHistoryAppendEvents: "HistoryAppendEvents", KindHistoryReadEvents: "HistoryReadEvents",
}

// String returns the kind's name, such as "Read" or "Read reply".
func (k Kind) String() string {
	if k == KindFault {
		return "Fault"
	}
	base := k &^ KindReply
	name := "Kind(0x" + strconv.FormatUint(uint64(base), 16) + ")"
	if int(base) < len(kindNames) && kindNames[base] != "" {
		name = kindNames[base]
	}
	if k&KindReply != 0 {
		name += " reply"
	}
	return name
}

// Body is the payload of a Frame: one of the types the kind names.
type Body interface {
	EncodeBinary(e *codec.Encoder)
	DecodeBinary(d *codec.Decoder)
}

// Frame is one message across a boundary: Version (Byte), Kind (Byte), ID (UInt32),
// then the body's encoding. A frame is exactly one message; the transport delimits it
// (a gRPC bytes field, a pointer and length in WASM memory), and a stream transport
// prefixes each frame with its length.
//
// ID correlates a reply with its request. It is the host's business: the host chooses
// it for each request (unique among those in flight), the manager's side copies it into
// the reply, and KindCancel names a request by it. nodemgr neither sets nor checks it.
// A host that calls one request at a time (a WASM instance) may leave it 0.
type Frame struct {
	Kind Kind
	ID   uint32
	// Body is nil for kinds without one, else the type the kind names.
	Body Body
}

// bodyKind describes the body of one kind: how to make one and how to recognise one.
type bodyKind struct {
	known bool
	make  func() Body       // nil: no body
	is    func(b Body) bool // nil: no body
}

// with is the bodyKind of kinds whose body is a *T.
func with[T any, PT interface {
	*T
	Body
}]() bodyKind {
	return bodyKind{
		known: true,
		make:  func() Body { return PT(new(T)) },
		is:    func(b Body) bool { _, ok := b.(PT); return ok },
	}
}

// bodies maps each known kind to its body.
var bodies = func() (t [256]bodyKind) {
	none := bodyKind{known: true}
	t[KindInfo], t[KindInfo|KindReply] = with[Setup](), with[Info]()
	t[KindMount], t[KindMount|KindReply] = with[MountRequest](), with[Mounts]()
	t[KindStart], t[KindStart|KindReply] = with[StartParams](), with[Outcome]()
	t[KindClose], t[KindClose|KindReply] = none, with[Outcome]()
	t[KindRead], t[KindRead|KindReply] = with[ReadOp](), with[ReadResults]()
	t[KindWrite], t[KindWrite|KindReply] = with[WriteOp](), with[WriteResults]()
	t[KindBrowse], t[KindBrowse|KindReply] = with[BrowseOp](), with[BrowseResults]()
	t[KindCall], t[KindCall|KindReply] = with[CallOp](), with[CallResults]()
	t[KindWatch], t[KindWatch|KindReply] = with[WatchSet](), none
	t[KindHealth], t[KindHealth|KindReply] = none, with[Health]()
	t[KindModels], t[KindModels|KindReply] = none, with[Models]()
	t[KindHistoryAppend], t[KindHistoryAppend|KindReply] = with[HistoryValues](), with[Outcome]()
	t[KindHistoryReadRaw], t[KindHistoryReadRaw|KindReply] = with[HistoryReadRaw](), with[HistoryRawResults]()
	t[KindHistoryUpdate], t[KindHistoryUpdate|KindReply] = with[HistoryUpdate](), with[HistoryItemResults]()
	t[KindHistoryDeleteRaw], t[KindHistoryDeleteRaw|KindReply] = with[HistoryDeleteRaw](), with[HistoryItemResults]()
	t[KindHistoryDeleteAtTime], t[KindHistoryDeleteAtTime|KindReply] = with[HistoryDeleteAtTime](), with[HistoryItemResults]()
	t[KindHistoryAppendEvents], t[KindHistoryAppendEvents|KindReply] = with[HistoryEvents](), with[Outcome]()
	t[KindHistoryReadEvents], t[KindHistoryReadEvents|KindReply] = with[HistoryReadEvents](), with[HistoryEventResults]()
	t[KindCancel] = none
	t[KindDataChanges] = with[DataChanges]()
	t[KindEvents] = with[Events]()
	t[KindFault] = with[Outcome]()
	return t
}()

// NewBody returns a zero body for frames of kind k (nil for a kind without a body), and
// false for a kind this version does not know.
func NewBody(k Kind) (Body, bool) {
	bk := bodies[k]
	if !bk.known || bk.make == nil {
		return nil, bk.known
	}
	return bk.make(), true
}

// EncodeBinary appends f. A kind this version does not know, or a body of the wrong
// type for the kind, fails e with BadEncodingError.
func (f *Frame) EncodeBinary(e *codec.Encoder) {
	e.Byte(Version)
	e.Byte(byte(f.Kind))
	e.UInt32(f.ID)
	bk := bodies[f.Kind]
	switch {
	case !bk.known:
		e.Fail(status.BadEncodingError)
	case bk.is == nil:
		if f.Body != nil {
			e.Fail(status.BadEncodingError)
		}
	case f.Body == nil || !bk.is(f.Body):
		e.Fail(status.BadEncodingError)
	default:
		f.Body.EncodeBinary(e)
	}
}

// DecodeBinary reads a frame into f. When f.Body already holds a body of the frame's
// kind, it is decoded into, reusing its slices where they have room (a host may hand
// in the results of the operation it sent); otherwise a new body is made. Another
// Version fails d with BadProtocolVersionUnsupported, an unknown kind with
// BadServiceUnsupported.
func (f *Frame) DecodeBinary(d *codec.Decoder) {
	v := d.Byte()
	k := Kind(d.Byte())
	f.Kind, f.ID = k, d.UInt32()
	if d.Err() != nil {
		f.Body = nil
		return
	}
	if v != Version {
		d.Fail(status.BadProtocolVersionUnsupported)
		f.Body = nil
		return
	}
	bk := bodies[k]
	switch {
	case !bk.known:
		d.Fail(status.BadServiceUnsupported)
		f.Body = nil
		return
	case bk.make == nil:
		f.Body = nil
		return
	case f.Body == nil || !bk.is(f.Body):
		f.Body = bk.make()
	}
	f.Body.DecodeBinary(d)
}

// AppendBinary appends f's encoding to b (encoding.BinaryAppender). On error it
// returns b unchanged and a status.Code.
func (f *Frame) AppendBinary(b []byte) ([]byte, error) {
	// Encode into b's spare capacity: when it suffices, the append below copies the
	// bytes onto themselves; when it does not, the encoder grew its own buffer.
	e := codec.NewEncoder(b[len(b):])
	f.EncodeBinary(e)
	if err := e.Err(); err != nil {
		return b, err
	}
	return append(b, e.Bytes()...), nil
}

// Decode decodes b, which must hold exactly one frame, into f within limits (zero
// fields take codec.DefaultLimits), as DecodeBinary does. The error is a status.Code:
// BadDecodingError for malformed input or bytes left over, BadEncodingLimitsExceeded,
// BadProtocolVersionUnsupported or BadServiceUnsupported. Nothing f holds afterwards
// aliases b.
func (f *Frame) Decode(b []byte, limits codec.Limits) error {
	d := codec.NewDecoderLimits(b, limits)
	f.DecodeBinary(d)
	if d.Err() == nil && d.Remaining() != 0 {
		d.Fail(status.BadDecodingError)
	}
	return d.Err()
}

// Setup is the request of KindInfo: what the manager's configuration entry says, for a
// manager across a boundary that is built from it (a guest serves the namespace URI the
// configuration mounts it at). A manager is set up once, before anything else.
type Setup struct {
	// Name is the manager's name in configuration, for its logs and errors.
	Name string
	// NamespaceURI is the namespace the configuration mounts the manager at.
	NamespaceURI string
	// Options are the manager's options from configuration, encoded by the host (the
	// hosts use JSON); nil when there are none.
	Options []byte
}

// EncodeBinary appends s: Name, NamespaceURI, Options.
func (s *Setup) EncodeBinary(e *codec.Encoder) {
	e.String(s.Name)
	e.String(s.NamespaceURI)
	e.ByteString(s.Options)
}

// DecodeBinary reads s as EncodeBinary writes it.
func (s *Setup) DecodeBinary(d *codec.Decoder) {
	s.Name = d.String()
	s.NamespaceURI = d.String()
	s.Options = d.ByteString()
}

// Info is the reply to KindInfo: what a manager across a boundary serves and which
// optional interfaces its side implements, so that the host implements the same.
type Info struct {
	Namespaces   []string
	Capabilities Capabilities
}

// EncodeBinary appends i: Namespaces, Capabilities.
func (i *Info) EncodeBinary(e *codec.Encoder) {
	encodeArray(e, i.Namespaces, encString)
	e.UInt32(uint32(i.Capabilities))
}

// DecodeBinary reads i as EncodeBinary writes it.
func (i *Info) DecodeBinary(d *codec.Decoder) {
	i.Namespaces = decodeArray(d, i.Namespaces, minString, decString)
	i.Capabilities = Capabilities(d.UInt32())
}

// MountRequest is the request of KindMount: the arguments of Mounter.Mount.
type MountRequest struct {
	Indexes []uint16
}

// EncodeBinary appends r: Indexes.
func (r *MountRequest) EncodeBinary(e *codec.Encoder) { encodeArray(e, r.Indexes, encUInt16) }

// DecodeBinary reads r as EncodeBinary writes it.
func (r *MountRequest) DecodeBinary(d *codec.Decoder) {
	r.Indexes = decodeArray(d, r.Indexes, minUInt16, decUInt16)
}

// Mounts is the reply to KindMount: what Mounter.Mount returned.
type Mounts struct {
	Mounts []Mount
}

// EncodeBinary appends m: Mounts.
func (m *Mounts) EncodeBinary(e *codec.Encoder) { encodeArray(e, m.Mounts, encMount) }

// DecodeBinary reads m as EncodeBinary writes it.
func (m *Mounts) DecodeBinary(d *codec.Decoder) {
	m.Mounts = decodeArray(d, m.Mounts, minMount, decMount)
}

// StartParams is the request of KindStart: the data half of a Host, which the
// manager's side of a boundary turns back into one (its Logger and Notifier send to the
// host, its clock is its own or the host's).
type StartParams struct {
	// Namespaces and NamespaceIndexes are the manager's namespace URIs and their
	// NamespaceArray indexes, in the same order (Host.NamespaceIndexes).
	Namespaces       []string
	NamespaceIndexes []uint16
	// LogLevel is the least slog.Level the host logs, so that the manager need not send
	// what would be dropped.
	LogLevel int32
}

// EncodeBinary appends p: Namespaces, NamespaceIndexes, LogLevel.
func (p *StartParams) EncodeBinary(e *codec.Encoder) {
	encodeArray(e, p.Namespaces, encString)
	encodeArray(e, p.NamespaceIndexes, encUInt16)
	e.Int32(p.LogLevel)
}

// DecodeBinary reads p as EncodeBinary writes it.
func (p *StartParams) DecodeBinary(d *codec.Decoder) {
	p.Namespaces = decodeArray(d, p.Namespaces, minString, decString)
	p.NamespaceIndexes = decodeArray(d, p.NamespaceIndexes, minUInt16, decUInt16)
	p.LogLevel = d.Int32()
}

// Outcome is how a call without results ended: the reply to KindStart and KindClose
// (Good, or the error as a StatusCode and its text) and the body of KindFault.
type Outcome struct {
	Status  status.Code
	Message string
}

// EncodeBinary appends o: Status, Message.
func (o *Outcome) EncodeBinary(e *codec.Encoder) {
	e.StatusCode(o.Status)
	e.String(o.Message)
}

// DecodeBinary reads o as EncodeBinary writes it.
func (o *Outcome) DecodeBinary(d *codec.Decoder) {
	o.Status = d.StatusCode()
	o.Message = d.String()
}

// ReadResults is the reply to KindRead: ReadOp.Results, a result per item in order. A
// host checks that there are as many as it sent items.
type ReadResults struct {
	Results []codec.DataValue
}

// EncodeBinary appends r: Results.
func (r *ReadResults) EncodeBinary(e *codec.Encoder) { encodeArray(e, r.Results, encDataValue) }

// DecodeBinary reads r as EncodeBinary writes it.
func (r *ReadResults) DecodeBinary(d *codec.Decoder) {
	r.Results = decodeArray(d, r.Results, minDataValue, decDataValue)
}

// WriteResults is the reply to KindWrite: WriteOp.Results.
type WriteResults struct {
	Results []status.Code
}

// EncodeBinary appends r: Results.
func (r *WriteResults) EncodeBinary(e *codec.Encoder) { encodeArray(e, r.Results, encStatus) }

// DecodeBinary reads r as EncodeBinary writes it.
func (r *WriteResults) DecodeBinary(d *codec.Decoder) {
	r.Results = decodeArray(d, r.Results, minStatus, decStatus)
}

// BrowseResults is the reply to KindBrowse: BrowseOp.Results.
type BrowseResults struct {
	Results []BrowseResult
}

// EncodeBinary appends r: Results.
func (r *BrowseResults) EncodeBinary(e *codec.Encoder) { encodeArray(e, r.Results, encBrowseResult) }

// DecodeBinary reads r as EncodeBinary writes it.
func (r *BrowseResults) DecodeBinary(d *codec.Decoder) {
	r.Results = decodeArray(d, r.Results, minBrowseResult, decBrowseResult)
}

// CallResults is the reply to KindCall: CallOp.Results.
type CallResults struct {
	Results []ua.CallMethodResult
}

// EncodeBinary appends r: Results.
func (r *CallResults) EncodeBinary(e *codec.Encoder) { encodeArray(e, r.Results, encCallResult) }

// DecodeBinary reads r as EncodeBinary writes it.
func (r *CallResults) DecodeBinary(d *codec.Decoder) {
	r.Results = decodeArray(d, r.Results, minCallResult, decCallResult)
}

// DataChanges is the body of KindDataChanges: one Notifier.Changed.
type DataChanges struct {
	Changes []DataChange
}

// EncodeBinary appends c: Changes.
func (c *DataChanges) EncodeBinary(e *codec.Encoder) { encodeArray(e, c.Changes, encDataChange) }

// DecodeBinary reads c as EncodeBinary writes it.
func (c *DataChanges) DecodeBinary(d *codec.Decoder) {
	c.Changes = decodeArray(d, c.Changes, minDataChange, decDataChange)
}

// Events is the body of KindEvents: one Notifier.Emit.
type Events struct {
	Events []Event
}

// EncodeBinary appends ev: Events.
func (ev *Events) EncodeBinary(e *codec.Encoder) { encodeArray(e, ev.Events, encEvent) }

// DecodeBinary reads ev as EncodeBinary writes it.
func (ev *Events) DecodeBinary(d *codec.Decoder) {
	ev.Events = decodeArray(d, ev.Events, minEvent, decEvent)
}
