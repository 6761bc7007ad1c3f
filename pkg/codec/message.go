package codec

import "uastack.dev/pkg/status"

// Message writes a service message as the body of a secure channel MSG: the NodeId of its
// binary encoding, then the structure.
func (e *Encoder) Message(v Structure) {
	e.NodeId(v.TypeInfo().BinaryEncoding)
	v.EncodeBinary(e)
}

// Message reads a service message: the NodeId of its binary encoding, then the body of
// the registered type. An unknown type id fails with BadServiceUnsupported, which is what
// a server answers for a request it does not know; trailing bytes fail with
// BadDecodingError.
func (d *Decoder) Message() Structure {
	typeID := d.NodeId()
	if d.err != nil {
		return nil
	}
	t := LookupType(typeID)
	if t == nil || t.BinaryEncoding != typeID {
		d.Fail(status.BadServiceUnsupported)
		return nil
	}
	return d.messageBody(t.New())
}

// MessageInto is Message that decodes into spare, a message of the same type decoded
// earlier and no longer used, when the message has spare's type: every field of spare is
// overwritten, and its slices are reused where their capacity suffices, so that a caller
// that recycles its requests allocates nothing for them. Otherwise, or when spare is nil,
// it is Message. The caller tells which by comparing the result with spare.
func (d *Decoder) MessageInto(spare Structure) Structure {
	if spare == nil {
		return d.Message()
	}
	typeID := d.NodeId()
	if d.err != nil {
		return nil
	}
	if t := spare.TypeInfo(); t.BinaryEncoding == typeID {
		return d.messageBody(spare)
	}
	t := LookupType(typeID)
	if t == nil || t.BinaryEncoding != typeID {
		d.Fail(status.BadServiceUnsupported)
		return nil
	}
	return d.messageBody(t.New())
}

// messageBody decodes the body of a message into v; trailing bytes are an error. v counts
// against the decode budget whether it is new or a spare, so that whether a message fits
// does not depend on what was decoded before it.
func (d *Decoder) messageBody(v Structure) Structure {
	if !d.Charge(v.TypeInfo().Size) {
		return nil
	}
	v.DecodeBinary(d)
	if d.err == nil && d.pos != len(d.buf) {
		d.Fail(status.BadDecodingError)
	}
	if d.err != nil {
		return nil
	}
	return v
}
