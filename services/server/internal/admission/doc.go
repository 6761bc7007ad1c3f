// Package admission decides, before the server spends work on it, whether a connection,
// a session establishment or a request may have a share of a bounded resource, and whose
// share it is (DESIGN.md "Admission and isolation"). It holds the policy; the listener
// (uasc.ServerConfig.Admit), the pipeline and its request queue apply it.
//
// Four stages are counted, each by a Ledger: the connections of the listener, the
// CreateSession and ActivateSession requests in progress, the requests waiting in the
// request queue and the requests handed to node managers (parked until they answer).
// Beside them, token buckets meter the rate of new connections and of password checks
// per source.
//
// An Owner is who is charged: the peer's address before anything is authenticated, then
// the verified application (the channel's client certificate), then the session; a
// configured trusted owner by its certificate, ApplicationUri or address. The isolation
// Profile says how owners share each stage: SharedOnly keeps one shared pool and no
// owners; FairShare counts owners, bounds them, keeps headroom for an owner below its
// fair share and gives owners weighted turns in the queue; Balanced adds small reserves
// for an owner's first connection, session or request (bootstrap) and for a client
// that comes back to its live session (reconnect); TrustedReservations adds a reserve
// and a weight for each configured owner. RATIONALE.md argues the choices.
//
// A refusal carries a Stage and a Reason; Controller.Stats is a snapshot of the counts a
// metrics layer reads, and Config.Rejected hears of each refusal as it happens.
package admission
