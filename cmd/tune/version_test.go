package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/measure"
)

// TestVersion: tune --version and tune version print the same lines: the
// module, the commit, the C ABI, Go and the C compiler, resolved as the
// measure package resolves it.
func TestVersion(t *testing.T) {
	var outs []string
	for _, args := range [][]string{{"--version"}, {"version"}, {"-version"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("tune %s: exit %d: %s", args[0], code, stderr.String())
		}
		outs = append(outs, stdout.String())
	}
	if outs[0] != outs[1] || outs[0] != outs[2] {
		t.Errorf("tune --version, version and -version differ:\n%s\n%s\n%s", outs[0], outs[1], outs[2])
	}
	cc := (&measure.Builder{}).CompilerInfo()
	for _, want := range []string{"\ncommit     ", "\nC ABI      4\n", "\nGo         " + runtime.Version() + " ", "\nC compiler " + strings.Join(cc.Command, " ") + " (" + cc.Path + "): " + cc.Version + "\n"} {
		if !strings.Contains(outs[0], want) {
			t.Errorf("tune --version printed\n%s\nwant a line %q", outs[0], strings.TrimSpace(want))
		}
	}
	if !strings.HasPrefix(outs[0], "tune       ") {
		t.Errorf("tune --version printed\n%s\nwant the module first", outs[0])
	}
	var stderr bytes.Buffer
	if code := run([]string{"version", "extra"}, new(bytes.Buffer), &stderr); code != 1 || !strings.Contains(stderr.String(), "no arguments") {
		t.Errorf("tune version extra: exit %d, %q", code, stderr.String())
	}
}
