package codec

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"time"
	"unsafe"
)

var emptyByte [1]byte

// EmptyString is an empty String that is not null: it encodes with length 0, where the
// zero value "" encodes as null (length -1). Decoding an empty String returns it.
var EmptyString = unsafe.String(&emptyByte[0], 0)

// IsNull reports whether s is the null String: empty and not EmptyString or a slice of
// another string. Every "" written in Go source is null.
func IsNull(s string) bool { return len(s) == 0 && unsafe.StringData(s) == nil }

// DateTime is an OPC UA DateTime: 100-nanosecond ticks since 1601-01-01 00:00 UTC
// (Part 6 §5.2.2.5). The zero value is the minimum date, which OPC UA treats as "unset".
type DateTime int64

// ticks between 1601-01-01 and 1970-01-01
const unixEpochTicks = 116444736000000000

// MaxDateTime is the encoded maximum: 9999-12-31 23:59:59 UTC and later all encode as it.
const MaxDateTime = DateTime(math.MaxInt64)

// maxDateTicks is 9999-12-31 23:59:59 UTC in ticks.
const maxDateTicks = 2650467743990000000

// DateTimeOf converts t, clamping to the range OPC UA can represent. The zero time.Time
// becomes the zero DateTime.
func DateTimeOf(t time.Time) DateTime {
	if t.IsZero() {
		return 0
	}
	s := t.Unix()
	// time.Time spans more than int64 ticks; clamp in seconds before multiplying.
	if s < -unixEpochTicks/1e7 {
		return 0
	}
	if s >= (maxDateTicks-unixEpochTicks)/1e7 {
		return MaxDateTime
	}
	return DateTime(s*1e7 + int64(t.Nanosecond())/100 + unixEpochTicks).clamp()
}

// Now returns the current time as a DateTime.
func Now() DateTime { return DateTimeOf(time.Now()) }

// Time converts d to a UTC time.Time. The zero DateTime becomes the zero time.Time and
// MaxDateTime becomes 9999-12-31 23:59:59 UTC.
func (d DateTime) Time() time.Time {
	switch d = d.clamp(); d {
	case 0:
		return time.Time{}
	case MaxDateTime:
		return time.Unix((maxDateTicks-unixEpochTicks)/1e7, 0).UTC()
	}
	t := int64(d) - unixEpochTicks
	sec, rem := t/1e7, t%1e7
	if rem < 0 {
		sec--
		rem += 1e7
	}
	return time.Unix(sec, rem*100).UTC()
}

// String formats d as RFC 3339 with 100 ns precision.
func (d DateTime) String() string { return d.Time().Format("2006-01-02T15:04:05.9999999Z07:00") }

// clamp applies Part 6 §5.2.2.5: nothing before 1601 and everything from the end of 9999
// on is the maximum.
func (d DateTime) clamp() DateTime {
	switch {
	case d <= 0:
		return 0
	case d >= maxDateTicks:
		return MaxDateTime
	}
	return d
}

// Guid is a 16-byte globally unique identifier (Part 6 §5.1.3).
type Guid struct {
	Data1 uint32
	Data2 uint16
	Data3 uint16
	Data4 [8]byte
}

// String formats g as XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX in upper case.
func (g Guid) String() string {
	var b [36]byte
	g.format(b[:])
	return string(b[:])
}

func (g Guid) format(b []byte) {
	const digits = "0123456789ABCDEF"
	var raw [16]byte
	binary.BigEndian.PutUint32(raw[0:], g.Data1)
	binary.BigEndian.PutUint16(raw[4:], g.Data2)
	binary.BigEndian.PutUint16(raw[6:], g.Data3)
	copy(raw[8:], g.Data4[:])
	j := 0
	for i, c := range raw {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = digits[c>>4], digits[c&15]
		j += 2
	}
}

// ParseGuid parses the 36-character form, in either case.
func ParseGuid(s string) (Guid, error) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return Guid{}, fmt.Errorf("codec: invalid Guid %q", s)
	}
	var raw [16]byte
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	if _, err := hex.Decode(raw[:], []byte(h)); err != nil {
		return Guid{}, fmt.Errorf("codec: invalid Guid %q", s)
	}
	g := Guid{
		Data1: binary.BigEndian.Uint32(raw[0:]),
		Data2: binary.BigEndian.Uint16(raw[4:]),
		Data3: binary.BigEndian.Uint16(raw[6:]),
	}
	copy(g.Data4[:], raw[8:])
	return g, nil
}

// QualifiedName is a name qualified by a namespace index (Part 3 §8.3).
type QualifiedName struct {
	NamespaceIndex uint16
	Name           string
}

// QualifiedName writes v.
func (e *Encoder) QualifiedName(v QualifiedName) {
	e.UInt16(v.NamespaceIndex)
	e.String(v.Name)
}

// QualifiedName reads a QualifiedName.
func (d *Decoder) QualifiedName() QualifiedName {
	return QualifiedName{NamespaceIndex: d.UInt16(), Name: d.String()}
}

// LocalizedText is human-readable text with an optional locale (Part 3 §8.5). A null or
// empty Locale or Text is left out of the encoding.
type LocalizedText struct {
	Locale string
	Text   string
}

const (
	ltLocale = 0x01
	ltText   = 0x02
)

// LocalizedText writes v with its encoding mask (Part 6 §5.2.2.14); a null or empty
// Locale or Text is left out.
func (e *Encoder) LocalizedText(v LocalizedText) {
	e.fit()
	var mask byte
	if v.Locale != "" {
		mask |= ltLocale
	}
	if v.Text != "" {
		mask |= ltText
	}
	e.buf = append(e.buf, mask)
	if mask&ltLocale != 0 {
		e.String(v.Locale)
	}
	if mask&ltText != 0 {
		e.String(v.Text)
	}
}

// LocalizedText reads a LocalizedText. Unknown mask bits are ignored, as the .NET and C
// stacks do.
func (d *Decoder) LocalizedText() LocalizedText {
	var v LocalizedText
	mask := d.Byte()
	if mask&ltLocale != 0 {
		v.Locale = d.String()
	}
	if mask&ltText != 0 {
		v.Text = d.String()
	}
	return v
}
