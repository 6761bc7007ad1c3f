package ua

import "uastack.dev/pkg/codec"

// RequestStampLen is the size of the stamp of an encoded request: its RequestHeader's
// Timestamp (a DateTime, 8 bytes) and RequestHandle (a UInt32, 4 bytes), which lie side by
// side (Part 4 §7.32, Part 6 §5.2). They are the fields a client changes when it sends a
// request again: two encodings of a request that differ only in their stamps are the same
// request asked twice.
const RequestStampLen = 8 + 4

// RequestStampOffset returns the offset of the stamp (RequestStampLen bytes) in msg, a
// request encoded as a message (Part 6 §5.2.9): the NodeId of the request's binary encoding,
// then the request, which starts with its RequestHeader, whose AuthenticationToken (a
// NodeId) comes before the Timestamp. It decodes the two NodeIds with d, which it resets
// to msg: a decoder with a NodeId cache (codec.Decoder.CacheNodeIds) reads a token it has
// seen without a copy. ok is false when msg does not hold the two NodeIds and a stamp
// after them; msg is not checked further, and may still not decode as a request.
func RequestStampOffset(d *codec.Decoder, msg []byte) (at int, ok bool) {
	d.Reset(msg)
	d.NodeId() // the encoding's
	d.NodeId() // RequestHeader.AuthenticationToken
	if d.Err() != nil || d.Remaining() < RequestStampLen {
		return 0, false
	}
	return d.Pos(), true
}

// DecodeStamp reads h's Timestamp and RequestHandle from d, which stands at the stamp of an
// encoded request (RequestStampOffset); errors stick in d. The other fields are left as
// they are.
func (h *RequestHeader) DecodeStamp(d *codec.Decoder) {
	h.Timestamp = d.DateTime()
	h.RequestHandle = d.UInt32()
}
