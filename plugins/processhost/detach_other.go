//go:build !linux

package processhost

import "os/exec"

// dieWithHost does nothing where the kernel cannot kill a child with its parent: a
// plugin of package sdk/process notices its parent is gone and exits.
var dieWithHost = func(*exec.Cmd) {}
