package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

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
		{"durable history without a path", func(c *Config) { c.History.Store = HistoryDurable },
			"history.path: is required with history.store durable"},
		{"history continuation points", func(c *Config) { c.History.MaxContinuationPoints = 0 },
			"history.maxContinuationPoints: must be at least 1, got 0"},
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
		{"empty nodeset file", func(c *Config) { c.AddressSpace.Nodesets = []string{"di.xml", ""} },
			"addressSpace.nodesets[1]: must name a UANodeSet XML file"},
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
