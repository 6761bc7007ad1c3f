package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRemovedDecoupleHeldPublishRequests: limits.decoupleHeldPublishRequests is refused
// from every source with a message that names it, says why there is nothing to
// decouple and says to remove it, rather than the bare "unknown key".
func TestRemovedDecoupleHeldPublishRequests(t *testing.T) {
	t.Parallel()
	const why = `"limits.decoupleHeldPublishRequests" is no longer a setting: a held Publish never holds a request worker in this server (it is parked on its session), so there is nothing to decouple; remove it`
	tests := []struct {
		name   string
		yaml   string
		args   []string
		env    []string
		source string // how the error names the source; the file's path follows "config file "
	}{
		{name: "yaml file", yaml: "limits:\n  decoupleHeldPublishRequests: true\n", source: "config file "},
		{name: "yaml file, false", yaml: "limits:\n  decoupleHeldPublishRequests: false\n", source: "config file "},
		{name: "yaml file, wrong case", yaml: "limits:\n  DecoupleHeldPublishRequests: true\n", source: "config file "},
		{name: "yaml file beside a valid setting", yaml: "limits:\n  maxSessionCount: 5\n  decoupleHeldPublishRequests: true\n", source: "config file "},
		{name: "environment", env: []string{"UASTACK_LIMITS_DECOUPLEHELDPUBLISHREQUESTS=true"},
			source: "environment UASTACK_LIMITS_DECOUPLEHELDPUBLISHREQUESTS: "},
		{name: "--set", args: []string{"--set", "limits.decoupleHeldPublishRequests=false"}, source: "--set: "},
		{name: "--set, any case", args: []string{"--set", "LIMITS.DECOUPLEHELDPUBLISHREQUESTS=true"}, source: "--set: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args, source := tt.args, tt.source
			if tt.yaml != "" {
				path := writeYAML(t, tt.yaml)
				args = append([]string{"--config", path}, args...)
				source += path + ": "
			}
			_, err := Load(args, tt.env)
			require.Error(t, err)
			require.Equal(t, source+why, err.Error())
		})
	}
}

// TestRemovedKeysAreNotSettings: a removed key must not also be a setting, or Load would
// accept it from the file and refuse it from --set.
func TestRemovedKeysAreNotSettings(t *testing.T) {
	t.Parallel()
	keys := knownKeys()
	require.NotEmpty(t, removedKeys)
	for k := range removedKeys {
		_, known := keys.fold[strings.ToLower(k)]
		require.False(t, known, "%s is both removed and a setting", k)
	}
}
