//go:build !linux

package tsrt

import "os/exec"

// dieWithParent does nothing where the kernel cannot kill a child with
// its parent.
func dieWithParent(cmd *exec.Cmd) {}
