package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestHostileInputs is the hostile-input campaign of issue 11 as a test:
// crafted models, truncated and byte-flipped ones, tampered databases,
// builds and cost models, hostile names and flags, signals, and kill -9 at
// random moments followed by resume (campaign_cases_test.go). Every case
// runs the tune binary in a child process with a time limit and a memory
// limit (ulimit -v), and is classified:
//
//	clear error  a non-zero exit with one printable line naming what is wrong
//	ok           exit 0, with the output the case checks (values, records)
//	failure      a panic or stack trace, a hang past the deadline, a crash
//	             out of memory, a non-zero exit without a one-line error,
//	             exit 0 where an error was due or with wrong output, or a
//	             stored record lost
//
// It fails on any failure and logs "N cases: E clear errors, K ok, 0 failures".
func TestHostileInputs(t *testing.T) {
	start := time.Now()
	env := newCampaign(t)
	var results []caseResult
	for _, phase := range campaignPhases(env) {
		results = append(results, env.runAll(phase())...)
	}
	results = append(results, env.killLoop()...)
	var clear, ok, failed int
	for _, r := range results {
		switch r.outcome {
		case clearError:
			clear++
		case okOutcome:
			ok++
		default:
			failed++
			t.Errorf("%s: %s\n  tune %s\n  exit %d after %v\n  stderr: %s", r.name, r.why, strings.Join(r.args, " "), r.code, r.took.Round(time.Millisecond), lastLines(r.stderr, 6))
		}
	}
	line := fmt.Sprintf("%d cases: %d clear errors, %d ok, %d failures", len(results), clear, ok, failed)
	t.Log(line + fmt.Sprintf(" (%v)", time.Since(start).Round(time.Second)))
	fmt.Println(line)
}

type outcome int

const (
	failure outcome = iota
	clearError
	okOutcome
)

// expect is what a case allows.
type expect int

const (
	wantError  expect = iota // a clear error
	wantOK                   // exit 0
	wantEither               // either (a damaged file may still be a model)
)

// campaignCase is one run of tune.
type campaignCase struct {
	name    string
	args    []string
	expect  expect
	msg     string        // the error must contain it (wantError)
	timeout time.Duration // 0: 60 s
	// check, when set, judges the run further (the output's values, the
	// records); a non-nil error is a failure.
	check func(r result) error
	// signal, when set, is sent once stderr shows a line with prefix
	// signalAfter (the first committed round).
	signal      syscall.Signal
	signalAfter string
	exitCode    int // the expected non-zero status; 0 means 1
}

type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
	timedOut       bool
}

type caseResult struct {
	name    string
	args    []string
	outcome outcome
	why     string
	result
}

// campaign holds the tune binary and the case files.
type campaign struct {
	t   *testing.T
	dir string
	bin string
	env []string
}

func newCampaign(t *testing.T) *campaign {
	dir := t.TempDir()
	c := &campaign{t: t, dir: dir, bin: filepath.Join(dir, "tune")}
	if out, err := exec.Command("go", "build", "-o", c.bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, d := range []string{"home", "cache", "tmp", "models", "work"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Every child gets a home, a build cache and a temporary directory of
	// its own, so that the campaign can look for what a killed run left.
	c.env = append(os.Environ(), "HOME="+filepath.Join(dir, "home"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"),
		"TMPDIR="+filepath.Join(dir, "tmp"), "TESSERA_DEBUG=")
	return c
}

// path returns a path under the campaign's directory.
func (c *campaign) path(parts ...string) string {
	return filepath.Join(append([]string{c.dir}, parts...)...)
}

// memoryLimitKB is the address space every child gets (ulimit -v): far
// less than the terabytes the crafted shapes ask for, far more than any
// legitimate case needs.
const memoryLimitKB = 6 << 20

// run runs one case.
func (c *campaign) run(cc campaignCase) result {
	timeout := cc.timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	script := fmt.Sprintf(`ulimit -v %d; exec "$0" "$@"`, memoryLimitKB)
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", script, c.bin}, cc.args...)...)
	cmd.Env = c.env
	cmd.Dir = c.path("work")
	var stdout strings.Builder
	cmd.Stdout = &stdout
	stderrPipe, err := cmd.StderrPipe()
	if err != nil {
		return result{code: -1, stderr: err.Error()}
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return result{code: -1, stderr: err.Error()}
	}
	var stderr strings.Builder
	sc := bufio.NewScanner(stderrPipe)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		stderr.WriteString(line + "\n")
		if cc.signal != 0 && !sent && strings.HasPrefix(line, cc.signalAfter) {
			cmd.Process.Signal(cc.signal)
			sent = true
		}
	}
	err = cmd.Wait()
	r := result{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start), timedOut: ctx.Err() != nil}
	if err != nil {
		r.code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				r.code = 128 + int(ws.Signal())
			}
		}
	}
	return r
}

// stackMarkers are what a panic, a runtime fatal error or a Go stack
// trace print.
var stackMarkers = regexp.MustCompile(`(?m)^goroutine \d+|^panic: |fatal error: |runtime error|internal error|\.go:\d+ \+0x`)

// errorLine is the one line of a clear error: "tune[ command]: message".
var errorLine = regexp.MustCompile(`^tune( [a-z]+)*: \S`)

// judge classifies a run of a case.
func judge(cc campaignCase, r result) (outcome, string) {
	if r.timedOut {
		return failure, "hang: no exit before the deadline"
	}
	if m := stackMarkers.FindString(r.stderr + r.stdout); m != "" {
		return failure, fmt.Sprintf("panic or stack trace (%q)", m)
	}
	if r.code == 0 {
		if cc.expect == wantError {
			return failure, "exit 0 where an error was due"
		}
		if cc.check != nil {
			if err := cc.check(r); err != nil {
				return failure, "exit 0 with wrong output: " + err.Error()
			}
		}
		return okOutcome, ""
	}
	if cc.expect == wantOK {
		return failure, fmt.Sprintf("exit %d where success was due", r.code)
	}
	want := cc.exitCode
	if want == 0 {
		want = 1
	}
	if r.code != want {
		return failure, fmt.Sprintf("exit status %d, want %d", r.code, want)
	}
	last := lastLines(r.stderr, 1)
	if l := strings.ToLower(last); !errorLine.MatchString(last) && !strings.HasPrefix(l, "run 'tune") && !strings.HasPrefix(l, "usage: tune") {
		return failure, fmt.Sprintf("no one-line error: the last line is %q", last)
	}
	if strings.ContainsFunc(last, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return failure, fmt.Sprintf("the error line holds control characters: %q", last)
	}
	if cc.msg != "" && !strings.Contains(r.stderr+r.stdout, cc.msg) {
		return failure, fmt.Sprintf("the error does not say %q", cc.msg)
	}
	if cc.check != nil {
		if err := cc.check(r); err != nil {
			return failure, err.Error()
		}
	}
	return clearError, ""
}

// runAll runs cases on all CPUs and judges them.
func (c *campaign) runAll(cases []campaignCase) []caseResult {
	out := make([]caseResult, len(cases))
	var wg sync.WaitGroup
	work := make(chan int)
	for range runtime.NumCPU() {
		wg.Go(func() {
			for i := range work {
				r := c.run(cases[i])
				o, why := judge(cases[i], r)
				out[i] = caseResult{name: cases[i].name, args: cases[i].args, outcome: o, why: why, result: r}
			}
		})
	}
	for i := range cases {
		work <- i
	}
	close(work)
	wg.Wait()
	sort.SliceStable(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// lastLines returns the last n non-empty lines of s.
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
