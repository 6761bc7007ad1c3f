package uasc

import (
	"bytes"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
)

// recycled is a channel's memory of the last request handed back by Request.Recycle: the
// message, which the next request of its type is decoded into, and, when the channel's
// handler is a Repeater, the body it was decoded from. Clients poll, so a request often
// repeats the last one but for the RequestHeader's Timestamp and RequestHandle; such a
// request is the recycled message again with those two fields set, and is not decoded.
// Only the reading goroutine uses it.
type recycled struct {
	// repeats is set when the handler opted in to repeated requests (Repeater): only
	// then are bodies kept.
	repeats bool
	msg     codec.Structure
	// body is a copy of the last body copied and at the offset in it of the stamp
	// (ua.RequestStampOffset). req is msg while body is the body msg was decoded from, and
	// nil otherwise; body[:at] keeps what comes before the stamp either way.
	body []byte
	at   int
	req  ua.Request
	// A client whose requests do not repeat should not pay for the copies: after a body
	// that was not repeated, the next wait recycled requests are not copied, and wait
	// doubles up to maxWait with every further miss.
	wait, backoff int
	// cur is the body of the request in Handle (nil when it is not kept until Handle
	// returns), curMsg its message, and repeated whether it was msg repeated.
	cur      []byte
	curMsg   codec.Structure
	repeated bool
}

// maxRecycledBody is the largest request body a channel keeps a copy of.
const maxRecycledBody = 2048

// maxWait bounds the recycled requests not copied after a body that was not repeated.
const maxWait = 31

// decode returns the request in body and whether it is the recycled message repeated
// (see repeat); otherwise body is decoded with d, into the recycled message when that is
// of the same type.
func (rc *recycled) decode(body []byte, d *codec.Decoder) (m codec.Structure, repeated bool, err error) {
	if m, ok := rc.repeat(body, d); ok {
		return m, true, nil
	}
	d.Reset(body)
	spare := rc.take()
	m = d.MessageInto(spare)
	if spare != nil && m != spare {
		// Not of this request's type (or the decode failed): keep it for a later one.
		rc.msg = spare
	}
	return m, false, d.Err()
}

// repeat returns the recycled message when body repeats the one it was decoded from but for
// the stamp (the RequestHeader's Timestamp and RequestHandle, ua.RequestStampLen), which it
// sets from body with d. The same bytes decode to the same message, so the result is what
// decoding body would give.
func (rc *recycled) repeat(body []byte, d *codec.Decoder) (codec.Structure, bool) {
	at := rc.at
	if rc.msg == nil || rc.req == nil {
		return nil, false
	}
	// One comparison: the copy takes body's stamp first. When the rest differs, body is
	// decoded into msg, which take marks undescribed.
	stamp := rc.body[at : at+ua.RequestStampLen]
	if len(body) == len(rc.body) {
		copy(stamp, body[at:])
	}
	if len(body) != len(rc.body) || !bytes.Equal(body, rc.body) {
		rc.backoff = min(2*rc.backoff+1, maxWait)
		rc.wait = rc.backoff
		return nil, false
	}
	rc.backoff = 0
	d.Reset(stamp)
	rc.req.Header().DecodeStamp(d)
	m := rc.msg
	rc.msg = nil
	return m, true
}

// take returns the recycled message for a request that is decoded into it, and forgets the
// body it was decoded from.
func (rc *recycled) take() codec.Structure {
	m := rc.msg
	rc.msg, rc.req = nil, nil
	return m
}

// handling records the request handed to Handle; body is nil when it is not valid until
// Handle returns.
func (rc *recycled) handling(body []byte, m codec.Structure, repeated bool) {
	rc.cur, rc.curMsg, rc.repeated = body, m, repeated
}

// handled forgets the request Handle returned from.
func (rc *recycled) handled() { rc.cur, rc.curMsg = nil, nil }

// recycle takes m back from the handler. When m is the request being handled and the
// handler is a Repeater, its body is kept so that a repeat of it is not decoded (see
// repeat); d finds the stamp in it.
func (rc *recycled) recycle(m codec.Structure, d *codec.Decoder) {
	rc.msg = m
	if m != rc.curMsg || !rc.repeats {
		rc.req = nil
		return
	}
	if rc.repeated {
		return // body and req describe m already
	}
	rc.req = nil
	if rc.wait > 0 {
		rc.wait--
		return
	}
	req, ok := m.(ua.Request)
	if !ok || rc.cur == nil || len(rc.cur) > maxRecycledBody {
		return
	}
	// The stamp lies where it lay in the last body when the bytes before it are the same.
	at := rc.at
	if at == 0 || len(rc.cur) < at+ua.RequestStampLen || !bytes.Equal(rc.cur[:at], rc.body[:at]) {
		var ok bool
		if at, ok = ua.RequestStampOffset(d, rc.cur); !ok {
			return
		}
	}
	rc.req, rc.at = req, at
	rc.body = append(rc.body[:0], rc.cur...)
}
