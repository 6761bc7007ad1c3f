package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/server"
)

// modelManager serves a namespace of its own and ships the pump model (nodemgr.Modeler).
type modelManager struct {
	model []byte
	uri   string // the namespace served; "urn:uastack:test:pump-instances" when empty
}

func (m *modelManager) Namespaces() []string {
	if m.uri == "" {
		return []string{"urn:uastack:test:pump-instances"}
	}
	return []string{m.uri}
}
func (m *modelManager) Models() []nodemgr.Model {
	return []nodemgr.Model{{Name: "pump-model.xml", NodeSet: m.model}}
}

var _ nodemgr.Modeler = (*modelManager)(nil)

// startWithManager starts a server that loads DI from addressSpace.nodesets and has the
// managers m.
func startWithManager(t *testing.T, m ...nodemgr.Manager) (string, error) {
	t.Helper()
	return startManagers(t, func(c *config.Config) { c.AddressSpace.Nodesets = []string{diNodeset} }, m...)
}

// startManagers starts a server with the test defaults changed by configure (when not
// nil) and the managers m; an error is New's, the listener closed.
func startManagers(t *testing.T, configure func(*config.Config), m ...nodemgr.Manager) (string, error) {
	t.Helper()
	cfg := config.Default()
	cfg.Endpoint.Hostnames = []string{"127.0.0.1", "localhost"}
	cfg.Application.ApplicationURI = "urn:127.0.0.1:uastack:managertest"
	cfg.Security.PKIDir = filepath.Join(t.TempDir(), "pki")
	if configure != nil {
		configure(cfg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg.Endpoint.ListenAddress = ln.Addr().String()
	cfg.Endpoint.EndpointURL = "opc.tcp://" + ln.Addr().String()
	require.NoError(t, cfg.Validate())
	srv, err := server.New(cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Managers: m})
	if err != nil {
		ln.Close()
		return "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("server did not stop within 10 s")
		}
		require.NoError(t, srv.Close())
	})
	return cfg.Endpoint.EndpointURL, nil
}

// TestNodesetFromManager: a node manager's model loads into the address space before
// the manager's own namespace, and a broken one stops the start naming the model.
func TestNodesetFromManager(t *testing.T) {
	t.Parallel()
	pump, err := os.ReadFile(pumpNodeset)
	require.NoError(t, err)
	url, err := startWithManager(t, &modelManager{model: pump})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, url, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c.Close(ctx)
	nsArray, err := c.NamespaceArray(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"http://opcfoundation.org/UA/", "urn:uastack:demo", "http://opcfoundation.org/UA/DI/",
		"urn:uastack:test:pump", "urn:uastack:test:pump-instances"}, nsArray)
	resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: ua.NewNumericNodeID(nsPump, 6002), AttributeID: ua.AttributeIDValue}}})
	require.NoError(t, err)
	require.Equal(t, ua.StatusOK, resp.Results[0].Status)
	require.Equal(t, "SN-0042", resp.Results[0].Value.Value())

	broken := strings.Replace(string(pump), `<RequiredModel ModelUri="http://opcfoundation.org/UA/DI/"`, `<RequiredModel ModelUri="urn:nowhere"`, 1)
	_, err = startWithManager(t, &modelManager{model: []byte(broken)})
	require.ErrorContains(t, err, "pump-model.xml:")
	require.ErrorContains(t, err, "required model not loaded: urn:nowhere")
}

// TestNodesetShippedTwice: two managers of one plugin ship the same model, and one ships
// DI, which a file loads too: each document loads once. Another document of a model
// loaded already is refused.
func TestNodesetShippedTwice(t *testing.T) {
	t.Parallel()
	pump, err := os.ReadFile(pumpNodeset)
	require.NoError(t, err)
	di, err := os.ReadFile(diNodeset)
	require.NoError(t, err)
	url, err := startWithManager(t, &modelManager{model: pump, uri: "urn:uastack:test:pump-a"},
		&modelManager{model: pump, uri: "urn:uastack:test:pump-b"}, &modelManager{model: di, uri: "urn:uastack:test:di-shipper"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, url, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)
	defer c.Close(ctx)
	nsArray, err := c.NamespaceArray(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"http://opcfoundation.org/UA/", "urn:uastack:demo", "http://opcfoundation.org/UA/DI/",
		"urn:uastack:test:pump", "urn:uastack:test:pump-a", "urn:uastack:test:pump-b", "urn:uastack:test:di-shipper"}, nsArray)

	other := strings.Replace(string(pump), "SN-0042", "SN-0043", 1)
	_, err = startWithManager(t, &modelManager{model: pump, uri: "urn:uastack:test:pump-a"},
		&modelManager{model: []byte(other), uri: "urn:uastack:test:pump-b"})
	require.ErrorContains(t, err, "model urn:uastack:test:pump is loaded already")
}
