// Command tune is Tessera's command line: it tunes the kernels of an ONNX
// model and inspects what it would tune.
//
//	tune [flags] model.onnx          tune the model's tasks, recording every measurement
//	tune inspect model.onnx [flags]  print the graph, fused groups and tasks
//	tune build model.onnx -o DIR     compile the model from the records (package build)
//	tune run DIR --input x=FILE      run a built model; tune bench DIR times it
//	tune records VERB [flags]        export, import, distill, stats, plot
//	tune costmodel train|eval        train a cost model on records, evaluate one
//	tune worker --nats URL           measure jobs sent by `tune --nats` (package measure/remote)
//
// Each subcommand is an entry of the commands table; main only dispatches.
// Every failure is a one-line message on stderr and exit status 1; a run
// stopped by Ctrl-C or SIGTERM exits 130 or 143 (128 + the signal) once it
// has committed what it measured; a bug (a panic) exits 2 with one line
// (TESSERA_DEBUG=1 adds the stack).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// command is one subcommand: its name, a one-line summary and its run
// function, which gets the arguments after the name.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// commands lists the subcommands. The tuning command itself has no name:
// `tune [flags] model.onnx`.
var commands = []command{
	{"inspect", "print the graph before and after the passes, the fused groups and the task table", runInspect},
	{"build", "compile the model with the best record of every task into a library, header, weights and manifest", runBuild},
	{"run", "run a built model on input files; write its outputs and compare them with references", runModel},
	{"bench", "time a built model end to end (min and median ms)", runBench},
	{"records", "export, import, distill (best k per task), summarize or plot the records of --db", runRecords},
	{"costmodel", "train a cost model on the records of --db files, or evaluate one on held-out records", runCostModel},
	{"machine", "print the machine model the cpu target compiles for (--cpu), and its FMA peak (--peak)", runMachine},
	{"worker", "measure the jobs of this machine's target key that tuners send through NATS JetStream (--nats URL)", runWorker},
}

// errUsage is returned by a command whose arguments are wrong after it has
// printed its usage.
var errUsage = errors.New("usage")

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run dispatches to a command and turns its error (or panic) into a
// message and an exit status.
func run(args []string, stdout, stderr io.Writer) (status int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "tune: internal error (a bug in tessera; please report it with the command line): %s\n", oneLine(fmt.Sprint(r)))
			if os.Getenv("TESSERA_DEBUG") != "" {
				stderr.Write(debug.Stack())
			}
			status = 2
		}
	}()
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 1
		}
		return 0
	}
	name, rest := args[0], args[1:]
	for _, c := range commands {
		if c.name == name {
			return report(stderr, "tune "+name, c.run(rest, stdout, stderr))
		}
	}
	return report(stderr, "tune", runTune(args, stdout, stderr))
}

func report(stderr io.Writer, prefix string, err error) int {
	var sig *interruptedError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 1
	case errors.As(err, &sig):
		fmt.Fprintf(stderr, "%s: %s\n", prefix, oneLine(err.Error()))
		return 128 + int(sig.sig)
	}
	fmt.Fprintf(stderr, "%s: %s\n", prefix, oneLine(err.Error()))
	return 1
}

// oneLine makes a message one printable line: the lines of errors
// joined with newlines (errors.Join, a compiler's diagnostics) are joined
// with "; ", and what a terminal would interpret (escape sequences in a
// model's names) is escaped.
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, printable(l))
		}
	}
	return strings.Join(parts, "; ")
}

// printable escapes control characters and invalid UTF-8 in s as Go
// escapes (\x1b, \u0085, \xff), leaving everything else as it is.
func printable(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || unicode.IsControl(r) }) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// interruptedError is returned by a command that a signal stopped after
// it committed what it had done; the exit status is 128 + the signal.
type interruptedError struct {
	sig syscall.Signal
	msg string
}

func (e *interruptedError) Error() string {
	return fmt.Sprintf("interrupted by %s: %s", signalName(e.sig), e.msg)
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT (Ctrl-C)"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// signalContext returns a context canceled by the first SIGINT or SIGTERM,
// a function that returns that signal (0 while none came), and a stop
// function that restores the default handling.
func signalContext() (context.Context, func() syscall.Signal, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	var mu sync.Mutex
	var got syscall.Signal
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			mu.Lock()
			got = s.(syscall.Signal)
			mu.Unlock()
			cancel()
		case <-done:
		}
	}()
	which := func() syscall.Signal {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			cancel()
		})
	}
	return ctx, which, stop
}

func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("usage:\n  tune [flags] model.onnx        tune the model's tasks; records go to --db (tuning.db)\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  tune %-26s %s\n", c.name+" ...", c.summary)
	}
	b.WriteString("\nRun 'tune COMMAND -h' for a command's flags.\n")
	io.WriteString(w, b.String())
}
