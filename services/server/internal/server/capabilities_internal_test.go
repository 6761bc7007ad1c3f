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
)

// TestSetServiceLevel checks that ServiceLevel starts at 255 and follows
// SetServiceLevel.
func TestSetServiceLevel(t *testing.T) {
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
	srv.SetServiceLevel(120)
	require.Equal(t, codec.ByteVariant(120), level())
}
