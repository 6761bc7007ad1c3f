//go:build !unix

package redundancy

import "time"

// ProcessCPU reports false: this system's CPU time is not read, so the load leaves the
// CPU out.
func ProcessCPU() (time.Duration, bool) { return 0, false }
