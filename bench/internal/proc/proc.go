// Package proc measures CPU time: a process's own user plus system time from
// /proc/<pid>/stat (Linux), and this process's from getrusage, so that a suite charges
// each side of a benchmark with exactly the CPU it spent.
package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat times. USER_HZ is 100 on every Linux
// architecture Go supports; sysconf is not reachable without cgo.
const clockTick = 10 * time.Millisecond

// CPUTime returns the user plus system CPU time process pid has used so far, to 10 ms
// resolution, including that of its finished and waited-for children.
func CPUTime(pid int) (time.Duration, error) {
	u, s, err := CPUTimes(pid)
	return u + s, err
}

// CPUTimes returns the user and the system CPU time process pid has used so far, each to
// 10 ms resolution, including that of its finished and waited-for children.
func CPUTimes(pid int) (user, sys time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: split after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("proc: malformed %q", s)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime, stime, cutime, cstime are fields 14–17.
	if len(f) < 15 {
		return 0, 0, fmt.Errorf("proc: short stat line %q", s)
	}
	var v [4]int64
	for j, k := range []int{11, 12, 13, 14} {
		if v[j], err = strconv.ParseInt(f[k], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("proc: field %d: %w", k+3, err)
		}
	}
	return time.Duration(v[0]+v[2]) * clockTick, time.Duration(v[1]+v[3]) * clockTick, nil
}

// SelfCPU returns the user plus system CPU time this process has used so far, to
// microsecond resolution.
func SelfCPU() time.Duration {
	u, s := selfCPUTimes()
	return u + s
}

func selfCPUTimes() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// Meter measures the CPU one process spends over a window.
type Meter struct {
	pid       int  // 0 for this process
	tree      bool // pid and its live descendants
	user, sys time.Duration
}

// StartTree begins a window for pid and the processes below it (a server and its plugin
// processes). A descendant that ends within the window takes its CPU time with it.
func StartTree(pid int) (*Meter, error) {
	m := &Meter{pid: pid, tree: true}
	var err error
	m.user, m.sys, err = m.now()
	return m, err
}

// Start begins a window for pid (0 = this process).
func Start(pid int) (*Meter, error) {
	m := &Meter{pid: pid}
	var err error
	m.user, m.sys, err = m.now()
	return m, err
}

// Stop returns the CPU time spent since Start.
func (m *Meter) Stop() (time.Duration, error) {
	u, s, err := m.StopSplit()
	return u + s, err
}

// StopSplit returns the user and the system CPU time spent since Start.
func (m *Meter) StopSplit() (user, sys time.Duration, err error) {
	u, s, err := m.now()
	return u - m.user, s - m.sys, err
}

func (m *Meter) now() (user, sys time.Duration, err error) {
	if m.pid == 0 {
		u, s := selfCPUTimes()
		return u, s, nil
	}
	if !m.tree {
		return CPUTimes(m.pid)
	}
	for _, p := range append(Descendants(m.pid), m.pid) {
		u, s, err := CPUTimes(p)
		if err != nil {
			if p == m.pid {
				return 0, 0, err
			}
			continue // ended meanwhile
		}
		user, sys = user+u, sys+s
	}
	return user, sys, nil
}

// Descendants returns the live processes below pid, found by their parent ids in /proc.
func Descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			parent[p] = pp
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// RSS reads the resident set size of process pid (VmRSS of /proc/<pid>/status) in bytes.
func RSS(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("proc: VmRSS %q: %w", v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("proc: no VmRSS for process %d", pid)
}

// LoadAverage returns the machine's one-minute load average (/proc/loadavg): on a shared
// machine it says how much else competed for the cores during a measurement.
func LoadAverage() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("proc: empty /proc/loadavg")
	}
	return strconv.ParseFloat(f[0], 64)
}
