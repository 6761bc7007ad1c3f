//go:build unix

package redundancy

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time, user and system, that the process has used, from
// getrusage(2).
func ProcessCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
