// Package crosstest finds the tools the tests use to check code built for
// another architecture: Debian's aarch64 cross compiler and qemu-user.
// Where they are missing a test is skipped, naming the install step,
// unless TESSERA_REQUIRE_CROSS is set (scripts/test.sh sets it: CI installs
// them, and a check that silently skips there hides a failure).
package crosstest

import (
	"os"
	"os/exec"
	"testing"
)

// Aarch64 are the tools for aarch64 code: the C compiler, and the command
// that runs one of its programs here.
type Aarch64 struct {
	CC   string
	Exec []string // qemu-aarch64 -L SYSROOT
}

// RequireAarch64 returns the aarch64 tools, or skips t (fails it under
// TESSERA_REQUIRE_CROSS) when one is missing.
func RequireAarch64(t testing.TB) Aarch64 {
	t.Helper()
	cc, qemu := "aarch64-linux-gnu-gcc", "qemu-aarch64"
	for _, tool := range []string{cc, qemu} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := tool + " is missing (scripts/deps.sh installs gcc-aarch64-linux-gnu and qemu-user)"
			if os.Getenv("TESSERA_REQUIRE_CROSS") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return Aarch64{CC: cc, Exec: []string{qemu, "-L", "/usr/aarch64-linux-gnu"}}
}
