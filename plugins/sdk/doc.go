// Package sdk is what a plugin author imports: implement the capabilities of a node
// manager (package nodemgr) in plain Go, give a Factory that builds it from its
// configuration entry, and serve it as a WASM guest (package sdk/wasm) or as a plugin
// process (package sdk/process). The manager is written as if it ran inside the
// server; Guest turns the frames that cross the boundary into its calls and its
// answers, pushes and logs back into frames.
package sdk
