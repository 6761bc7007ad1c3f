package config

import "time"

// Subscriptions bound what a client may ask of CreateSubscription and
// CreateMonitoredItems (Part 4 §5.13.2, §5.12.2): a request outside them is
// revised into them, not refused. The counts with .NET stack names stay in
// Limits: maxSubscriptionCount and maxMonitoredItemCount (the server's),
// maxPublishRequestCount (a session's) and maxMonitoredItemsPerSubscription.
type Subscriptions struct {
	// MaxSubscriptionsPerSession caps one session's subscriptions
	// (BadTooManySubscriptions beyond it). Default 100.
	MaxSubscriptionsPerSession int `koanf:"maxSubscriptionsPerSession"`
	// Publishing intervals are revised into [min, max]. Defaults 50ms and 1h.
	MinPublishingInterval time.Duration `koanf:"minPublishingInterval"`
	MaxPublishingInterval time.Duration `koanf:"maxPublishingInterval"`
	// MaxKeepAliveCount and MaxLifetimeCount cap the counts a client asks
	// for; the lifetime is kept at least three keep-alives. Defaults 1000
	// and 30000.
	MaxKeepAliveCount int `koanf:"maxKeepAliveCount"`
	MaxLifetimeCount  int `koanf:"maxLifetimeCount"`
	// MaxNotificationsPerPublish caps one NotificationMessage; the rest
	// follows with MoreNotifications. 0 is no limit. Default 10000.
	MaxNotificationsPerPublish int `koanf:"maxNotificationsPerPublish"`
	// Sampling intervals are revised into [min, max]; min is also what a
	// request for 0 ("fastest") gets. Defaults 10ms and 1h.
	MinSamplingInterval time.Duration `koanf:"minSamplingInterval"`
	MaxSamplingInterval time.Duration `koanf:"maxSamplingInterval"`
	// MaxQueueSize caps a monitored item's queue. Default 1000.
	MaxQueueSize int `koanf:"maxQueueSize"`
	// RetransmissionQueueSize is how many unacknowledged NotificationMessages
	// a subscription keeps for Republish; older ones are dropped. Default 20.
	RetransmissionQueueSize int `koanf:"retransmissionQueueSize"`
	// OrphanLifetime bounds how long a subscription outlives its session
	// (ended without deleting it) waiting for TransferSubscriptions, whatever
	// its lifetime count; one nobody may take over (an anonymous user without
	// a verified application) is deleted with its session. 0 leaves orphans to
	// their lifetime count. Default 5m.
	OrphanLifetime time.Duration `koanf:"orphanLifetime"`
}

func defaultSubscriptions() Subscriptions {
	return Subscriptions{
		MaxSubscriptionsPerSession: 100,
		MinPublishingInterval:      50 * time.Millisecond,
		MaxPublishingInterval:      time.Hour,
		MaxKeepAliveCount:          1000,
		MaxLifetimeCount:           30000,
		MaxNotificationsPerPublish: 10000,
		MinSamplingInterval:        10 * time.Millisecond,
		MaxSamplingInterval:        time.Hour,
		MaxQueueSize:               1000,
		RetransmissionQueueSize:    20,
		OrphanLifetime:             5 * time.Minute,
	}
}

func (c *Config) validateSubscriptions(ps *problems) {
	s := c.Subscriptions
	ps.atLeast("subscriptions.maxSubscriptionsPerSession", s.MaxSubscriptionsPerSession, 1)
	ps.positive("subscriptions.minPublishingInterval", s.MinPublishingInterval)
	ps.positive("subscriptions.maxPublishingInterval", s.MaxPublishingInterval)
	ps.notAbove("subscriptions.minPublishingInterval", s.MinPublishingInterval, "subscriptions.maxPublishingInterval", s.MaxPublishingInterval)
	ps.uint32Range("subscriptions.maxKeepAliveCount", s.MaxKeepAliveCount, 1)
	ps.uint32Range("subscriptions.maxLifetimeCount", s.MaxLifetimeCount, 3)
	ps.uint32Range("subscriptions.maxNotificationsPerPublish", s.MaxNotificationsPerPublish, 0)
	ps.positive("subscriptions.minSamplingInterval", s.MinSamplingInterval)
	ps.positive("subscriptions.maxSamplingInterval", s.MaxSamplingInterval)
	ps.notAbove("subscriptions.minSamplingInterval", s.MinSamplingInterval, "subscriptions.maxSamplingInterval", s.MaxSamplingInterval)
	ps.uint32Range("subscriptions.maxQueueSize", s.MaxQueueSize, 1)
	ps.atLeast("subscriptions.retransmissionQueueSize", s.RetransmissionQueueSize, 1)
	ps.notNegative("subscriptions.orphanLifetime", s.OrphanLifetime)
}
