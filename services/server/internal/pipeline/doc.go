// Package pipeline is the server's request pipeline (DESIGN.md "How a request flows",
// step 5): a service table with one row per service (its request type, its handler,
// whether it runs inline or on a worker, whether it needs a session) in place of a type
// switch; dispatch, which admits a request, checks its session and runs its handler; the
// queue of jobs, each carrying its owner, its cost and its stage, served by workers; the
// requests handed to the queue, answered once, by their deadline (TimeoutHint) at the
// latest; and the registry Cancel reaches them through.
//
// What runs inline runs on the channel's reading goroutine: in-memory services, faster
// than a hand-off between goroutines. What may spend much CPU or wait goes through the
// queue: session establishment (RSA, password hashing), and the operations that reach a
// node manager which may wait (the routing decides, per request). A parked request holds
// no worker: a node manager completes through its done callback.
//
// A panic is one failed request (issue 18 item 6): a handler that panics on the channel's
// goroutine, a job that panics on a worker and a done callback guarded with
// Pending.Recover answer their request with a ServiceFault BadInternalError, unless it
// was answered already, and report the panic (telemetry.Panics); the channel and the
// worker go on.
package pipeline
