package config

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
	"uastack.dev/pkg/transport/policy"
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

func TestValidate(t *testing.T) {
	t.Parallel()
	hash := testHash(t)
	tests := []struct {
		name   string
		change func(c *Config)
		want   string // the exact error text
	}{
		{"session count", func(c *Config) { c.Limits.MaxSessionCount = 0 },
			"limits.maxSessionCount: must be at least 1, got 0"},
		{"channel count", func(c *Config) { c.Limits.MaxChannelCount = -1 },
			"limits.maxChannelCount: must be at least 1, got -1"},
		{"request threads min above max", func(c *Config) { c.Limits.MinRequestThreadCount = 200 },
			"limits.minRequestThreadCount: must not exceed limits.maxRequestThreadCount (100), got 200"},
		{"session timeout min above max", func(c *Config) { c.Limits.MinSessionTimeout = 2 * time.Hour },
			"limits.minSessionTimeout: must not exceed limits.maxSessionTimeout (1h0m0s), got 2h0m0s"},
		{"token lifetime min above max", func(c *Config) { c.Limits.MinTokenLifetime = 2 * time.Hour },
			"limits.minTokenLifetime: must not exceed limits.maxTokenLifetime (1h0m0s), got 2h0m0s"},
		{"token lifetime zero", func(c *Config) { c.Limits.MaxTokenLifetime = 0 },
			"limits.maxTokenLifetime: must be positive, got 0s"},
		{"negative monitored items", func(c *Config) { c.Limits.MaxMonitoredItemCount = -1 },
			"limits.maxMonitoredItemCount: must be at least 0, got -1"},
		{"handshake timeout zero", func(c *Config) { c.Limits.HandshakeTimeout = 0 },
			"limits.handshakeTimeout: must be positive, got 0s"},
		{"negative chunk timeout", func(c *Config) { c.Limits.ChunkTimeout = -time.Second },
			"limits.chunkTimeout: must be 0 (off) or positive, got -1s"},
		{"negative write timeout", func(c *Config) { c.Limits.WriteTimeout = -time.Second },
			"limits.writeTimeout: must be 0 (off) or positive, got -1s"},
		{"retained bytes below a buffer", func(c *Config) { c.Limits.MaxRetainedBytes = 100 },
			"limits.maxRetainedBytes: must be at least 8192, got 100"},
		{"share above the budget", func(c *Config) { c.Limits.MaxRetainedBytesPerChannel = 512 << 20 },
			"limits.maxRetainedBytesPerChannel: must not exceed limits.maxRetainedBytes (268435456), got 536870912"},
		{"operation limit", func(c *Config) { c.OperationLimits.MaxNodesPerRead = 0 },
			"operationLimits.maxNodesPerRead: must be at least 1, got 0"},
		{"receive buffer", func(c *Config) { c.Encoding.ReceiveBufferSize = 8191 },
			"encoding.receiveBufferSize: must be at least 8192, got 8191"},
		{"send buffer", func(c *Config) { c.Encoding.SendBufferSize = 1024 },
			"encoding.sendBufferSize: must be at least 8192, got 1024"},
		{"buffer over uint32", func(c *Config) { c.Encoding.SendBufferSize = 1 << 33 },
			"encoding.sendBufferSize: must be at most 4294967295, got 8589934592"},
		{"no decode budget", func(c *Config) { c.Encoding.MaxDecodeMultiple = 0 },
			"encoding.maxDecodeMultiple: must be at least 1, got 0"},
		{"unknown policy", func(c *Config) { c.Security.SecurityPolicies[1].Policy = "Basic257" },
			`security.securityPolicies[1].policy: unknown policy "Basic257"; known: None, Basic128Rsa15, Basic256, Basic256Sha256, Aes128_Sha256_RsaOaep, Aes256_Sha256_RsaPss (or their URIs)`},
		{"duplicate policy", func(c *Config) { c.Security.SecurityPolicies[2].Policy = "Basic256Sha256" },
			"security.securityPolicies[2].policy: Basic256Sha256 already listed in security.securityPolicies[1]; list its modes there"},
		{"unknown mode", func(c *Config) { c.Security.SecurityPolicies[1].Modes[0] = "Encrypt" },
			`security.securityPolicies[1].modes[0]: unknown mode "Encrypt"; allowed: None, Sign, SignAndEncrypt`},
		{"None with Sign", func(c *Config) { c.Security.SecurityPolicies[0].Modes = []string{ModeSign} },
			`security.securityPolicies[0].modes[0]: policy None allows only mode None, got "Sign"`},
		{"mode None with a real policy", func(c *Config) { c.Security.SecurityPolicies[1].Modes = []string{ModeNone} },
			"security.securityPolicies[1].modes[0]: mode None needs policy None, not Basic256Sha256"},
		{"no modes", func(c *Config) { c.Security.SecurityPolicies[1].Modes = nil },
			"security.securityPolicies[1].modes: must list at least one of None, Sign, SignAndEncrypt"},
		{"no policies", func(c *Config) { c.Security.SecurityPolicies = nil },
			"security.securityPolicies: must list at least one policy; known: None, Basic128Rsa15, Basic256, Basic256Sha256, Aes128_Sha256_RsaOaep, Aes256_Sha256_RsaPss"},
		{"unknown token type", func(c *Config) { c.Security.UserTokenPolicies[0].Type = "kerberos" },
			`security.userTokenPolicies[0].type: unknown value "kerberos"; allowed: anonymous, username, certificate`},
		{"unknown token policy", func(c *Config) { c.Security.UserTokenPolicies[1].SecurityPolicy = "Basic999" },
			`security.userTokenPolicies[1].securityPolicy: unknown policy "Basic999"; known: None, Basic128Rsa15, Basic256, Basic256Sha256, Aes128_Sha256_RsaOaep, Aes256_Sha256_RsaPss (or their URIs), or empty for the channel's policy`},
		{"plain-text password", func(c *Config) { c.Security.Users = []User{{Name: "alice", PasswordHash: "hunter2"}} },
			"security.users[0].passwordHash: not a bcrypt ($2a$, $2b$, $2y$) or argon2id ($argon2id$) hash; store a hash, never the password (make one with config.HashPassword or `htpasswd -nbBC 12 user`)"},
		{"truncated bcrypt", func(c *Config) { c.Security.Users = []User{{Name: "alice", PasswordHash: hash[:40]}} },
			"security.users[0].passwordHash: malformed bcrypt hash: 40 characters, want 60"},
		{"duplicate user", func(c *Config) {
			c.Security.Users = []User{{Name: "alice", PasswordHash: hash}, {Name: "alice", PasswordHash: hash}}
		}, `security.users[1].name: "alice" already used by security.users[0]`},
		{"unknown role", func(c *Config) {
			c.Security.Users = []User{{Name: "alice", PasswordHash: hash, Roles: []string{"Operator", "operator"}}}
		}, `security.users[0].roles[1]: unknown role "operator"; allowed: Observer, Operator, Engineer, Supervisor, ConfigureAdmin, SecurityAdmin`},
		{"lockout window", func(c *Config) { c.Security.FailedAuthenticationWindow = 0 },
			"security.failedAuthenticationWindow: must be positive, got 0s"},
		{"endpoint url", func(c *Config) { c.Endpoint.EndpointURL = "http://x:4840" },
			`endpoint.endpointUrl: must be an opc.tcp://host:port URL, got "http://x:4840"`},
		{"listen address", func(c *Config) { c.Endpoint.ListenAddress = "4840" },
			`endpoint.listenAddress: must be host:port or :port with a port from 0 to 65535, got "4840"`},
		{"node manager type", func(c *Config) {
			c.AddressSpace.NodeManagers = []NodeManager{{Name: "x", Type: "dll", NamespaceURI: "urn:x"}}
		}, `addressSpace.nodeManagers[0].type: unknown value "dll"; allowed: builtin, wasm, process`},
		{"wasm without path", func(c *Config) {
			c.AddressSpace.NodeManagers = []NodeManager{{Name: "x", Type: NodeManagerWasm, NamespaceURI: "urn:x"}}
		}, "addressSpace.nodeManagers[0].path: must name the wasm file"},
		{"duplicate node manager", func(c *Config) {
			c.AddressSpace.NodeManagers = []NodeManager{{Name: "x", Type: NodeManagerBuiltin}, {Name: "x", Type: NodeManagerBuiltin}}
		}, `addressSpace.nodeManagers[1].name: "x" already used by addressSpace.nodeManagers[0]`},
		{"log level", func(c *Config) { c.Observability.LogLevel = "verbose" },
			`observability.logLevel: unknown value "verbose"; allowed: debug, info, warn, error`},
		{"discovery url", func(c *Config) { c.Discovery.DiscoveryURL = "lds.example" },
			`discovery.discoveryUrl: must be empty (no registration) or an opc.tcp://host:port URL, got "lds.example"`},
		{"otlp endpoint without scheme", func(c *Config) { c.Observability.OTLP.Endpoint = "127.0.0.1:4318" },
			`observability.otlp.endpoint: must be empty (no push) or an http:// or https:// URL, got "127.0.0.1:4318"`},
		{"otlp endpoint grpc", func(c *Config) { c.Observability.OTLP.Endpoint = "grpc://collector:4317" },
			`observability.otlp.endpoint: must be empty (no push) or an http:// or https:// URL, got "grpc://collector:4317"`},
		{"otlp interval", func(c *Config) { c.Observability.OTLP.Interval = 100 * time.Millisecond },
			"observability.otlp.interval: must be at least 1s, got 100ms"},
		{"service level interval", func(c *Config) { c.Redundancy.ServiceLevelInterval = time.Microsecond },
			"redundancy.serviceLevelInterval: must be 0 (no load) or at least 1ms, got 1µs"},
		{"negative service level interval", func(c *Config) { c.Redundancy.ServiceLevelInterval = -time.Second },
			"redundancy.serviceLevelInterval: must be 0 (no load) or at least 1ms, got -1s"},
		{"negative drain timeout", func(c *Config) { c.Redundancy.DrainTimeout = -time.Second },
			"redundancy.drainTimeout: must be 0 (off) or positive, got -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := Default()
			tt.change(c)
			err := c.Validate()
			require.Error(t, err)
			require.Equal(t, tt.want, err.Error())
		})
	}
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

func TestValidateCollectsAllErrors(t *testing.T) {
	t.Parallel()
	c := Default()
	c.Limits.MaxSessionCount = 0
	c.Encoding.ReceiveBufferSize = 100
	c.Security.SecurityPolicies[1].Policy = "Basic257"
	err := c.Validate()
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 3)
	require.Contains(t, lines[0], "security.securityPolicies[1].policy")
	require.Equal(t, "limits.maxSessionCount: must be at least 1, got 0", lines[1])
	require.Equal(t, "encoding.receiveBufferSize: must be at least 8192, got 100", lines[2])
}

func TestUsersFromYAML(t *testing.T) {
	t.Parallel()
	hash := testHash(t)
	file := writeYAML(t, "security:\n  users:\n    - name: operator\n      passwordHash: '"+hash+"'\n      roles: [Operator, Engineer]\n")
	c, err := Load([]string{"--config", file}, nil)
	require.NoError(t, err)
	require.Equal(t, []User{{Name: "operator", PasswordHash: hash, Roles: []string{"Operator", "Engineer"}}}, c.Security.Users)
	require.NoError(t, CheckPassword(c.Security.Users[0].PasswordHash, "secret"))
}

func TestPasswords(t *testing.T) {
	t.Parallel()
	h, err := HashPassword("correct horse")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(h, "$2a$12$"))
	require.NoError(t, ValidPasswordHash(h))
	require.NoError(t, CheckPassword(h, "correct horse"))
	require.ErrorIs(t, CheckPassword(h, "correct horsE"), ErrPasswordMismatch)

	_, err = HashPassword(strings.Repeat("x", 73))
	require.Error(t, err, "bcrypt must not silently truncate")

	// argon2id, PHC form: RFC 9106 parameters computed with x/crypto/argon2
	// (password "password", salt "somesalt").
	const argon = "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
	require.NoError(t, ValidPasswordHash(argon))
	require.NoError(t, CheckPassword(argon, "password"))
	require.ErrorIs(t, CheckPassword(argon, "Password"), ErrPasswordMismatch)

	for _, bad := range []string{
		"", "secret", "{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=",
		"$argon2i$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
		"$argon2id$v=19$m=999999999,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
		"$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$short",
		"$2a$10$tooshort",
	} {
		require.Error(t, ValidPasswordHash(bad), bad)
		require.Error(t, CheckPassword(bad, "secret"), bad)
		require.NotErrorIs(t, CheckPassword(bad, "secret"), ErrPasswordMismatch, bad)
	}
}

// logJSON runs LogEffective into a JSON handler and returns the records.
func logJSON(t *testing.T, c *Config) []map[string]any {
	t.Helper()
	var buf bytes.Buffer
	LogEffective(slog.New(slog.NewJSONHandler(&buf, nil)), c)
	var recs []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		recs = append(recs, rec)
	}
	return recs
}

func warnings(recs []map[string]any) map[string]string {
	out := map[string]string{}
	for _, r := range recs {
		if r["level"] == "WARN" {
			out[r["setting"].(string)] = r["warning"].(string)
		}
	}
	return out
}

func TestInsecureSettingsWarn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(c *Config)
		want   map[string]string // setting -> substring of the warning
	}{
		{"defaults: None and anonymous", func(*Config) {}, map[string]string{
			"security.securityPolicies[0]":  "SecurityPolicy None is offered",
			"security.userTokenPolicies[0]": "anonymous logins are accepted",
			"security.users":                "no users are configured",
		}},
		{"secure", func(c *Config) {
			c.Security.SecurityPolicies = c.Security.SecurityPolicies[1:]
			c.Security.UserTokenPolicies = []UserTokenPolicy{{Type: TokenCertificate}}
		}, map[string]string{}},
		{"auto-accept", func(c *Config) {
			c.Security.SecurityPolicies = c.Security.SecurityPolicies[1:]
			c.Security.UserTokenPolicies = []UserTokenPolicy{{Type: TokenCertificate}}
			c.Security.AutoAcceptUntrusted = true
		}, map[string]string{"security.autoAcceptUntrusted": "every untrusted client certificate is accepted"}},
		{"clear-text passwords and no lockout", func(c *Config) {
			c.Security.UserTokenPolicies = []UserTokenPolicy{{Type: TokenUsername}}
			c.Security.Users = []User{{Name: "a", PasswordHash: "$2a$04$"}}
			c.Security.MaxFailedAuthenticationAttempts = 0
		}, map[string]string{
			"security.securityPolicies[0]":                 "SecurityPolicy None is offered",
			"security.userTokenPolicies[0].securityPolicy": "passwords can cross the network in clear text",
			"security.maxFailedAuthenticationAttempts":     "0 disables the lockout",
		}},
		{"two username policies and no users: one warning", func(c *Config) {
			c.Security.SecurityPolicies = c.Security.SecurityPolicies[1:]
			c.Security.UserTokenPolicies = []UserTokenPolicy{
				{Type: TokenUsername, SecurityPolicy: "Basic256Sha256"},
				{Type: TokenUsername, SecurityPolicy: "Aes256_Sha256_RsaPss"},
			}
		}, map[string]string{"security.users": "no users are configured"}},
		{"deprecated policy and unlimited items", func(c *Config) {
			c.Security.SecurityPolicies = []SecurityPolicy{{Policy: "Basic128Rsa15", Modes: []string{ModeSign}}}
			c.Security.UserTokenPolicies = []UserTokenPolicy{{Type: TokenCertificate}}
			c.Limits.MaxMonitoredItemCount = 0
			c.Limits.MaxMonitoredItemsPerSubscription = 0
		}, map[string]string{
			"security.securityPolicies[0]":            "Basic128Rsa15 is deprecated",
			"limits.maxMonitoredItemCount":            "0 is no limit",
			"limits.maxMonitoredItemsPerSubscription": "0 is no limit",
		}},
		{"transport deadlines off", func(c *Config) {
			c.Security.SecurityPolicies = c.Security.SecurityPolicies[1:]
			c.Security.UserTokenPolicies = []UserTokenPolicy{{Type: TokenCertificate}}
			c.Limits.ChunkTimeout, c.Limits.AssemblyTimeout, c.Limits.WriteTimeout = 0, 0, 0
		}, map[string]string{
			"limits.chunkTimeout":    "0 is no bound",
			"limits.assemblyTimeout": "0 is no bound",
			"limits.writeTimeout":    "0 is no bound",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := Default()
			tt.change(c)
			recs := logJSON(t, c)
			got := warnings(recs)
			require.Len(t, got, len(tt.want), "%v", got)
			require.Len(t, recs, 1+len(got), "one record per warned setting, after the configuration")
			for k, sub := range tt.want {
				require.Contains(t, got[k], sub, k)
			}
		})
	}
}

func TestLogEffective(t *testing.T) {
	t.Parallel()
	c := Default()
	c.Limits.MaxSessionCount = 1234
	c.Security.Users = []User{{Name: "alice", PasswordHash: testHash(t)}}
	recs := logJSON(t, c)
	require.Equal(t, "INFO", recs[0]["level"])
	require.Equal(t, "effective configuration", recs[0]["msg"])

	rt := recs[0]["runtime"].(map[string]any)
	require.InDelta(t, float64(runtime.GOMAXPROCS(0)), rt["GOMAXPROCS"], 0)
	require.InDelta(t, float64(runtime.NumCPU()), rt["NumCPU"], 0)
	require.Equal(t, runtime.Version(), rt["go"])
	require.NotEmpty(t, rt["GOGC"])
	require.NotEmpty(t, rt["GOMEMLIMIT"])

	limits := recs[0]["limits"].(map[string]any)
	require.InDelta(t, 1234, limits["maxSessionCount"], 0)
	require.InDelta(t, 100, limits["maxRequestThreadCount"], 0)
	require.InDelta(t, 10, limits["minRequestThreadCount"], 0)
	require.InDelta(t, 200, limits["maxQueuedRequestCount"], 0)
	require.Contains(t, recs[0], "operationLimits")
	require.Contains(t, recs[0], "encoding")

	sec := recs[0]["security"].(map[string]any)
	require.Equal(t, []any{"None:None", "Basic256Sha256:Sign|SignAndEncrypt", "Aes256_Sha256_RsaPss:Sign|SignAndEncrypt"}, sec["securityPolicies"])
	require.InDelta(t, 1, sec["users"], 0)

	var all bytes.Buffer
	LogEffective(slog.New(slog.NewTextHandler(&all, nil)), c)
	require.NotContains(t, all.String(), c.Security.Users[0].PasswordHash, "hashes are never logged")
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
