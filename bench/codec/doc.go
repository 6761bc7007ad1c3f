// Package codec holds the codec suite of the benchmarks: uastack's binary and JSON codec
// side by side with gopcua's, and the oracle tests that cross-check our encodings
// against gopcua's independent implementation.
package codec
