package procwire

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"
)

func TestHCLog(t *testing.T) {
	var buf bytes.Buffer
	l := HCLog(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), "myplugin")
	require.Equal(t, hclog.Info, l.GetLevel())
	require.False(t, l.IsDebug())
	l.Debug("dropped")
	l.Named("stdio").Warn("plugin process exited", "pid", 7)
	muted := l.Named("myplugin")
	require.Equal(t, hclog.Off, muted.GetLevel(), "go-plugin skips the stderr it would log here")
	muted.Error("a stderr line")
	muted.Named("x").Error("below the muted logger")

	var rec map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &rec), "one record: %s", buf.String())
	require.Equal(t, "WARN", rec["level"])
	require.Equal(t, "plugin process exited", rec["msg"])
	require.Equal(t, float64(7), rec["pid"])
	require.Equal(t, "stdio", rec["logger"])
}

// TestHCLogRenamesPlugin: go-plugin's "plugin" attribute (the path) does not repeat the
// host's "plugin" (the name).
func TestHCLogRenamesPlugin(t *testing.T) {
	var buf bytes.Buffer
	l := HCLog(slog.New(slog.NewTextHandler(&buf, nil)).With("plugin", "Plant"), "")
	l.With("plugin", "/opt/modbus-plugin").Info("plugin started", "pid", 7)
	l.Info("exited", "plugin", "/opt/modbus-plugin")
	require.Equal(t, 2, strings.Count(buf.String(), "plugin=Plant"))
	require.Equal(t, 2, strings.Count(buf.String(), "path=/opt/modbus-plugin"))
	require.NotContains(t, buf.String(), "plugin=/opt")
}
