package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/bench/internal/uaserver"
	"uastack.dev/pkg/client"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uacp"
)

// TestMain lets the test binary be the storm process too: the smoke test re-executes it.
func TestMain(m *testing.M) {
	if os.Getenv(envStorm) != "" {
		os.Exit(stormMain(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// TestStormSmoke runs a tiny storm against a real server process, in both configurations
// of the comparison: 20 established SignAndEncrypt sessions, 200 attempts in 2 s (20
// cooperative clients). Every field of the report is filled, no established session
// misses a value, every cooperative client gets in and the orphans are gone once the
// (shortened) session timeouts have passed.
func TestStormSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := uaserver.Build(ctx, t.TempDir())
	require.NoError(t, err)
	o, err := parse([]string{
		"-server", bin, "-quiet",
		"-n", "20", "-storm", "200", "-coop", "20", "-within", "2s", "-inflight", "50",
		"-baseline", "2s", "-baseline-max", "4s", "-apps", "2", "-per-source", "5",
		// Sessions left behind time out within seconds, not the default 30 s.
		"-rude-session-timeout", "2s", "-settle", "20s", "-set", "limits.minSessionTimeout=1s",
	})
	require.NoError(t, err)
	r, err := run(ctx, o, io.Discard)
	require.NoError(t, err)
	get := func(row, cfg string) float64 {
		t.Helper()
		rw, ok := r.Row(row)
		require.True(t, ok, row)
		v, ok := rw.Get(cfg)
		require.True(t, ok, "%s: %s", row, cfg)
		return v
	}
	for _, cfg := range []string{"admission", "no admission"} {
		require.Equal(t, 20.0, get(rowEstablished, cfg), cfg)
		require.Zero(t, get(rowDrops, cfg), cfg)
		require.Zero(t, get(rowMissed, cfg), cfg)
		require.Zero(t, get(rowPublishFailed, cfg), cfg)
		require.GreaterOrEqual(t, get(rowWrites, cfg), 3.0, cfg)
		require.Positive(t, get(rowReadBefore, cfg), cfg)
		require.Positive(t, get(rowReadDuring, cfg), cfg)
		require.Positive(t, get(rowReadRatio, cfg), cfg)
		require.Positive(t, get(rowRSSBefore, cfg), cfg)
		require.Positive(t, get(rowRSSRatio, cfg), cfg)
		// The baseline: 2 s, then GC counts a second apart until 4 s have passed; the last
		// count may start just before 4 s and a loaded machine answers it late.
		require.GreaterOrEqual(t, get(rowBaselineTook, cfg), 1.9, "the baseline, at least 2 s: %s", cfg)
		require.LessOrEqual(t, get(rowBaselineTook, cfg), 5.5, "the baseline, at most 4 s and one more count: %s", cfg)
		require.GreaterOrEqual(t, get(rowBaselineGCs, cfg), 0.0, cfg)
		require.Positive(t, get(rowNotesBefore, cfg), cfg)
		require.Equal(t, 20.0, get(rowCoopIn, cfg), cfg)
		require.Positive(t, get(rowCoopAllIn, cfg), cfg)
		require.GreaterOrEqual(t, get(rowCoopAttempts, cfg), 20.0, cfg)
		require.Equal(t, 180.0, get(rowRudePlanned, cfg), cfg)
		require.Positive(t, get(rowRudeFired, cfg), cfg)
		require.LessOrEqual(t, get(rowRudeInFlight, cfg), 50.0, cfg)
		require.Positive(t, get(rowRudeWhole, cfg)+get(rowRudeDropOpen, cfg)+get(rowRudeDropCreate, cfg), cfg)
		require.Positive(t, get(rowDiagCreated, cfg), cfg)
		require.Equal(t, get(rowRudePlanned, cfg)-get(rowRudeFired, cfg), get(rowRudeUnfired, cfg), cfg)
		require.Positive(t, get(rowServerDuring, cfg), cfg)
		require.Positive(t, get(rowStormCPU, cfg), cfg)
		require.LessOrEqual(t, get(rowOrphans, cfg), 0.0, cfg)
		require.Zero(t, get(rowOrphansLeft, cfg), cfg)
		require.GreaterOrEqual(t, get(rowOrphansGone, cfg), 0.0, cfg)
		require.GreaterOrEqual(t, get(rowSettled, cfg), 0.0, cfg)
	}
	require.Len(t, r.Notes, 2+2+2, "a bars line and a configuration line each, and the two plan lines")
	require.Contains(t, r.Markdown(), "| | admission | no admission |")
}

// TestParse pins the flags' defaults, the scale and the two server
// configurations, and refuses what cannot run.
func TestParse(t *testing.T) {
	o, err := parse(nil)
	require.NoError(t, err)
	require.Equal(t, 2000, o.sessions)
	require.Equal(t, 20000, o.attempts)
	require.Equal(t, 10*time.Second, o.within)
	require.Equal(t, o.rudeSessionTimeout+30*time.Second, o.settle)
	require.Equal(t, []serverConfig{
		{Name: "admission", Sets: []string{}},
		{Name: "no admission", Sets: []string{
			"limits.isolationProfile=SharedOnly", "limits.connectionsPerSecond=0",
			"limits.maxConnectionsPerSource=0", "limits.maxConcurrentSessionEstablishment=100000",
			"limits.unactivatedSessionTimeout=0", "limits.ownerShare=1",
			"limits.maxConcurrentHandshakes=100000", "limits.maxQueuedHandshakes=100000",
		}},
	}, o.configs)
	require.Equal(t, []string{
		"limits.maxSessionCount=2201", "limits.maxSubscriptionCount=2201",
		"limits.maxChannelCount=3001", "limits.maxQueuedRequestCount=4000",
	}, baseSets(o))

	o, err = parse([]string{"-configs", "no-admission", "-no-admission", "a=1 b=2", "-set", "c=3"})
	require.NoError(t, err)
	require.Equal(t, []serverConfig{{Name: "no admission", Sets: []string{"a=1", "b=2"}}}, o.configs)
	require.Equal(t, "c=3", baseSets(o)[4])

	for _, bad := range [][]string{
		{"-configs", "fast"},
		{"-admission", "novalue"},
		{"-coop", "30000"},
		{"-probes", "0"},
		{"-drop", "1.5"},
		{"-n", "0"},
	} {
		_, err := parse(bad)
		require.Error(t, err, strings.Join(bad, " "))
	}
}

// TestKindOf names each way an attempt fails as the report counts it.
func TestKindOf(t *testing.T) {
	busy := &client.StatusError{Service: "CreateSession", Code: status.BadServerTooBusy, RetryAfter: time.Second}
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&uacp.Error{Code: status.BadTcpNotEnoughResources}, "ERR BadTcpNotEnoughResources"},
		{fmt.Errorf("uasc: %w", &uacp.Error{Code: status.BadSecurityChecksFailed}), "ERR BadSecurityChecksFailed"},
		{fmt.Errorf("load: CreateSession: %w", status.BadTooManySessions), "BadTooManySessions"},
		{busy, "BadServerTooBusy"},
		{fmt.Errorf("client: %w: %w", status.BadNotConnected, syscall.ECONNREFUSED), "connection refused"},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), "connection reset"},
		{io.EOF, "connection closed"},
		{fmt.Errorf("uasc: %w: %w", status.BadTimeout, context.DeadlineExceeded), "deadline"},
		{errors.New("something else"), "other"},
	} {
		require.Equal(t, tt.want, kindOf(tt.err), "%v", tt.err)
	}
}

// TestDropAtOpen: the connection passes the Hello's answer through and fails the read of
// the answer to the OpenSecureChannel request, closing the connection.
func TestDropAtOpen(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	var dropped atomic.Bool
	c := &dropAtOpen{Conn: a, dropped: &dropped}
	go func() {
		buf := make([]byte, 3)
		_, _ = io.ReadFull(b, buf) // HEL
		_, _ = b.Write([]byte("ACK"))
		_, _ = io.ReadFull(b, buf) // OPN
	}()
	_, err := c.Write([]byte("HEL"))
	require.NoError(t, err)
	got := make([]byte, 3)
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, "ACK", string(got))
	require.False(t, dropped.Load())
	_, err = c.Write([]byte("OPN"))
	require.NoError(t, err)
	_, err = c.Read(got)
	require.ErrorIs(t, err, net.ErrClosed)
	require.True(t, dropped.Load())
	_, err = b.Read(got)
	require.ErrorIs(t, err, io.EOF, "the server side sees the connection end")
}

// TestLoopback: the source addresses of a block are distinct and stay in 127.b.0.0/16.
func TestLoopback(t *testing.T) {
	require.Equal(t, "127.2.0.1", loopback(2, 0).String())
	require.Equal(t, "127.2.0.254", loopback(2, 253).String())
	require.Equal(t, "127.2.1.1", loopback(2, 254).String())
	// The kernel accepts them as sources towards 127.0.0.1.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: loopback(2, 300)}}
	c, err := d.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	s, err := ln.Accept()
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, "127.2.1.47", s.RemoteAddr().(*net.TCPAddr).IP.String())
}

// TestBuildWithoutStorm: a run that failed before its storm still reports what it set up.
func TestBuildWithoutStorm(t *testing.T) {
	o, err := parse(nil)
	require.NoError(t, err)
	r := build(o, []*outcome{{cfg: serverConfig{Name: "admission"}, established: 5, setup: time.Second}})
	require.Len(t, r.Rows, 2)
	row, ok := r.Row(rowEstablished)
	require.True(t, ok)
	v, ok := row.Get("admission")
	require.True(t, ok)
	require.Equal(t, 5.0, v)
}
