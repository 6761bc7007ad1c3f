package config

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"uastack.dev/pkg/transport/policy"
)

func TestPrecedence(t *testing.T) {
	t.Parallel()
	file := writeYAML(t, `
limits:
  maxSessionCount: 10
  maxChannelCount: 20
  maxSubscriptionCount: 30
  minSessionTimeout: 5s
observability:
  logLevel: warn
endpoint:
  listenAddress: ":5000"
security:
  securityPolicies:
    - policy: Basic256Sha256
      modes: [SignAndEncrypt]
`)
	tests := []struct {
		name  string
		args  []string
		env   []string
		check func(t *testing.T, c *Config)
	}{
		{
			name: "yaml overrides defaults",
			args: []string{"--config", file},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, 10, c.Limits.MaxSessionCount)
				require.Equal(t, 5*time.Second, c.Limits.MinSessionTimeout)
				require.Equal(t, "warn", c.Observability.LogLevel)
				require.Equal(t, 200, c.Limits.MaxQueuedRequestCount, "untouched keys keep their default")
				require.Equal(t, []SecurityPolicy{{Policy: policy.URIBasic256Sha256, Modes: []string{ModeSignAndEncrypt}}},
					c.Security.SecurityPolicies, "a list replaces the default list; short names become URIs")
			},
		},
		{
			name: "config file from UASTACK_CONFIG",
			env:  []string{"UASTACK_CONFIG=" + file},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, 10, c.Limits.MaxSessionCount)
			},
		},
		{
			name: "env overrides yaml",
			args: []string{"--config", file},
			env: []string{
				"UASTACK_LIMITS_MAXSESSIONCOUNT=11",
				"UASTACK_limits_maxChannelCount=21",
				"UASTACK_OBSERVABILITY_LOGLEVEL=error",
				"UASTACK_ENDPOINT_HOSTNAMES=a.example, b.example",
				"UASTACK_SECURITY_AUTOACCEPTUNTRUSTED=true",
				"UASTACK_LIMITS_MAXSESSIONTIMEOUT=2h",
				"OTHER_VARIABLE=ignored",
			},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, 11, c.Limits.MaxSessionCount)
				require.Equal(t, 21, c.Limits.MaxChannelCount)
				require.Equal(t, 30, c.Limits.MaxSubscriptionCount)
				require.Equal(t, "error", c.Observability.LogLevel)
				require.Equal(t, []string{"a.example", "b.example"}, c.Endpoint.Hostnames)
				require.True(t, c.Security.AutoAcceptUntrusted)
				require.Equal(t, 2*time.Hour, c.Limits.MaxSessionTimeout)
			},
		},
		{
			name: "env list of structs as YAML flow",
			env:  []string{"UASTACK_SECURITY_SECURITYPOLICIES=[{policy: Aes256_Sha256_RsaPss, modes: [Sign]}]"},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, []SecurityPolicy{{Policy: policy.URIAes256Sha256RsaPss, Modes: []string{ModeSign}}},
					c.Security.SecurityPolicies)
			},
		},
		{
			name: "flags override env",
			args: []string{"--config", file, "--listen", ":6000", "--log-level", "debug",
				"--endpoint", "opc.tcp://plant.example:6000", "--pki", "/var/lib/uastack/pki",
				"--set", "limits.maxSessionCount=12", "--set", "LIMITS.MAXCHANNELCOUNT=22"},
			env: []string{"UASTACK_LIMITS_MAXSESSIONCOUNT=11", "UASTACK_ENDPOINT_LISTENADDRESS=:5500",
				"UASTACK_OBSERVABILITY_LOGLEVEL=error"},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, ":6000", c.Endpoint.ListenAddress)
				require.Equal(t, "debug", c.Observability.LogLevel)
				require.Equal(t, "opc.tcp://plant.example:6000", c.Endpoint.EndpointURL)
				require.Equal(t, "/var/lib/uastack/pki", c.Security.PKIDir)
				require.Equal(t, 12, c.Limits.MaxSessionCount)
				require.Equal(t, 22, c.Limits.MaxChannelCount)
			},
		},
		{
			name: "nodesets as a comma-separated --set",
			args: []string{"--set", "addressSpace.nodesets=Opc.Ua.Di.NodeSet2.xml, plant.xml"},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, []string{"Opc.Ua.Di.NodeSet2.xml", "plant.xml"}, c.AddressSpace.Nodesets)
			},
		},
		{
			name: "unset flags do not override",
			args: []string{"--config", file},
			env:  []string{"UASTACK_ENDPOINT_LISTENADDRESS=:5500"},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, ":5500", c.Endpoint.ListenAddress)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Load(tt.args, tt.env)
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		args []string
		env  []string
		want []string // substrings of the error
	}{
		{
			name: "unknown yaml key",
			yaml: "limits:\n  maxSesionCount: 5\n",
			want: []string{`unknown key "limits.maxSesionCount"`},
		},
		{
			name: "yaml key in the wrong case",
			yaml: "limits:\n  MaxSessionCount: 5\n",
			want: []string{`unknown key "limits.MaxSessionCount" (did you mean "limits.maxSessionCount"?`},
		},
		{
			name: "unknown key inside a list entry",
			yaml: "security:\n  securityPolicies:\n    - polcy: Basic256Sha256\n      modes: [Sign]\n",
			want: []string{"security.securityPolicies[0]", "polcy"},
		},
		{
			name: "unknown env variable",
			env:  []string{"UASTACK_LIMITS_MAXSESIONCOUNT=5"},
			want: []string{`environment UASTACK_LIMITS_MAXSESIONCOUNT: unknown key "limits.maxsesioncount"`},
		},
		{
			name: "unknown --set key",
			args: []string{"--set", "limits.nope=1"},
			want: []string{`--set: unknown key "limits.nope"`},
		},
		{
			name: "--set without value",
			args: []string{"--set", "limits.maxSessionCount"},
			want: []string{"--set limits.maxSessionCount: want key=value"},
		},
		{
			name: "all unknown keys are reported",
			yaml: "typo1: 1\nlimits:\n  typo2: 2\n",
			env:  []string{"UASTACK_LIMITS_TYPO3=3"},
			want: []string{`"typo1"`, `"limits.typo2"`, "UASTACK_LIMITS_TYPO3"},
		},
		{
			name: "bare number for a duration",
			yaml: "limits:\n  minSessionTimeout: 10000\n",
			want: []string{"limits.minSessionTimeout", `want a duration with a unit such as "30s"`},
		},
		{
			name: "not a number",
			env:  []string{"UASTACK_LIMITS_MAXSESSIONCOUNT=many"},
			want: []string{"'limits.maxSessionCount' cannot parse value as 'int'"},
		},
		{
			name: "validation runs in Load",
			env:  []string{"UASTACK_LIMITS_MAXSESSIONCOUNT=0"},
			want: []string{"limits.maxSessionCount: must be at least 1, got 0"},
		},
		{
			name: "unknown flag",
			args: []string{"--listn", ":1"},
			want: []string{"flags: unknown flag: --listn"},
		},
		{
			name: "missing config file",
			args: []string{"--config", "/nonexistent/uastack.yaml"},
			want: []string{"config file /nonexistent/uastack.yaml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := tt.args
			if tt.yaml != "" {
				args = append([]string{"--config", writeYAML(t, tt.yaml)}, args...)
			}
			_, err := Load(args, tt.env)
			require.Error(t, err)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestOtherProgramsVariables: UASTACK_ variables outside the server's sections belong to
// other uastack programs (uacli's password, the tests' npm cache) and are left alone; one
// inside a section that names no key is still an error.
func TestOtherProgramsVariables(t *testing.T) {
	c, err := Load(nil, []string{"UASTACK_NPM_CACHE=/tmp/npm", "UASTACK_PASSWORD=secret", "UASTACK_LIMITS_MAXSESSIONCOUNT=7"})
	require.NoError(t, err)
	require.Equal(t, 7, c.Limits.MaxSessionCount)
	_, err = Load(nil, []string{"UASTACK_DISCOVERY_PKI=/tmp/pki"})
	require.ErrorContains(t, err, `unknown key "discovery.pki"`)
}

// TestNamedFlags: every named flag sets the key its usage names, and that key is a
// setting.
func TestNamedFlags(t *testing.T) {
	t.Parallel()
	values := map[string]string{
		"endpoint":     "opc.tcp://plant.example:4841",
		"listen":       "127.0.0.1:4841",
		"pki":          "/srv/uastack/pki",
		"log-level":    "warn",
		"log-format":   "json",
		"metrics-addr": "127.0.0.1:9464",
	}
	require.Len(t, namedFlags, len(values))
	keys := knownKeys()
	for _, f := range namedFlags {
		require.Contains(t, keys.exact, f.key, f.name)
		require.Contains(t, NewFlagSet().Lookup(f.name).Usage, "("+f.key+")")
		value, ok := values[f.name]
		require.True(t, ok, "no test value for --%s", f.name)
		c, err := Load([]string{"--" + f.name, value}, nil)
		require.NoError(t, err, f.name)
		got := flattenAttrs("", Effective(c), map[string]slog.Value{})
		require.Equal(t, value, got[f.key].String(), f.name)
	}
}
