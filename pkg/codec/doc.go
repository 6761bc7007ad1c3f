// Package codec implements the OPC UA built-in types and their binary (Part 6 §5.2) and
// JSON (Part 6 §5.4) encodings.
//
// Encoding appends to a caller-owned buffer and never allocates once the buffer is large
// enough. Decoding is strict: every length is checked against Limits and against the bytes
// left before anything is allocated, and the first error sticks (Decoder.Err), so callers
// check once at the end. There is no reflection: structured types carry generated
// EncodeBinary/DecodeBinary and EncodeJSON/DecodeJSON methods.
package codec
