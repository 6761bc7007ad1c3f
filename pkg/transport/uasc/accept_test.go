package uasc

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

// refusals collects what ServerConfig.Refused reports.
type refusals struct {
	mu   sync.Mutex // guards list
	list []Refusal
}

func (r *refusals) add(f Refusal) {
	r.mu.Lock()
	r.list = append(r.list, f)
	r.mu.Unlock()
}

func (r *refusals) all() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Refusal(nil), r.list...)
}

// openNone opens a None channel to addr; unlike dialChannel it returns the error of the
// UACP handshake, where a refusal shows.
func openNone(t *testing.T, addr string) (*ClientChannel, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: "opc.tcp://" + addr})
	if err != nil {
		return nil, err
	}
	cc, err := Dial(ctx, c, clientConfig(combo{policy.URINone, ua.MessageSecurityModeNone}))
	if err != nil {
		c.Close()
		return nil, err
	}
	t.Cleanup(func() { cc.Close() })
	return cc, nil
}

// TestMaxChannelCount fills ServerConfig.MaxChannelCount: a connection beyond it gets an
// ERR BadTcpNotEnoughResources in answer to its Hello and Refused hears of it, the open
// channels keep working, and once one closes a new one is served.
func TestMaxChannelCount(t *testing.T) {
	t.Parallel()
	var refused refusals
	ts := startServer(t, func(c *ServerConfig) {
		c.MaxChannelCount = 2
		c.Refused = refused.add
	})
	first, err := openNone(t, ts.addr)
	require.NoError(t, err)
	second, err := openNone(t, ts.addr)
	require.NoError(t, err)
	for range 3 {
		_, err = openNone(t, ts.addr)
		var e *uacp.Error
		require.ErrorAs(t, err, &e, "refused with an ERR, not a reset")
		require.Equal(t, status.BadTcpNotEnoughResources, e.Code)
	}
	read(t, first, 1, "a")
	read(t, second, 2, "b")
	got := refused.all()
	require.Len(t, got, 3)
	for _, r := range got {
		require.Equal(t, status.BadTcpNotEnoughResources, r.Code)
		require.Equal(t, 2, r.MaxChannelCount)
		require.False(t, r.Unanswered)
		require.Equal(t, "127.0.0.1", r.Remote.(*net.TCPAddr).IP.String())
	}

	require.NoError(t, first.Close())
	require.Eventually(t, func() bool {
		cc, err := openNone(t, ts.addr)
		if err != nil {
			return false
		}
		read(t, cc, 3, "c")
		return true
	}, 10*time.Second, 20*time.Millisecond, "a slot is free again after the first channel closed")
	read(t, second, 4, "d")
}

// TestAdmit refuses with ServerConfig.Admit: the peer gets an ERR with Admit's code, the
// refusal frees its slot of MaxChannelCount, and the release of an admitted connection
// runs once that connection has ended, the release of a refused one at once.
func TestAdmit(t *testing.T) {
	t.Parallel()
	var refuse atomic.Bool
	var admitted, released atomic.Int32
	var refused refusals
	ts := startServer(t, func(c *ServerConfig) {
		c.MaxChannelCount = 1
		c.Refused = refused.add
		c.Admit = func(remote net.Addr) (func(), status.Code) {
			admitted.Add(1)
			release := func() { released.Add(1) }
			if ip := remote.(*net.TCPAddr).IP.String(); ip != "127.0.0.1" {
				return release, status.BadInternalError // not the remote address: fails below
			}
			if refuse.Load() {
				return release, status.BadTcpServerTooBusy
			}
			return release, status.Good
		}
	})
	refuse.Store(true)
	for range 2 {
		_, err := openNone(t, ts.addr)
		var e *uacp.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, status.BadTcpServerTooBusy, e.Code)
	}
	require.Equal(t, int32(2), released.Load(), "a refused connection is released at once")
	require.Equal(t, []Refusal{
		{Remote: refused.all()[0].Remote, Code: status.BadTcpServerTooBusy},
		{Remote: refused.all()[1].Remote, Code: status.BadTcpServerTooBusy},
	}, refused.all())

	refuse.Store(false)
	cc, err := openNone(t, ts.addr) // the refusals left the one slot free
	require.NoError(t, err)
	read(t, cc, 1, "a")
	require.Equal(t, int32(3), admitted.Load())
	require.Equal(t, int32(2), released.Load(), "not released while the channel is open")
	require.NoError(t, cc.Close())
	require.Eventually(t, func() bool { return released.Load() == 3 }, 10*time.Second, 10*time.Millisecond)
}

// TestRefusalsBounded fills the channel limit and then connects peers that send nothing
// and do not close, so that each refusal lingers: beyond MaxRefusing refusals in progress
// a connection is closed without the ERR, and Refused says so.
func TestRefusalsBounded(t *testing.T) {
	t.Parallel()
	var refused refusals
	const maxRefusing = 16
	ts := startServer(t, func(c *ServerConfig) {
		c.MaxChannelCount = 1
		c.MaxRefusing = maxRefusing
		c.Refused = refused.add
	})
	_, err := openNone(t, ts.addr)
	require.NoError(t, err)
	const peers = 3 * maxRefusing
	conns := make([]net.Conn, peers)
	for i := range conns {
		conns[i], err = net.Dial("tcp", ts.addr)
		require.NoError(t, err)
		defer conns[i].Close()
	}
	require.Eventually(t, func() bool { return len(refused.all()) == peers }, 10*time.Second, 10*time.Millisecond)
	unanswered := 0
	for _, r := range refused.all() {
		if r.Unanswered {
			unanswered++
		}
	}
	require.Positive(t, unanswered, "some refusals were cut short")
	// Each peer got the ERR or nothing, and every connection was closed.
	answered := 0
	for _, nc := range conns {
		require.NoError(t, nc.SetReadDeadline(time.Now().Add(5*time.Second)))
		b, err := io.ReadAll(nc)
		if err != nil {
			require.ErrorContains(t, err, "reset", "closed unanswered")
		}
		if len(b) > 0 {
			m, err := uacp.DecodeMessage(b)
			require.NoError(t, err)
			require.Equal(t, status.BadTcpNotEnoughResources, m.(*uacp.Error).Code)
			answered++
		}
	}
	require.Equal(t, peers-unanswered, answered)
}
