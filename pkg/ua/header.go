package ua

import "uastack.dev/pkg/codec"

// RequestHeaderOf returns the RequestHeader of any service request: every request starts
// with one (Part 4 §7.32), so it is decoded from the front of msg's encoding. It costs an
// encode; for requests of known types, read the field instead. A msg that does not
// encode gives the zero header.
func RequestHeaderOf(msg codec.Structure) RequestHeader {
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
