package uasc

import (
	"context"
	"crypto/x509"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
)

// channelFactory is a Handler that makes a perChannel for every channel and records the
// channels it made handlers for and the ends they learned of.
type channelFactory struct {
	mu    sync.Mutex // guards made
	made  []*ServerChannel
	ended chan channelEnd
}

type channelEnd struct {
	ch  *ServerChannel
	err error
}

func (f *channelFactory) Channel(ch *ServerChannel) ChannelHandler {
	f.mu.Lock()
	f.made = append(f.made, ch)
	f.mu.Unlock()
	return &perChannel{f: f, ch: ch}
}

func (f *channelFactory) channels() []*ServerChannel {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*ServerChannel(nil), f.made...)
}

// perChannel counts the requests of its channel, without a lock, and answers each Read with
// as many Results as it has seen requests.
type perChannel struct {
	f  *channelFactory
	ch *ServerChannel
	n  int
}

var (
	_ ChannelHandler = (*perChannel)(nil)
	_ ChannelEnder   = (*perChannel)(nil)
)

func (p *perChannel) Handle(_ context.Context, r Request) {
	if r.Channel != p.ch {
		_ = r.Respond(&ua.ServiceFault{ResponseHeader: ua.ResponseHeader{ServiceResult: status.BadInternalError}})
		return
	}
	p.n++
	m := r.Message.(*ua.ReadRequest)
	_ = r.Respond(&ua.ReadResponse{
		ResponseHeader: ua.ResponseHeader{RequestHandle: m.RequestHeader.RequestHandle},
		Results:        make([]codec.DataValue, p.n),
	})
}

func (p *perChannel) ChannelEnded(err error) { p.f.ended <- channelEnd{p.ch, err} }

// readCount sends a Read and returns how many Results the answer has.
func readCount(t *testing.T, cc *ClientChannel) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := cc.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{RequestHandle: 5}})
	require.NoError(t, err)
	resp, ok := m.(*ua.ReadResponse)
	require.True(t, ok, "got %T", m)
	return len(resp.Results)
}

// TestChannelHandler serves two channels through a Handler that makes a handler per
// channel: each keeps its own state, made once the channel is open (not for a channel
// refused at its OpenSecureChannel), and learns that its channel ended, with nil after a
// CloseSecureChannel and with the refusal after Revalidate.
func TestChannelHandler(t *testing.T) {
	t.Parallel()
	f := &channelFactory{ended: make(chan channelEnd, 4)}
	ts := startServerFor(t, func(c *ServerConfig) {
		c.ValidateCertificate = func(chain []*x509.Certificate) error {
			if chain[0].Equal(strangerID.cert) {
				return status.BadCertificateUntrusted
			}
			return nil
		}
	}, f)
	none, err := dialChannel(t, ts.addr, clientConfig(combo{policy.URINone, ua.MessageSecurityModeNone}))
	require.NoError(t, err)
	secure, err := dialChannel(t, ts.addr, clientConfig(combo{policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt}))
	require.NoError(t, err)
	stranger := clientConfig(combo{policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt})
	stranger.Certificate, stranger.Key = strangerID.der, strangerID.key
	_, err = dialChannel(t, ts.addr, stranger)
	require.ErrorIs(t, err, status.BadSecurityChecksFailed)

	require.Equal(t, 1, readCount(t, none))
	require.Equal(t, 2, readCount(t, none))
	require.Equal(t, 1, readCount(t, secure), "a handler of its own")
	require.Equal(t, 3, readCount(t, none))
	require.Equal(t, 2, readCount(t, secure))
	made := f.channels()
	require.Len(t, made, 2, "one handler per open channel, none for the refused one")
	require.NotSame(t, made[0], made[1])

	require.NoError(t, none.Close())
	select {
	case e := <-f.ended:
		require.Equal(t, none.ID(), e.ch.ID())
		require.NoError(t, e.err)
	case <-time.After(10 * time.Second):
		t.Fatal("the handler of the closed channel did not learn its end")
	}
	require.Equal(t, 1, ts.Revalidate(func([]*x509.Certificate) error { return status.BadCertificateRevoked }))
	select {
	case e := <-f.ended:
		require.Equal(t, secure.ID(), e.ch.ID())
		require.ErrorIs(t, e.err, status.BadCertificateRevoked)
	case <-time.After(10 * time.Second):
		t.Fatal("the handler of the dropped channel did not learn its end")
	}
	require.Len(t, f.channels(), 2)
	require.Empty(t, f.ended, "each end is told once")
}

// nilFactory is a Handler that makes no handler.
type nilFactory struct{}

func (nilFactory) Channel(*ServerChannel) ChannelHandler { return nil }

// TestChannelHandlerNil ends a channel whose Handler makes no handler with BadInternalError.
func TestChannelHandlerNil(t *testing.T) {
	t.Parallel()
	ts := startServerFor(t, nil, nilFactory{})
	cc, err := dialChannel(t, ts.addr, clientConfig(combo{policy.URINone, ua.MessageSecurityModeNone}))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = cc.Request(ctx, &ua.ReadRequest{})
	require.ErrorIs(t, err, status.BadInternalError)
}

// recycler is a Handler whose channels answer Reads inline, change the request, and hand
// it back with Request.Recycle; it reports what each request looked like when it arrived.
// Its handlers are Repeaters when repeat is set, answering repeatAnswer.
type recycler struct {
	repeat, repeatAnswer bool
	seen                 chan recycledSighting
}

type recycledSighting struct {
	msg      codec.Structure
	handle   uint32
	rng      string
	repeated bool
}

type plainRecycler struct{ r *recycler }

type repeatingRecycler struct{ plainRecycler }

func (h repeatingRecycler) RepeatRecycled() bool { return h.r.repeatAnswer }

func (r *recycler) Channel(*ServerChannel) ChannelHandler {
	if r.repeat {
		return repeatingRecycler{plainRecycler{r}}
	}
	return plainRecycler{r}
}

func (h plainRecycler) Handle(_ context.Context, req Request) {
	m := req.Message.(*ua.ReadRequest)
	h.r.seen <- recycledSighting{req.Message, m.RequestHeader.RequestHandle, m.NodesToRead[0].IndexRange, req.Channel.spare.repeated}
	_ = req.Respond(&ua.ReadResponse{ResponseHeader: ua.ResponseHeader{RequestHandle: m.RequestHeader.RequestHandle}})
	if !h.r.repeatAnswer {
		m.NodesToRead[0].IndexRange = "changed" // allowed: the message is decoded into again
	}
	req.Recycle()
}

// TestRepeaterOptIn sends the same Read, but for its RequestHandle, to handlers that
// recycle every request: each request is decoded into the recycled message, but only a
// handler that opts in (Repeater answering true) is handed repeats without a decode; the
// others may change what they recycle, and see each request as it was sent.
func TestRepeaterOptIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                 string
		repeat, repeatAnswer bool
	}{
		{"not a Repeater", false, false},
		{"Repeater declining", true, false},
		{"Repeater", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := &recycler{repeat: tc.repeat, repeatAnswer: tc.repeatAnswer, seen: make(chan recycledSighting, 8)}
			ts := startServerFor(t, nil, h)
			cc, err := dialChannel(t, ts.addr, clientConfig(combo{policy.URINone, ua.MessageSecurityModeNone}))
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var first codec.Structure
			for i := range uint32(5) {
				req := &ua.ReadRequest{
					RequestHeader: ua.RequestHeader{Timestamp: 100, RequestHandle: i + 1},
					NodesToRead:   []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13, IndexRange: "sent"}},
				}
				_, err := cc.Request(ctx, req)
				require.NoError(t, err)
				got := <-h.seen
				require.Equal(t, i+1, got.handle)
				require.Equal(t, "sent", got.rng, "request %d as it was sent", i)
				require.Equal(t, tc.repeatAnswer && i > 0, got.repeated, "request %d", i)
				if i == 0 {
					first = got.msg
				}
				require.Same(t, first, got.msg, "request %d decoded into the recycled message", i)
			}
		})
	}
}
