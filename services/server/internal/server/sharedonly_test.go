package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/telemetry"
)

// TestSharedOnlyHasNoShares runs one configuration with explicit per-owner shares
// (limits.ownerShare 0.25 of four sessions, subscriptions and monitored items: one each;
// limits.maxRetainedBytesPerChannel 20000 of a 200000-byte reassembly budget) under
// SharedOnly and under Balanced. SharedOnly applies none of them: the Acknowledge offers
// the whole budget as MaxMessageSize, a channel holds a partial message beyond the
// per-channel setting, and one owner creates two sessions, two subscriptions and two
// monitored items. Balanced applies each, with its status code.
func TestSharedOnlyHasNoShares(t *testing.T) {
	t.Parallel()
	const budget, perChannel = 200000, 20000
	for _, profile := range []string{"SharedOnly", "Balanced"} {
		t.Run(profile, func(t *testing.T) {
			t.Parallel()
			shared := profile == "SharedOnly"
			ms := startMetered(t, func(c *config.Config) {
				c.Limits.IsolationProfile = profile
				c.Limits.OwnerShare = 0.25
				c.Limits.MaxSessionCount, c.Limits.MaxSubscriptionCount = 4, 4
				c.Limits.MaxMonitoredItemCount, c.Limits.MaxMonitoredItemsPerSubscription = 4, 4
				c.Limits.MaxRetainedBytes, c.Limits.MaxRetainedBytesPerChannel = budget, perChannel
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// onlyIf is the status expected of a second unit of one owner.
			onlyIf := func(refused status.Code) status.Code {
				if shared {
					return status.Good
				}
				return refused
			}

			// Retained bytes: a partial message of 30000 bytes.
			nc := dialPeer(t, ms.addr)
			c := openRaw(t, nc, ms.url)
			offered := c.uc.Negotiated().MaxSendMessageSize
			_, err := nc.Write(rawChunk(c, 'C', 1, make([]byte, 30000)))
			require.NoError(t, err)
			if shared {
				require.EqualValues(t, budget, offered, "min(encoding.maxMessageSize, limits.maxRetainedBytes)")
				require.Eventually(t, func() bool {
					held, channels := ms.retained.Held()
					return held == 30000 && channels == 1
				}, 5*time.Second, 5*time.Millisecond, "held beyond maxRetainedBytesPerChannel")
				require.NoError(t, nc.Close())
			} else {
				require.EqualValues(t, perChannel, offered)
				require.Equal(t, status.BadTcpMessageTooLarge, errCode(t, nc, 5*time.Second))
				require.Eventually(t, func() bool {
					return ms.tel.Admission().Rejections(telemetry.StageRetained, telemetry.ReasonOwnerLimit) == 1
				}, 5*time.Second, 5*time.Millisecond)
			}

			// Sessions: one channel (the owner until activation) creates two.
			ch, err := noneChannel(ctx, "127.0.0.1", ms.url)
			require.NoError(t, err)
			defer ch.Close()
			var created []status.Code
			for range 2 {
				resp, err := ch.Request(ctx, &ua.CreateSessionRequest{SessionName: "two", RequestedSessionTimeout: 60000})
				created = append(created, resultOf(resp, err))
			}
			require.Equal(t, []status.Code{status.Good, onlyIf(status.BadTooManySessions)}, created)

			// Subscriptions and monitored items: one activated session (its own owner)
			// creates two of each.
			ch2, err := noneChannel(ctx, "127.0.0.1", ms.url)
			require.NoError(t, err)
			defer ch2.Close()
			token, err := anonymousSession(ctx, ch2)
			require.NoError(t, err)
			h := ua.RequestHeader{AuthenticationToken: token}
			var subs []uint32
			created = created[:0]
			for range 2 {
				resp, err := ch2.Request(ctx, &ua.CreateSubscriptionRequest{RequestHeader: h, RequestedPublishingInterval: 100,
					RequestedLifetimeCount: 300, RequestedMaxKeepAliveCount: 10, PublishingEnabled: true})
				code := resultOf(resp, err)
				created = append(created, code)
				if code == status.Good {
					subs = append(subs, resp.(*ua.CreateSubscriptionResponse).SubscriptionId)
				}
			}
			require.Equal(t, []status.Code{status.Good, onlyIf(status.BadTooManySubscriptions)}, created)
			items := make([]ua.MonitoredItemCreateRequest, 2)
			for i := range items {
				items[i] = ua.MonitoredItemCreateRequest{ItemToMonitor: ua.ReadValueId{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13},
					MonitoringMode: ua.MonitoringModeReporting, RequestedParameters: ua.MonitoringParameters{ClientHandle: uint32(i), QueueSize: 1}}
			}
			resp, err := ch2.Request(ctx, &ua.CreateMonitoredItemsRequest{RequestHeader: h, SubscriptionId: subs[0],
				TimestampsToReturn: ua.TimestampsToReturnBoth, ItemsToCreate: items})
			require.NoError(t, err)
			created = created[:0]
			for _, r := range resp.(*ua.CreateMonitoredItemsResponse).Results {
				created = append(created, r.StatusCode)
			}
			require.Equal(t, []status.Code{status.Good, onlyIf(status.BadTooManyMonitoredItems)}, created)
		})
	}
}

// resultOf is the ServiceResult of a request's answer: a ServiceFault's, or Good.
func resultOf(resp codec.Structure, err error) status.Code {
	if f, ok := resp.(*ua.ServiceFault); ok {
		return f.ResponseHeader.ServiceResult
	}
	if err != nil {
		return status.BadUnexpectedError
	}
	return status.Good
}
