package measure

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes cmd's process get SIGKILL when this process dies,
// even by SIGKILL: a killed tune leaves no harness, runner or compiler
// driver running. (The compiler's own children, cc1 and as, finish the
// file they are on and exit: the driver that would start the next is
// gone.) Call it before cmd starts.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// processGone reports whether no process has the given pid.
func processGone(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}
