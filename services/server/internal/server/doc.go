// Package server is the OPC UA server: it ties the configuration, the PKI, the secure
// channel layer (pkg/transport/uasc), the sessions and the namespace 0 address space
// together and answers the services of Part 4 that the first slice supports:
// GetEndpoints and FindServers (§5.4), CreateSession, ActivateSession and CloseSession
// (§5.6), Read and Write (§5.10.2, §5.10.4), Call (§5.11.2), Browse, BrowseNext and
// TranslateBrowsePathsToNodeIds (§5.9). Every other request is answered with a
// ServiceFault BadServiceUnsupported.
//
// The demo namespace (addressSpace.demoNamespace, DemoNamespaceURI at index 1) is mounted
// in the same addrspace.Space as namespace 0, so every service reaches it without
// routing by namespace; Serve runs its simulation ticker.
//
// Dispatch (DESIGN.md "How a request flows", step 5): the uasc Handler runs on the
// channel's reading goroutine. In-memory services (discovery, Read, Browse, ...) are
// answered inline. What may block goes through the request queue (Limits.
// MaxQueuedRequestCount, BadServerTooBusy with a RetryAfterMs hint when full) to its
// workers (Limits.Min/MaxRequestThreadCount): CreateSession and ActivateSession, which do
// RSA and password hashing work, and Read, Write, Call, Browse and
// TranslateBrowsePathsToNodeIds that reach the node managers mounted with
// Options.Managers (route.go), which complete through their done callback and so hold no
// worker while they wait. A queued request whose TimeoutHint passes is answered BadTimeout.
package server
