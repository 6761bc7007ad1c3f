// Package load is the light OPC UA client of the load suites (bench/cmd/sessions,
// bench/cmd/notify) and the uastack server they drive as a child process.
//
// A Session is one secure channel (pkg/transport/uasc) with one session on it, driven by
// raw service requests: CreateSession, ActivateSession, CreateSubscription,
// CreateMonitoredItems, Publish, Write. It keeps no cache, no keep-alive timer and no
// goroutine of its own beyond the channel's reader and the Publish loops the caller runs,
// so that thousands of sessions fit beside the server on one small machine.
//
// The suites run the server as a child process (package uaserver); ProcUsage reads its
// CPU time and resident memory from /proc, so that the figures are the server's own.
package load
