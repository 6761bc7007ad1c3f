package load

import (
	"context"
	"math"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/bench/internal/uaserver"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
)

func TestProcUsage(t *testing.T) {
	// Burn some CPU so that the 10 ms clock tick sees it.
	deadline := time.Now().Add(50 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	u, err := ProcUsage(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, u.CPU)
	require.Greater(t, u.RSS, int64(1<<20))
	_, err = ProcUsage(-1)
	require.Error(t, err)
}

// TestSessionAgainstServer drives a server process: a trusted client certificate gets a
// SignAndEncrypt session, a subscription sees a write, and an untrusted one is refused.
func TestSessionAgainstServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin, err := uaserver.Build(ctx, dir)
	require.NoError(t, err)
	id, err := uaserver.NewIdentity(dir)
	require.NoError(t, err)
	srv, err := uaserver.Start(ctx, bin, dir, id)
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	u, err := ProcUsage(srv.Pid())
	require.NoError(t, err)
	require.Positive(t, u.RSS)

	tgt, err := NewTarget(ctx, srv.URL, policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt, id)
	require.NoError(t, err)
	s, err := Dial(ctx, tgt)
	require.NoError(t, err)
	defer s.Close()
	node := codec.NewStringNodeId(1, "Demo.Scalar_Double")
	require.NoError(t, s.Subscribe(ctx, 100*time.Millisecond, []Item{{Node: node, Sampling: -1, Queue: 4}}, 1))
	require.NotZero(t, s.SubscriptionID)
	got := make(chan float64, 16)
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- s.Publish(pctx, func(h uint32, dv *codec.DataValue) {
			if h == 0 {
				got <- math.Float64frombits(dv.Value.Bits())
			}
		})
	}()
	require.NoError(t, s.Write(ctx, node, codec.DoubleVariant(42)))
	for v := range got {
		if v == 42 {
			break
		}
	}
	stop()
	require.NoError(t, <-done)

	other, err := uaserver.NewIdentity(t.TempDir())
	require.NoError(t, err)
	tgt2, err := NewTarget(ctx, srv.URL, policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt, other)
	require.NoError(t, err)
	_, err = Dial(ctx, tgt2)
	require.Error(t, err, "an untrusted client certificate must be refused")
}

// TestStagedSession drives a server step by step, as the storm's rude clients do: a
// session created from a source address of its own and dropped unactivated stays in the
// server's count, a session closed leaves it, and Read answers on an activated one.
func TestStagedSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin, err := uaserver.Build(ctx, dir)
	require.NoError(t, err)
	id, err := uaserver.NewIdentity(dir)
	require.NoError(t, err)
	srv, err := uaserver.Start(ctx, bin, dir, id)
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	tgt, err := NewTarget(ctx, srv.URL, policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt, id)
	require.NoError(t, err)
	count := codec.NewNumericNodeId(0, 2277) // Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSessionCount
	sessions := func(s *Session) uint64 {
		dv, err := s.Read(ctx, count)
		require.NoError(t, err)
		return dv[0].Value.Bits()
	}

	s, err := DialAs(ctx, tgt, Conn{Local: &net.TCPAddr{IP: net.IPv4(127, 0, 3, 1)}})
	require.NoError(t, err)
	defer s.Close()
	require.EqualValues(t, 1, sessions(s))

	orphan, err := Open(ctx, tgt, Conn{})
	require.NoError(t, err)
	require.NoError(t, orphan.Create(ctx, time.Minute))
	orphan.Drop()
	require.Error(t, orphan.Activate(ctx), "the channel is gone")
	// The diagnostics snapshot is rebuilt at most once a second.
	require.Eventually(t, func() bool { return sessions(s) == 2 }, 5*time.Second, 100*time.Millisecond)

	closed, err := Dial(ctx, tgt)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return sessions(s) == 3 }, 5*time.Second, 100*time.Millisecond)
	require.NoError(t, closed.CloseSession(ctx))
	closed.Close()
	require.Eventually(t, func() bool { return sessions(s) == 2 }, 5*time.Second, 100*time.Millisecond)

	// An unknown node is a bad result, not an error.
	dv, err := s.Read(ctx, codec.NewStringNodeId(1, "no such node"))
	require.NoError(t, err)
	require.True(t, dv[0].Status.IsBad())
}

func TestTally(t *testing.T) {
	tl := NewTally()
	for _, v := range []float64{0, 1, 3, 2, 3, 4} { // the initial 0, then 2 late and 3 again
		tl.Observe(v)
	}
	require.Equal(t, 1, tl.Missed(4), "1, 3 and 4 arrived in order; 2 came late")
	require.Equal(t, 0, NewTally().Missed(0))
}
