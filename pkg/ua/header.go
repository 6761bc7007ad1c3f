package ua

import "uastack.dev/pkg/codec"

// Request is a service request: every one starts with a RequestHeader (Part 4 §7.32),
// which Header returns for reading and writing. The generated request types implement it.
type Request interface {
	codec.Structure
	Header() *RequestHeader
}

// Response is a service response, ServiceFault included: every one starts with a
// ResponseHeader (Part 4 §7.33).
type Response interface {
	codec.Structure
	Header() *ResponseHeader
}

// RequestHeaderOf returns the RequestHeader of any service request. A Request gives its
// field; for another structure the header is decoded from the front of msg's encoding,
// which costs an encode. A msg that does not encode gives the zero header.
func RequestHeaderOf(msg codec.Structure) RequestHeader {
	if r, ok := msg.(Request); ok {
		return *r.Header()
	}
	var h RequestHeader
	e := codec.NewEncoder(nil)
	msg.EncodeBinary(e)
	if e.Err() != nil {
		return h
	}
	d := codec.NewDecoder(e.Bytes())
	h.DecodeBinary(d)
	if d.Err() != nil {
		return RequestHeader{}
	}
	return h
}
