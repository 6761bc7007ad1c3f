package server

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/config"
)

// runServer calls Run with cfg on a goroutine and returns the bound address once ready
// is called, and a function that stops the server and returns Run's result.
func runServer(tb testing.TB, cfg *config.Config) (net.Addr, func() error) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, discardLogger(), func(a net.Addr) { ready <- a }) }()
	select {
	case a := <-ready:
		return a, func() error { cancel(); return <-done }
	case err := <-done:
		cancel()
		tb.Fatalf("server did not start: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		tb.Fatal("server not ready after 30 s")
	}
	return nil, nil
}

// BenchmarkReadLoopback is a Read of one Value attribute (ServerStatus.State) end to end
// over loopback TCP with our own uasc client role on a None channel: the client's encode
// and decode, the TCP round trip and the full server, including the simulation of the
// demo namespace running beside it.
func BenchmarkReadLoopback(b *testing.B) {
	cfg := benchConfig(b, filepath.Join(b.TempDir(), "pki"))
	addr, stop := runServer(b, cfg)
	defer func() { require.NoError(b, stop()) }()
	ctx := context.Background()
	nc, err := net.Dial("tcp", addr.String())
	require.NoError(b, err)
	uc, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: cfg.Endpoint.EndpointURL})
	require.NoError(b, err)
	cc, err := uasc.Dial(ctx, uc, uasc.ClientConfig{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone})
	require.NoError(b, err)
	defer cc.Close()
	resp, err := cc.Request(ctx, &ua.CreateSessionRequest{SessionName: "bench"})
	require.NoError(b, err)
	token := resp.(*ua.CreateSessionResponse).AuthenticationToken
	_, err = cc.Request(ctx, &ua.ActivateSessionRequest{
		RequestHeader:     ua.RequestHeader{AuthenticationToken: token},
		UserIdentityToken: codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: policyIDAnonymous}),
	})
	require.NoError(b, err)
	req := &ua.ReadRequest{
		RequestHeader:      ua.RequestHeader{AuthenticationToken: token, RequestHandle: 7},
		TimestampsToReturn: ua.TimestampsToReturnBoth,
		NodesToRead:        readValues([]codec.NodeId{codec.NewNumericNodeId(0, id.Server_ServerStatus_State)}, 1),
	}
	_, err = cc.Request(ctx, req)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		resp, err = cc.Request(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
	}
	rr, ok := resp.(*ua.ReadResponse)
	require.True(b, ok, "response is %T", resp)
	require.Equal(b, status.Good, rr.Results[0].Status)
}
