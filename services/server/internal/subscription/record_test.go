package subscription

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

var updateCorpus = flag.Bool("update", false, "rewrite the seed corpus of FuzzDecodeChange in testdata/fuzz")

// sampleRecord is a subscription record with every field set: a data item and an event
// item, a triggering link, two messages waiting for an acknowledgement.
func sampleRecord() SubscriptionRecord {
	dv := codec.DataValue{Value: codec.DoubleVariant(2.5), Status: Overflow, SourceTimestamp: 1234, ServerTimestamp: 5678}
	return SubscriptionRecord{
		ID: 7, Session: codec.NewStringNodeId(1, "session"), Owner: "cert:ab12",
		Settings: Settings{PublishingInterval: 250 * time.Millisecond, LifetimeCount: 60, MaxKeepAliveCount: 20, MaxNotificationsPerPublish: 100, Priority: 9},
		Enabled:  true, NextSequenceNumber: 43,
		Items: []ItemRecord{
			{ID: 3, ClientHandle: 30, Item: ua.ReadValueId{NodeId: node(3), AttributeId: uint32(attr.Value), IndexRange: "1:2",
				DataEncoding: codec.QualifiedName{Name: "Default Binary"}}, Mode: ua.MonitoringModeSampling,
				SamplingInterval: 125 * time.Millisecond, QueueSize: 5, DiscardOldest: true, Timestamps: ua.TimestampsToReturnServer,
				Filter: Filter{Trigger: ua.DataChangeTriggerStatusValueTimestamp, Deadband: 0.75}, MinSamplingInterval: 50},
			{ID: 4, ClientHandle: 40, Item: ua.ReadValueId{NodeId: serverNode, AttributeId: uint32(attr.EventNotifier)},
				Mode: ua.MonitoringModeReporting, QueueSize: 10, Timestamps: ua.TimestampsToReturnBoth,
				Events: &ua.EventFilter{
					SelectClauses: []ua.SimpleAttributeOperand{*sao(id.BaseEventType, "Severity")},
					WhereClause:   ua.ContentFilter{Elements: []ua.ContentFilterElement{el(ua.FilterOperatorGreaterThan, fld("Severity"), lit(codec.Int32Variant(10)))}},
				},
				Triggers: []uint32{3}, Push: false,
				Queued:     []ua.EventFieldList{{EventFields: []codec.Variant{codec.UInt16Variant(700)}}, {EventFields: []codec.Variant{codec.UInt16Variant(1)}}},
				OverflowAt: 2},
		},
		Retransmission: []ua.NotificationMessage{
			{SequenceNumber: 41, PublishTime: 99, NotificationData: []codec.ExtensionObject{
				codec.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: []ua.MonitoredItemNotification{{ClientHandle: 30, Value: dv}}}),
			}},
			{SequenceNumber: 42, PublishTime: 100, NotificationData: []codec.ExtensionObject{
				codec.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: []ua.MonitoredItemNotification{{ClientHandle: 30, Value: dv}}}),
				codec.NewExtensionObject(&ua.EventNotificationList{Events: []ua.EventFieldList{{ClientHandle: 40, EventFields: []codec.Variant{codec.UInt16Variant(500)}}}}),
			}},
		},
	}
}

// sampleChanges is one Change of every kind, with the fields of its kind set.
func sampleChanges() []Change {
	rec := sampleRecord()
	return []Change{
		{Kind: ChangeCreated, Subscription: 7, Record: &rec},
		{Kind: ChangeModified, Subscription: 7, Settings: Settings{PublishingInterval: time.Second, LifetimeCount: 30, MaxKeepAliveCount: 10, Priority: 1}},
		{Kind: ChangePublishingMode, Subscription: 7, Enabled: true},
		{Kind: ChangeDeleted, Subscription: 7, Status: status.BadTimeout},
		{Kind: ChangeTransferred, Subscription: 7, Session: codec.NewNumericNodeId(1, 8), Owner: "user:ann"},
		{Kind: ChangeDetached, Subscription: 7},
		{Kind: ChangeItemsCreated, Subscription: 7, Items: rec.Items},
		{Kind: ChangeItemsModified, Subscription: 7, Items: rec.Items[:1]},
		{Kind: ChangeItemsDeleted, Subscription: 7, ItemIDs: []uint32{3, 4}},
		{Kind: ChangeMonitoringMode, Subscription: 7, Mode: ua.MonitoringModeDisabled, ItemIDs: []uint32{4}},
		{Kind: ChangeTriggering, Subscription: 7, Trigger: 4, Links: []uint32{3}},
		{Kind: ChangeSent, Subscription: 7, Message: rec.Retransmission[1]},
		{Kind: ChangeAcknowledged, Subscription: 7, Sequence: 41},
		{Kind: ChangeDropped, Subscription: 7, Sequence: 42},
		{Kind: ChangeEventQueued, Subscription: 7, Item: 4, Event: []codec.Variant{codec.UInt16Variant(800)}, Overflow: []codec.Variant{codec.UInt16Variant(1)}},
	}
}

func encodeChange(t testing.TB, c *Change) []byte {
	var e codec.Encoder
	c.EncodeBinary(&e)
	require.NoError(t, e.Err())
	return e.Bytes()
}

// TestChangesRoundTrip: every kind of Change, and the record inside ChangeCreated,
// decodes from its encoding to an equal value with nothing left over; every shorter
// prefix of the encoding fails with BadDecodingError.
func TestChangesRoundTrip(t *testing.T) {
	t.Parallel()
	kinds := map[ChangeKind]bool{}
	for _, c := range sampleChanges() {
		kinds[c.Kind] = true
		b := encodeChange(t, &c)
		var back Change
		d := codec.NewDecoder(b)
		back.DecodeBinary(d)
		require.NoError(t, d.Err(), "%v", c.Kind)
		require.Zero(t, d.Remaining(), "%v", c.Kind)
		require.Equal(t, c, back)
		require.Equal(t, b, encodeChange(t, &back), "%v: canonical", c.Kind)
		for n := range len(b) {
			d := codec.NewDecoder(b[:n])
			back.DecodeBinary(d)
			require.ErrorIs(t, d.Err(), status.BadDecodingError, "%v cut at %d", c.Kind, n)
		}
	}
	require.Len(t, kinds, int(ChangeEventQueued), "a sample of every kind")

	rec := sampleRecord()
	var e codec.Encoder
	rec.EncodeBinary(&e)
	var back SubscriptionRecord
	d := codec.NewDecoder(e.Bytes())
	back.DecodeBinary(d)
	require.NoError(t, d.Err())
	require.Equal(t, rec, back)

	for _, b := range [][]byte{
		{1, byte(ChangeDetached), 7, 0, 0, 0}, // another format (before the event queues)
		{changeFormat, 0, 7, 0, 0, 0},         // no kind
		{changeFormat, 99, 7, 0, 0, 0},        // an unknown kind
	} {
		var c Change
		d := codec.NewDecoder(b)
		c.DecodeBinary(d)
		require.ErrorIs(t, d.Err(), status.BadDecodingError, "% x", b)
	}
	var e2 codec.Encoder
	(&Change{Kind: 99}).EncodeBinary(&e2)
	require.ErrorIs(t, e2.Err(), status.BadEncodingError)
}

// TestSnapshotRestores: the records of Snapshot restore, through ChangeCreated, an engine
// with the same state; they are copies (changing them changes nothing in the engine).
func TestSnapshotRestores(t *testing.T) {
	t.Parallel()
	r := newJournalRig(t)
	rec := sampleRecord()
	require.NoError(t, r.e.Apply(Change{Kind: ChangeCreated, Subscription: rec.ID, Record: &rec}))
	got := r.e.Snapshot()
	require.Equal(t, []SubscriptionRecord{sampleRecord()}, got)
	got[0].Items[1].Triggers[0] = 99
	got[0].Items[1].Events.SelectClauses = nil
	got[0].Retransmission[0].NotificationData[0].Value.(*ua.DataChangeNotification).MonitoredItems[0].ClientHandle = 99
	require.Equal(t, []SubscriptionRecord{sampleRecord()}, r.e.Snapshot())
}

// corpusDir holds the seed corpus of FuzzDecodeChange.
var corpusDir = filepath.Join("testdata", "fuzz", "FuzzDecodeChange")

// TestChangeCorpus checks that the seed corpus of FuzzDecodeChange holds a valid change of
// every kind; with -update it writes the corpus again from sampleChanges.
func TestChangeCorpus(t *testing.T) {
	changes := sampleChanges()
	if *updateCorpus {
		require.NoError(t, os.MkdirAll(corpusDir, 0o755))
		for _, c := range changes {
			text := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(encodeChange(t, &c))))
			require.NoError(t, os.WriteFile(filepath.Join(corpusDir, "seed-"+c.Kind.String()), []byte(text), 0o644))
		}
	}
	for _, c := range changes {
		b, err := os.ReadFile(filepath.Join(corpusDir, "seed-"+c.Kind.String()))
		require.NoError(t, err, "run go test -run TestChangeCorpus -update")
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(encodeChange(t, &c))))
		require.Equal(t, want, string(b), "%v: the corpus is out of date; run with -update", c.Kind)
	}
}

// fuzzEngine is an engine holding sampleRecord's subscription, as subscription 7 of a
// session, for the changes the fuzzer makes to apply to.
func fuzzEngine(t *testing.T) *rig {
	r := newJournalRig(t)
	r.ses = codec.NewStringNodeId(1, "session")
	rec := sampleRecord()
	require.NoError(t, r.e.Apply(Change{Kind: ChangeCreated, Subscription: rec.ID, Record: &rec}))
	return r
}

// FuzzDecodeChange: decoding never panics and fails only with BadDecodingError or
// BadEncodingLimitsExceeded; what decodes re-encodes canonically; applying it to an
// engine either fails with ErrNotApplicable or leaves an engine that still publishes,
// republishes and describes itself. The seed corpus is in testdata/fuzz/FuzzDecodeChange
// (TestChangeCorpus); run with
//
//	go test -run='^$' -fuzz='^FuzzDecodeChange$' -fuzztime=3m ./internal/subscription
func FuzzDecodeChange(f *testing.F) {
	f.Add([]byte{changeFormat, byte(ChangeDetached), 7, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Change
		d := codec.NewDecoder(b)
		c.DecodeBinary(d)
		if err := d.Err(); err != nil {
			if !errors.Is(err, status.BadDecodingError) && !errors.Is(err, status.BadEncodingLimitsExceeded) {
				t.Fatalf("decode failed with %v", err)
			}
			return
		}
		first := encodeChange(t, &c)
		var again Change
		d.Reset(first)
		again.DecodeBinary(d)
		require.NoError(t, d.Err())
		require.Zero(t, d.Remaining())
		require.Equal(t, first, encodeChange(t, &again), "canonical")

		r := fuzzEngine(t)
		if err := r.e.Apply(c); err != nil {
			require.ErrorIs(t, err, ErrNotApplicable)
			return
		}
		out := &encoder{}
		r.e.Publish(r.ses, nil, nil, out, time.Time{})
		r.advance(time.Second)
		for _, s := range r.e.Snapshot() {
			var e codec.Encoder
			s.EncodeBinary(&e)
			require.NoError(t, e.Err())
			if s.Session.IsNull() {
				continue // detached: no session may ask
			}
			for _, m := range s.Retransmission {
				require.Equal(t, status.Good, r.e.Republish(s.Session, s.ID, m.SequenceNumber, func(*ua.NotificationMessage) {}))
			}
		}
	})
}
