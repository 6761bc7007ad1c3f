package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
)

// TestMaxChannelCount checks limits.maxChannelCount: with one channel open, a second
// connection gets ERR BadTcpNotEnoughResources in answer to its Hello and is counted in
// the metrics; once the first is closed, a new one is served.
func TestMaxChannelCount(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Endpoint.ListenAddress = "127.0.0.1:0"
	cfg.Endpoint.Hostnames = []string{"127.0.0.1"}
	cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
	cfg.Limits.MaxChannelCount = 1
	require.NoError(t, cfg.Validate())
	s, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "opc.tcp://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	dctx, dcancel := context.WithTimeout(ctx, 20*time.Second)
	defer dcancel()
	open := func() (*uasc.ClientChannel, error) {
		nc, err := (&net.Dialer{}).DialContext(dctx, "tcp", ln.Addr().String())
		if err != nil {
			return nil, err
		}
		conn, err := uacp.Dial(dctx, nc, uacp.ClientConfig{EndpointURL: url})
		if err != nil {
			return nil, err
		}
		return uasc.Dial(dctx, conn, uasc.ClientConfig{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone})
	}
	first, err := open()
	require.NoError(t, err)
	for range 3 {
		_, err = open()
		require.ErrorIs(t, err, status.BadTcpNotEnoughResources)
	}
	var metrics strings.Builder
	require.NoError(t, s.WriteMetrics(&metrics))
	require.Contains(t, metrics.String(), "uastack_connections_refused_total 3\n")
	require.Contains(t, metrics.String(), `opcua_server_connections_refused_total{reason="channel_limit"} 3`+"\n")
	require.NoError(t, first.Close())
	require.Eventually(t, func() bool {
		ch, err := open()
		if err != nil {
			return false
		}
		_ = ch.Close()
		return true
	}, 10*time.Second, 20*time.Millisecond, "a slot is free again after the first channel closed")
}
