package uasc

// Deadline is a deadline of Serve and ServeConn that ended a connection with an ERR
// BadTimeout (issue 18): ServerConfig.Expired hears of each that passes.
type Deadline uint8

const (
	// DeadlineHello: no whole Hello within UACP.HelloTimeout of the accept (Serve only).
	DeadlineHello Deadline = iota
	// DeadlineOpen: no whole OpenSecureChannel within OpenTimeout of the Acknowledge.
	DeadlineOpen
	// DeadlineChunk: a chunk begun was not whole within UACP.ChunkTimeout
	// (uacp.ErrChunkTimeout).
	DeadlineChunk
	// DeadlineAssembly: a message of several chunks was not whole within AssemblyTimeout
	// of its first.
	DeadlineAssembly
	// DeadlineWrite: the peer took none of a response within UACP.WriteTimeout.
	DeadlineWrite
)

var deadlineNames = [...]string{"hello", "open", "chunk", "assembly", "write"}

// String names the deadline.
func (d Deadline) String() string {
	if int(d) < len(deadlineNames) {
		return deadlineNames[d]
	}
	return "unknown"
}

// expired tells ServerConfig.Expired, if set, that d passed.
func (s *Server) expired(d Deadline) {
	if s.cfg.Expired != nil {
		s.cfg.Expired(d)
	}
}
