package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
)

// writeYAML writes a config file into a test directory and returns its path.
func writeYAML(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// testHash is a cheap bcrypt hash of "secret" for tests.
func testHash(t *testing.T) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	require.NoError(t, err)
	return string(h)
}

func TestDefaultsValid(t *testing.T) {
	t.Parallel()
	cfg := Default()
	require.NoError(t, cfg.Validate())
	require.Equal(t, ":4840", cfg.Endpoint.ListenAddress)
	require.True(t, strings.HasPrefix(cfg.Endpoint.EndpointURL, "opc.tcp://"))
	require.True(t, strings.HasSuffix(cfg.Endpoint.EndpointURL, ":4840"))
	require.True(t, strings.HasSuffix(cfg.Security.PKIDir, "pki"))
	require.Equal(t, 5, cfg.Security.MaxFailedAuthenticationAttempts)
	require.Equal(t, time.Minute, cfg.Security.FailedAuthenticationWindow)
	require.Equal(t, 5*time.Minute, cfg.Security.FailedAuthenticationLockout)
	require.Equal(t, 30*time.Second, cfg.Discovery.RegisterInterval)
	require.True(t, cfg.AddressSpace.DemoNamespace)
	require.False(t, cfg.Security.AutoAcceptUntrusted)

	// Load with nothing set gives the defaults.
	loaded, err := Load(nil, nil)
	require.NoError(t, err)
	require.Equal(t, Default(), loaded)
}

// TestOTLPSetting: the OTLP push is off by default and set by its keys, from the
// environment as from a file.
func TestOTLPSetting(t *testing.T) {
	t.Parallel()
	c := Default()
	require.Empty(t, c.Observability.OTLP.Endpoint, "off by default")
	require.True(t, c.Observability.ServiceLatency, "on by default")
	require.Equal(t, time.Minute, c.Observability.OTLP.Interval)
	c, err := Load(nil, []string{"UASTACK_OBSERVABILITY_OTLP_ENDPOINT=https://collector.example:4318/v1/metrics",
		"UASTACK_OBSERVABILITY_OTLP_INTERVAL=15s"})
	require.NoError(t, err)
	require.Equal(t, OTLP{Endpoint: "https://collector.example:4318/v1/metrics", Interval: 15 * time.Second}, c.Observability.OTLP)
	file := writeYAML(t, "observability:\n  otlp:\n    endpoint: http://127.0.0.1:4318\n")
	c, err = Load([]string{"--config", file}, nil)
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:4318", c.Observability.OTLP.Endpoint)
	require.Equal(t, time.Minute, c.Observability.OTLP.Interval)
}

// TestRedundancySettings: the ServiceLevel follows the load every second and a server of
// a redundant set drains for 10s by default; both are set by their keys, from the
// environment as from a file, and 0 is allowed for each.
func TestRedundancySettings(t *testing.T) {
	t.Parallel()
	require.Equal(t, Redundancy{ServiceLevelInterval: time.Second, DrainTimeout: 10 * time.Second}, Default().Redundancy)
	c, err := Load(nil, []string{"UASTACK_REDUNDANCY_SERVICELEVELINTERVAL=250ms", "UASTACK_REDUNDANCY_DRAINTIMEOUT=0s"})
	require.NoError(t, err)
	require.Equal(t, Redundancy{ServiceLevelInterval: 250 * time.Millisecond}, c.Redundancy)
	file := writeYAML(t, "redundancy:\n  serviceLevelInterval: 0s\n  drainTimeout: 30s\n")
	c, err = Load([]string{"--config", file}, nil)
	require.NoError(t, err)
	require.Equal(t, Redundancy{DrainTimeout: 30 * time.Second}, c.Redundancy)
}
