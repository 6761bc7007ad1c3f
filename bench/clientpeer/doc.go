// Package clientpeer tests pkg/client against peer servers, independent
// implementations of OPC UA: gopcua's server, in-process. It has no code of its own.
package clientpeer
