package codec

// Text forms used by the JSON encoding: NodeId, ExpandedNodeId and QualifiedName strings
// (Part 6 §5.1.12), ISO 8601 DateTimes (§5.4.2.6) and Guids (§5.1.3). The append
// functions allocate nothing when b has room; the parsers read a []byte.

import (
	"encoding/base64"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// b64 is the ByteString alphabet of Part 6 §5.4.2.8 (RFC 4648 with padding).
var b64 = base64.StdEncoding

// base64Raw reads ByteStrings written without padding.
var base64Raw = base64.RawStdEncoding

// uaNamespaceURI is namespace 0; NodeIds in it always use the plain <identifier> form.
const uaNamespaceURI = "http://opcfoundation.org/UA/"

// stringBytes views s as bytes without copying; the bytes must not be written.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// ---- writing ----

// appendURI writes uri with ';', '%', control characters and bytes that are not UTF-8
// percent-encoded, the ENCODEDURI of Part 6 §5.1.12.
func appendURI(b []byte, uri string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(uri); {
		c := uri[i]
		if c >= utf8.RuneSelf {
			if r, size := utf8.DecodeRuneInString(uri[i:]); r != utf8.RuneError || size > 1 {
				b = append(b, uri[i:i+size]...)
				i += size
				continue
			}
		}
		if c == ';' || c == '%' || c < 0x20 || c >= 0x7f {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
		i++
	}
	return b
}

// appendNamespace writes the "ns=<index>;" or "nsu=<uri>;" prefix of a NodeId outside
// namespace 0. The URI form needs uris to know the index.
func appendNamespace(b []byte, ns uint16, uris []string) []byte {
	if ns == 0 {
		return b
	}
	if int(ns) < len(uris) && uris[ns] != "" {
		b = append(b, "nsu="...)
		b = appendURI(b, uris[ns])
	} else {
		b = append(b, "ns="...)
		b = strconv.AppendUint(b, uint64(ns), 10)
	}
	return append(b, ';')
}

// appendIdentifier writes "i=", "s=", "g=" or "b=" and the identifier.
func appendIdentifier(b []byte, n NodeId) []byte {
	switch n.typ {
	case IDString:
		b = append(b, "s="...)
		b = append(b, n.str...)
	case IDGuid:
		b = append(b, "g="...)
		var g [36]byte
		n.GuidID().format(g[:])
		b = append(b, g[:]...)
	case IDOpaque:
		b = append(b, "b="...)
		b = b64.AppendEncode(b, stringBytes(n.str))
	default:
		b = append(b, "i="...)
		b = strconv.AppendUint(b, uint64(n.num), 10)
	}
	return b
}

// appendNodeIDText writes n as a Part 6 §5.1.12 NodeId string.
func appendNodeIDText(b []byte, n NodeId, uris []string) []byte {
	return appendIdentifier(appendNamespace(b, n.ns, uris), n)
}

// appendExpandedNodeIDText writes v as a Part 6 §5.1.12 ExpandedNodeId string. A
// ServerIndex is written as "svr=<index>;" since no server table is known to the encoder
// (the first abnormal state of §5.4.2.11); an explicit NamespaceUri as "nsu=<uri>;".
func appendExpandedNodeIDText(b []byte, v ExpandedNodeId, uris []string) []byte {
	if v.ServerIndex != 0 {
		b = append(b, "svr="...)
		b = strconv.AppendUint(b, uint64(v.ServerIndex), 10)
		b = append(b, ';')
	}
	if v.NamespaceURI != "" {
		b = append(b, "nsu="...)
		b = appendURI(b, v.NamespaceURI)
		b = append(b, ';')
		return appendIdentifier(b, v.NodeId)
	}
	return appendNodeIDText(b, v.NodeId, uris)
}

// appendQualifiedNameText writes q as a Part 6 §5.1.12 QualifiedName string: the bare
// name in namespace 0, "nsu=<uri>;<name>" when uris knows the index, else
// "<index>:<name>". A namespace 0 name that would read as one of the other forms is
// written as "0:<name>" so that it reads back unchanged.
func appendQualifiedNameText(b []byte, q QualifiedName, uris []string) []byte {
	switch {
	case q.NamespaceIndex == 0:
		if qualifiedNameNeedsIndex(q.Name) {
			b = append(b, "0:"...)
		}
	case int(q.NamespaceIndex) < len(uris) && uris[q.NamespaceIndex] != "":
		b = append(b, "nsu="...)
		b = appendURI(b, uris[q.NamespaceIndex])
		b = append(b, ';')
	default:
		b = strconv.AppendUint(b, uint64(q.NamespaceIndex), 10)
		b = append(b, ':')
	}
	return append(b, q.Name...)
}

// qualifiedNameNeedsIndex reports whether a namespace 0 name starts like "<digits>:" or
// "nsu=...;".
func qualifiedNameNeedsIndex(name string) bool {
	i := 0
	for i < len(name) && name[i] >= '0' && name[i] <= '9' {
		i++
	}
	if i > 0 && i < len(name) && name[i] == ':' {
		return true
	}
	if len(name) >= 4 && name[:4] == "nsu=" {
		for j := 4; j < len(name); j++ {
			if name[j] == ';' {
				return true
			}
		}
	}
	return false
}

// appendDateTime writes d (not the zero DateTime) as "YYYY-MM-DDThh:mm:ss[.fffffff]Z",
// with the fraction's trailing zeros left out.
func appendDateTime(b []byte, d DateTime) []byte {
	d = d.clamp()
	if d == MaxDateTime {
		return append(b, "9999-12-31T23:59:59Z"...)
	}
	t := int64(d) - unixEpochTicks
	sec := floorDiv(t, 1e7)
	frac := t - sec*1e7
	days := floorDiv(sec, 86400)
	sod := sec - days*86400
	y, m, dd := civilFromDays(days)
	b = appendDigits(b, y, 4)
	b = append(b, '-')
	b = appendDigits(b, int64(m), 2)
	b = append(b, '-')
	b = appendDigits(b, int64(dd), 2)
	b = append(b, 'T')
	b = appendDigits(b, sod/3600, 2)
	b = append(b, ':')
	b = appendDigits(b, sod/60%60, 2)
	b = append(b, ':')
	b = appendDigits(b, sod%60, 2)
	if frac != 0 {
		b = append(b, '.')
		n := len(b)
		b = appendDigits(b, frac, 7)
		for len(b) > n && b[len(b)-1] == '0' {
			b = b[:len(b)-1]
		}
	}
	return append(b, 'Z')
}

func appendDigits(b []byte, v int64, width int) []byte {
	var tmp [20]byte
	i := len(tmp)
	for v > 0 || width > 0 {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
		width--
	}
	return append(b, tmp[i:]...)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// civilFromDays converts days since 1970-01-01 to a proleptic Gregorian date.
func civilFromDays(z int64) (y int64, m, d int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// daysFromCivil converts a proleptic Gregorian date to days since 1970-01-01.
func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mm := int64(m)
	if m > 2 {
		mm -= 3
	} else {
		mm += 9
	}
	doy := (153*mm+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// ---- reading ----

func hasPrefix(s []byte, p string) bool { return len(s) >= len(p) && string(s[:len(p)]) == p }

func indexByte(s []byte, c byte) int {
	for i, x := range s {
		if x == c {
			return i
		}
	}
	return -1
}

// parseDecimal parses one or more ASCII digits as a value no larger than max.
func parseDecimal(s []byte, max uint64) (uint64, bool) {
	if len(s) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (max-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// textString returns s as a String: EmptyString when empty, never null.
func textString(s []byte) string {
	if len(s) == 0 {
		return EmptyString
	}
	return string(s)
}

// decodeURI undoes appendURI (any %XX is decoded).
func decodeURI(s []byte) (string, bool) {
	if indexByte(s, '%') < 0 {
		return string(s), true
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			out = append(out, s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		h, ok1 := unhex(s[i+1])
		l, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", false
		}
		out = append(out, h<<4|l)
		i += 2
	}
	return string(out), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// namespaceIndex maps a NamespaceUri to its index: 0 for the OPC UA namespace, else its
// position in uris.
func namespaceIndex(uri string, uris []string) (uint16, bool) {
	if uri == uaNamespaceURI {
		return 0, true
	}
	for i, u := range uris {
		if u == uri && i <= 0xffff {
			return uint16(i), true
		}
	}
	return 0, false
}

// parseIdentifier reads "i=", "s=", "g=" or "b=" and the identifier.
func parseIdentifier(ns uint16, s []byte) (NodeId, bool) {
	if len(s) < 2 || s[1] != '=' {
		return NodeId{}, false
	}
	id := s[2:]
	switch s[0] {
	case 'i':
		v, ok := parseDecimal(id, 0xffffffff)
		if !ok {
			return NodeId{}, false
		}
		return NodeId{ns: ns, num: uint32(v)}, true
	case 's':
		return NodeId{ns: ns, typ: IDString, str: string(id)}, true
	case 'g':
		g, ok := parseGuidText(id)
		if !ok {
			return NodeId{}, false
		}
		return NewGuidNodeId(ns, g), true
	case 'b':
		raw := make([]byte, b64.DecodedLen(len(id)))
		n, err := b64.Decode(raw, id)
		if err != nil {
			return NodeId{}, false
		}
		return NodeId{ns: ns, typ: IDOpaque, str: string(raw[:n])}, true
	}
	return NodeId{}, false
}

// parseNodeIDText reads a Part 6 §5.1.12 NodeId string. A NamespaceUri that uris cannot
// map is the second abnormal state of §5.4.2.10: the result is a String NodeId in
// namespace 0 holding the whole text.
func parseNodeIDText(s []byte, uris []string) (NodeId, bool) {
	var ns uint16
	rest := s
	switch {
	case hasPrefix(rest, "ns="):
		i := indexByte(rest, ';')
		if i < 0 {
			return NodeId{}, false
		}
		v, ok := parseDecimal(rest[3:i], 0xffff)
		if !ok {
			return NodeId{}, false
		}
		ns, rest = uint16(v), rest[i+1:]
	case hasPrefix(rest, "nsu="):
		i := indexByte(rest, ';')
		if i < 0 {
			return NodeId{}, false
		}
		uri, ok := decodeURI(rest[4:i])
		if !ok {
			return NodeId{}, false
		}
		idx, known := namespaceIndex(uri, uris)
		if !known {
			return NodeId{typ: IDString, str: string(s)}, true
		}
		ns, rest = idx, rest[i+1:]
	}
	return parseIdentifier(ns, rest)
}

// parseExpandedNodeIDText reads a Part 6 §5.1.12 ExpandedNodeId string. With ServerIndex
// 0 a NamespaceUri is mapped to an index when uris allows, else kept; a "svu=" server URI
// cannot be mapped without a server table, which is the second abnormal state of
// §5.4.2.11: the result is a String NodeId holding the whole text.
func parseExpandedNodeIDText(s []byte, uris []string) (ExpandedNodeId, bool) {
	var v ExpandedNodeId
	rest := s
	switch {
	case hasPrefix(rest, "svr="):
		i := indexByte(rest, ';')
		if i < 0 {
			return v, false
		}
		n, ok := parseDecimal(rest[4:i], 0xffffffff)
		if !ok {
			return v, false
		}
		v.ServerIndex, rest = uint32(n), rest[i+1:]
	case hasPrefix(rest, "svu="):
		return ExpandedNodeId{NodeId: NodeId{typ: IDString, str: string(s)}}, true
	}
	if hasPrefix(rest, "nsu=") {
		i := indexByte(rest, ';')
		if i < 0 {
			return v, false
		}
		uri, ok := decodeURI(rest[4:i])
		if !ok {
			return v, false
		}
		var ns uint16
		if v.ServerIndex == 0 {
			if idx, known := namespaceIndex(uri, uris); known {
				ns, uri = idx, ""
			}
		}
		n, ok := parseIdentifier(ns, rest[i+1:])
		if !ok {
			return v, false
		}
		v.NodeId, v.NamespaceURI = n, uri
		return v, true
	}
	n, ok := parseNodeIDText(rest, nil)
	v.NodeId = n
	return v, ok
}

// parseQualifiedNameText reads a Part 6 §5.1.12 QualifiedName string. A NamespaceUri that
// uris cannot map gives namespace 0 and the whole text as the name (§5.4.2.14).
func parseQualifiedNameText(s []byte, uris []string) QualifiedName {
	if hasPrefix(s, "nsu=") {
		if i := indexByte(s, ';'); i >= 0 {
			if uri, ok := decodeURI(s[4:i]); ok {
				if idx, known := namespaceIndex(uri, uris); known {
					return QualifiedName{NamespaceIndex: idx, Name: textString(s[i+1:])}
				}
			}
		}
		return QualifiedName{Name: textString(s)}
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 && i < len(s) && s[i] == ':' {
		if v, ok := parseDecimal(s[:i], 0xffff); ok {
			return QualifiedName{NamespaceIndex: uint16(v), Name: textString(s[i+1:])}
		}
	}
	return QualifiedName{Name: textString(s)}
}

// parseGuidText reads XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX in either case.
func parseGuidText(s []byte) (Guid, bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return Guid{}, false
	}
	var raw [16]byte
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
			continue
		}
		h, ok1 := unhex(s[i])
		l, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			return Guid{}, false
		}
		raw[j] = h<<4 | l
		j++
		i += 2
	}
	g := Guid{
		Data1: uint32(raw[0])<<24 | uint32(raw[1])<<16 | uint32(raw[2])<<8 | uint32(raw[3]),
		Data2: uint16(raw[4])<<8 | uint16(raw[5]),
		Data3: uint16(raw[6])<<8 | uint16(raw[7]),
	}
	copy(g.Data4[:], raw[8:])
	return g, true
}

func digits(s []byte, n int) (int, bool) {
	if len(s) < n {
		return 0, false
	}
	v := 0
	for _, c := range s[:n] {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// parseDateTimeText reads an ISO 8601 date and time, "YYYY-MM-DDThh:mm:ss", an optional
// fraction (digits past the seventh are dropped) and "Z" or a "+hh:mm"/"-hh:mm" offset.
// Times before 1601 give the zero DateTime and times from the end of 9999 on give
// MaxDateTime (Part 6 §5.4.2.6).
func parseDateTimeText(s []byte) (DateTime, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
		s[13] != ':' || s[16] != ':' {
		return 0, false
	}
	year, ok1 := digits(s[0:], 4)
	month, ok2 := digits(s[5:], 2)
	day, ok3 := digits(s[8:], 2)
	hour, ok4 := digits(s[11:], 2)
	minute, ok5 := digits(s[14:], 2)
	second, ok6 := digits(s[17:], 2)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 ||
		month < 1 || month > 12 || day < 1 || day > daysIn(year, month) ||
		hour > 23 || minute > 59 || second > 59 {
		return 0, false
	}
	rest := s[19:]
	var frac int64
	if len(rest) > 0 && rest[0] == '.' {
		i := 1
		scale := int64(1e6)
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			frac += int64(rest[i]-'0') * scale
			scale /= 10
			i++
		}
		if i == 1 {
			return 0, false
		}
		rest = rest[i:]
	}
	var offset int64
	switch {
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := digits(rest[1:], 2)
		om, ok2 := digits(rest[4:], 2)
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return 0, false
		}
		offset = int64(oh*3600 + om*60)
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return 0, false
	}
	secs := daysFromCivil(int64(year), month, day)*86400 + int64(hour*3600+minute*60+second) - offset
	ticks := secs*1e7 + frac + unixEpochTicks
	return DateTime(ticks).clamp(), true
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
