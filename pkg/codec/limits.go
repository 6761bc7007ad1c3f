package codec

// Limits bound what a Decoder accepts. They are checked before any buffer or slice is made.
// A zero field means "use the default".
type Limits struct {
	MaxStringLength     int // bytes in a String or XmlElement
	MaxByteStringLength int // bytes in a ByteString
	MaxArrayLength      int // elements in one array
	MaxMessageSize      int // bytes in one message given to a Decoder
	MaxDepth            int // nesting of Variants, DiagnosticInfos, ExtensionObjects and structures
}

// DefaultLimits are generous enough for any conforming peer and small enough that a
// hostile message cannot make the decoder commit much memory.
var DefaultLimits = Limits{
	MaxStringLength:     1 << 20,
	MaxByteStringLength: 16 << 20,
	MaxArrayLength:      1 << 20,
	MaxMessageSize:      64 << 20,
	MaxDepth:            100,
}

func (l Limits) withDefaults() Limits {
	if l.MaxStringLength <= 0 {
		l.MaxStringLength = DefaultLimits.MaxStringLength
	}
	if l.MaxByteStringLength <= 0 {
		l.MaxByteStringLength = DefaultLimits.MaxByteStringLength
	}
	if l.MaxArrayLength <= 0 {
		l.MaxArrayLength = DefaultLimits.MaxArrayLength
	}
	if l.MaxMessageSize <= 0 {
		l.MaxMessageSize = DefaultLimits.MaxMessageSize
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	return l
}
