package mirror

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/subscription"
)

func testRecord() *subscription.SubscriptionRecord {
	return &subscription.SubscriptionRecord{
		ID: 3<<24 | 1, Session: codec.NewGuidNodeId(0, codec.Guid{Data1: 1}), Owner: "urn:client",
		Settings: subscription.Settings{PublishingInterval: 100 * time.Millisecond, LifetimeCount: 30, MaxKeepAliveCount: 10},
		Enabled:  true, NextSequenceNumber: 5,
	}
}

func TestSubMessageRoundTrip(t *testing.T) {
	rec := testRecord()
	sm, err := decodeSubMessage(subMessage(msgSnapshot, 7, rec.EncodeBinary))
	require.NoError(t, err)
	require.Equal(t, msgSnapshot, sm.kind)
	require.EqualValues(t, 7, sm.n)
	require.Equal(t, rec, sm.rec)

	c := subscription.Change{Kind: subscription.ChangeSent, Subscription: rec.ID,
		Message: ua.NotificationMessage{SequenceNumber: 5, PublishTime: codec.DateTime(1)}}
	ack := subscription.Change{Kind: subscription.ChangeAcknowledged, Subscription: rec.ID, Sequence: 4}
	changes := func(e *codec.Encoder) {
		e.ArrayLength(2, false)
		ack.EncodeBinary(e)
		c.EncodeBinary(e)
	}
	sm, err = decodeSubMessage(subMessage(msgChange, 8, changes))
	require.NoError(t, err)
	require.Equal(t, msgChange, sm.kind)
	require.Len(t, sm.changes, 2, "an acknowledgement rides with the next change")
	require.EqualValues(t, 4, sm.changes[0].Sequence)
	require.Equal(t, c.Message.SequenceNumber, sm.changes[1].Message.SequenceNumber)
	_, err = decodeSubMessage(subMessage(msgChange, 8, func(e *codec.Encoder) { e.ArrayLength(0, false) }))
	require.Error(t, err, "a message of no change")

	_, err = decodeSubMessage(subMessage(9, 0, nil))
	require.Error(t, err, "an unknown kind")
	_, err = decodeSubMessage(append(subMessage(msgDeleted, 0, nil), 1))
	require.Error(t, err, "trailing bytes")
}

// FuzzDecodeSubMessage: a message of the subscription stream never panics the decoder.
func FuzzDecodeSubMessage(f *testing.F) {
	f.Add(subMessage(msgSnapshot, 7, testRecord().EncodeBinary))
	c := subscription.Change{Kind: subscription.ChangeAcknowledged, Subscription: 1, Sequence: 4}
	f.Add(subMessage(msgChange, 1, func(e *codec.Encoder) { e.ArrayLength(1, false); c.EncodeBinary(e) }))
	f.Add(subMessage(msgDeleted, 0, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeSubMessage(b)
	})
}

// TestRenewSnapshots: a subscription whose snapshot is half as old as the stream keeps
// messages is due for a new one, once; a younger one is not.
func TestRenewSnapshots(t *testing.T) {
	now := time.Unix(1000, 0)
	m := &Mirror{cfg: Config{MaxAge: time.Hour}, snaps: make(map[uint32]bool),
		snapAt: map[uint32]time.Time{1: now.Add(-31 * time.Minute), 2: now.Add(-29 * time.Minute)}}
	m.w.init(m)
	m.renewSnapshots(now)
	require.Equal(t, map[uint32]bool{1: true}, m.snaps)
	clear(m.snaps)
	m.renewSnapshots(now.Add(30 * time.Second))
	require.Empty(t, m.snaps, "not again before the one asked for is taken")
}
