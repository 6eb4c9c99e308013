package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestParseFlagsAnywhere(t *testing.T) {
	for _, c := range []struct {
		args []string
		pos  []string
		n    int
	}{
		{[]string{"m.onnx", "-n", "3"}, []string{"m.onnx"}, 3},
		{[]string{"-n", "2", "a", "b", "-n", "4"}, []string{"a", "b"}, 4},
		{[]string{"a", "--", "-n", "5"}, []string{"a", "-n", "5"}, 0},
	} {
		fs := NewFlagSet("t", io.Discard, nil)
		n := fs.Int("n", 0, "")
		pos, err := Parse(fs, c.args)
		if err != nil || !slices.Equal(pos, c.pos) || *n != c.n {
			t.Errorf("Parse(%q) = %q, n %d, %v; want %q, n %d", c.args, pos, *n, err, c.pos, c.n)
		}
	}
	var out bytes.Buffer
	fs := NewFlagSet("tune x", &out, nil)
	SetUsage(fs, "usage: tune x\n")
	if _, err := Parse(fs, []string{"--bogus"}); !errors.Is(err, ErrUsage) || !strings.HasSuffix(out.String(), "run 'tune x -h' for usage\n") {
		t.Errorf("a wrong flag: %v, %q", err, out.String())
	}
	out.Reset()
	if _, err := Parse(fs, []string{"-h"}); !errors.Is(err, flag.ErrHelp) || out.String() != "usage: tune x\n" {
		t.Errorf("-h: %v, %q", err, out.String())
	}
}

func TestFlagValues(t *testing.T) {
	s := Shapes{}
	if err := s.Set("x=1,3,8,8"); err != nil || s.String() != "x=1,3,8,8" {
		t.Errorf("Shapes: %v, %q", err, s)
	}
	for _, bad := range []string{"x=1,3", "y=0", "=1", "z", "w=3x,1", "v=-1"} {
		if s.Set(bad) == nil {
			t.Errorf("Shapes.Set(%q) succeeded", bad)
		}
	}
	if err := s.Set("ids=batch_size, 128"); err != nil || fmt.Sprint(s.Dims()["ids"]) != "[-1 128]" || fmt.Sprint(s.Names()) != "map[ids:[batch_size ]]" {
		t.Errorf("a named dimension: %v, dims %v, names %q", err, s.Dims(), s.Names())
	}
	r := Ranges{}
	if err := r.Set("N=1..16"); err != nil || r.String() != "N=1..16" {
		t.Errorf("Ranges: %v, %q", err, r)
	}
	for _, bad := range []string{"N=2..8", "S=0..4", "S=8..4", "S=4", "=1..2", "S=a..b"} {
		if r.Set(bad) == nil {
			t.Errorf("Ranges.Set(%q) succeeded", bad)
		}
	}
	w := Weights{}
	if err := w.Set("S=16:0.5, 128:0.3,256:2e-1"); err != nil || w.String() != "S=16:0.5,128:0.3,256:0.2" {
		t.Errorf("Weights: %v, %q", err, w)
	}
	for _, bad := range []string{"S=1:1", "B=1", "B=0:1", "B=2:0", "B=2:-1", "B=2:x", "B=2:1,2:3", "=2:1", "B=", "B=2:+Inf"} {
		if w.Set(bad) == nil {
			t.Errorf("Weights.Set(%q) succeeded", bad)
		}
	}
	if err := w.Within(Ranges{"S": {16, 256}}); err != nil {
		t.Errorf("Weights.Within(S=16..256): %v", err)
	}
	for _, c := range []struct {
		r    Ranges
		want string
	}{
		{Ranges{"T": {16, 256}}, "--weights S=...: S has no --range"},
		{Ranges{"S": {16, 128}}, "--weights: a weight on S=256, outside --range S=16..128"},
	} {
		if err := w.Within(c.r); err == nil || err.Error() != c.want {
			t.Errorf("Weights.Within(%v): %v, want %q", c.r, err, c.want)
		}
	}
	v := Values{}
	if err := v.Set("sr= 16000"); err != nil || v.String() != "sr=16000" || v.Set("sr=1") == nil || v.Set("q=") == nil {
		t.Errorf("Values: %v, %q", err, v)
	}
	n := Names{}
	n.Set("cse, dce")
	n.Set("cse")
	if n.String() != "cse,dce" {
		t.Errorf("Names = %q", n)
	}
	f := Files{}
	if err := f.Set("a.npy"); err != nil || f[""] != "a.npy" || f.Set("x=") == nil || f.Set("b.npy") == nil {
		t.Errorf("Files: %v, %v", err, f)
	}
	for in, want := range map[string]Bytes{"8GiB": 8 << 30, "512MiB": 512 << 20, "8G": 8 << 30, "1048576": 1 << 20, "4 KiB": 4 << 10} {
		var b Bytes
		if err := b.Set(in); err != nil || b != want {
			t.Errorf("Bytes.Set(%q) = %d, %v; want %d", in, b, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1", "1.5G", "9999999999T", "GiB"} {
		var b Bytes
		if b.Set(bad) == nil {
			t.Errorf("Bytes.Set(%q) succeeded", bad)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := OneLine("a\n  b\n\nc\x1b[31m\xff"); got != `a; b; c\x1b[31m\xff` {
		t.Errorf("OneLine = %q", got)
	}
	if got := PrintableLines("x\u0085\ny"); got != "x\\u0085\ny" {
		t.Errorf("PrintableLines = %q", got)
	}
}

func TestMainExitStatus(t *testing.T) {
	p := Program{Name: "p", Default: Command{Name: "[flags] x", Summary: "default"}, Commands: []Command{
		{Name: "ok", Summary: "succeeds", Run: func([]string, io.Writer, io.Writer) error { return nil }},
		{Name: "fail", Summary: "fails", Run: func([]string, io.Writer, io.Writer) error { return errors.New("one\ntwo") }},
		{Name: "usage", Summary: "wrong arguments", Run: func([]string, io.Writer, io.Writer) error { return ErrUsage }},
		{Name: "stop", Summary: "stopped", Run: func([]string, io.Writer, io.Writer) error {
			return &InterruptedError{Signal: syscall.SIGTERM, Msg: "kept"}
		}},
		{Name: "bug", Summary: "panics", Run: func([]string, io.Writer, io.Writer) error { panic("oops") }},
	}}
	p.Default.Run = func(args []string, _, _ io.Writer) error { return errors.New("default " + strings.Join(args, " ")) }
	for _, c := range []struct {
		args   []string
		status int
		stderr string
	}{
		{nil, 1, "usage:\n  p [flags] x                 default\n  p ok ...                     succeeds\n"},
		{[]string{"-h"}, 0, "usage:\n"},
		{[]string{"ok"}, 0, ""},
		{[]string{"fail"}, 1, "p fail: one; two\n"},
		{[]string{"usage"}, 1, ""},
		{[]string{"stop"}, 143, "p stop: interrupted by SIGTERM: kept\n"},
		{[]string{"bug"}, 2, "p: internal error (a bug in tessera; please report it with the command line): oops\n"},
		{[]string{"x.onnx"}, 1, "p: default x.onnx\n"},
	} {
		var stderr bytes.Buffer
		if status := p.Main(c.args, io.Discard, &stderr); status != c.status || !strings.HasPrefix(stderr.String(), c.stderr) || (c.stderr == "" && stderr.Len() > 0) {
			t.Errorf("Main(%q) = %d, %q; want %d, %q", c.args, status, stderr.String(), c.status, c.stderr)
		}
	}
}
