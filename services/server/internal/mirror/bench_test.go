package mirror

import (
	"bytes"
	"testing"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/subscription"
)

// BenchmarkSentChange is the mirror's own work for one NotificationMessage of 1,000
// data changes, as the notify suite's subscriptions send them: the change encoded under
// the engine's lock, then sealed by the writer (NATS not included). Reported per
// notification.
func BenchmarkSentChange(b *testing.B) {
	seal, _ := newSealer(bytes.Repeat([]byte{1}, KeySize))
	items := make([]ua.MonitoredItemNotification, 1000)
	for i := range items {
		items[i] = ua.MonitoredItemNotification{ClientHandle: uint32(i), Value: codec.DataValue{
			Value: codec.DoubleVariant(float64(i)), SourceTimestamp: 1, ServerTimestamp: 2}}
	}
	c := subscription.Change{Kind: subscription.ChangeSent, Subscription: 1, Message: ua.NotificationMessage{
		SequenceNumber: 1, PublishTime: 3,
		NotificationData: []codec.ExtensionObject{codec.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: items})}}}
	b.ReportAllocs()
	for b.Loop() {
		plain := subMessage(msgChange, 1, func(e *codec.Encoder) { e.ArrayLength(1, false); c.EncodeBinary(e) })
		_ = seal.seal("uastack.sub.0123456789abcdef0123456789abcdef.1", plain)
		release(plain)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/notification")
}
