package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
)

// TestChannelMemory checks that a channel's memory of its session (PrincipalAt with a
// Memory) answers like the table: it holds while the session is unchanged and gives way
// as soon as the session moves to another channel, ends, or times out.
func TestChannelMemory(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	tab := New(10, func() time.Time { return now })
	rec, code := tab.Create(Request{Name: "s", Timeout: time.Minute, ChannelID: 1})
	require.Equal(t, status.Good, code)
	token := rec.AuthenticationToken
	alice := nodemgr.Principal{UserName: "alice", Roles: []codec.NodeId{codec.NewNumericNodeId(0, 1)}}
	_, code = tab.Activate(token, 1, alice, Activation{})
	require.Equal(t, status.Good, code)

	var m Memory
	read := func(channelID uint32) (nodemgr.Principal, status.Code) {
		p, code := tab.PrincipalAt(token, channelID, now, &m)
		if code != status.Good {
			require.Nil(t, p)
			return nodemgr.Principal{}, code
		}
		return *p, code
	}
	p, code := read(1)
	require.Equal(t, status.Good, code)
	require.Equal(t, alice, p)
	require.NotNil(t, m.Session(), "the channel remembers the session")
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
	seen := m.s.seen.Load()
	now = now.Add(500 * time.Microsecond)
	_, code = read(1)
	require.Equal(t, status.Good, code)
	require.Equal(t, seen, m.s.seen.Load())
	now = now.Add(time.Millisecond)
	_, code = read(1)
	require.Equal(t, status.Good, code)
	require.Equal(t, tab.since(now), m.s.seen.Load())
	require.Equal(t, now, m.Session().LastSeen())

	// Moved to channel 2: channel 1's memory no longer holds.
	_, code = tab.Activate(token, 2, alice, Activation{})
	require.Equal(t, status.Good, code)
	_, code = read(1)
	require.Equal(t, status.BadSecureChannelIdInvalid, code)
	require.Nil(t, m.Session(), "a failed check clears the memory")
	_, code = tab.Activate(token, 1, alice, Activation{})
	require.Equal(t, status.Good, code)
	_, code = read(1)
	require.Equal(t, status.Good, code)

	// Another token on the same channel is looked up, not taken for the remembered one.
	_, code = tab.PrincipalAt(codec.NewOpaqueNodeId(0, make([]byte, tokenLength)), 1, now, &m)
	require.Equal(t, status.BadSessionIdInvalid, code)

	// Timed out: the memory gives way and the session ends.
	_, code = read(1)
	require.Equal(t, status.Good, code)
	now = now.Add(61 * time.Second)
	_, code = read(1)
	require.Equal(t, status.BadSessionIdInvalid, code)
	require.Zero(t, tab.Count())

	// Closed: likewise.
	rec, code = tab.Create(Request{Name: "s2", Timeout: time.Minute, ChannelID: 1})
	require.Equal(t, status.Good, code)
	token = rec.AuthenticationToken
	_, code = tab.Activate(token, 1, alice, Activation{})
	require.Equal(t, status.Good, code)
	_, code = read(1)
	require.Equal(t, status.Good, code)
	require.Equal(t, status.Good, tab.Close(token, 1, true))
	_, code = read(1)
	require.Equal(t, status.BadSessionIdInvalid, code)
}
