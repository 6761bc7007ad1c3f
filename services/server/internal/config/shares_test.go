package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSharesValidate: the shares of the session table and the subscription engine are
// checked like every other limit, each error naming its setting.
func TestSharesValidate(t *testing.T) {
	t.Parallel()
	c := Default()
	require.Equal(t, 10*time.Second, c.Limits.UnactivatedSessionTimeout)
	require.Equal(t, 0.5, c.Limits.OwnerShare)
	require.Equal(t, 5*time.Minute, c.Subscriptions.OrphanLifetime)
	for _, tt := range []struct {
		name   string
		change func(c *Config)
		want   string
	}{
		{"negative timeout", func(c *Config) { c.Limits.UnactivatedSessionTimeout = -time.Second },
			"limits.unactivatedSessionTimeout: must be 0 (off) or positive, got -1s"},
		{"no share", func(c *Config) { c.Limits.OwnerShare = 0 },
			"limits.ownerShare: must be above 0 and at most 1 (no shares), got 0"},
		{"share above the whole", func(c *Config) { c.Limits.OwnerShare = 1.5 },
			"limits.ownerShare: must be above 0 and at most 1 (no shares), got 1.5"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.change(c)
			err := c.Validate()
			require.Error(t, err)
			require.Equal(t, tt.want, err.Error())
		})
	}
	c.Limits.OwnerShare, c.Limits.UnactivatedSessionTimeout, c.Subscriptions.OrphanLifetime = 1, 0, 0
	require.NoError(t, c.Validate(), "off is valid")
}

// TestSharesWarn: turning the session shares off is valid but warned about.
func TestSharesWarn(t *testing.T) {
	t.Parallel()
	c := Default()
	c.Limits.OwnerShare, c.Limits.UnactivatedSessionTimeout = 1, 0
	got := map[string]string{}
	for _, w := range c.Warnings() {
		got[w.Key] = w.Message
	}
	require.Contains(t, got["limits.ownerShare"], "1 is no per-owner share")
	require.Contains(t, got["limits.unactivatedSessionTimeout"], "0 keeps a session nobody activates")
	for _, w := range Default().Warnings() {
		require.NotContains(t, []string{"limits.ownerShare", "limits.unactivatedSessionTimeout"}, w.Key, "the defaults are not warned about")
	}
}

// TestSharesLoad: the share is a fraction from text in a variable or --set, the
// timeouts durations.
func TestSharesLoad(t *testing.T) {
	t.Parallel()
	c, err := Load([]string{"--set", "limits.ownerShare=0.25", "--set", "subscriptions.orphanLifetime=90s"},
		[]string{"UASTACK_LIMITS_UNACTIVATEDSESSIONTIMEOUT=3s"})
	require.NoError(t, err)
	require.Equal(t, 0.25, c.Limits.OwnerShare)
	require.Equal(t, 90*time.Second, c.Subscriptions.OrphanLifetime)
	require.Equal(t, 3*time.Second, c.Limits.UnactivatedSessionTimeout)
	_, err = Load(nil, []string{"UASTACK_LIMITS_OWNERSHARE=half"})
	require.ErrorContains(t, err, "ownerShare")
}

// TestSharedOnlyShares: under SharedOnly no per-owner share is in force, whatever
// limits.ownerShare and limits.maxRetainedBytesPerChannel say, and the start-up warns
// of it; every other profile keeps the configured shares and gives no such warning.
func TestSharedOnlyShares(t *testing.T) {
	t.Parallel()
	for _, profile := range []string{"SharedOnly", "FairShare", "Balanced", "TrustedReservations"} {
		t.Run(profile, func(t *testing.T) {
			t.Parallel()
			c := Default()
			c.Limits.IsolationProfile = profile
			c.Limits.OwnerShare = 0.25
			c.Limits.MaxRetainedBytes, c.Limits.MaxRetainedBytesPerChannel = 64<<20, 1<<20
			if profile == "TrustedReservations" {
				c.Limits.TrustedOwners = []TrustedOwner{{Name: "historian", Address: "10.0.0.7"}}
			}
			require.NoError(t, c.Validate())
			warned := false
			for _, w := range c.Warnings() {
				warned = warned || w.Key == "limits.isolationProfile"
			}
			if profile == "SharedOnly" {
				require.True(t, c.Limits.SharedOnly())
				require.Equal(t, 1.0, c.Limits.OwnerShareInForce(), "no share of sessions, subscriptions, monitored items")
				require.Equal(t, 64<<20, c.Limits.RetainedPerChannelInForce(), "a channel may hold the whole budget")
				require.True(t, warned)
				return
			}
			require.False(t, c.Limits.SharedOnly())
			require.Equal(t, 0.25, c.Limits.OwnerShareInForce())
			require.Equal(t, 1<<20, c.Limits.RetainedPerChannelInForce())
			require.False(t, warned)
		})
	}
}
