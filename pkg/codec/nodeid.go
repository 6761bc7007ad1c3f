package codec

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"uastack.dev/pkg/status"
)

// IDType is the kind of a NodeId's identifier (Part 3 §8.2.3).
type IDType byte

// The identifier types.
const (
	IDNumeric IDType = iota
	IDString
	IDGuid
	IDOpaque
)

// NodeId identifies a node in an address space (Part 3 §8.2). The zero value is the null
// NodeId ns=0;i=0. NodeIds are comparable and may be used as map keys.
type NodeId struct {
	ns  uint16
	typ IDType
	num uint32
	// str holds a String identifier, the bytes of an Opaque one, or the 16 raw bytes of a
	// Guid in wire order.
	str string
}

// NewNumericNodeId returns ns=ns;i=id.
func NewNumericNodeId(ns uint16, id uint32) NodeId { return NodeId{ns: ns, num: id} }

// NewStringNodeId returns ns=ns;s=id.
func NewStringNodeId(ns uint16, id string) NodeId { return NodeId{ns: ns, typ: IDString, str: id} }

// NewGuidNodeId returns ns=ns;g=id.
func NewGuidNodeId(ns uint16, id Guid) NodeId {
	var b [16]byte
	putGuid(b[:], id)
	return NodeId{ns: ns, typ: IDGuid, str: string(b[:])}
}

// NewOpaqueNodeId returns ns=ns;b=id.
func NewOpaqueNodeId(ns uint16, id []byte) NodeId {
	return NodeId{ns: ns, typ: IDOpaque, str: string(id)}
}

// Namespace returns the namespace index.
func (n NodeId) Namespace() uint16 { return n.ns }

// InNamespace returns n with namespace index ns: the same identifier in another
// namespace, as when a node is named by its namespace URI and the index differs between
// servers.
func (n NodeId) InNamespace(ns uint16) NodeId {
	n.ns = ns
	return n
}

// Type returns the kind of identifier.
func (n NodeId) Type() IDType { return n.typ }

// IntID returns the numeric identifier, or 0 when the identifier is not numeric.
func (n NodeId) IntID() uint32 { return n.num }

// StringID returns a String identifier, or "" when the identifier is not a String.
func (n NodeId) StringID() string {
	if n.typ != IDString {
		return ""
	}
	return n.str
}

// GuidID returns a Guid identifier, or the zero Guid.
func (n NodeId) GuidID() Guid {
	if n.typ != IDGuid || len(n.str) != 16 {
		return Guid{}
	}
	return readGuid([]byte(n.str))
}

// OpaqueID returns a copy of an Opaque identifier, or nil.
func (n NodeId) OpaqueID() []byte {
	if n.typ != IDOpaque {
		return nil
	}
	return []byte(n.str)
}

// IsNull reports whether n is a null NodeId in any of the forms of Part 3 §8.2.4.
func (n NodeId) IsNull() bool {
	if n.ns != 0 {
		return false
	}
	switch n.typ {
	case IDNumeric:
		return n.num == 0
	case IDGuid:
		return n.str == zeroGuid || n.str == ""
	}
	return n.str == ""
}

// String formats n in the notation of Part 6 §5.3.1.10 ("ns=2;s=Temp", "i=85").
func (n NodeId) String() string {
	var b strings.Builder
	if n.ns != 0 {
		b.WriteString("ns=")
		b.WriteString(strconv.Itoa(int(n.ns)))
		b.WriteByte(';')
	}
	switch n.typ {
	case IDNumeric:
		b.WriteString("i=")
		b.WriteString(strconv.FormatUint(uint64(n.num), 10))
	case IDString:
		b.WriteString("s=")
		b.WriteString(n.str)
	case IDGuid:
		b.WriteString("g=")
		b.WriteString(n.GuidID().String())
	case IDOpaque:
		b.WriteString("b=")
		b.WriteString(base64.StdEncoding.EncodeToString([]byte(n.str)))
	}
	return b.String()
}

// ParseNodeId parses the notation String produces.
func ParseNodeId(s string) (NodeId, error) {
	var ns uint16
	rest := s
	if strings.HasPrefix(rest, "ns=") {
		i := strings.IndexByte(rest, ';')
		if i < 0 {
			return NodeId{}, fmt.Errorf("codec: invalid NodeId %q", s)
		}
		v, err := strconv.ParseUint(rest[3:i], 10, 16)
		if err != nil {
			return NodeId{}, fmt.Errorf("codec: invalid NodeId %q: namespace: %w", s, err)
		}
		ns, rest = uint16(v), rest[i+1:]
	}
	if len(rest) < 2 || rest[1] != '=' {
		return NodeId{}, fmt.Errorf("codec: invalid NodeId %q", s)
	}
	id := rest[2:]
	switch rest[0] {
	case 'i':
		v, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			return NodeId{}, fmt.Errorf("codec: invalid NodeId %q: %w", s, err)
		}
		return NewNumericNodeId(ns, uint32(v)), nil
	case 's':
		return NewStringNodeId(ns, id), nil
	case 'g':
		g, err := ParseGuid(id)
		if err != nil {
			return NodeId{}, err
		}
		return NewGuidNodeId(ns, g), nil
	case 'b':
		b, err := base64.StdEncoding.DecodeString(id)
		if err != nil {
			return NodeId{}, fmt.Errorf("codec: invalid NodeId %q: %w", s, err)
		}
		return NewOpaqueNodeId(ns, b), nil
	}
	return NodeId{}, fmt.Errorf("codec: invalid NodeId %q", s)
}

// MustParseNodeId is ParseNodeId for constants; it panics on error.
func MustParseNodeId(s string) NodeId {
	n, err := ParseNodeId(s)
	if err != nil {
		panic(err)
	}
	return n
}

// NodeId encoding bytes (Part 6 §5.2.2.9).
const (
	nodeIDTwoByte  = 0x00
	nodeIDFourByte = 0x01
	nodeIDNumeric  = 0x02
	nodeIDString   = 0x03
	nodeIDGuid     = 0x04
	nodeIDOpaque   = 0x05

	flagServerIndex  = 0x40
	flagNamespaceURI = 0x80
)

// NodeId writes v in its most compact form.
func (e *Encoder) NodeId(v NodeId) { e.nodeID(v, 0) }

func (e *Encoder) nodeID(v NodeId, flags byte) {
	e.fit()
	switch v.typ {
	case IDNumeric:
		switch {
		case v.ns == 0 && v.num <= 0xff:
			e.buf = append(e.buf, nodeIDTwoByte|flags, byte(v.num))
		case v.ns <= 0xff && v.num <= 0xffff:
			e.buf = append(e.buf, nodeIDFourByte|flags, byte(v.ns), byte(v.num), byte(v.num>>8))
		default:
			e.buf = append(e.buf, nodeIDNumeric|flags)
			e.UInt16(v.ns)
			e.UInt32(v.num)
		}
	case IDString:
		e.buf = append(e.buf, nodeIDString|flags)
		e.UInt16(v.ns)
		if v.str == "" {
			// A null and an empty String identifier are the same null NodeId.
			e.Int32(-1)
		} else {
			e.String(v.str)
		}
	case IDGuid:
		e.buf = append(e.buf, nodeIDGuid|flags)
		e.UInt16(v.ns)
		if len(v.str) == 16 {
			e.buf = append(e.buf, v.str...)
		} else {
			e.buf = append(e.buf, zeroGuid...)
		}
	case IDOpaque:
		e.buf = append(e.buf, nodeIDOpaque|flags)
		e.UInt16(v.ns)
		if v.str == "" {
			e.Int32(-1)
		} else {
			e.Int32(int32(len(v.str)))
			e.putString(v.str)
		}
	default:
		e.Fail(status.BadEncodingError)
	}
}

// NodeId reads a NodeId. ExpandedNodeId flags are rejected here.
func (d *Decoder) NodeId() NodeId {
	b := d.Byte()
	if b&0xc0 != 0 {
		d.Fail(status.BadDecodingError)
		return NodeId{}
	}
	return d.nodeIDBody(b)
}

func (d *Decoder) nodeIDBody(b byte) NodeId {
	switch b & 0x3f {
	case nodeIDTwoByte:
		return NodeId{num: uint32(d.Byte())}
	case nodeIDFourByte:
		ns := d.Byte()
		return NodeId{ns: uint16(ns), num: uint32(d.UInt16())}
	case nodeIDNumeric:
		ns := d.UInt16()
		return NodeId{ns: ns, num: d.UInt32()}
	case nodeIDString:
		ns := d.UInt16()
		n := d.length(d.limits.MaxStringLength)
		switch {
		case n < 0:
			return NodeId{ns: ns, typ: IDString}
		case n == 0:
			return NodeId{ns: ns, typ: IDString, str: EmptyString}
		}
		if !d.Charge(n) {
			return NodeId{}
		}
		s := d.ids.str(d.buf[d.pos : d.pos+n])
		d.pos += n
		return NodeId{ns: ns, typ: IDString, str: s}
	case nodeIDGuid:
		ns := d.UInt16()
		raw := d.take(16)
		if raw == nil || !d.Charge(len(raw)) {
			return NodeId{}
		}
		return NodeId{ns: ns, typ: IDGuid, str: d.ids.str(raw)}
	case nodeIDOpaque:
		ns := d.UInt16()
		n := d.length(d.limits.MaxByteStringLength)
		if n <= 0 {
			return NodeId{ns: ns, typ: IDOpaque}
		}
		if !d.Charge(n) {
			return NodeId{}
		}
		s := d.ids.str(d.buf[d.pos : d.pos+n])
		d.pos += n
		return NodeId{ns: ns, typ: IDOpaque, str: s}
	}
	d.Fail(status.BadDecodingError)
	return NodeId{}
}

// ExpandedNodeId is a NodeId that may name its namespace by URI and live on another server
// (Part 6 §5.2.2.10).
type ExpandedNodeId struct {
	NodeId       NodeId
	NamespaceURI string
	ServerIndex  uint32
}

// IsNull reports whether v names no node.
func (v ExpandedNodeId) IsNull() bool {
	return v.NodeId.IsNull() && v.NamespaceURI == "" && v.ServerIndex == 0
}

// String formats v as "svr=1;nsu=uri;s=x" with absent parts left out.
func (v ExpandedNodeId) String() string {
	var b strings.Builder
	if v.ServerIndex != 0 {
		b.WriteString("svr=")
		b.WriteString(strconv.FormatUint(uint64(v.ServerIndex), 10))
		b.WriteByte(';')
	}
	if v.NamespaceURI != "" {
		b.WriteString("nsu=")
		b.WriteString(v.NamespaceURI)
		b.WriteByte(';')
		n := v.NodeId
		n.ns = 0
		b.WriteString(n.String())
		return b.String()
	}
	b.WriteString(v.NodeId.String())
	return b.String()
}

// ExpandedNodeId writes v (Part 6 §5.2.2.10). A null or empty NamespaceURI and a zero
// ServerIndex are left out; beside a NamespaceURI the NamespaceIndex is written as 0.
func (e *Encoder) ExpandedNodeId(v ExpandedNodeId) {
	var flags byte
	n := v.NodeId
	if v.NamespaceURI != "" {
		flags |= flagNamespaceURI
		n.ns = 0
	}
	if v.ServerIndex != 0 {
		flags |= flagServerIndex
	}
	e.nodeID(n, flags)
	if flags&flagNamespaceURI != 0 {
		e.String(v.NamespaceURI)
	}
	if flags&flagServerIndex != 0 {
		e.UInt32(v.ServerIndex)
	}
}

// ExpandedNodeId reads an ExpandedNodeId (Part 6 §5.2.2.10). When a NamespaceURI is
// present the NamespaceIndex on the wire is ignored and set to 0.
func (d *Decoder) ExpandedNodeId() ExpandedNodeId {
	b := d.Byte()
	v := ExpandedNodeId{NodeId: d.nodeIDBody(b)}
	if b&flagNamespaceURI != 0 {
		v.NamespaceURI = d.String()
		if v.NamespaceURI != "" {
			v.NodeId.ns = 0
		}
	}
	if b&flagServerIndex != 0 {
		v.ServerIndex = d.UInt32()
	}
	if d.err != nil {
		return ExpandedNodeId{}
	}
	return v
}

const zeroGuid = "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"

func putGuid(b []byte, g Guid) {
	b[0], b[1], b[2], b[3] = byte(g.Data1), byte(g.Data1>>8), byte(g.Data1>>16), byte(g.Data1>>24)
	b[4], b[5] = byte(g.Data2), byte(g.Data2>>8)
	b[6], b[7] = byte(g.Data3), byte(g.Data3>>8)
	copy(b[8:16], g.Data4[:])
}

func readGuid(b []byte) Guid {
	g := Guid{
		Data1: uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24,
		Data2: uint16(b[4]) | uint16(b[5])<<8,
		Data3: uint16(b[6]) | uint16(b[7])<<8,
	}
	copy(g.Data4[:], b[8:16])
	return g
}
