// Package subscription is the server's Subscription and MonitoredItem engine (Part 4
// §5.12, §5.13), independent of the transport: the server hands it requests with the
// session they belong to and a Responder for each Publish, and it answers them from one
// timer goroutine.
//
// Cost model: a parked Publish is a small record in its session's queue (no goroutine);
// every publishing timer and every sampling timer is an entry of one min-heap served by
// one goroutine (Run), so the work per tick is the number of due entries, not the number
// of subscriptions. Values of the in-memory address space are pushed (Changed); others
// are sampled in one batch per tick through a Sampler. Notification messages live in a
// per-subscription pool reused once acknowledged, so steady delivery allocates nothing
// per notification. Events reach the items on EventNotifier attributes through Emit,
// through each item's EventFilter (select and where clauses, filter.go).
//
// State and machinery are apart: the state of a subscription (its parameters, its
// monitored items with their filters and client handles, its next sequence number and
// its retransmission queue) reads as plain, codec-encodable records (SubscriptionRecord,
// Snapshot), and every change to it passes through one change stream (Change, Observe,
// Follow) whose observers run under the engine's lock, in order, before any response
// that follows from the change leaves. Apply makes a recorded change to another engine,
// so a stream (a Journal, later the mirror) rebuilds a live copy. See RATIONALE.md.
//
// A panic touches one item or one answer (issue 18 item 6): a data change filter that
// panics on a value queues BadInternalError in its place, an event filter that panics
// skips that event for that item, an observer or a Responder that panics is skipped,
// and a publishing cycle that panics is lost while Run goes on. The filters encode once
// every value that may hold a Structure of another package (an ExtensionObject) before
// it may reach a queue: one whose encoding panics fails its item there, instead of
// every NotificationMessage that would carry it. Each panic is reported to
// telemetry.Panics (SetPanics).
package subscription
