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
// Every failure is a message on stderr and exit status 1.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
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
			fmt.Fprintf(stderr, "tune: internal error: %v\n%s", r, debug.Stack())
			status = 1
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
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 1
	}
	fmt.Fprintf(stderr, "%s: %v\n", prefix, err)
	return 1
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
