package server_test

import (
	"context"
	"encoding/binary"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// rawWrite is a WriteRequest whose body is given bytes, so that a test can send what no
// value of ua.WriteRequest would fit in its memory.
type rawWrite struct{ body []byte }

var rawWriteType = &codec.TypeInfo{Name: "rawWrite", BinaryEncoding: codec.NewNumericNodeId(0, id.WriteRequest_Encoding_DefaultBinary)}

func (r *rawWrite) EncodeBinary(e *codec.Encoder)   { e.Raw(r.body) }
func (r *rawWrite) DecodeBinary(d *codec.Decoder)   {}
func (r *rawWrite) EncodeJSON(e *codec.JSONEncoder) {}
func (r *rawWrite) DecodeJSON(d *codec.JSONDecoder) {}
func (r *rawWrite) TypeInfo() *codec.TypeInfo       { return rawWriteType }

// amplifiedWrite returns the body of a WriteRequest of size bytes whose values are arrays
// of DataValues with an empty mask: one byte each on the wire, 88 in memory, the most any
// built-in type amplifies. Arrays of 64 Ki elements let the decoder spend its budget
// almost to the byte before the array that does not fit.
func amplifiedWrite(size int) []byte {
	e := codec.NewEncoder(make([]byte, 0, size))
	hdr := ua.RequestHeader{RequestHandle: 7, TimeoutHint: 60000}
	hdr.EncodeBinary(e)
	value := []byte{
		0x00, 0x55, // NodeId i=85
		13, 0, 0, 0, // AttributeId Value
		0xff, 0xff, 0xff, 0xff, // IndexRange null
		0x01,                             // DataValue mask: Value
		0x80 | byte(codec.TypeDataValue), // Variant: array of DataValue
	}
	const elems = 1 << 16
	per := len(value) + 4 + elems
	left := size - e.Len() - 4 // the array's length
	count := (left + per - 1) / per
	e.Int32(int32(count))
	for i := range count {
		n := min(elems, left-(count-1-i)*per-len(value)-4)
		e.Raw(value)
		e.Raw(binary.LittleEndian.AppendUint32(nil, uint32(n)))
		e.Raw(make([]byte, n)) // DataValues with mask 0
		left -= len(value) + 4 + n
	}
	return e.Bytes()
}

// heapPeak samples the bytes of heap objects until stop is closed and returns the largest.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// TestArrayAmplifiedRequest sends a WriteRequest of the negotiated maximum size (16 MiB)
// made of one-byte DataValues, which used to decode to 1.4 GB before any session check.
// The decode budget (encoding.maxDecodeMultiple) stops it: the request is answered with a
// ServiceFault BadEncodingLimitsExceeded, the heap grows by less than 300 MB, the channel
// stays open, and another client's Reads are served meanwhile and afterwards.
func TestArrayAmplifiedRequest(t *testing.T) {
	// Not parallel: it measures the heap of the whole process.
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		// A channel's share of the reassembly budget caps the request size, at 8 MiB by
		// default; the attack is the 16 MiB one of encoding.maxMessageSize's default.
		c.Limits.MaxRetainedBytesPerChannel = c.Encoding.MaxMessageSize
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	legit := dialNone(t, ctx, ts)
	token := activate(t, ctx, legit)
	read := func() error {
		resp, err := legit.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: token},
			NodesToRead: []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, id.Server_ServerStatus_CurrentTime), AttributeId: 13}}})
		if err != nil {
			return err
		}
		if r := resp.(*ua.ReadResponse).Results[0].Status; r != status.Good {
			return r
		}
		return nil
	}
	require.NoError(t, read())

	attacker := dialNone(t, ctx, ts)
	// The negotiated maximum, less the type id and room for the chunks' headers.
	size := ts.Config.Encoding.MaxMessageSize - 4 - 4096
	body := amplifiedWrite(size)
	require.Equal(t, size, len(body))

	// The legitimate client reads throughout, every 5 ms: its garbage would count as growth.
	var reads atomic.Int64
	var wg sync.WaitGroup
	readsDone := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-readsDone:
				return
			case <-tick.C:
			}
			if err := read(); err != nil {
				t.Errorf("legitimate Read during the attack: %v", err)
				return
			}
			reads.Add(1)
		}
	}()

	runtime.GC()
	base := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(base)
	stop := make(chan struct{})
	peak := heapPeak(stop)
	start := time.Now()
	resp, err := attacker.Request(ctx, &rawWrite{body: body})
	elapsed := time.Since(start)
	close(stop)
	growth := int64(<-peak) - int64(base[0].Value.Uint64())
	close(readsDone)
	wg.Wait()

	t.Logf("%d-byte request answered in %v; heap peak %d MiB above the %d MiB before; %d Reads served meanwhile",
		len(body), elapsed, growth>>20, base[0].Value.Uint64()>>20, reads.Load())
	require.Less(t, growth, int64(300e6), "heap growth while decoding")
	requireFault(t, resp, err, status.BadEncodingLimitsExceeded, 0)
	require.Positive(t, reads.Load(), "Reads served while the request was decoded")

	// The attacker's channel is still open: its next request gets an answer of its own.
	resp, err = attacker.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{RequestHandle: 8},
		NodesToRead: []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, id.Server_ServerStatus_CurrentTime), AttributeId: 13}}})
	requireFault(t, resp, err, status.BadSessionIdInvalid, 8)
	require.NoError(t, read())
}
