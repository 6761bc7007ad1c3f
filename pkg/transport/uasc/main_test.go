package uasc

import (
	"flag"
	"os"
	"testing"
)

// TestMain lets the channel tests, which mostly wait on timers and sockets, run more
// parallel subtests than there are CPUs, unless -parallel is given.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "16")
	}
	os.Exit(m.Run())
}
