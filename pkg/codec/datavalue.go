package codec

import (
	"unsafe"

	"uastack.dev/pkg/status"
)

// DataValue is a value with its status and timestamps (Part 4 §7.11, Part 6 §5.2.2.17).
// Fields at their zero value are left out of the encoding, as the mask allows.
type DataValue struct {
	Value             Variant
	Status            status.Code
	SourceTimestamp   DateTime
	SourcePicoseconds uint16
	ServerTimestamp   DateTime
	ServerPicoseconds uint16
}

const (
	dvValue             = 0x01
	dvStatus            = 0x02
	dvSourceTimestamp   = 0x04
	dvServerTimestamp   = 0x08
	dvSourcePicoseconds = 0x10
	dvServerPicoseconds = 0x20
)

// DataValue writes v (Part 6 §5.2.2.17). Picoseconds are written only beside their
// timestamp, clamped to 9999, and as 0 beside DateTime.MinValue or MaxValue (Part 6 §5.1.4).
func (e *Encoder) DataValue(v *DataValue) {
	e.fit()
	srcTS, srvTS := v.SourceTimestamp.clamp(), v.ServerTimestamp.clamp()
	srcPS, srvPS := picoseconds(srcTS, v.SourcePicoseconds), picoseconds(srvTS, v.ServerPicoseconds)
	var mask byte
	if v.Value.typ != TypeNull {
		mask |= dvValue
	}
	if v.Status != 0 {
		mask |= dvStatus
	}
	if srcTS != 0 {
		mask |= dvSourceTimestamp
	}
	if srvTS != 0 {
		mask |= dvServerTimestamp
	}
	if srcPS != 0 {
		mask |= dvSourcePicoseconds
	}
	if srvPS != 0 {
		mask |= dvServerPicoseconds
	}
	e.buf = append(e.buf, mask)
	if mask&dvValue != 0 {
		e.Variant(&v.Value)
	}
	if mask&dvStatus != 0 {
		e.UInt32(uint32(v.Status))
	}
	if mask&dvSourceTimestamp != 0 {
		e.Int64(int64(srcTS))
	}
	if mask&dvSourcePicoseconds != 0 {
		e.UInt16(srcPS)
	}
	if mask&dvServerTimestamp != 0 {
		e.Int64(int64(srvTS))
	}
	if mask&dvServerPicoseconds != 0 {
		e.UInt16(srvPS)
	}
}

// maxPicoseconds is the largest Picoseconds value: 10 ps intervals within 100 ns.
const maxPicoseconds = 9999

// picoseconds returns the Picoseconds that may accompany ts: none without a timestamp
// ("If the source timestamp is missing the Picoseconds are ignored", Part 6 §5.2.2.17),
// 0 beside DateTime.MinValue or MaxValue (Part 6 §5.1.4), and at most 9999 ("The decoder
// shall treat values greater than or equal to 10 000 as the value '9999'").
func picoseconds(ts DateTime, ps uint16) uint16 {
	switch {
	case ts == 0 || ts == MaxDateTime:
		return 0
	case ps > maxPicoseconds:
		return maxPicoseconds
	}
	return ps
}

// DataValue reads a DataValue into v (Part 6 §5.2.2.17), normalising Picoseconds as
// Encoder.DataValue does.
func (d *Decoder) DataValue(v *DataValue) {
	*v = DataValue{}
	mask := d.Byte()
	if mask&dvValue != 0 {
		d.Variant(&v.Value)
	}
	if mask&dvStatus != 0 {
		v.Status = status.Code(d.UInt32())
	}
	if mask&dvSourceTimestamp != 0 {
		v.SourceTimestamp = d.DateTime()
	}
	if mask&dvSourcePicoseconds != 0 {
		v.SourcePicoseconds = picoseconds(v.SourceTimestamp, d.UInt16())
	}
	if mask&dvServerTimestamp != 0 {
		v.ServerTimestamp = d.DateTime()
	}
	if mask&dvServerPicoseconds != 0 {
		v.ServerPicoseconds = picoseconds(v.ServerTimestamp, d.UInt16())
	}
	if d.err != nil {
		*v = DataValue{}
	}
}

// DiagnosticInfo carries vendor-specific diagnostics for an operation (Part 4 §7.12).
// Indexes refer into the StringTable of the response header; -1 means absent.
type DiagnosticInfo struct {
	// Mask records which fields are present (the Has* constants).
	Mask                uint8
	SymbolicID          int32
	NamespaceURI        int32
	Locale              int32
	LocalizedText       int32
	AdditionalInfo      string
	InnerStatusCode     status.Code
	InnerDiagnosticInfo *DiagnosticInfo
}

// DiagnosticInfo mask bits (Part 6 §5.2.2.12).
const (
	HasSymbolicID          = 0x01
	HasNamespaceURI        = 0x02
	HasLocalizedText       = 0x04
	HasLocale              = 0x08
	HasAdditionalInfo      = 0x10
	HasInnerStatusCode     = 0x20
	HasInnerDiagnosticInfo = 0x40
)

// DiagnosticInfo writes v.
func (e *Encoder) DiagnosticInfo(v *DiagnosticInfo) {
	e.fit()
	if v.Mask == 0 && v.InnerDiagnosticInfo == nil {
		e.buf = append(e.buf, 0)
		return
	}
	mask := v.Mask &^ HasInnerDiagnosticInfo
	if v.InnerDiagnosticInfo != nil {
		mask |= HasInnerDiagnosticInfo
	}
	e.buf = append(e.buf, mask)
	if mask&HasSymbolicID != 0 {
		e.Int32(v.SymbolicID)
	}
	if mask&HasNamespaceURI != 0 {
		e.Int32(v.NamespaceURI)
	}
	if mask&HasLocale != 0 {
		e.Int32(v.Locale)
	}
	if mask&HasLocalizedText != 0 {
		e.Int32(v.LocalizedText)
	}
	if mask&HasAdditionalInfo != 0 {
		e.String(v.AdditionalInfo)
	}
	if mask&HasInnerStatusCode != 0 {
		e.UInt32(uint32(v.InnerStatusCode))
	}
	if mask&HasInnerDiagnosticInfo != 0 {
		if e.enter() {
			e.DiagnosticInfo(v.InnerDiagnosticInfo)
			e.leave()
		}
	}
}

// DiagnosticInfo reads a DiagnosticInfo into v; nesting counts against MaxDepth.
func (d *Decoder) DiagnosticInfo(v *DiagnosticInfo) {
	*v = DiagnosticInfo{}
	mask := d.Byte()
	v.Mask = mask &^ 0x80
	if mask&HasSymbolicID != 0 {
		v.SymbolicID = d.Int32()
	}
	if mask&HasNamespaceURI != 0 {
		v.NamespaceURI = d.Int32()
	}
	if mask&HasLocale != 0 {
		v.Locale = d.Int32()
	}
	if mask&HasLocalizedText != 0 {
		v.LocalizedText = d.Int32()
	}
	if mask&HasAdditionalInfo != 0 {
		v.AdditionalInfo = d.String()
	}
	if mask&HasInnerStatusCode != 0 {
		v.InnerStatusCode = status.Code(d.UInt32())
	}
	if mask&HasInnerDiagnosticInfo != 0 && d.Charge(int(unsafe.Sizeof(*v))) && d.Enter() {
		v.InnerDiagnosticInfo = new(DiagnosticInfo)
		d.DiagnosticInfo(v.InnerDiagnosticInfo)
		d.Leave()
	}
}
