package codec

// This file fixes the API that generated code uses for JSON (Part 6 §5.4). It is replaced
// by the real implementation in json_encode.go and json_decode.go.

import "io"

// JSONEncoder writes the OPC UA JSON encoding (Part 6 §5.4, 1.05) of values to an
// io.Writer, in the compact or the verbose form.
type JSONEncoder struct {
	w       io.Writer
	verbose bool
}

// NewJSONEncoder returns an encoder streaming to w.
func NewJSONEncoder(w io.Writer, verbose bool) *JSONEncoder {
	return &JSONEncoder{w: w, verbose: verbose}
}

// Verbose reports whether the verbose form is written.
func (e *JSONEncoder) Verbose() bool { return e.verbose }

// JSONDecoder reads the OPC UA JSON encoding.
type JSONDecoder struct {
	data []byte
	err  error
}

// NewJSONDecoder returns a decoder over data.
func NewJSONDecoder(data []byte) *JSONDecoder { return &JSONDecoder{data: data} }

// Err returns the first error met.
func (d *JSONDecoder) Err() error { return d.err }
