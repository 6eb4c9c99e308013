//go:build !linux

package measure

import "os/exec"

// DieWithParent is a no-op where the system cannot tie a child's life to
// its parent's (see child_linux.go).
func DieWithParent(cmd *exec.Cmd) {}

// processGone reports false: without a reliable check, nothing is swept.
func processGone(pid int) bool { return false }
