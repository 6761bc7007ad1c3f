package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// recordStream runs a table through the lives sessions have (created and left
// unactivated, activated, moved to another channel, re-activated as another user and
// refused, closed, timed out, aborted) and returns its changes as bytes, encoded the
// moment each was observed, and the table.
func recordStream(t *testing.T) ([][]byte, *Table) {
	now := time.Unix(1_800_000_000, 0)
	tab := New(10, func() time.Time { return now })
	var stream [][]byte
	tab.Observe(func(c *Change) {
		require.NotNil(t, c.Session, "a live change names its session")
		e := codec.NewEncoder(nil)
		c.EncodeBinary(e)
		require.NoError(t, e.Err())
		stream = append(stream, e.Bytes())
	})
	create := func(name string, channel uint32) Record {
		rec, code := tab.Create(Request{
			Name: name, Timeout: time.Minute, ChannelID: channel, ServerURI: "urn:server",
			EndpointURL: "opc.tcp://localhost:4840", MaxResponseMessageSize: 1 << 20,
			ClientDescription: ua.ApplicationDescription{ApplicationUri: "urn:client:" + name,
				ApplicationName: codec.LocalizedText{Locale: "en", Text: name}, ApplicationType: ua.ApplicationTypeClient},
		})
		require.Equal(t, status.Good, code)
		now = now.Add(time.Second)
		return rec
	}
	alice := nodemgr.Principal{UserName: "alice", Roles: []codec.NodeId{codec.NewNumericNodeId(0, 15656)}}
	activate := func(rec Record, channel uint32, p nodemgr.Principal) status.Code {
		p.SessionID = rec.SessionID
		_, code := tab.Activate(rec.AuthenticationToken, channel, p, Activation{
			SecurityPolicyURI: "http://opcfoundation.org/UA/SecurityPolicy#None",
			SecurityMode:      ua.MessageSecurityModeNone, LocaleIDs: []string{"en", "de"}})
		return code
	}
	idle := create("idle", 1)
	a := create("a", 1)
	require.Equal(t, status.Good, activate(a, 1, alice))
	require.Equal(t, status.Good, activate(a, 2, alice), "moved to channel 2")
	require.Equal(t, status.BadIdentityChangeNotSupported, activate(a, 3, nodemgr.Principal{Anonymous: true}))
	b := create("b", 2)
	require.Equal(t, status.Good, activate(b, 2, nodemgr.Principal{Anonymous: true}))
	require.Equal(t, status.Good, tab.Close(b.AuthenticationToken, 2, true))
	c := create("c", 3)
	tab.Abort(c.AuthenticationToken)
	d := create("d", 4)
	require.Equal(t, status.Good, activate(d, 4, nodemgr.Principal{Thumbprint: "00ff"}))
	// Everything but d idles past its timeout; a lookup of d keeps it, and a lookup of
	// the timed-out idle ends it.
	now = now.Add(50 * time.Second)
	_, _, code := tab.Lookup(d.AuthenticationToken)
	require.Equal(t, status.Good, code)
	now = now.Add(20 * time.Second)
	_, _, code = tab.Lookup(idle.AuthenticationToken)
	require.Equal(t, status.BadSessionIdInvalid, code)
	e := create("e", 5)
	require.Equal(t, status.Good, activate(e, 5, alice))
	return stream, tab
}

// TestReplay: a table's recorded change stream, each change carried as bytes, replayed
// into a fresh table rebuilds equal state, and the fresh table tells its own observers
// the same changes.
func TestReplay(t *testing.T) {
	t.Parallel()
	stream, tab := recordStream(t)
	require.Equal(t, 14, len(stream), "every create, activation and end")

	fresh := New(10, time.Now)
	var echoed int
	fresh.Observe(func(*Change) { echoed++ })
	for i, b := range stream {
		var c Change
		d := codec.NewDecoder(b)
		c.DecodeBinary(d)
		require.NoError(t, d.Err(), "change %d", i)
		require.Zero(t, d.Remaining(), "change %d", i)
		require.NoError(t, fresh.Apply(&c), "change %d", i)
	}
	require.Equal(t, tab.Records(), fresh.Records())
	require.Len(t, fresh.Records(), 3, "a, d and e remain")
	require.Equal(t, shares(tab), shares(fresh), "the shares follow the stream")
	require.Len(t, shares(fresh), 3)
	require.Equal(t, len(stream), echoed)

	// The replayed sessions serve: a's user moves it back to channel 1 on the fresh table.
	recs := fresh.Records()
	_, code := fresh.Activate(recs[0].AuthenticationToken, 1, recs[0].Identity, Activation{})
	require.Equal(t, status.Good, code)
}

// TestApplyRefuses: changes that do not fit the table are errors that change nothing.
func TestApplyRefuses(t *testing.T) {
	t.Parallel()
	stream, _ := recordStream(t)
	decode := func(b []byte) *Change {
		var c Change
		c.DecodeBinary(codec.NewDecoder(b))
		return &c
	}
	fresh := New(10, time.Now)
	created := decode(stream[0])
	require.Equal(t, Created, created.Kind)
	require.NoError(t, fresh.Apply(created))
	require.ErrorIs(t, fresh.Apply(created), status.BadSessionIdInvalid, "created twice")
	activated := decode(stream[2])
	require.Equal(t, Activated, activated.Kind)
	require.ErrorIs(t, fresh.Apply(activated), status.BadSessionIdInvalid, "activated while unknown")
	require.Len(t, fresh.Records(), 1)
	bad := *created
	bad.Record.AuthenticationToken = codec.NewNumericNodeId(0, 1)
	require.ErrorIs(t, fresh.Apply(&bad), status.BadSessionIdInvalid, "not a token of a table")
}

// FuzzDecodeChange decodes arbitrary bytes as a Change; what decodes encodes to bytes that
// decode to the same Change.
func FuzzDecodeChange(f *testing.F) {
	stream, _ := recordStream(&testing.T{})
	for _, b := range stream {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Change
		d := codec.NewDecoder(b)
		c.DecodeBinary(d)
		if d.Err() != nil {
			return
		}
		e := codec.NewEncoder(nil)
		c.EncodeBinary(e)
		require.NoError(t, e.Err())
		var again Change
		d2 := codec.NewDecoder(e.Bytes())
		again.DecodeBinary(d2)
		require.NoError(t, d2.Err())
		require.Equal(t, c, again)
	})
}
