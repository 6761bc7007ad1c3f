package config

import (
	"net/netip"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/admission"
)

// TestValidateAdmission checks the errors of the admission and isolation limits, each
// naming its setting, including those of the profile's plan (admission.New).
func TestValidateAdmission(t *testing.T) {
	t.Parallel()
	trusted := func(p string, owners ...TrustedOwner) func(c *Config) {
		return func(c *Config) { c.Limits.IsolationProfile, c.Limits.TrustedOwners = p, owners }
	}
	tests := []struct {
		name   string
		change func(c *Config)
		want   string
	}{
		{"profile", func(c *Config) { c.Limits.IsolationProfile = "balanced" },
			`limits.isolationProfile: unknown value "balanced"; allowed: SharedOnly, FairShare, Balanced, TrustedReservations`},
		{"rate", func(c *Config) { c.Limits.ConnectionsPerSecond = -1 },
			"limits.connectionsPerSecond: must be at least 0, got -1"},
		{"burst", func(c *Config) { c.Limits.ConnectionBurst = 0 },
			"limits.connectionBurst: must be at least 1, got 0"},
		{"backlog", func(c *Config) { c.Limits.ListenBacklog = 70000 },
			"limits.listenBacklog: must be 0 (the kernel's maximum) to 65535, got 70000"},
		{"session establishment", func(c *Config) { c.Limits.MaxConcurrentSessionEstablishment = 0 },
			"limits.maxConcurrentSessionEstablishment: must be at least 1, got 0"},
		{"parked", func(c *Config) { c.Limits.MaxParkedRequestCount = 0 },
			"limits.maxParkedRequestCount: must be at least 1, got 0"},
		{"login burst", func(c *Config) { c.Limits.UserNameLoginBurst = 0 },
			"limits.userNameLoginBurst: must be at least 1, got 0"},
		{"owners", func(c *Config) { c.Limits.MaxTrackedOwners = 0 },
			"limits.maxTrackedOwners: must be at least 1, got 0"},
		{"rate below the reserves", func(c *Config) { c.Limits.ConnectionsPerSecond = 2 },
			"limits.connectionsPerSecond and limits.connectionBurst: 2 and 1000 leave no shared rate beside the 2 reserved buckets of profile Balanced (each 1/s, burst 50); raise them or set the rate to 0 (no limit)"},
		{"trusted owner with two names", trusted("TrustedReservations", TrustedOwner{ApplicationURI: "urn:a", Address: "10.0.0.1"}),
			"limits.trustedOwners[0]: must name the owner by exactly one of applicationUri, thumbprint and address"},
		{"thumbprint", trusted("TrustedReservations", TrustedOwner{Thumbprint: "abc"}),
			`limits.trustedOwners[0].thumbprint: must be a certificate's SHA-1 thumbprint, 40 hex digits, got "abc"`},
		{"address", trusted("TrustedReservations", TrustedOwner{Address: "10.0.0.0/33"}),
			`limits.trustedOwners[0].address: must be an IP address or a CIDR network such as 10.0.0.0/24, got "10.0.0.0/33"`},
		{"weight", trusted("TrustedReservations", TrustedOwner{Address: "10.0.0.1", Weight: 101}),
			"limits.trustedOwners[0].weight: must be 0 (meaning 1) to 100, got 101"},
		{"trusted owners beside Balanced", trusted("Balanced", TrustedOwner{Address: "10.0.0.1"}),
			"limits.trustedOwners: trusted owners need profile TrustedReservations"},
		{"TrustedReservations without owners", trusted("TrustedReservations"),
			"limits.trustedOwners: profile TrustedReservations needs at least one trusted owner"},
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

// TestAdmissionConfig checks the defaults (the .NET stack's where it has them) and
// what the admission policy is built from.
func TestAdmissionConfig(t *testing.T) {
	t.Parallel()
	c := Default()
	l := c.Limits
	require.Equal(t, "Balanced", l.IsolationProfile)
	require.Equal(t, 500, l.ConnectionsPerSecond)
	require.Equal(t, 1000, l.ConnectionBurst)
	require.Equal(t, max(128, 8*runtime.GOMAXPROCS(0)), l.MaxConcurrentSessionEstablishment)
	ac := c.AdmissionConfig(nil)
	require.Equal(t, admission.Balanced, ac.Profile)
	require.InDelta(t, 2.0, ac.PasswordChecksPerSecond, 1e-9)
	require.Equal(t, l.MaxQueuedRequestCount, ac.MaxQueuedRequestCount)

	c.Limits.IsolationProfile = "TrustedReservations"
	c.Limits.TrustedOwners = []TrustedOwner{{Name: "gw", Address: "192.0.2.7", Weight: 4}, {Name: "plant", Address: "10.1.0.0/16"},
		{Name: "scada", Thumbprint: "00112233445566778899aabbccddeeff00112233"}}
	require.NoError(t, c.Validate())
	ac = c.AdmissionConfig(nil)
	require.Equal(t, admission.TrustedReservations, ac.Profile)
	require.Equal(t, netip.MustParsePrefix("192.0.2.7/32"), ac.Trusted[0].Address)
	require.Equal(t, netip.MustParsePrefix("10.1.0.0/16"), ac.Trusted[1].Address)
	require.Equal(t, 4, ac.Trusted[0].Weight)
	require.Equal(t, "00112233445566778899aabbccddeeff00112233", ac.Trusted[2].Thumbprint)
}

// TestTrustedOwnersFromSet: the list is set like the others, as a YAML flow sequence.
func TestTrustedOwnersFromSet(t *testing.T) {
	t.Parallel()
	c, err := Load([]string{"--set", "limits.isolationProfile=TrustedReservations",
		"--set", "limits.trustedOwners=[{name: gw, address: 192.0.2.0/24, weight: 3}]"}, nil)
	require.NoError(t, err)
	require.Equal(t, []TrustedOwner{{Name: "gw", Address: "192.0.2.0/24", Weight: 3}}, c.Limits.TrustedOwners)
}
