package uasc

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
)

// recordingGate is a HandshakeGate that admits or refuses by a rule and counts turns.
type recordingGate struct {
	admit func(renew bool) bool

	mu                   sync.Mutex
	opens, renews, ended int
	refused              int
}

func (g *recordingGate) Enter(_ context.Context, renew bool) (func(), bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.admit(renew) {
		g.refused++
		return nil, false
	}
	if renew {
		g.renews++
	} else {
		g.opens++
	}
	return func() {
		g.mu.Lock()
		g.ended++
		g.mu.Unlock()
	}, true
}

func (g *recordingGate) counts() (opens, renews, ended, refused int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.opens, g.renews, g.ended, g.refused
}

// TestHandshakeGateRefusesOpen: an OPN the gate refuses is answered with an ERR
// BadTcpServerTooBusy before any of its cryptography, a None channel takes no turn, and
// the server goes on serving.
func TestHandshakeGateRefusesOpen(t *testing.T) {
	busy := true
	var mu sync.Mutex
	g := &recordingGate{admit: func(bool) bool {
		mu.Lock()
		defer mu.Unlock()
		return !busy
	}}
	ts := startServer(t, func(c *ServerConfig) { c.Handshakes = g })

	_, err := dialChannel(t, ts.addr, clientConfig(combo{policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt}))
	require.ErrorIs(t, err, status.BadTcpServerTooBusy)
	_, _, _, refused := g.counts()
	require.Equal(t, 1, refused)

	cc, err := dialChannel(t, ts.addr, clientConfig(combo{policy.URINone, ua.MessageSecurityModeNone}))
	require.NoError(t, err, "None does no asymmetric work and takes no turn")
	read(t, cc, 1, "none")
	opens, _, _, refused := g.counts()
	require.Equal(t, 0, opens)
	require.Equal(t, 1, refused)

	mu.Lock()
	busy = false
	mu.Unlock()
	requireServing(t, ts)
	opens, _, ended, _ := g.counts()
	require.Equal(t, 1, opens)
	require.Equal(t, 1, ended, "the turn ends once the response is sealed")
}

// TestHandshakeGateRenewals: renewals of an open channel's token ask the gate with
// renew set, and every turn taken is ended once.
func TestHandshakeGateRenewals(t *testing.T) {
	g := &recordingGate{admit: func(bool) bool { return true }}
	ts := startServer(t, func(c *ServerConfig) { c.Handshakes = g })
	cfg := clientConfig(combo{policy.URIBasic256Sha256, ua.MessageSecurityModeSign})
	cfg.RequestedLifetime = time.Second
	cc, err := dialChannel(t, ts.addr, cfg)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, renews, _, _ := g.counts()
		return renews >= 2
	}, 10*time.Second, 10*time.Millisecond)
	read(t, cc, 2, "renewed")
	require.Eventually(t, func() bool {
		opens, renews, ended, _ := g.counts()
		return opens == 1 && ended == opens+renews
	}, 5*time.Second, time.Millisecond)
}
