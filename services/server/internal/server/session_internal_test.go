package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
)

// TestChannelSessionMemory checks that a channel's memory of its session (principalAt with a channelSession)
// answers like the table: it holds while the session is unchanged and gives way as soon
// as the session moves to another channel, ends, or times out.
func TestChannelSessionMemory(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	tab := newSessions(10, func() time.Time { return now })
	info, code := tab.create("s", time.Minute, 1, nil)
	require.Equal(t, status.Good, code)
	token := info.authToken
	alice := nodemgr.Principal{UserName: "alice", Roles: []codec.NodeId{codec.NewNumericNodeId(0, 1)}}
	_, code = tab.activate(token, 1, alice)
	require.Equal(t, status.Good, code)

	var cs channelSession
	read := func(channelID uint32) (nodemgr.Principal, status.Code) {
		var p nodemgr.Principal
		_, code := tab.principalAt(token, channelID, now, &p, &cs)
		return p, code
	}
	p, code := read(1)
	require.Equal(t, status.Good, code)
	require.Equal(t, alice, p)
	require.NotNil(t, cs.s, "the channel remembers the session")
	p, code = read(1) // from memory
	require.Equal(t, status.Good, code)
	require.Equal(t, alice, p)

	// Each answer from memory refreshes the timeout like a table lookup.
	now = now.Add(50 * time.Second)
	_, code = read(1)
	require.Equal(t, status.Good, code)
	now = now.Add(50 * time.Second)
	_, code = read(1)
	require.Equal(t, status.Good, code, "used 50 s ago: not timed out")

	// Within a millisecond of the last refresh the session's time is left as it is.
	seen := cs.s.seen.Load()
	now = now.Add(500 * time.Microsecond)
	_, code = read(1)
	require.Equal(t, status.Good, code)
	require.Equal(t, seen, cs.s.seen.Load())
	now = now.Add(time.Millisecond)
	_, code = read(1)
	require.Equal(t, status.Good, code)
	require.Equal(t, tab.since(now), cs.s.seen.Load())

	// Moved to channel 2: channel 1's memory no longer holds.
	_, code = tab.activate(token, 2, alice)
	require.Equal(t, status.Good, code)
	_, code = read(1)
	require.Equal(t, status.BadSecureChannelIdInvalid, code)
	_, code = tab.activate(token, 1, alice)
	require.Equal(t, status.Good, code)
	_, code = read(1)
	require.Equal(t, status.Good, code)

	// Another token on the same channel is looked up, not taken for the remembered one.
	var p2 nodemgr.Principal
	_, code = tab.principalAt(codec.NewOpaqueNodeId(0, make([]byte, tokenLength)), 1, now, &p2, &cs)
	require.Equal(t, status.BadSessionIdInvalid, code)

	// Timed out: the memory gives way and the session ends.
	_, code = read(1)
	require.Equal(t, status.Good, code)
	now = now.Add(61 * time.Second)
	_, code = read(1)
	require.Equal(t, status.BadSessionIdInvalid, code)
	require.Zero(t, tab.count())

	// Closed: likewise.
	info, code = tab.create("s2", time.Minute, 1, nil)
	require.Equal(t, status.Good, code)
	token = info.authToken
	_, code = tab.activate(token, 1, alice)
	require.Equal(t, status.Good, code)
	_, code = read(1)
	require.Equal(t, status.Good, code)
	require.Equal(t, status.Good, tab.remove(token, 1, true))
	_, code = read(1)
	require.Equal(t, status.BadSessionIdInvalid, code)
}
