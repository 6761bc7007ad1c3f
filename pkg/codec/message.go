package codec

import "uastack.dev/pkg/ua/status"

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
	v := t.New()
	v.DecodeBinary(d)
	if d.err == nil && d.pos != len(d.buf) {
		d.Fail(status.BadDecodingError)
	}
	if d.err != nil {
		return nil
	}
	return v
}
