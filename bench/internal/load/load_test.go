package load

import (
	"context"
	"math"
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
