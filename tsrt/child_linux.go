package tsrt

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes cmd's process get SIGKILL when this process dies,
// even by SIGKILL (as measure.DieWithParent does for the harnesses).
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
