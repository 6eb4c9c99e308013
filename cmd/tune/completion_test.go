package main

import (
	"bytes"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/internal/cli"
)

// TestCompletion checks the completion scripts against what tune says of
// itself: every command `tune -h` lists, every verb a command names when
// given an unknown one, and every flag `-h` prints for each is in both
// scripts, under its command.
func TestCompletion(t *testing.T) {
	help := func(args ...string) string {
		var stderr bytes.Buffer
		run(args, io.Discard, &stderr)
		return stderr.String()
	}
	commands := []string{""} // the default command
	for _, m := range regexp.MustCompile(`(?m)^  tune (\S+) \.\.\. `).FindAllStringSubmatch(help("-h"), -1) {
		commands = append(commands, m[1])
	}
	if len(commands) < 9 {
		t.Fatalf("tune -h lists %d commands: %q", len(commands)-1, commands[1:])
	}
	// keys are the commands and verbs, each with its flags.
	keys := map[string][]string{}
	flagRE := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`)
	flags := func(args ...string) []string {
		var out []string
		for _, m := range flagRE.FindAllStringSubmatch(help(append(args, "-h")...), -1) {
			out = append(out, m[1])
		}
		return out
	}
	verbs := map[string][]string{}
	for _, c := range commands {
		if c == "" {
			keys[""] = flags("model.onnx")
			continue
		}
		if m := regexp.MustCompile(`unknown verb "zzz" \(([^)]*)\)`).FindStringSubmatch(help(c, "zzz")); m != nil {
			verbs[c] = strings.Split(m[1], ", ")
			for _, v := range verbs[c] {
				keys[c+" "+v] = flags(c, v)
			}
			continue
		}
		keys[c] = flags(c)
	}
	if len(keys[""]) < 20 || len(keys["bench"]) < 5 || len(verbs["records"]) != 5 {
		t.Fatalf("tune's help: %d flags of tune, %d of tune bench, records verbs %q", len(keys[""]), len(keys["bench"]), verbs["records"])
	}
	for _, shell := range cli.Shells {
		script := tuneCmd(t, "completion", shell)
		lines := strings.Split(script, "\n")
		// line returns the line of the script that starts with prefix
		// after tabs.
		line := func(prefix string) string {
			for _, l := range lines {
				if strings.HasPrefix(strings.TrimLeft(l, "\t"), prefix) {
					return l
				}
			}
			return ""
		}
		names, _, _ := strings.Cut(strings.TrimSpace(line("inspect|")), ")")
		for _, c := range commands[1:] {
			if !slices.Contains(strings.Split(names, "|"), c) {
				t.Errorf("%s: command %s is not among the commands: %s", shell, c, names)
			}
		}
		for c, vs := range verbs {
			want := c + ")\n\t\tif ((COMP_CWORD == 2)); then _tune_complete words '" + strings.Join(vs, "' '") + "'"
			if shell == "zsh" {
				want = c + ")\n\t\tif (( CURRENT == 3 )); then _tune_complete words '" + strings.Join(vs, "' '") + "'"
			}
			if !strings.Contains(script, want) {
				t.Errorf("%s: the verbs of %s (%q) are not completed", shell, c, vs)
			}
		}
		for key, fl := range keys {
			// The line that completes the key's flags.
			var l string
			if shell == "bash" {
				l = line("'" + key + "') _tune_complete words")
			} else {
				l = line("'" + key + "') flags=(")
			}
			for _, f := range fl {
				word := "--" + f
				if len(f) == 1 {
					word = "-" + f
				}
				if !strings.Contains(l, " '"+word+"'") && !strings.Contains(l, "'"+word+":") {
					t.Errorf("%s: flag %s of %q is not completed: %s", shell, word, key, l)
				}
			}
		}
	}
	// What some values complete to.
	script := tuneCmd(t, "completion", "bash")
	for _, want := range []string{"'bench:trace') _tune_complete files '*.json'", "'bench:plot') _tune_complete files '*.svg' '*.png'", "'build:db') _tune_complete files '*.db'", "'build:o') _tune_complete dir",
		"'bench') _tune_complete dir", "'') _tune_complete files '*.onnx'", "'records plot:o') _tune_complete files '*.svg' '*.png'", "'completion') _tune_complete words 'bash' 'zsh'"} {
		if !strings.Contains(script, want) {
			t.Errorf("bash script lacks %q", want)
		}
	}
	if st := run([]string{"completion", "fish"}, io.Discard, io.Discard); st != 1 {
		t.Errorf("tune completion fish: status %d", st)
	}
}
