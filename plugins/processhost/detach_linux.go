//go:build linux

package processhost

import (
	"os/exec"
	"syscall"
)

// dieWithHost has the kernel kill the process when the host dies, even by SIGKILL
// (a variable, so that a test can check that the plugin exits by itself too).
// The signal follows the thread that started the process; Go's runtime keeps its
// threads unless a goroutine locked to one exits, which the host does not do.
var dieWithHost = func(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
