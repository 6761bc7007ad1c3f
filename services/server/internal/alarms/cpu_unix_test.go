//go:build unix

package alarms

import "syscall"

// cpuTime is the CPU time the process used so far, user and system, in nanoseconds: on
// a machine other work shares, it moves less with the load than the wall clock does.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
