package load

import (
	"time"

	"uastack.dev/bench/internal/proc"
)

// Usage is a process's CPU time (user + system) and resident set size.
type Usage struct {
	CPU time.Duration
	RSS int64 // bytes
}

// ProcUsage reads the CPU time (package proc) and VmRSS of process pid from /proc.
func ProcUsage(pid int) (Usage, error) {
	cpu, err := proc.CPUTime(pid)
	if err != nil {
		return Usage{}, err
	}
	rss, err := proc.RSS(pid)
	return Usage{CPU: cpu, RSS: rss}, err
}
