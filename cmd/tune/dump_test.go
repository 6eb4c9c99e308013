package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestInspectDump: tune inspect --dump list names the passes of the
// target; --dag N --dump PASS prints task N's kernel after that pass, a
// different one after lowering than after the code generator's passes;
// a pass that makes no function, an unknown one and a missing --dag are
// errors that say so.
func TestInspectDump(t *testing.T) {
	model := "../../testdata/tiny.onnx"
	list := tuneCmd(t, "inspect", model, "--dump", "list")
	for _, p := range []string{"lower/nest", "lower/check-scopes", "codegen/unroll", "codegen/forward-updates"} {
		if !strings.Contains(list, p+"\n") {
			t.Errorf("--dump list lacks %s:\n%s", p, list)
		}
	}
	nest := tuneCmd(t, "inspect", model, "--dag", "0", "--dump", "lower/nest")
	last := tuneCmd(t, "inspect", model, "--dag", "0", "--dump", "forward-updates")
	if !strings.Contains(nest, "func task0(") || !strings.Contains(nest, "after lower/nest") || nest == last {
		t.Errorf("the dumps:\n%s\n%s", nest, last)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dag", "0", "--dump", "lower/bound"}, "makes no function"},
		{[]string{"--dag", "0", "--dump", "codegen/nope"}, "no such pass"},
		{[]string{"--dump", "lower/nest"}, "needs --dag N"},
	} {
		var stdout, stderr bytes.Buffer
		if st := run(append([]string{"inspect", model}, c.args...), &stdout, &stderr); st == 0 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: status %d, stderr %q, want an error containing %q", c.args, st, stderr.String(), c.want)
		}
	}
}
