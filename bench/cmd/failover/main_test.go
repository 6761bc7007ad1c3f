package main

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/bench/internal/uaserver"
	"uastack.dev/pkg/codec"
)

// TestFailoverSmoke runs the whole benchmark small: 6 sessions on 3 servers (None) and
// one NATS node; server 0 is killed and its 2 sessions carry on at the survivors, with
// the same sessions and subscriptions, nothing lost, every value current.
func TestFailoverSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := uaserver.Build(ctx, t.TempDir())
	require.NoError(t, err)
	o, err := parse([]string{"-n", "6", "-nats", "1", "-security", "None", "-kill-after", "2s", "-after", "1s",
		"-wait", "30s", "-quiet", "-server", bin})
	require.NoError(t, err)
	r, err := run(ctx, o, io.Discard)
	require.NoError(t, err)
	get := func(row, col string) float64 {
		t.Helper()
		rw, ok := r.Row(row)
		require.True(t, ok, row)
		v, ok := rw.Get(col)
		require.True(t, ok, "%s: %s", row, col)
		return v
	}
	set := func(row string) float64 { t.Helper(); return get(row, colSet) }

	require.Equal(t, 6.0, set(rowEstablished))
	require.Equal(t, 2.0, set(rowAffected))
	require.Equal(t, 2.0, set(rowResumed), "every session of the killed server resumed")
	require.Positive(t, set(rowP50))
	require.Less(t, set(rowMax), 30_000.0)
	require.GreaterOrEqual(t, set(rowMax), set(rowP99))
	require.Zero(t, set(rowLost))
	require.Zero(t, set(rowRecreated), "taken over, not created again")
	require.Zero(t, set(rowNewSessions), "the same sessions")
	require.Zero(t, set(rowMovedMissed))
	require.Equal(t, 4.0, set(rowSurvivors))
	require.Zero(t, set(rowSurvivorMiss))
	require.Zero(t, set(rowNotCurrent))
	require.Positive(t, set(rowWritten))
	_, notResumed := r.Row(rowNotResumed)
	require.False(t, notResumed)
	_, unlocated := r.Row(rowUnlocated)
	require.False(t, unlocated)

	require.Equal(t, 2.0, get(rowSessionsBefore, serverColumn(0, 0)))
	require.Zero(t, get(rowSessionsAfter, serverColumn(0, 0)))
	require.Equal(t, 6.0, get(rowSessionsAfter, serverColumn(1, 0))+get(rowSessionsAfter, serverColumn(2, 0)))
	require.Positive(t, get(rowRSSAfter, serverColumn(1, 0)))
	after, _ := r.Row(rowRSSAfter)
	_, ok := after.Get(serverColumn(0, 0))
	require.False(t, ok, "the killed server has no after")

	require.Positive(t, get(rowNATSP50, "warm-up"), "the NATS probe wrote")
	require.Zero(t, get(rowNATSErr, "warm-up"))

	require.Len(t, r.Histograms, 1)
	h := r.Histograms[0]
	require.Equal(t, "failover", h.Name)
	n := 0
	for _, c := range h.Counts {
		n += c
	}
	require.Equal(t, 2, n, "one failover time per resumed session")
	require.Contains(t, r.Markdown(), "every moved session resumed, p99 failover time under 2s: met")
}

func TestParse(t *testing.T) {
	t.Parallel()
	o, err := parse(nil)
	require.NoError(t, err)
	require.Equal(t, 1000, o.sessions)
	require.Equal(t, 3, o.servers)
	require.Equal(t, 3, o.nats)
	require.Equal(t, 100*time.Millisecond, o.interval)
	require.Equal(t, "Basic256Sha256", o.security)
	for _, args := range [][]string{
		{"-servers", "1"}, {"-n", "2"}, {"-kill", "3"}, {"-nats", "2"}, {"-interval", "0s"},
		{"-backoff-attempts", "0"}, {"-security", "Basic128"}, {"-apps", "0"},
	} {
		_, err := parse(args)
		require.Error(t, err, strings.Join(args, " "))
	}
}

// TestFailoverList: a session's own server comes first, and the sessions of one server
// take turns with the order of the others, so that they spread when it fails.
func TestFailoverList(t *testing.T) {
	t.Parallel()
	d := &dialer{urls: []string{"a", "b", "c"}}
	require.Equal(t, []string{"a", "b", "c"}, d.failoverList(0, 0))
	require.Equal(t, []string{"a", "c", "b"}, d.failoverList(0, 1))
	require.Equal(t, []string{"a", "b", "c"}, d.failoverList(0, 2))
	require.Equal(t, []string{"b", "c", "a"}, d.failoverList(1, 0))
	require.Equal(t, []string{"b", "a", "c"}, d.failoverList(1, 1))
	require.Equal(t, []string{"c", "a", "b"}, d.failoverList(2, 0))
}

// TestTally: what each session saw is judged against what its servers confirmed: a
// moved session's values before its last one from the killed server and after its
// first one from the survivor must all be there, those between are its gap; a session
// never resumed counts what it did not get after the kill; a survivor's own session
// must have every value of its server.
func TestTally(t *testing.T) {
	t.Parallel()
	var kill atomic.Int64
	killedAt := time.Now()
	w := &writer{}
	for i, last := range []int32{5, 10, 10} {
		sw := &serverWrites{last: last}
		for v := int32(0); v <= last; v++ {
			sw.ok = append(sw.ok, true)
		}
		sw.live.Store(i != 0)
		w.servers = append(w.servers, sw)
	}
	sess := func(home, at int, lastBefore, firstAfter int32, resumed bool, values ...int32) *session {
		s := newSession(home, &kill)
		for _, v := range values {
			for int(v) >= len(s.seen) {
				s.seen = append(s.seen, false)
			}
			s.seen[v] = true
			s.last = max(s.last, v)
		}
		s.at, s.lastBefore, s.firstAfter = at, lastBefore, firstAfter
		if resumed {
			s.resumed = killedAt.Add(300 * time.Millisecond)
		}
		s.sessionID, s.endID, s.located = codec.NewNumericNodeId(1, 1), codec.NewNumericNodeId(1, 1), true
		return s
	}
	a := sess(0, 1, 4, 7, true, 1, 2, 3, 4, 7, 8, 9, 10) // gap 5, 6
	b := sess(0, 2, 4, 5, true, 1, 2, 4, 5, 6, 7, 8, 9)  // missed 3 and 10
	b.endID = codec.NewNumericNodeId(1, 2)               // a new session
	c := sess(0, -1, 5, -1, false, 1, 2, 3, 4, 5)        // never resumed
	d := sess(1, 1, 0, -1, false, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	e := sess(2, 2, 0, -1, false, 1, 2, 3, 4, 5, 6, 8, 9, 10) // missed 7
	e.stats.Lost, b.stats.Recreated = 1, 1

	res := &outcome{o: options{kill: 0}, servers: make([]serverUse, 3), written: 10}
	tally(res, []*session{a, b, c, d, e}, w, killedAt)
	require.Equal(t, []movedSession{
		{resumed: true, took: 300 * time.Millisecond, at: 1, gap: 2},
		{resumed: true, took: 300 * time.Millisecond, at: 2, newSession: true, missed: 2},
		{at: -1, notResumed: 5},
	}, res.moved)
	require.Equal(t, 2, res.survivors)
	require.Equal(t, 1, res.survivorDrops)
	require.Equal(t, 1, res.survivorMiss)
	require.Equal(t, 2, res.notCurrent, "b ends at 9, c at the killed server")
	require.Equal(t, uint64(1), res.lost)
	require.Equal(t, uint64(1), res.recreated)
	require.Equal(t, []int{0, 2, 2}, []int{res.servers[0].sessionsAfter, res.servers[1].sessionsAfter, res.servers[2].sessionsAfter})

	r := build(res)
	require.Contains(t, r.Markdown(), "MISSED (2 of 3 resumed, p99 300 ms)")
	_, ok := r.Row(rowP99)
	require.True(t, ok)
	row, _ := r.Row(rowGapTotal)
	gap, _ := row.Get(colSet)
	require.Equal(t, 2.0, gap)

	r = build(&outcome{o: options{kill: 0}, servers: make([]serverUse, 3), moved: []movedSession{{at: -1}}})
	_, ok = r.Row(rowP99)
	require.False(t, ok, "no percentiles when no session resumed")
	require.Contains(t, r.Markdown(), "MISSED (0 of 1 resumed, p99 none)")
}
