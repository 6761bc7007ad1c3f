package config

import (
	"os"
	"path/filepath"
	"runtime"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/policy"
)

// Config is every setting of the server. A Config from [Load] or [Default]
// is a value the caller owns; it is not safe for concurrent modification.
// The koanf tags are the keys of the YAML file (see the package doc). The log
// tags say what [Effective] must not show: `log:"secret"` (a password hash)
// never appears, `log:"count"` (a list that holds secrets) appears as its
// length. A new setting is logged without further work; one that holds a
// secret needs the tag.
type Config struct {
	Application     Application     `koanf:"application"`
	Endpoint        Endpoint        `koanf:"endpoint"`
	Security        Security        `koanf:"security"`
	Limits          Limits          `koanf:"limits"`
	OperationLimits OperationLimits `koanf:"operationLimits"`
	Subscriptions   Subscriptions   `koanf:"subscriptions"`
	Encoding        Encoding        `koanf:"encoding"`
	AddressSpace    AddressSpace    `koanf:"addressSpace"`
	Discovery       Discovery       `koanf:"discovery"`
	Observability   Observability   `koanf:"observability"`
	// redundancy.* and mirror.*: the server as a member of a redundant set (issue 19).
	Redundancy Redundancy `koanf:"redundancy"`
	Mirror     Mirror     `koanf:"mirror"`
	// history.*: where the history of variables and events is kept (issue 20).
	History History `koanf:"history"`
}

// Application is the ApplicationDescription of the server (Part 4 §7.2) and
// the identity written into its application certificate (Part 6 §6.2.2).
type Application struct {
	// ApplicationURI must match the URI in the application certificate.
	// Default: urn:<hostname>:uastack:server.
	ApplicationURI string `koanf:"applicationUri"`
	// ApplicationName is the human-readable name. Default: "uastack server".
	ApplicationName string `koanf:"applicationName"`
	// ProductURI names the product. Default: urn:uastack.dev:server.
	ProductURI string `koanf:"productUri"`
}

// Endpoint is where the server listens and what it tells clients.
type Endpoint struct {
	// EndpointURL is advertised in GetEndpoints and CreateSession.
	// Default: opc.tcp://<hostname>:4840.
	EndpointURL string `koanf:"endpointUrl"`
	// ListenAddress is the TCP address the listener binds. Default: ":4840"
	// (every interface).
	ListenAddress string `koanf:"listenAddress"`
	// Hostnames are the DNS names (and IP addresses) written into the
	// application certificate's subjectAltName. Default: [<hostname>].
	Hostnames []string `koanf:"hostnames"`
}

// Security is the PKI, the channel security and the user authentication.
type Security struct {
	// PKIDir holds the certificate stores own/, trusted/, issuer/ and
	// rejected/, each with certs/ and crl/. Default: uastack/pki under
	// os.UserConfigDir() ($XDG_CONFIG_HOME or ~/.config on Linux,
	// ~/Library/Application Support on macOS, %AppData% on Windows); "pki"
	// in the working directory when that is unknown.
	PKIDir string `koanf:"pkiDir"`
	// AutoAcceptUntrusted trusts every client certificate that is not in
	// the trusted store. Default false; true logs a warning.
	AutoAcceptUntrusted bool `koanf:"autoAcceptUntrusted"`
	// SecurityPolicies are the endpoints offered, one per policy and mode.
	SecurityPolicies []SecurityPolicy `koanf:"securityPolicies"`
	// UserTokenPolicies are the identity tokens accepted in ActivateSession.
	UserTokenPolicies []UserTokenPolicy `koanf:"userTokenPolicies"`
	// Users may log in with a UserNameIdentityToken. Logged as their
	// number: their names are half of a credential.
	Users []User `koanf:"users" log:"count"`
	// MaxFailedAuthenticationAttempts is the number of failed
	// ActivateSession attempts per source within FailedAuthenticationWindow
	// that locks the source out for FailedAuthenticationLockout. A source is
	// the client application certificate of a secured channel, or the peer's
	// IP address over SecurityPolicy None; never the user name, so that
	// failing as a user on purpose cannot lock that user out of other
	// sources. Default 5; 0 disables the lockout (and logs a warning).
	MaxFailedAuthenticationAttempts int           `koanf:"maxFailedAuthenticationAttempts"`
	FailedAuthenticationWindow      time.Duration `koanf:"failedAuthenticationWindow"`  // default 1m
	FailedAuthenticationLockout     time.Duration `koanf:"failedAuthenticationLockout"` // default 5m
}

// SecurityPolicy is one SecurityPolicy with the MessageSecurityModes offered
// for it (Part 4 §7.15, Part 7 §6.6).
type SecurityPolicy struct {
	// Policy is the policy URI or its short name (the URI fragment, e.g.
	// "Basic256Sha256"). [Load] replaces a short name by the URI.
	Policy string `koanf:"policy"`
	// Modes are "None" (only with Policy None), "Sign" and "SignAndEncrypt".
	Modes []string `koanf:"modes"`
}

// Message security modes (Part 4 §7.20).
const (
	ModeNone           = "None"
	ModeSign           = "Sign"
	ModeSignAndEncrypt = "SignAndEncrypt"
)

// UserTokenPolicy is one accepted identity token type (Part 4 §7.42).
type UserTokenPolicy struct {
	// Type is "anonymous", "username" or "certificate".
	Type string `koanf:"type"`
	// SecurityPolicy, when set, protects the token itself (the encrypted
	// password, the token signature) with this policy, independent of the
	// channel's policy; URI or short name. Empty means the channel's policy.
	SecurityPolicy string `koanf:"securityPolicy"`
}

// User token types.
const (
	TokenAnonymous   = "anonymous"
	TokenUsername    = "username"
	TokenCertificate = "certificate"
)

// User is an account for UserNameIdentityToken logins. Only a password hash
// is stored: bcrypt ($2a$/$2b$/$2y$) or argon2id in PHC form
// ($argon2id$v=19$m=...,t=...,p=...$salt$hash). Make one with [HashPassword].
type User struct {
	Name         string `koanf:"name"`
	PasswordHash string `koanf:"passwordHash" log:"secret"`
	// Roles are well-known roles (Part 3 §4.9) granted on top of AuthenticatedUser,
	// which every user holds: Observer, Operator, Engineer, Supervisor,
	// ConfigureAdmin, SecurityAdmin (see [RoleNames]).
	Roles []string `koanf:"roles"`
}

// Limits size a single node (the .NET stack's ServerConfiguration names).
type Limits struct {
	MaxSessionCount        int `koanf:"maxSessionCount"`        // default 100
	MaxChannelCount        int `koanf:"maxChannelCount"`        // default 1000
	MaxRequestThreadCount  int `koanf:"maxRequestThreadCount"`  // default 100
	MinRequestThreadCount  int `koanf:"minRequestThreadCount"`  // default 10
	MaxQueuedRequestCount  int `koanf:"maxQueuedRequestCount"`  // default 200
	MaxSubscriptionCount   int `koanf:"maxSubscriptionCount"`   // default 1000
	MaxPublishRequestCount int `koanf:"maxPublishRequestCount"` // per session; default 20
	// MaxMonitoredItemCount caps monitored items in the server and
	// MaxMonitoredItemsPerSubscription in one subscription; 0 is no limit
	// (logged as a warning). Defaults 100000 and 10000.
	MaxMonitoredItemCount            int `koanf:"maxMonitoredItemCount"`
	MaxMonitoredItemsPerSubscription int `koanf:"maxMonitoredItemsPerSubscription"`
	MaxBrowseContinuationPoints      int `koanf:"maxBrowseContinuationPoints"` // per session; default 10
	// Session timeouts the server revises a client's request into
	// (Part 4 §5.6.2). Defaults 10s and 1h.
	MinSessionTimeout time.Duration `koanf:"minSessionTimeout"`
	MaxSessionTimeout time.Duration `koanf:"maxSessionTimeout"`
	// SecurityToken lifetimes the server revises a client's request into
	// (Part 4 §5.5.2). Defaults 10s and 1h.
	MinTokenLifetime time.Duration `koanf:"minTokenLifetime"`
	MaxTokenLifetime time.Duration `koanf:"maxTokenLifetime"`

	// Shares of the session table and the subscription engine (issue 18).
	// UnactivatedSessionTimeout ends a session that is not activated this long
	// after CreateSession, whatever its session timeout; a full table also gives
	// up its oldest unactivated session before it refuses a new one
	// (BadTooManySessions). 0 leaves such sessions to their session timeout.
	// Default 10s.
	UnactivatedSessionTimeout time.Duration `koanf:"unactivatedSessionTimeout"`
	// OwnerShare is the largest part of maxSessionCount, maxSubscriptionCount and
	// maxMonitoredItemCount that one owner may hold (BadTooManySessions,
	// BadTooManySubscriptions, BadTooManyMonitoredItems beyond it), at least one
	// of each. An owner is the client application of a signed channel (its
	// certificate's ApplicationUri), otherwise the session, and before activation
	// the channel. From above 0 to 1; 1 turns the shares off. Default 0.5.
	// isolationProfile SharedOnly turns them off too, whatever this says.
	OwnerShare float64 `koanf:"ownerShare"`
	// Transport deadlines and the reassembly budget (issue 18, deadlines).
	// HandshakeTimeout bounds each step of opening a channel: the Hello after
	// the TCP connection, the whole OpenSecureChannel after the Acknowledge
	// (Part 6 §7.1.3). Default 10s.
	HandshakeTimeout time.Duration `koanf:"handshakeTimeout"`
	// ChunkTimeout bounds the reading of one chunk from its first byte; a
	// connection idle between messages is not affected. AssemblyTimeout
	// bounds a request of several chunks from its first chunk to its last.
	// WriteTimeout bounds how long a write to a client waits while the client
	// takes none of it (up to twice as long). Each ends the connection
	// with Bad_Timeout; 0 is no bound (logged as a warning). Defaults 30s, 1m
	// and 30s.
	ChunkTimeout    time.Duration `koanf:"chunkTimeout"`
	AssemblyTimeout time.Duration `koanf:"assemblyTimeout"`
	WriteTimeout    time.Duration `koanf:"writeTimeout"`
	// MaxRetainedBytes bounds the bytes all channels hold in requests of
	// several chunks not yet whole; MaxRetainedBytesPerChannel is one
	// channel's share of it, and so also the largest request the server
	// accepts (the smaller of it and encoding.maxMessageSize, offered to
	// clients as MaxMessageSize). Defaults 256 MiB and 8 MiB: sixteen
	// channels that never finish their requests hold at most half.
	// isolationProfile SharedOnly keeps no share, whatever
	// maxRetainedBytesPerChannel says: a channel may hold the whole budget,
	// and the largest request is the smaller of maxRetainedBytes and
	// encoding.maxMessageSize.
	MaxRetainedBytes           int `koanf:"maxRetainedBytes"`
	MaxRetainedBytesPerChannel int `koanf:"maxRetainedBytesPerChannel"`
	// Admission and isolation (issue 18): who may connect, establish a session or
	// queue a request, and how clients share each stage.
	//
	// IsolationProfile is SharedOnly, FairShare, Balanced (the default) or
	// TrustedReservations (the OPC Foundation .NET stack's profiles; see
	// internal/admission/RATIONALE.md for what each does at each stage).
	// SharedOnly has no per-owner shares anywhere: it overrides ownerShare,
	// maxRetainedBytesPerChannel and maxConnectionsPerSource, set or not (a
	// profile says how clients share the server; a client of its own share is
	// what the other profiles are for). Warned about at start-up.
	IsolationProfile string `koanf:"isolationProfile"`
	// ConnectionsPerSecond and ConnectionBurst are the token bucket of new
	// connections at the listener, before any crypto work: beyond it a
	// connection gets ERR BadTcpServerTooBusy. Defaults 500 and 1000 (the .NET
	// stack's); 0 connections per second is no limit.
	ConnectionsPerSecond int `koanf:"connectionsPerSecond"`
	ConnectionBurst      int `koanf:"connectionBurst"`
	// ListenBacklog is the listen(2) backlog of the listener: connections the
	// kernel completes and queues before the server accepts them. Default 0: the
	// kernel's maximum (net.core.somaxconn on Linux), which Go asks for anyway;
	// a positive value is applied on Linux only.
	ListenBacklog int `koanf:"listenBacklog"`
	// MaxConnectionsPerSource caps the connections of one source (an IPv4
	// address, an IPv6 /64); beyond it ERR BadTcpNotEnoughResources. Not with
	// SharedOnly. Default 100; 0 is no cap.
	MaxConnectionsPerSource int `koanf:"maxConnectionsPerSource"`
	// MaxConcurrentSessionEstablishment bounds the CreateSession and
	// ActivateSession requests in progress; beyond it BadServerTooBusy with a
	// RetryAfterMs hint, before any RSA or password work. Default
	// max(128, 8 × GOMAXPROCS), the .NET stack's.
	MaxConcurrentSessionEstablishment int `koanf:"maxConcurrentSessionEstablishment"`
	// MaxConcurrentHandshakes bounds the asymmetric cryptography (RSA) running
	// at once: the OpenSecureChannel requests of policies other than None, and
	// CreateSession and ActivateSession. Default max(1, GOMAXPROCS-1), so that a
	// connect storm always leaves a processor to the established sessions'
	// requests. MaxQueuedHandshakes bounds the new channels' OpenSecureChannel
	// requests waiting for a turn; beyond it ERR BadTcpServerTooBusy. The work
	// that completes what is admitted already (session establishment, token
	// renewals) waits without bound, and goes first. Default 64.
	MaxConcurrentHandshakes int `koanf:"maxConcurrentHandshakes"`
	MaxQueuedHandshakes     int `koanf:"maxQueuedHandshakes"`
	// HandshakeProcessors are added to GOMAXPROCS when the server process starts,
	// so that the handshakes' turns run beside the processors that serve requests
	// and do not take one of them: Go schedules goroutines without priorities, and
	// a request woken while the handshakes hold the processors waits behind them;
	// with processors to spare the kernel shares the cores among the threads and
	// runs the one that wakes soon. Default max(1, GOMAXPROCS-1), as
	// maxConcurrentHandshakes; 0 adds none.
	HandshakeProcessors int `koanf:"handshakeProcessors"`
	// MaxParkedRequestCount bounds the requests handed to node managers and not
	// yet answered (queued, running or parked in a manager); beyond it
	// BadServerTooBusy. Default 1000.
	MaxParkedRequestCount int `koanf:"maxParkedRequestCount"`
	// UserNameLoginsPerMinute and UserNameLoginBurst meter the UserName logins
	// of one source, before the password is decrypted and hashed: beyond them
	// BadServerTooBusy with a RetryAfterMs hint. On top of the lockout
	// (security.maxFailedAuthenticationAttempts). Defaults 120 and 10; 0 per
	// minute does not meter.
	UserNameLoginsPerMinute int `koanf:"userNameLoginsPerMinute"`
	UserNameLoginBurst      int `koanf:"userNameLoginBurst"`
	// MaxTrackedOwners bounds the clients each stage tracks at once; a new one
	// beyond it is refused (OwnerTableFull). Default 4096.
	MaxTrackedOwners int `koanf:"maxTrackedOwners"`
	// TrustedOwners get reserved capacity at every stage and more turns in the
	// request queue (isolationProfile TrustedReservations only).
	TrustedOwners []TrustedOwner `koanf:"trustedOwners"`
}

// TrustedOwner is a client given its own reserve and weight by
// limits.trustedOwners. Exactly one of ApplicationURI, Thumbprint and Address
// names it; a certificate names it once the secure channel has verified it.
type TrustedOwner struct {
	// Name names the owner in logs.
	Name string `koanf:"name"`
	// ApplicationURI matches the URI in the client certificate.
	ApplicationURI string `koanf:"applicationUri"`
	// Thumbprint matches the client certificate: its SHA-1, 40 hex digits.
	Thumbprint string `koanf:"thumbprint"`
	// Address matches the peer's IP address: an address or a CIDR network.
	Address string `koanf:"address"`
	// Weight is the owner's turns in the request queue for an ordinary
	// client's one. Default 1.
	Weight int `koanf:"weight"`
	// Reserved is the owner's reserve at each stage. Default 1.
	Reserved int `koanf:"reserved"`
}

// OperationLimits are published in ServerCapabilities.OperationLimits
// (Part 5 §6.3.11) and enforced per request. Every default is 2500.
type OperationLimits struct {
	MaxNodesPerRead                          int `koanf:"maxNodesPerRead"`
	MaxNodesPerWrite                         int `koanf:"maxNodesPerWrite"`
	MaxNodesPerBrowse                        int `koanf:"maxNodesPerBrowse"`
	MaxNodesPerMethodCall                    int `koanf:"maxNodesPerMethodCall"`
	MaxNodesPerTranslateBrowsePathsToNodeIds int `koanf:"maxNodesPerTranslateBrowsePathsToNodeIds"`
	MaxNodesPerRegisterNodes                 int `koanf:"maxNodesPerRegisterNodes"`
	MaxMonitoredItemsPerCall                 int `koanf:"maxMonitoredItemsPerCall"`
}

// Encoding bounds what the decoder and the transport accept (Part 6 §5.2.2,
// §7.1.2.3). They are checked before anything is allocated.
type Encoding struct {
	MaxStringLength     int `koanf:"maxStringLength"`     // bytes; default 1 MiB
	MaxByteStringLength int `koanf:"maxByteStringLength"` // bytes; default 16 MiB
	MaxArrayLength      int `koanf:"maxArrayLength"`      // elements; default 1048576
	MaxMessageSize      int `koanf:"maxMessageSize"`      // bytes; default 16 MiB
	MaxChunkCount       int `koanf:"maxChunkCount"`       // default 1024
	ReceiveBufferSize   int `koanf:"receiveBufferSize"`   // bytes, at least 8192; default 65535
	SendBufferSize      int `koanf:"sendBufferSize"`      // bytes, at least 8192; default 65535

	// Decode budget (admission control): the memory a request may take once decoded.
	MaxDecodeMultiple int `koanf:"maxDecodeMultiple"` // bytes in memory per byte on the wire, at least 1; default 12
}

// AddressSpace selects the node managers.
type AddressSpace struct {
	// DemoNamespace mounts the built-in demo node manager. Default true.
	DemoNamespace bool `koanf:"demoNamespace"`
	// NodeManagers are mounted in order; names and namespace URIs are
	// unique. Each is built by the node-manager kind of its Type; an entry of
	// a type this build has no kind for, or one that cannot start (a missing
	// file, a module that does not speak the ABI), stops the start with an
	// error that names the setting and the file.
	NodeManagers []NodeManager `koanf:"nodeManagers"`
	// Simulation adds changing Double variables to the demo namespace, the
	// load of the notification benchmark (bench/cmd/notify).
	Simulation Simulation `koanf:"simulation"`

	// Nodesets are UANodeSet XML files (companion specifications, a plant's
	// model) loaded in order into the address space at start; each file's
	// required models must come before it. A file that does not load stops
	// the start with its file and line named.
	Nodesets []string `koanf:"nodesets"`
}

// Simulation is Count Double variables under Demo/Simulation/Load (NodeIds
// "Demo.Simulation.Load.<i>", i from 0) that all change every Interval,
// pushed to their monitored items like a Write. Needs demoNamespace.
type Simulation struct {
	Count    int           `koanf:"count"`    // default 0: none
	Interval time.Duration `koanf:"interval"` // default 1s
	// Historizing has the variables keep their history (history.*). Default false.
	Historizing bool `koanf:"historizing"`
}

// NodeManager is one node manager to mount. Name names it in logs, errors
// and metrics.
type NodeManager struct {
	Name string `koanf:"name"`
	// Type is "builtin" (compiled in, chosen by Name), "wasm" (a WASM module
	// at Path, run in the server's process by wazero) or "process" (a plugin
	// executable at Path, run as a process of its own by go-plugin).
	Type string `koanf:"type"`
	// NamespaceURI is the namespace the manager serves; a wasm or process
	// plugin is told it and serves it.
	NamespaceURI string `koanf:"namespaceUri"`
	Path         string `koanf:"path"`
	// Args are the command-line arguments of a process plugin.
	Args []string `koanf:"args"`
	// Options are handed to the plugin as JSON; their meaning is the
	// plugin's.
	Options map[string]any `koanf:"options"`
	// MaxOutstanding bounds the operations queued for or in flight at a wasm
	// or process plugin; past it, further items are answered at once with
	// BadResourceUnavailable. Default 256.
	MaxOutstanding int `koanf:"maxOutstanding"`
	// Instances is the number of instances of a wasm module, which answer
	// in parallel; each holds its own state. Default 1.
	Instances int `koanf:"instances"`
	// MemoryLimitMiB bounds the memory of each instance of a wasm module.
	// Default 64.
	MemoryLimitMiB int `koanf:"memoryLimitMiB"`
	// Grants are what a wasm module may see beyond its own memory; by
	// default nothing: no file system, environment or network.
	Grants Grants `koanf:"grants"`
	// NoReload keeps a wasm or process plugin running when its file is
	// replaced; by default the plugin is reloaded from the new file, and the
	// sessions and subscriptions that use it stay.
	NoReload bool `koanf:"noReload"`
}

// Grants are what a wasm module may see of the host.
type Grants struct {
	// Env names environment variables of the server the module sees.
	Env []string `koanf:"env"`
	// Dirs maps a path in the module to a directory of the host it may
	// read (not write).
	Dirs map[string]string `koanf:"dirs"`
}

// Node manager types.
const (
	NodeManagerBuiltin = "builtin"
	NodeManagerWasm    = "wasm"
	NodeManagerProcess = "process"
)

// Discovery is registration with a discovery server (Part 12 §6.3).
type Discovery struct {
	// DiscoveryURL of the LDS to register with; empty disables
	// registration (the default).
	DiscoveryURL     string        `koanf:"discoveryUrl"`
	RegisterInterval time.Duration `koanf:"registerInterval"` // default 30s
}

// Observability is logging, metrics and the OPC UA diagnostics nodes.
type Observability struct {
	// DiagnosticsEnabled maintains the ServerDiagnostics, session and
	// subscription diagnostics nodes. Default true.
	DiagnosticsEnabled bool `koanf:"diagnosticsEnabled"`
	// MetricsAddr is the HTTP address serving /metrics (Prometheus text
	// format) and the Go profiler (/debug/pprof/); empty disables both (the
	// default). Keep it on loopback: the profiler shows the server's internals.
	MetricsAddr string `koanf:"metricsAddr"`
	LogLevel    string `koanf:"logLevel"`  // debug, info (default), warn, error
	LogFormat   string `koanf:"logFormat"` // text (default) or json

	// Metrics (issue 18, visible). ServiceLatency keeps the histogram of each
	// service's answer times (opcua_server_service_duration_seconds): one
	// monotonic clock reading per answer. OTLP pushes the metrics of /metrics.
	ServiceLatency bool `koanf:"serviceLatency"` // default true
	OTLP           OTLP `koanf:"otlp"`
}

// OTLP pushes the server's metrics to an OpenTelemetry collector over OTLP/HTTP
// (protobuf). Headers, timeout and TLS files come from the standard
// OTEL_EXPORTER_OTLP_* environment variables.
type OTLP struct {
	// Endpoint is the collector's http:// or https:// URL, e.g.
	// http://127.0.0.1:4318 (a URL without a path is sent to /v1/metrics).
	Endpoint string `koanf:"endpoint"` // default "" (no push)
	// Interval is the time between two pushes.
	Interval time.Duration `koanf:"interval"` // default 60s
}

// Redundancy is how the server presents itself to the clients of a redundant set
// (Part 4 §6.6.2): its ServiceLevel and its drain on shutdown. The set itself
// (RedundancySupport, ServerUriArray) is told to the server at run time by the mirror.
type Redundancy struct {
	// ServiceLevelInterval is how often the ServiceLevel (Part 5 §6.3.34) is
	// recomputed from the server's health and load: sessions, subscriptions,
	// monitored items and queued requests against their limits, and the
	// process's CPU. 0 leaves the load out: the ServiceLevel follows the health
	// alone (255 while healthy). Default 1s.
	ServiceLevelInterval time.Duration `koanf:"serviceLevelInterval"`
	// DrainTimeout bounds the drain of a server of a redundant set when it is
	// told to stop (SIGINT, SIGTERM): its ServiceLevel goes to 0 (Maintenance)
	// and it waits for its sessions to leave for this long at most, then stops.
	// 0 stops at once, as a server that is not in a set always does. Default
	// 10s.
	DrainTimeout time.Duration `koanf:"drainTimeout"`
}

// Default returns the built-in defaults. They are valid: Default().Validate()
// is nil. The host name comes from os.Hostname ("localhost" when unknown).
func Default() *Config {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return &Config{
		Application: Application{
			ApplicationURI:  "urn:" + host + ":uastack:server",
			ApplicationName: "uastack server",
			ProductURI:      "urn:uastack.dev:server",
		},
		Endpoint: Endpoint{
			EndpointURL:   "opc.tcp://" + host + ":4840",
			ListenAddress: ":4840",
			Hostnames:     []string{host},
		},
		Security: Security{
			PKIDir: defaultPKIDir(),
			SecurityPolicies: []SecurityPolicy{
				{Policy: policy.URINone, Modes: []string{ModeNone}},
				{Policy: policy.URIBasic256Sha256, Modes: []string{ModeSign, ModeSignAndEncrypt}},
				{Policy: policy.URIAes256Sha256RsaPss, Modes: []string{ModeSign, ModeSignAndEncrypt}},
			},
			UserTokenPolicies: []UserTokenPolicy{
				{Type: TokenAnonymous},
				// The password is encrypted with Basic256Sha256 even on a None channel.
				{Type: TokenUsername, SecurityPolicy: policy.URIBasic256Sha256},
				// So is the token signature: on None there is no channel policy to sign with.
				{Type: TokenCertificate, SecurityPolicy: policy.URIBasic256Sha256},
			},
			MaxFailedAuthenticationAttempts: 5,
			FailedAuthenticationWindow:      time.Minute,
			FailedAuthenticationLockout:     5 * time.Minute,
		},
		Limits: Limits{
			MaxSessionCount:                  100,
			MaxChannelCount:                  1000,
			MaxRequestThreadCount:            100,
			MinRequestThreadCount:            10,
			MaxQueuedRequestCount:            200,
			MaxSubscriptionCount:             1000,
			MaxPublishRequestCount:           20,
			MaxMonitoredItemCount:            100000,
			MaxMonitoredItemsPerSubscription: 10000,
			MaxBrowseContinuationPoints:      10,
			MinSessionTimeout:                10 * time.Second,
			MaxSessionTimeout:                time.Hour,
			MinTokenLifetime:                 10 * time.Second,
			MaxTokenLifetime:                 time.Hour,
			UnactivatedSessionTimeout:        10 * time.Second,
			OwnerShare:                       0.5,
			// transport deadlines and the reassembly budget
			HandshakeTimeout:           10 * time.Second,
			ChunkTimeout:               30 * time.Second,
			AssemblyTimeout:            time.Minute,
			WriteTimeout:               30 * time.Second,
			MaxRetainedBytes:           256 << 20,
			MaxRetainedBytesPerChannel: 8 << 20,

			IsolationProfile:                  "Balanced",
			ConnectionsPerSecond:              500,
			ConnectionBurst:                   1000,
			MaxConnectionsPerSource:           100,
			MaxConcurrentSessionEstablishment: max(128, 8*runtime.GOMAXPROCS(0)),
			MaxConcurrentHandshakes:           max(1, runtime.GOMAXPROCS(0)-1),
			MaxQueuedHandshakes:               64,
			HandshakeProcessors:               max(1, runtime.GOMAXPROCS(0)-1),
			MaxParkedRequestCount:             1000,
			UserNameLoginsPerMinute:           120,
			UserNameLoginBurst:                10,
			MaxTrackedOwners:                  4096,
		},
		Subscriptions: defaultSubscriptions(),
		OperationLimits: OperationLimits{
			MaxNodesPerRead:                          2500,
			MaxNodesPerWrite:                         2500,
			MaxNodesPerBrowse:                        2500,
			MaxNodesPerMethodCall:                    2500,
			MaxNodesPerTranslateBrowsePathsToNodeIds: 2500,
			MaxNodesPerRegisterNodes:                 2500,
			MaxMonitoredItemsPerCall:                 2500,
		},
		Encoding: Encoding{
			MaxStringLength:     1 << 20,
			MaxByteStringLength: 16 << 20,
			MaxArrayLength:      1 << 20,
			MaxMessageSize:      16 << 20,
			MaxChunkCount:       1024,
			ReceiveBufferSize:   65535,
			SendBufferSize:      65535,
			MaxDecodeMultiple:   codec.DefaultDecodeMultiple,
		},
		AddressSpace: AddressSpace{DemoNamespace: true, Simulation: Simulation{Interval: time.Second}},
		Discovery:    Discovery{RegisterInterval: 30 * time.Second},
		Mirror:       defaultMirror(),
		History:      defaultHistory(),
		Observability: Observability{
			DiagnosticsEnabled: true,
			LogLevel:           "info",
			LogFormat:          "text",
			ServiceLatency:     true,
			OTLP:               OTLP{Interval: time.Minute},
		},
		Redundancy: Redundancy{ServiceLevelInterval: time.Second, DrainTimeout: 10 * time.Second},
	}
}

func defaultPKIDir() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "pki"
	}
	return filepath.Join(dir, "uastack", "pki")
}
