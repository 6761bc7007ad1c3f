package uasc

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClientServer runs our client against our server for every policy × mode: open, a few
// requests, a message larger than one chunk in each direction, renewals under traffic with
// a two-second token lifetime (the server allows one second), close.
func TestClientServer(t *testing.T) {
	ts := startServer(t, nil)
	for _, c := range allCombos() {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			cc, err := dialChannel(t, ts.addr, clientConfig(c))
			require.NoError(t, err)
			for i := range uint32(3) {
				read(t, cc, 100+i, "a", "b")
			}
			big := strings.Repeat("0123456789abcdef", 20000) // 320 KB: several 64 KiB chunks
			read(t, cc, 200, big)

			cc.smu.Lock()
			first := cc.sendTok.id
			cc.smu.Unlock()
			deadline := time.Now().Add(3300 * time.Millisecond)
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := uint32(0); time.Now().Before(deadline); i++ {
						read(t, cc, uint32(g)<<16|i, "x")
					}
				}()
			}
			wg.Wait()
			cc.smu.Lock()
			last := cc.sendTok.id
			cc.smu.Unlock()
			require.GreaterOrEqual(t, last, first+2, "token renewed at least twice")
			read(t, cc, 300, "after renewal")
			require.NoError(t, cc.Close())
		})
	}
}
