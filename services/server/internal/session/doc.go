// Package session is the server's session table (Part 4 §5.6): the plain records of the
// sessions, the table that finds them by authentication token, and their lifecycle
// (create, activate, time out, close), every change of which passes through one change
// stream that observers follow (diagnostics now, the mirror next).
//
// A session is a Record, plain data that the codec encodes, and the live machinery around
// it that never leaves this process: the time it was last used, the epoch a channel's
// memory of it checks, the parsed client certificate and the Browse continuation points.
// The table's sweep ends idle sessions at their deadline (Part 4 §5.6.2), and sessions
// nobody activated soon after their creation; a full table gives up an unactivated
// session before it refuses one, and no owner (package owner) holds more than its share
// (owners.go). The lockout of failed logins (Security.MaxFailedAuthenticationAttempts)
// lives here too: it guards ActivateSession.
package session
