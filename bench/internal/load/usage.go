package load

import (
	"fmt"
	"os"
	"strconv"
	"strings"
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
	rss, err := RSS(pid)
	return Usage{CPU: cpu, RSS: rss}, err
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
				return 0, fmt.Errorf("load: VmRSS %q: %w", v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("load: no VmRSS for process %d", pid)
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
		return 0, fmt.Errorf("load: empty /proc/loadavg")
	}
	return strconv.ParseFloat(f[0], 64)
}
