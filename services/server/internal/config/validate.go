package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"uastack.dev/pkg/transport/policy"
)

// MinBufferSize is the smallest ReceiveBufferSize and SendBufferSize
// (Part 6 §7.1.2.3).
const MinBufferSize = 8192

// PolicyURI returns the URI of a built-in SecurityPolicy given its URI or its
// short name (the URI fragment, e.g. "Basic256Sha256", case-sensitive).
func PolicyURI(nameOrURI string) (string, bool) {
	for _, p := range policy.All() {
		if info := p.Info(); nameOrURI == info.URI || nameOrURI == info.Name {
			return info.URI, true
		}
	}
	return "", false
}

func policyInfo(nameOrURI string) (policy.Info, bool) {
	uri, ok := PolicyURI(nameOrURI)
	if !ok {
		return policy.Info{}, false
	}
	p, _ := policy.Lookup(uri)
	return p.Info(), true
}

func knownPolicies() string {
	var names []string
	for _, p := range policy.All() {
		names = append(names, p.Info().Name)
	}
	return strings.Join(names, ", ")
}

// problems collects validation errors, each naming its setting.
type problems []error

func (ps *problems) add(key, format string, args ...any) {
	*ps = append(*ps, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
}

func (ps *problems) atLeast(key string, v, min int) {
	if v < min {
		ps.add(key, "must be at least %d, got %d", min, v)
	}
}

func (ps *problems) uint32Range(key string, v, min int) {
	ps.atLeast(key, v, min)
	if v > math.MaxUint32 {
		ps.add(key, "must be at most %d, got %d", uint64(math.MaxUint32), v)
	}
}

func (ps *problems) positive(key string, d time.Duration) {
	if d <= 0 {
		ps.add(key, "must be positive, got %s", d)
	}
}

func (ps *problems) notNegative(key string, d time.Duration) {
	if d < 0 {
		ps.add(key, "must be 0 (off) or positive, got %s", d)
	}
}

func (ps *problems) notAbove(minKey string, min time.Duration, maxKey string, max time.Duration) {
	if min > 0 && max > 0 && min > max {
		ps.add(minKey, "must not exceed %s (%s), got %s", maxKey, max, min)
	}
}

func (ps *problems) oneOf(key, v string, allowed ...string) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	ps.add(key, "unknown value %q; allowed: %s", v, strings.Join(allowed, ", "))
}

// Validate checks every setting and returns all problems at once
// (errors.Join), each starting with the key of the setting and saying what is
// allowed, e.g. "limits.maxSessionCount: must be at least 1, got 0".
func (c *Config) Validate() error {
	var ps problems

	// application
	if c.Application.ApplicationURI == "" {
		ps.add("application.applicationUri", "must not be empty")
	} else if u, err := url.Parse(c.Application.ApplicationURI); err != nil || u.Scheme == "" {
		ps.add("application.applicationUri", "must be an absolute URI such as urn:host:company:product, got %q", c.Application.ApplicationURI)
	}
	if strings.TrimSpace(c.Application.ApplicationName) == "" {
		ps.add("application.applicationName", "must not be empty")
	}

	// endpoint
	if u, err := url.Parse(c.Endpoint.EndpointURL); err != nil || u.Scheme != "opc.tcp" || u.Hostname() == "" {
		ps.add("endpoint.endpointUrl", "must be an opc.tcp://host:port URL, got %q", c.Endpoint.EndpointURL)
	}
	checkHostPort(&ps, "endpoint.listenAddress", c.Endpoint.ListenAddress)
	if len(c.Endpoint.Hostnames) == 0 {
		ps.add("endpoint.hostnames", "must list at least one host name for the certificate")
	}
	for i, h := range c.Endpoint.Hostnames {
		if strings.TrimSpace(h) == "" || strings.ContainsAny(h, " /:") && net.ParseIP(h) == nil {
			ps.add(fmt.Sprintf("endpoint.hostnames[%d]", i), "must be a DNS name or an IP address, got %q", h)
		}
	}

	c.validateSecurity(&ps)
	c.validateSubscriptions(&ps)
	c.validateMirror(&ps)
	c.validateHistory(&ps)

	// limits
	l := c.Limits
	ps.atLeast("limits.maxSessionCount", l.MaxSessionCount, 1)
	ps.atLeast("limits.maxChannelCount", l.MaxChannelCount, 1)
	ps.atLeast("limits.maxRequestThreadCount", l.MaxRequestThreadCount, 1)
	ps.atLeast("limits.minRequestThreadCount", l.MinRequestThreadCount, 1)
	if l.MinRequestThreadCount > l.MaxRequestThreadCount && l.MaxRequestThreadCount >= 1 {
		ps.add("limits.minRequestThreadCount", "must not exceed limits.maxRequestThreadCount (%d), got %d", l.MaxRequestThreadCount, l.MinRequestThreadCount)
	}
	ps.atLeast("limits.maxQueuedRequestCount", l.MaxQueuedRequestCount, 1)
	ps.atLeast("limits.maxSubscriptionCount", l.MaxSubscriptionCount, 1)
	ps.atLeast("limits.maxPublishRequestCount", l.MaxPublishRequestCount, 1)
	ps.atLeast("limits.maxMonitoredItemCount", l.MaxMonitoredItemCount, 0)
	ps.atLeast("limits.maxMonitoredItemsPerSubscription", l.MaxMonitoredItemsPerSubscription, 0)
	ps.atLeast("limits.maxBrowseContinuationPoints", l.MaxBrowseContinuationPoints, 1)
	ps.positive("limits.minSessionTimeout", l.MinSessionTimeout)
	ps.positive("limits.maxSessionTimeout", l.MaxSessionTimeout)
	ps.notAbove("limits.minSessionTimeout", l.MinSessionTimeout, "limits.maxSessionTimeout", l.MaxSessionTimeout)
	ps.positive("limits.minTokenLifetime", l.MinTokenLifetime)
	ps.positive("limits.maxTokenLifetime", l.MaxTokenLifetime)
	ps.notAbove("limits.minTokenLifetime", l.MinTokenLifetime, "limits.maxTokenLifetime", l.MaxTokenLifetime)
	ps.notNegative("limits.unactivatedSessionTimeout", l.UnactivatedSessionTimeout)
	if !(l.OwnerShare > 0 && l.OwnerShare <= 1) {
		ps.add("limits.ownerShare", "must be above 0 and at most 1 (no shares), got %v", l.OwnerShare)
	}
	// transport deadlines and the reassembly budget
	ps.positive("limits.handshakeTimeout", l.HandshakeTimeout)
	ps.notNegative("limits.chunkTimeout", l.ChunkTimeout)
	ps.notNegative("limits.assemblyTimeout", l.AssemblyTimeout)
	ps.notNegative("limits.writeTimeout", l.WriteTimeout)
	ps.atLeast("limits.maxRetainedBytes", l.MaxRetainedBytes, MinBufferSize)
	ps.atLeast("limits.maxRetainedBytesPerChannel", l.MaxRetainedBytesPerChannel, MinBufferSize)
	if l.MaxRetainedBytesPerChannel > l.MaxRetainedBytes && l.MaxRetainedBytes >= MinBufferSize {
		ps.add("limits.maxRetainedBytesPerChannel", "must not exceed limits.maxRetainedBytes (%d), got %d", l.MaxRetainedBytes, l.MaxRetainedBytesPerChannel)
	}
	c.validateAdmission(&ps)

	// operationLimits
	o := c.OperationLimits
	ps.atLeast("operationLimits.maxNodesPerRead", o.MaxNodesPerRead, 1)
	ps.atLeast("operationLimits.maxNodesPerWrite", o.MaxNodesPerWrite, 1)
	ps.atLeast("operationLimits.maxNodesPerBrowse", o.MaxNodesPerBrowse, 1)
	ps.atLeast("operationLimits.maxNodesPerMethodCall", o.MaxNodesPerMethodCall, 1)
	ps.atLeast("operationLimits.maxNodesPerTranslateBrowsePathsToNodeIds", o.MaxNodesPerTranslateBrowsePathsToNodeIds, 1)
	ps.atLeast("operationLimits.maxNodesPerRegisterNodes", o.MaxNodesPerRegisterNodes, 1)
	ps.atLeast("operationLimits.maxMonitoredItemsPerCall", o.MaxMonitoredItemsPerCall, 1)

	// encoding
	e := c.Encoding
	ps.uint32Range("encoding.maxStringLength", e.MaxStringLength, 1)
	ps.uint32Range("encoding.maxByteStringLength", e.MaxByteStringLength, 1)
	ps.uint32Range("encoding.maxArrayLength", e.MaxArrayLength, 1)
	ps.uint32Range("encoding.maxMessageSize", e.MaxMessageSize, MinBufferSize)
	ps.uint32Range("encoding.maxChunkCount", e.MaxChunkCount, 1)
	ps.uint32Range("encoding.receiveBufferSize", e.ReceiveBufferSize, MinBufferSize)
	ps.uint32Range("encoding.sendBufferSize", e.SendBufferSize, MinBufferSize)
	ps.atLeast("encoding.maxDecodeMultiple", e.MaxDecodeMultiple, 1)

	// addressSpace
	if sim := c.AddressSpace.Simulation; sim.Count < 0 || sim.Count > 0 && !c.AddressSpace.DemoNamespace {
		ps.add("addressSpace.simulation.count", "must be 0, or positive with addressSpace.demoNamespace on")
	} else if sim.Count > 0 && sim.Interval < time.Millisecond {
		ps.add("addressSpace.simulation.interval", "must be at least 1ms")
	}
	for i, f := range c.AddressSpace.Nodesets {
		if f == "" {
			ps.add(fmt.Sprintf("addressSpace.nodesets[%d]", i), "must name a UANodeSet XML file")
		}
	}
	names := map[string]int{}
	uris := map[string]int{}
	for i, nm := range c.AddressSpace.NodeManagers {
		key := fmt.Sprintf("addressSpace.nodeManagers[%d]", i)
		if nm.Name == "" {
			ps.add(key+".name", "must not be empty")
		} else if j, dup := names[nm.Name]; dup {
			ps.add(key+".name", "%q already used by addressSpace.nodeManagers[%d]", nm.Name, j)
		} else {
			names[nm.Name] = i
		}
		ps.oneOf(key+".type", nm.Type, NodeManagerBuiltin, NodeManagerWasm, NodeManagerProcess)
		if (nm.Type == NodeManagerWasm || nm.Type == NodeManagerProcess) && nm.Path == "" {
			ps.add(key+".path", "must name the %s file", nm.Type)
		}
		if nm.MaxOutstanding < 0 {
			ps.add(key+".maxOutstanding", "must be 0 (the default) or positive")
		}
		if nm.Instances < 0 || nm.Instances > 64 {
			ps.add(key+".instances", "must be 0 (the default) to 64")
		}
		if nm.MemoryLimitMiB < 0 || nm.MemoryLimitMiB > 4096 {
			ps.add(key+".memoryLimitMiB", "must be 0 (the default) to 4096")
		}
		if nm.NamespaceURI == "" {
			if nm.Type != NodeManagerBuiltin {
				ps.add(key+".namespaceUri", "must not be empty")
			}
		} else if j, dup := uris[nm.NamespaceURI]; dup {
			ps.add(key+".namespaceUri", "%q already used by addressSpace.nodeManagers[%d]", nm.NamespaceURI, j)
		} else {
			uris[nm.NamespaceURI] = i
		}
	}

	// discovery
	if d := c.Discovery.DiscoveryURL; d != "" {
		if u, err := url.Parse(d); err != nil || u.Scheme != "opc.tcp" || u.Hostname() == "" {
			ps.add("discovery.discoveryUrl", "must be empty (no registration) or an opc.tcp://host:port URL, got %q", d)
		}
	}
	ps.positive("discovery.registerInterval", c.Discovery.RegisterInterval)

	// observability
	if c.Observability.MetricsAddr != "" {
		checkHostPort(&ps, "observability.metricsAddr", c.Observability.MetricsAddr)
	}
	ps.oneOf("observability.logLevel", c.Observability.LogLevel, "debug", "info", "warn", "error")
	ps.oneOf("observability.logFormat", c.Observability.LogFormat, "text", "json")
	if o := c.Observability.OTLP; o.Endpoint != "" {
		if u, err := url.Parse(o.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			ps.add("observability.otlp.endpoint", "must be empty (no push) or an http:// or https:// URL, got %q", o.Endpoint)
		}
	}
	if i := c.Observability.OTLP.Interval; i < time.Second {
		ps.add("observability.otlp.interval", "must be at least 1s, got %s", i)
	}

	// redundancy
	if i := c.Redundancy.ServiceLevelInterval; i != 0 && i < time.Millisecond {
		ps.add("redundancy.serviceLevelInterval", "must be 0 (no load) or at least 1ms, got %s", i)
	}
	ps.notNegative("redundancy.drainTimeout", c.Redundancy.DrainTimeout)

	return errors.Join(ps...)
}

func checkHostPort(ps *problems, key, addr string) {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		ps.add(key, "must be host:port or :port with a port from 0 to 65535, got %q", addr)
	}
}

func (c *Config) validateSecurity(ps *problems) {
	s := c.Security
	if s.PKIDir == "" {
		ps.add("security.pkiDir", "must not be empty")
	}
	if len(s.SecurityPolicies) == 0 {
		ps.add("security.securityPolicies", "must list at least one policy; known: %s", knownPolicies())
	}
	seen := map[string]int{}
	for i, sp := range s.SecurityPolicies {
		key := fmt.Sprintf("security.securityPolicies[%d]", i)
		info, ok := policyInfo(sp.Policy)
		if !ok {
			ps.add(key+".policy", "unknown policy %q; known: %s (or their URIs)", sp.Policy, knownPolicies())
		} else if j, dup := seen[info.URI]; dup {
			ps.add(key+".policy", "%s already listed in security.securityPolicies[%d]; list its modes there", info.Name, j)
		} else {
			seen[info.URI] = i
		}
		if len(sp.Modes) == 0 {
			ps.add(key+".modes", "must list at least one of None, Sign, SignAndEncrypt")
		}
		modes := map[string]bool{}
		for k, m := range sp.Modes {
			mkey := fmt.Sprintf("%s.modes[%d]", key, k)
			switch {
			case m != ModeNone && m != ModeSign && m != ModeSignAndEncrypt:
				ps.add(mkey, "unknown mode %q; allowed: None, Sign, SignAndEncrypt", m)
			case modes[m]:
				ps.add(mkey, "mode %s listed twice", m)
			case ok && info.URI == policy.URINone && m != ModeNone:
				ps.add(mkey, "policy None allows only mode None, got %q", m)
			case ok && info.URI != policy.URINone && m == ModeNone:
				ps.add(mkey, "mode None needs policy None, not %s", info.Name)
			}
			modes[m] = true
		}
	}

	if len(s.UserTokenPolicies) == 0 {
		ps.add("security.userTokenPolicies", "must list at least one of anonymous, username, certificate")
	}
	tokens := map[[2]string]int{}
	for i, tp := range s.UserTokenPolicies {
		key := fmt.Sprintf("security.userTokenPolicies[%d]", i)
		ps.oneOf(key+".type", tp.Type, TokenAnonymous, TokenUsername, TokenCertificate)
		uri := tp.SecurityPolicy
		if tp.SecurityPolicy != "" {
			var ok bool
			if uri, ok = PolicyURI(tp.SecurityPolicy); !ok {
				ps.add(key+".securityPolicy", "unknown policy %q; known: %s (or their URIs), or empty for the channel's policy", tp.SecurityPolicy, knownPolicies())
			}
		}
		id := [2]string{tp.Type, uri}
		if j, dup := tokens[id]; dup {
			ps.add(key, "same type and securityPolicy as security.userTokenPolicies[%d]", j)
		} else {
			tokens[id] = i
		}
	}

	users := map[string]int{}
	for i, u := range s.Users {
		key := fmt.Sprintf("security.users[%d]", i)
		if u.Name == "" {
			ps.add(key+".name", "must not be empty")
		} else if j, dup := users[u.Name]; dup {
			ps.add(key+".name", "%q already used by security.users[%d]", u.Name, j)
		} else {
			users[u.Name] = i
		}
		if err := ValidPasswordHash(u.PasswordHash); err != nil {
			ps.add(key+".passwordHash", "%v", err)
		}
		for j, r := range u.Roles {
			if _, ok := RoleID(r); !ok {
				ps.add(fmt.Sprintf("%s.roles[%d]", key, j), "unknown role %q; allowed: %s", r, strings.Join(RoleNames(), ", "))
			}
		}
	}

	ps.atLeast("security.maxFailedAuthenticationAttempts", s.MaxFailedAuthenticationAttempts, 0)
	if s.MaxFailedAuthenticationAttempts > 0 {
		ps.positive("security.failedAuthenticationWindow", s.FailedAuthenticationWindow)
		ps.positive("security.failedAuthenticationLockout", s.FailedAuthenticationLockout)
	}
}

// Warning is a setting that is valid but weakens security or robustness.
type Warning struct {
	Key     string // the setting, e.g. "security.autoAcceptUntrusted"
	Message string
}

// Warnings lists the insecure or risky settings of c, in a fixed order. The
// defaults produce two: SecurityPolicy None and anonymous logins.
func (c *Config) Warnings() []Warning {
	var ws []Warning
	warn := func(key, format string, args ...any) {
		ws = append(ws, Warning{Key: key, Message: fmt.Sprintf(format, args...)})
	}
	s := c.Security
	noneOffered := false
	for i, sp := range s.SecurityPolicies {
		info, ok := policyInfo(sp.Policy)
		switch {
		case !ok:
		case info.URI == policy.URINone:
			noneOffered = true
			warn(fmt.Sprintf("security.securityPolicies[%d]", i), "SecurityPolicy None is offered: messages on that endpoint are neither signed nor encrypted; remove it unless every client is on a trusted network")
		case info.Deprecated:
			warn(fmt.Sprintf("security.securityPolicies[%d]", i), "SecurityPolicy %s is deprecated (Part 7) and considered broken; prefer Basic256Sha256 or Aes256_Sha256_RsaPss", info.Name)
		}
	}
	usernames := false
	for i, tp := range s.UserTokenPolicies {
		key := fmt.Sprintf("security.userTokenPolicies[%d]", i)
		switch tp.Type {
		case TokenAnonymous:
			warn(key, "anonymous logins are accepted: any client that can connect gets the anonymous user's access")
		case TokenUsername:
			uri, _ := PolicyURI(tp.SecurityPolicy)
			if uri == policy.URINone || tp.SecurityPolicy == "" && noneOffered {
				warn(key+".securityPolicy", "passwords can cross the network in clear text: set a securityPolicy for the username token or remove SecurityPolicy None")
			}
			usernames = true
		}
	}
	if usernames && len(s.Users) == 0 {
		warn("security.users", "username tokens are accepted but no users are configured; every username login fails")
	}
	if s.AutoAcceptUntrusted {
		warn("security.autoAcceptUntrusted", "every untrusted client certificate is accepted; any client can open a signed or encrypted channel")
	}
	if s.MaxFailedAuthenticationAttempts == 0 {
		warn("security.maxFailedAuthenticationAttempts", "0 disables the lockout after failed logins; passwords can be guessed without limit")
	}
	if c.Limits.MaxMonitoredItemCount == 0 {
		warn("limits.maxMonitoredItemCount", "0 is no limit: a client can exhaust the server's memory with monitored items")
	}
	if c.Limits.MaxMonitoredItemsPerSubscription == 0 {
		warn("limits.maxMonitoredItemsPerSubscription", "0 is no limit: one subscription can hold every monitored item the server allows")
	}
	if c.Limits.UnactivatedSessionTimeout == 0 {
		warn("limits.unactivatedSessionTimeout", "0 keeps a session nobody activates until its session timeout: one client can hold the session table with CreateSession alone")
	}
	if c.Limits.OwnerShare == 1 {
		warn("limits.ownerShare", "1 is no per-owner share: one client can take every session, subscription and monitored item the server allows")
	}
	if c.Limits.SharedOnly() {
		warn("limits.isolationProfile", "SharedOnly keeps no per-owner shares: limits.ownerShare, limits.maxRetainedBytesPerChannel and limits.maxConnectionsPerSource do not apply, and one client can take every session, subscription, monitored item and the whole reassembly budget")
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"limits.chunkTimeout", c.Limits.ChunkTimeout}, {"limits.assemblyTimeout", c.Limits.AssemblyTimeout}, {"limits.writeTimeout", c.Limits.WriteTimeout}} {
		if d.v == 0 {
			warn(d.key, "0 is no bound: a client that stops halfway, or stops reading, holds its connection's memory and goroutine for ever")
		}
	}
	if c.Limits.MaxChannelCount < c.Limits.MaxSessionCount {
		warn("limits.maxChannelCount", "%d is below limits.maxSessionCount (%d); each session needs its own channel", c.Limits.MaxChannelCount, c.Limits.MaxSessionCount)
	}
	return ws
}
