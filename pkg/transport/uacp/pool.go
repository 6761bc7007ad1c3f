package uacp

import (
	"math/bits"
	"sync"
	"unsafe"
)

// Size classes of the Pool: powers of two from 8 KiB to 16 MiB.
const (
	minClassShift = 13
	maxClassShift = 24
	numClasses    = maxClassShift - minClassShift + 1
	minClassSize  = 1 << minClassShift
	maxClassSize  = 1 << maxClassShift
)

// Pool recycles byte buffers in power-of-two size classes from 8 KiB to 16 MiB. A request
// is served from the smallest class that holds it: exactly 65,536 bytes comes from the
// 64 KiB class, 65,537 from the 128 KiB class. Requests over 16 MiB are allocated and never
// pooled.
//
// Ownership: a buffer returned by Get belongs to the caller until it passes the buffer to Put
// or PutZeroed; after that the caller must not touch it, nor any slice of it, because the
// next Get may hand it to another goroutine. Put a buffer at most once. Buffers whose
// capacity is not a class size are dropped by Put, so foreign buffers are harmless.
//
// Get and Put do not allocate in steady state: a buffer lives in its class's sync.Pool as
// the pointer to its first byte, which fits an interface without an allocation. Like
// sync.Pool, a Pool lets the garbage collector reclaim idle buffers. The zero Pool is ready to
// use; a Pool is safe for concurrent use and must not be copied after first use.
type Pool struct {
	classes [numClasses]sync.Pool // each holds the first bytes (*byte) of buffers of exactly the class capacity
}

// DefaultPool is the Pool Conns use when their config names none.
var DefaultPool = new(Pool)

// classOf returns the class index that serves n bytes, or -1 when n is over the largest
// class.
func classOf(n int) int {
	if n <= minClassSize {
		return 0
	}
	if n > maxClassSize {
		return -1
	}
	return bits.Len(uint(n-1)) - minClassShift
}

// Get returns a buffer of length n (and capacity of n's class). Its contents are not zeroed.
func (p *Pool) Get(n int) []byte {
	if n < 0 {
		panic("uacp: Pool.Get with negative size")
	}
	c := classOf(n)
	if c < 0 {
		return make([]byte, n)
	}
	if v := p.classes[c].Get(); v != nil {
		return unsafe.Slice(v.(*byte), minClassSize<<c)[:n]
	}
	return make([]byte, n, minClassSize<<c)
}

// Put returns b to the class of cap(b). Buffers whose capacity is not a class size are
// dropped. See the type's comment for ownership.
func (p *Pool) Put(b []byte) {
	c := cap(b)
	if c < minClassSize || c > maxClassSize || c&(c-1) != 0 {
		return
	}
	// The pointer to the first byte keeps the whole array alive and, with the class's
	// size, gives the buffer back (unsafe.Slice); a *[]byte would need a header of its own.
	p.classes[bits.TrailingZeros(uint(c))-minClassShift].Put(unsafe.SliceData(b[:c]))
}

// PutZeroed zeroes all of b's capacity, then puts it back. Use it for buffers that held keys,
// nonces or plaintext.
func (p *Pool) PutZeroed(b []byte) {
	clear(b[:cap(b)])
	p.Put(b)
}
