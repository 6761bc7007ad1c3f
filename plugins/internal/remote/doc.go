// Package remote is the host side of a node manager across a boundary, shared by the
// WASM host and the process host: a nodemgr.Manager whose operations travel as frames
// to guests (WASM instances, a plugin process) that a Dialer connects.
//
// It never stalls the server. An operation is queued and the method returns; lanes
// take what is queued and carry it in batches, so that the concurrent requests of many
// clients cross the boundary in few calls. The queue is bounded (Config.MaxOutstanding):
// past it an operation is answered at once with BadResourceUnavailable. Each operation
// ends by its own context: when the request's deadline passes first, its items are
// answered BadTimeout and a late reply is dropped. While no guest is connected, every
// operation is answered BadNotConnected; an operation lost with its guest is answered
// BadCommunicationError (BadInternalError for a guest that trapped).
//
// Each guest is connected, set up and watched by a supervisor of its own: it replays the
// lifecycle (Info, Mount, Start, the watched set) to every fresh guest, and when a guest
// breaks (it died, trapped or ran past a deadline) it closes it and connects another
// after a backoff that grows while guests keep breaking.
package remote
