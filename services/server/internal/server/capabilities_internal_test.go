package server

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/redundancy"
)

// TestServiceLevelFollowsHealth checks that ServiceLevel starts at 255 and follows
// SetHealth at once, into the top of each subrange (the server does not serve, so no
// load is sampled), and that Drain's Maintenance outlasts a later SetHealth.
func TestServiceLevelFollowsHealth(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Endpoint.Hostnames = []string{"127.0.0.1"}
	cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
	require.NoError(t, cfg.Validate())
	srv, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	defer srv.Close()
	level := func() codec.Variant {
		op := &nodemgr.ReadOp{
			Items:   []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, id.Server_ServiceLevel), AttributeId: 13}},
			Results: make([]codec.DataValue, 1),
		}
		srv.space.Read(context.Background(), op, func() {})
		return op.Results[0].Value
	}
	require.Equal(t, codec.ByteVariant(255), level())
	for _, c := range []struct {
		h    redundancy.Health
		want byte
	}{{redundancy.Degraded, 199}, {redundancy.NoData, 1}, {redundancy.Maintenance, 0}, {redundancy.Healthy, 255}} {
		srv.SetHealth(c.h)
		require.Equal(t, codec.ByteVariant(c.want), level(), "%v", c.h)
	}
	require.NoError(t, srv.Drain(context.Background()), "no session to wait for")
	require.Equal(t, codec.ByteVariant(0), level())
	srv.SetHealth(redundancy.Degraded)
	require.Equal(t, codec.ByteVariant(0), level(), "a drained server stays in Maintenance")
}
