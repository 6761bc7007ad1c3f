package main

import (
	"os"
	"strconv"
	"syscall"
)

// renice gives every thread of this process the nice value n. Linux schedules threads,
// and a thread takes its nice value from the one that creates it, so setting every
// thread there is now covers the ones the runtime starts later.
func renice(n int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return syscall.Setpriority(syscall.PRIO_PROCESS, 0, n)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, n); err != nil {
			return err
		}
	}
	return nil
}
