// Package server is the OPC UA server's wiring: New builds the rooms of the server wing
// (the address space and the demo namespace, the routes to node managers, the session
// table, the subscription engine, the diagnostics, the request pipeline) and connects
// them; Serve runs the secure channels until its context ends. The service table
// (conn.go) lists every service the server answers (Part 4 §5), and the files beside it
// hold the handlers, one file per service set: discovery.go (§5.4), sessionsvc.go (§5.6),
// attribute.go (§5.10), method.go (§5.11), view.go (§5.9), subscriptionsvc.go and
// monitoredsvc.go (§5.12, §5.13), cancel.go (§5.6.5), with routed.go for the items that
// reach a mounted node manager. RATIONALE.md draws the rooms.
package server
