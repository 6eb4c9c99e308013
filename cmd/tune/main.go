// Command tune is Tessera's command line: `tune [flags] model.onnx` tunes
// the kernels of an ONNX model; each subcommand (`tune -h` lists them) is
// an entry of the table below, in a file of its own, its work done by the
// library packages. Package internal/cli dispatches, parses the flags and
// turns errors into one line and an exit status: 1 for a failure, 130 or
// 143 (128 + the signal) for a run stopped by Ctrl-C or SIGTERM once it
// has committed what it measured, 2 for a bug (a panic).
package main

import (
	"io"
	"os"

	"github.com/tessera-ml/tessera/internal/cli"
)

// tune is the program: the tuning command itself has no name
// (`tune [flags] model.onnx`).
var tune = cli.Program{
	Name:    "tune",
	Default: cli.Command{Name: "[flags] model.onnx", Summary: "tune the model's tasks; records go to --db (tuning.db)", Run: runTune},
	Commands: []cli.Command{
		{Name: "inspect", Summary: "print the graph before and after the passes, the fused groups and the task table", Run: runInspect},
		{Name: "build", Summary: "compile the model with the best record of every task into a library, header, weights and manifest", Run: runBuild},
		{Name: "run", Summary: "run a built model on input files; write its outputs and compare them with references", Run: runModel},
		{Name: "quantize", Summary: "write the static int8 QDQ model of a float model (onnxruntime's quantize_static format), ranges calibrated on sample inputs", Run: runQuantize},
		{Name: "bench", Summary: "time a built model end to end (min and median ms)", Run: runBench},
		{Name: "records", Summary: "export, import, distill (best k per task), summarize or plot the records of --db", Run: runRecords},
		{Name: "costmodel", Summary: "train a cost model on the records of --db files, or evaluate one on held-out records", Run: runCostModel},
		{Name: "machine", Summary: "print the machine model the cpu target compiles for (--cpu), and its FMA peak (--peak)", Run: runMachine},
		{Name: "worker", Summary: "measure the jobs of this machine's target key that tuners send through NATS JetStream (--nats URL)", Run: runWorker},
		{Name: "version", Summary: "print the version and commit of tune, the C ABI version, Go's and the C compiler's (also --version)", Run: runVersion},
	},
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run runs tune with args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int { return tune.Main(args, stdout, stderr) }
