// Package pytest finds the Python the tests run the runtime's Python
// package (tsrt/python/tessera) with: a python3 that imports numpy.
// Where there is none a test is skipped, naming the install step, unless
// TESSERA_REQUIRE_PYTHON is set (scripts/test.sh sets it: CI installs it,
// and a check that silently skips there hides a failure).
package pytest

import (
	"os"
	"os/exec"
	"testing"
)

// Require returns the python3 that imports numpy, or skips the test.
func Require(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import numpy").Run() == nil {
			return py
		}
	}
	msg := "no python3 with numpy (scripts/deps.sh installs python3-numpy)"
	if os.Getenv("TESSERA_REQUIRE_PYTHON") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
