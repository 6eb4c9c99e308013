package main

import (
	"bytes"
	"runtime"
	"runtime/debug"
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

// TestVersionText: the module's version and the commit as go build
// records them, and what is printed where they are absent.
func TestVersionText(t *testing.T) {
	cc := measure.CompilerInfo{Command: []string{"gcc-12"}, Path: "/usr/bin/gcc-12", Version: "gcc-12 (Debian 12.2.0-14) 12.2.0"}
	stamped := &debug.BuildInfo{Main: debug.Module{Path: "example.org/tessera", Version: "v0.2.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-12-06T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := versionText(stamped, cc)
	want := "tune       example.org/tessera v0.2.0\n" +
		"commit     0123456789abcdef0123456789abcdef01234567 2026-12-06T10:00:00Z (with uncommitted changes)\n" +
		"C ABI      4\n" +
		"Go         " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n" +
		"C compiler gcc-12 (/usr/bin/gcc-12): gcc-12 (Debian 12.2.0-14) 12.2.0\n"
	if got != want {
		t.Errorf("stamped:\n%s\nwant\n%s", got, want)
	}
	for _, bi := range []*debug.BuildInfo{nil, {}} {
		got := versionText(bi, cc)
		if !strings.HasPrefix(got, "tune       tessera (devel)\ncommit     (devel): none recorded") {
			t.Errorf("without build information:\n%s", got)
		}
	}
}
