package cli

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// toyFlags are the flags of toy's default command.
type toyFlags struct {
	db    string
	n     int
	quiet bool
}

func (f *toyFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.db, "db", "x.db", "records database `FILE`")
	fs.IntVar(&f.n, "n", 1, "how many: a number")
	fs.BoolVar(&f.quiet, "quiet", false, "say less")
}

// toy is a program with a default command, a command without verbs and
// one with verbs, each parsing as tune's commands do.
func toy() *Program {
	p := &Program{Name: "toy", Default: Command{Name: "[flags] model.onnx", Summary: "the default", Run: func(args []string, _, stderr io.Writer) error {
		var f toyFlags
		_, err := Parse(NewFlagSet("toy", stderr, &f), args)
		return err
	}}}
	p.Commands = []Command{
		{Name: "bench", Summary: "time: a build", Run: func(args []string, _, stderr io.Writer) error {
			fs := NewFlagSet("toy bench", stderr, nil)
			fs.String("trace", "", "write a trace `FILE`")
			fs.String("o", "", "output `DIR`")
			fs.Bool("profile", false, "profile it")
			_, err := Parse(fs, args)
			return err
		}},
		{Name: "records", Summary: "records' verbs", Run: func(args []string, _, stderr io.Writer) error {
			verb, args, err := Verb(stderr, "usage: toy records export|plot", args, "export", "plot")
			if err != nil {
				return err
			}
			fs := NewFlagSet("toy records "+verb, stderr, nil)
			fs.String("o", "-", "output `FILE`")
			if verb == "plot" {
				fs.Bool("log", false, "log scale")
			}
			_, err = Parse(fs, args)
			return err
		}},
		{Name: "lazy", Summary: "works before it parses", Run: func([]string, io.Writer, io.Writer) error { return errors.New("worked") }},
	}
	return p
}

var toyCompletion = Completion{
	Args:   map[string]Arg{"": FileArg("*.onnx"), "bench": DirArg, "records plot": FileArg("*.onnx")},
	Values: map[string]Arg{"bench:trace": FileArg("*.json"), "db": FileArg("*.db")},
}

func TestDescribe(t *testing.T) {
	p := toy()
	d, err := Describe(p.Commands[1])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Verbs, []string{"export", "plot"}) || d.Flags["plot"].Lookup("log") == nil || d.Flags["export"].Lookup("log") != nil {
		t.Errorf("records described as %v, %v", d.Verbs, d.Flags)
	}
	// A command that does not parse first is refused, not run further.
	if _, err := Describe(p.Commands[2]); err == nil || !strings.Contains(err.Error(), "worked") {
		t.Errorf("Describe(lazy) = %v", err)
	}
	// Verb outside Describe: the verb, -h, none, an unknown one.
	var stderr bytes.Buffer
	if v, rest, err := Verb(&stderr, "usage: u", []string{"plot", "-x"}, "export", "plot"); v != "plot" || !slices.Equal(rest, []string{"-x"}) || err != nil {
		t.Errorf("Verb = %q, %q, %v", v, rest, err)
	}
	if _, _, err := Verb(&stderr, "usage: u", []string{"-h"}, "plot"); err != flag.ErrHelp || stderr.String() != "usage: u\n" {
		t.Errorf("Verb -h = %v, %q", err, stderr.String())
	}
	stderr.Reset()
	if _, _, err := Verb(&stderr, "usage: u", []string{"fit"}, "export", "plot"); err != ErrUsage || stderr.String() != "unknown verb \"fit\" (export, plot)\nusage: u\n" {
		t.Errorf("Verb fit = %v, %q", err, stderr.String())
	}
}

// TestCompletionBash runs the bash script on command lines and checks
// what it offers.
func TestCompletionBash(t *testing.T) {
	p := toy()
	p.Commands = p.Commands[:2]
	var script bytes.Buffer
	if err := p.WriteCompletion(&script, "bash", toyCompletion); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteCompletion(io.Discard, "fish", toyCompletion); err == nil {
		t.Error("a fish script")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	for _, f := range []string{"m.onnx", "n.onnx", "t.json", "r.db", "notes.txt", "build/manifest.json"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scriptPath := filepath.Join(dir, "toy.bash")
	if err := os.WriteFile(scriptPath, script.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		line string // the words, the last one being completed
		want []string
	}{
		{"toy ''", []string{"bench", "build/", "m.onnx", "n.onnx", "records"}},
		{"toy b", []string{"bench", "build/"}},
		{"toy -", []string{"--db", "--quiet", "-n"}},
		{"toy --db ''", []string{"build/", "r.db"}},
		{"toy --db = ''", []string{"build/", "r.db"}},
		{"toy --n ''", nil},
		{"toy --quiet ''", []string{"build/", "m.onnx", "n.onnx"}},
		{"toy bench ''", []string{"build/"}},
		{"toy bench --", []string{"--profile", "--trace"}},
		{"toy bench -", []string{"--profile", "--trace", "-o"}},
		{"toy bench x --trace ''", []string{"build/", "t.json"}},
		{"toy bench -o ''", []string{"build/"}},
		{"toy records ''", []string{"export", "plot"}},
		{"toy records plot -", []string{"--log", "-o"}},
		{"toy records plot ''", []string{"build/", "m.onnx", "n.onnx"}},
		{"toy records export -o ''", []string{"build/", "m.onnx", "n.onnx", "notes.txt", "r.db", "t.json", "toy.bash"}},
	} {
		// compopt works only inside a completion: the test's bash stubs
		// it, and marks directories as readline would with -o filenames.
		prog := `source "$1"; compopt() { :; }; COMP_WORDS=(` + c.line + `); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _toy
for w in "${COMPREPLY[@]}"; do if [[ -d $w ]]; then printf '%s/\n' "$w"; else printf '%s\n' "$w"; fi; done`
		cmd := exec.Command(bash, "--norc", "-c", prog, "bash", scriptPath)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.line, err, out)
		}
		got := strings.Fields(string(out))
		slices.Sort(got)
		if got = slices.Compact(got); !slices.Equal(got, c.want) {
			t.Errorf("%s: offered %q, want %q", c.line, got, c.want)
		}
	}
}

// TestCompletionZsh checks the zsh script names every command, verb and
// flag, and parses (where zsh is installed).
func TestCompletionZsh(t *testing.T) {
	p := toy()
	p.Commands = p.Commands[:2]
	var script bytes.Buffer
	if err := p.WriteCompletion(&script, "zsh", toyCompletion); err != nil {
		t.Fatal(err)
	}
	s := script.String()
	for _, want := range []string{"#compdef toy\n", "'bench:time\\: a build'", "'records export') flags=", "words 'export' 'plot'",
		"'bench:trace') _toy_complete files '*.json'", "':db') _toy_complete files '*.db'", "'--quiet:say less'", "'-o:output DIR'", "compdef _toy toy"} {
		if !strings.Contains(s, want) {
			t.Errorf("zsh script lacks %q:\n%s", want, s)
		}
	}
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("no zsh")
	}
	scriptPath := filepath.Join(t.TempDir(), "_toy")
	if err := os.WriteFile(scriptPath, script.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// Outside a completion, the completion system's functions are
	// stubs that print what they were asked to offer.
	for _, c := range []struct{ line, want string }{
		{"toy ''", "_describe bench:time\\: a build records:records' verbs\n_files -g *.onnx"},
		{"toy -", "_describe --db:records database FILE -n:how many\\: a number --quiet:say less"},
		{"toy --db ''", "_files -g *.db"},
		{"toy --db=x", "_files -g *.db"},
		{"toy --n ''", ""},
		{"toy bench ''", "_files -/"},
		{"toy bench x --trace ''", "_files -g *.json"},
		{"toy records ''", "compadd -- export plot"},
		{"toy records plot -", "_describe --log:log scale -o:output FILE"},
		{"toy records export -o ''", "_files"},
	} {
		prog := `compdef() { :; }; compset() { :; }; compadd() { print -r -- "compadd $*"; }; _files() { print -r -- "_files $*"; }
_describe() { print -r -- "_describe ${(P)4}"; }; source "$1"; words=(` + c.line + `); CURRENT=${#words}; _toy`
		out, err := exec.Command(zsh, "-f", "-c", prog, "zsh", scriptPath).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.line, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("%s: offered %q, want %q", c.line, got, c.want)
		}
	}
}

// TestCompletionCommand: toy's completion command writes WriteCompletion's
// script for the shell named, says its usage for -h and for no shell or
// two, and refuses a shell it has no script for; it completes its own
// argument, the shells.
func TestCompletionCommand(t *testing.T) {
	p := toy()
	p.Commands = append(p.Commands[:2], p.CompletionCommand("print a completion script", "usage: toy completion bash|zsh\n\nhelp\n", toyCompletion))
	var want bytes.Buffer
	if err := p.WriteCompletion(&want, "zsh", toyCompletion); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args           []string
		status         int
		stdout, stderr string // stdout: want's where "zsh"
	}{
		{[]string{"completion", "zsh"}, 0, "zsh", ""},
		{[]string{"completion", "-h"}, 0, "", "usage: toy completion bash|zsh\n\nhelp\n"},
		{[]string{"completion"}, 1, "", "usage: toy completion bash|zsh\n"},
		{[]string{"completion", "bash", "zsh"}, 1, "", "usage: toy completion bash|zsh\n"},
		{[]string{"completion", "fish"}, 1, "", "toy completion: no completion for shell \"fish\" (bash, zsh)\n"},
	} {
		var stdout, stderr bytes.Buffer
		status := p.Main(c.args, &stdout, &stderr)
		if c.stdout == "zsh" {
			c.stdout = want.String()
		}
		if status != c.status || stdout.String() != c.stdout || stderr.String() != c.stderr {
			t.Errorf("toy %s: status %d, stdout %d bytes, stderr %q; want %d, %d bytes, %q", strings.Join(c.args, " "), status, stdout.Len(), stderr.String(), c.status, len(c.stdout), c.stderr)
		}
	}
	var script bytes.Buffer
	if err := p.WriteCompletion(&script, "bash", Completion{Args: map[string]Arg{"completion": WordArg(Shells...)}}); err != nil || !strings.Contains(script.String(), "completion") {
		t.Errorf("the completion command completes as %v:\n%s", err, script.String())
	}
}
