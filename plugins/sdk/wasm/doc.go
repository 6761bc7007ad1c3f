// Package wasm serves a node manager as a WASM guest of the uastack WASM host: build the
// plugin with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared, and register its
// Factory from an init function of package main:
//
//	func init() { wasm.Register(device.Factory) }
//	func main() {}
//
// The module is a WASI reactor: the host calls _initialize (package init, and so
// Register) and then the exports of ABI.md (in this directory), which is the contract a
// guest written in another language implements. A guest runs only inside calls:
// between them its goroutines and timers stand still, so a manager served this way
// computes what depends on time when it is asked, and pushes while it answers.
package wasm
