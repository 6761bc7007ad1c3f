//go:build wasip1

package wasm

import (
	"context"
	"time"
	"unsafe"

	"uastack.dev/plugins/sdk"
)

// The guest's state: one call at a time runs in an instance, so plain globals do.
var (
	guest *sdk.Guest
	in    []byte // the request buffer the host fills (uastack_alloc)
	out   []byte // the last reply, kept alive until the next call
)

// Register makes f the factory of the manager this module serves. Call it once, from an
// init function of package main.
func Register(f sdk.Factory) { guest = sdk.NewGuest(f, link{}) }

//go:wasmexport uastack_abi_version
func abiVersion() uint32 { return ABIVersion }

// alloc returns a buffer of n bytes for the host to write the next batch into.
//
//go:wasmexport uastack_alloc
func alloc(n uint32) uint32 {
	if uint32(cap(in)) < n {
		in = make([]byte, n)
	}
	in = in[:n]
	if n == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&in[0])))
}

// call answers the batch of n bytes the host wrote into the buffer of alloc, and returns
// where the reply batch is: its address in the high 32 bits, its length in the low.
//
//go:wasmexport uastack_call
func call(n uint32) uint64 {
	if guest == nil || n > uint32(len(in)) {
		return 0
	}
	out = guest.ServeInto(context.Background(), in[:n], out[:0])
	return uint64(uintptr(unsafe.Pointer(&out[0])))<<32 | uint64(len(out))
}

//go:wasmimport uastack log
func hostLog(ptr unsafe.Pointer, n uint32)

//go:wasmimport uastack push
func hostPush(ptr unsafe.Pointer, n uint32)

//go:wasmimport uastack now
func hostNow() int64

// link reaches the host through its imports.
type link struct{}

func (link) Push(frame []byte) {
	if len(frame) > 0 {
		hostPush(unsafe.Pointer(&frame[0]), uint32(len(frame)))
	}
}

func (link) Log(line []byte) {
	if len(line) > 0 {
		hostLog(unsafe.Pointer(&line[0]), uint32(len(line)))
	}
}

func (link) Now() time.Time { return time.Unix(0, hostNow()) }
