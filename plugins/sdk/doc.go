// Package sdk is what a plugin author imports: implement the nodemgr capabilities of a
// node manager in plain Go, then serve it as a WASM guest or as a plugin process.
package sdk
