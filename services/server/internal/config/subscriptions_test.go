package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSubscriptionsValidate: each subscription bound that is out of range is named in
// the error.
func TestSubscriptionsValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, Default().Validate())
	tests := []struct {
		name   string
		change func(s *Subscriptions)
		want   string
	}{
		{"per session", func(s *Subscriptions) { s.MaxSubscriptionsPerSession = 0 },
			"subscriptions.maxSubscriptionsPerSession: must be at least 1, got 0"},
		{"publishing min above max", func(s *Subscriptions) { s.MinPublishingInterval = 2 * time.Hour },
			"subscriptions.minPublishingInterval: must not exceed subscriptions.maxPublishingInterval (1h0m0s), got 2h0m0s"},
		{"publishing zero", func(s *Subscriptions) { s.MinPublishingInterval = 0 },
			"subscriptions.minPublishingInterval: must be positive, got 0s"},
		{"keep-alive", func(s *Subscriptions) { s.MaxKeepAliveCount = 0 },
			"subscriptions.maxKeepAliveCount: must be at least 1, got 0"},
		{"lifetime", func(s *Subscriptions) { s.MaxLifetimeCount = 2 },
			"subscriptions.maxLifetimeCount: must be at least 3, got 2"},
		{"notifications", func(s *Subscriptions) { s.MaxNotificationsPerPublish = -1 },
			"subscriptions.maxNotificationsPerPublish: must be at least 0, got -1"},
		{"sampling min above max", func(s *Subscriptions) { s.MaxSamplingInterval = time.Millisecond },
			"subscriptions.minSamplingInterval: must not exceed subscriptions.maxSamplingInterval (1ms), got 10ms"},
		{"queue", func(s *Subscriptions) { s.MaxQueueSize = 0 },
			"subscriptions.maxQueueSize: must be at least 1, got 0"},
		{"retransmission", func(s *Subscriptions) { s.RetransmissionQueueSize = 0 },
			"subscriptions.retransmissionQueueSize: must be at least 1, got 0"},
		{"orphans", func(s *Subscriptions) { s.OrphanLifetime = -time.Second },
			"subscriptions.orphanLifetime: must be 0 (off) or positive, got -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.change(&c.Subscriptions)
			err := c.Validate()
			require.Error(t, err)
			require.Equal(t, tt.want, err.Error())
		})
	}
}

// TestSubscriptionsLoad: the subscriptions group is set by --set and environment
// variables like every other group, durations parsed from text.
func TestSubscriptionsLoad(t *testing.T) {
	t.Parallel()
	c, err := Load([]string{"--set", "subscriptions.maxQueueSize=5"},
		[]string{"UASTACK_SUBSCRIPTIONS_MINPUBLISHINGINTERVAL=100ms"})
	require.NoError(t, err)
	require.Equal(t, 5, c.Subscriptions.MaxQueueSize)
	require.Equal(t, 100*time.Millisecond, c.Subscriptions.MinPublishingInterval)
	require.Equal(t, time.Hour, c.Subscriptions.MaxPublishingInterval)
}
