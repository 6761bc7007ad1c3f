package config

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"uastack.dev/services/server/internal/admission"
)

// AdmissionConfig returns the admission policy of c's limits (issue 18), for
// admission.New. c must have passed Validate; now is the server's clock.
func (c *Config) AdmissionConfig(now func() time.Time) admission.Config {
	l := c.Limits
	profile, _ := admission.ParseProfile(l.IsolationProfile)
	ac := admission.Config{
		Profile:                           profile,
		ConnectionsPerSecond:              float64(l.ConnectionsPerSecond),
		ConnectionBurst:                   l.ConnectionBurst,
		MaxChannelCount:                   l.MaxChannelCount,
		MaxConnectionsPerSource:           l.MaxConnectionsPerSource,
		MaxConcurrentSessionEstablishment: l.MaxConcurrentSessionEstablishment,
		MaxQueuedRequestCount:             l.MaxQueuedRequestCount,
		MaxParkedRequestCount:             l.MaxParkedRequestCount,
		PasswordChecksPerSecond:           float64(l.UserNameLoginsPerMinute) / 60,
		PasswordCheckBurst:                l.UserNameLoginBurst,
		MaxTrackedOwners:                  l.MaxTrackedOwners,
		Now:                               now,
	}
	for _, t := range l.TrustedOwners {
		prefix, _ := parseAddress(t.Address)
		ac.Trusted = append(ac.Trusted, admission.TrustedOwner{Name: t.Name, ApplicationURI: t.ApplicationURI,
			Thumbprint: t.Thumbprint, Address: prefix, Weight: t.Weight, Reserved: t.Reserved})
	}
	return ac
}

// SharedOnly reports whether limits.isolationProfile is SharedOnly, which keeps no
// per-owner shares at any stage.
func (l Limits) SharedOnly() bool { return l.IsolationProfile == admission.SharedOnly.String() }

// OwnerShareInForce is the part of the session table, the subscriptions and the
// monitored items that one owner may hold: limits.ownerShare, or 1 (no share) under
// SharedOnly, whatever ownerShare says.
func (l Limits) OwnerShareInForce() float64 {
	if l.SharedOnly() {
		return 1
	}
	return l.OwnerShare
}

// RetainedPerChannelInForce is one channel's share of the reassembly budget:
// limits.maxRetainedBytesPerChannel, or under SharedOnly, whatever that says, the whole
// of limits.maxRetainedBytes.
func (l Limits) RetainedPerChannelInForce() int {
	if l.SharedOnly() {
		return l.MaxRetainedBytes
	}
	return l.MaxRetainedBytesPerChannel
}

// parseAddress parses an IP address or a CIDR network as a prefix; the empty string is
// the zero prefix.
func parseAddress(s string) (netip.Prefix, error) {
	if s == "" {
		return netip.Prefix{}, nil
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// validateAdmission checks the admission and isolation limits, and then that the
// reserves of the profile fit the capacities (admission.New).
func (c *Config) validateAdmission(ps *problems) {
	l := c.Limits
	before := len(*ps)
	ps.oneOf("limits.isolationProfile", l.IsolationProfile, admission.ProfileNames()...)
	ps.atLeast("limits.connectionsPerSecond", l.ConnectionsPerSecond, 0)
	if l.ConnectionsPerSecond > 0 {
		ps.atLeast("limits.connectionBurst", l.ConnectionBurst, 1)
	}
	if l.ListenBacklog < 0 || l.ListenBacklog > 65535 {
		ps.add("limits.listenBacklog", "must be 0 (the kernel's maximum) to 65535, got %d", l.ListenBacklog)
	}
	ps.atLeast("limits.maxConnectionsPerSource", l.MaxConnectionsPerSource, 0)
	ps.atLeast("limits.maxConcurrentSessionEstablishment", l.MaxConcurrentSessionEstablishment, 1)
	ps.atLeast("limits.maxConcurrentHandshakes", l.MaxConcurrentHandshakes, 1)
	ps.atLeast("limits.maxQueuedHandshakes", l.MaxQueuedHandshakes, 0)
	if l.HandshakeProcessors < 0 || l.HandshakeProcessors > 256 {
		ps.add("limits.handshakeProcessors", "must be 0 to 256, got %d", l.HandshakeProcessors)
	}
	ps.atLeast("limits.maxParkedRequestCount", l.MaxParkedRequestCount, 1)
	ps.atLeast("limits.userNameLoginsPerMinute", l.UserNameLoginsPerMinute, 0)
	if l.UserNameLoginsPerMinute > 0 {
		ps.atLeast("limits.userNameLoginBurst", l.UserNameLoginBurst, 1)
	}
	ps.atLeast("limits.maxTrackedOwners", l.MaxTrackedOwners, 1)
	for i, t := range l.TrustedOwners {
		key := fmt.Sprintf("limits.trustedOwners[%d]", i)
		named := 0
		for _, s := range []string{t.ApplicationURI, t.Thumbprint, t.Address} {
			if s != "" {
				named++
			}
		}
		if named != 1 {
			ps.add(key, "must name the owner by exactly one of applicationUri, thumbprint and address")
		}
		if b, err := hex.DecodeString(t.Thumbprint); t.Thumbprint != "" && (err != nil || len(b) != 20) {
			ps.add(key+".thumbprint", "must be a certificate's SHA-1 thumbprint, 40 hex digits, got %q", t.Thumbprint)
		}
		if _, err := parseAddress(t.Address); err != nil {
			ps.add(key+".address", "must be an IP address or a CIDR network such as 10.0.0.0/24, got %q", t.Address)
		}
		if t.Weight < 0 || t.Weight > 100 {
			ps.add(key+".weight", "must be 0 (meaning 1) to 100, got %d", t.Weight)
		}
		if t.Reserved < 0 || t.Reserved > 1000 {
			ps.add(key+".reserved", "must be 0 (meaning 1) to 1000, got %d", t.Reserved)
		}
	}
	if len(*ps) > before || l.MaxChannelCount < 1 || l.MaxQueuedRequestCount < 1 {
		return // the plan is checked once the settings it reads are valid
	}
	if _, err := admission.New(c.AdmissionConfig(nil)); err != nil {
		*ps = append(*ps, err)
	}
}
