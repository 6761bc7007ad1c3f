// Package clienttest holds the integration tests of pkg/client against the server run
// in-process (servertest) and against gopcua, side by side in one benchmark. It has no
// code of its own: pkg/client's unit tests may use only pkg, and these need the server.
package clienttest
