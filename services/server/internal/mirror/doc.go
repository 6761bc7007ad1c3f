// Package mirror is the server half of a HotAndMirrored redundant set (Part 4 §6.6.2)
// over NATS JetStream: it follows the session table's and the subscription engine's
// change streams and keeps them, sealed with the cluster key, where every server of the
// set can read them; and when a client activates on this server a session another
// server made, it takes the session over with its subscriptions.
//
// What is kept, in JetStream (names start with the set's name, mirror.cluster):
//   - <set>-sessions, a key-value bucket: one record per session, keyed by a hash of
//     its authentication token, holding the session's Record, the certificate of the
//     server that created it and the server that owns it now. Each write carries the
//     session's timeout as its TTL, renewed while the session lives; an activation is a
//     compare-and-swap on the record, so a server nonce is used once in the whole set.
//   - <set>-nodes, a key-value bucket: one key per server, its ServerUri, kept alive
//     while it runs; the key's number is the server's space of subscription IDs.
//   - <set>-subs, a stream that keeps one message per subject: per subscription its
//     last snapshot (subject <set>.sub.<session hash>.<id>.s) and its numbered
//     changes in a ring of slots (.c.<n mod changeSlots>), so a takeover reads at most
//     one snapshot and changeSlots changes, each found by subject.
//
// Only NotificationMessages wait for JetStream: a Publish response leaves once the
// messages it carries are kept (the engine's send barrier), so the server that takes a
// subscription over can Republish them. Everything else is written behind, in batches.
package mirror
