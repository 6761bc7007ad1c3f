package discovery

import (
	"sync"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

var (
	typeGetEndpoints = (*ua.GetEndpointsResponse)(nil).TypeInfo()
	typeFindServers  = (*ua.FindServersResponse)(nil).TypeInfo()
)

// headerPrefix is the part of an encoded response that differs per caller: the
// ResponseHeader's Timestamp (DateTime, 8 bytes) and RequestHandle (UInt32, 4 bytes),
// the first two fields of every response (Part 4 §7.33).
const headerPrefix = 12

// Answer is an encoded response with the caller's RequestHandle and Timestamp. It is a
// codec.Structure, so a secure channel sends it like any response: its binary encoding
// is the kept bytes with the first 12 replaced. Answers are pooled: Release one once it
// is sent and do not use it after.
type Answer struct {
	info   *codec.TypeInfo
	body   []byte // shared, read-only
	handle uint32
	now    codec.DateTime
}

var answers = sync.Pool{New: func() any { return new(Answer) }}

func newAnswer(info *codec.TypeInfo, body []byte, handle uint32, now codec.DateTime) *Answer {
	a := answers.Get().(*Answer)
	a.info, a.body, a.handle, a.now = info, body, handle, now
	return a
}

// Release returns a to its pool.
func (a *Answer) Release() {
	a.body = nil
	answers.Put(a)
}

// TypeInfo is that of the response a holds.
func (a *Answer) TypeInfo() *codec.TypeInfo { return a.info }

// EncodeBinary writes the kept response with a's Timestamp and RequestHandle.
func (a *Answer) EncodeBinary(e *codec.Encoder) {
	if len(a.body) < headerPrefix {
		e.Fail(status.BadInternalError)
		return
	}
	e.DateTime(a.now)
	e.UInt32(a.handle)
	e.Raw(a.body[headerPrefix:])
}

// DecodeBinary is not supported: an Answer is only sent.
func (a *Answer) DecodeBinary(d *codec.Decoder) { d.Fail(status.BadNotSupported) }

// DecodeJSON is not supported: an Answer is only sent.
func (a *Answer) DecodeJSON(d *codec.JSONDecoder) { d.Fail(status.BadNotSupported) }

// EncodeJSON writes the response in JSON. The kept bytes are binary, so it decodes them
// first; JSON answers are rare and do not need the speed.
func (a *Answer) EncodeJSON(e *codec.JSONEncoder) {
	msg, err := a.Decode()
	if err != nil {
		e.Fail(err)
		return
	}
	msg.EncodeJSON(e)
}

// Decode returns the response a holds as its generated type.
func (a *Answer) Decode() (codec.Structure, error) {
	e := codec.NewEncoder(make([]byte, 0, len(a.body)))
	a.EncodeBinary(e)
	if err := e.Err(); err != nil {
		return nil, err
	}
	msg := a.info.New()
	d := codec.NewDecoder(e.Bytes())
	msg.DecodeBinary(d)
	return msg, d.Err()
}
