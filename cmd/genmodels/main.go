// Command genmodels writes the models of package modelgen as ONNX files:
//
//	genmodels -o DIR [-seed N] [-float16] [model ...]
//
// With no model named it writes all of them. The same seed always gives
// the same files. With -float16 each is written in half precision
// (modelgen.Float16) as DIR/NAME.fp16.onnx.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tessera-ml/tessera/modelgen"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("genmodels", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("o", "", "output `directory` (created if missing)")
	seed := fs.Uint64("seed", modelgen.DefaultSeed, "seed of the random weights")
	half := fs.Bool("float16", false, "write each model in float16 (weights, inputs, outputs) as NAME.fp16.onnx")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: genmodels -o DIR [-seed N] [-float16] [model ...]\n\nmodels:\n")
		for _, m := range modelgen.Models {
			fmt.Fprintf(stderr, "  %-16s %s\n", m.Name, m.Doc)
		}
		fmt.Fprintf(stderr, "\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 1
	}
	if *dir == "" {
		fmt.Fprintln(stderr, "genmodels: -o DIR is required")
		fs.Usage()
		return 1
	}
	names := fs.Args()
	if len(names) == 0 {
		for _, m := range modelgen.Models {
			names = append(names, m.Name)
		}
	}
	for _, name := range names {
		if _, err := modelgen.Lookup(name); err != nil {
			fmt.Fprintf(stderr, "genmodels: %v\n", strings.TrimPrefix(err.Error(), "modelgen: "))
			return 1
		}
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "genmodels: %v\n", err)
		return 1
	}
	for _, name := range names {
		generate := modelgen.Generate
		if *half {
			generate = modelgen.GenerateFloat16
		}
		path, err := generate(*dir, name, *seed)
		if err != nil {
			fmt.Fprintf(stderr, "genmodels: %v\n", err)
			return 1
		}
		st, err := os.Stat(path)
		if err != nil {
			fmt.Fprintf(stderr, "genmodels: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%-40s %8.1f MB\n", path, float64(st.Size())/1e6)
	}
	return 0
}
