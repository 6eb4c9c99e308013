package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"tessera/graph"
	"tessera/graph/onnx"
	"tessera/measure"
	"tessera/partition"
)

// parseArgs parses fs's flags wherever they appear among the positional
// arguments (`tune inspect model.onnx --input x=1,3,8,8`), and returns the
// positional ones; after "--" every argument is positional. A wrong flag
// is reported in one line with a pointer to -h (errUsage); -h prints
// fs.Usage and returns flag.ErrHelp.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	usage := fs.Usage
	fs.Usage = func() {}
	defer func() { fs.Usage = usage }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				usage()
				return nil, err
			}
			fmt.Fprintf(fs.Output(), "run '%s -h' for usage\n", fs.Name())
			return nil, errUsage
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagSet returns the flag set of command name, reporting to stderr, with
// the flags of f registered.
func flagSet(name string, stderr io.Writer, f interface{ register(*flag.FlagSet) }) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.register(fs)
	return fs
}

// setUsage makes -h print usage, then the flags.
func setUsage(fs *flag.FlagSet, usage string) {
	fs.Usage = func() {
		io.WriteString(fs.Output(), usage)
		fs.PrintDefaults()
	}
}

// modelFlags are the flags of every command that reads a model.
type modelFlags struct {
	inputs   shapesFlag
	freeze   valuesFlag
	noPass   namesFlag
	winograd bool
}

func (m *modelFlags) register(fs *flag.FlagSet) {
	m.inputs, m.freeze, m.noPass = shapesFlag{}, valuesFlag{}, namesFlag{}
	fs.Var(m.inputs, "input", "bind graph input `name=d0,d1,...` to a static shape (repeatable)")
	fs.Var(m.freeze, "freeze", "freeze graph input `name=v0,v1,...` to these values, a constant of the compiled model (a sample rate an If branches on; repeatable)")
	fs.Var(m.noPass, "no-pass", "disable graph pass `NAME` (repeatable; passes: "+strings.Join(graph.PassNames(), ", ")+")")
	fs.BoolVar(&m.winograd, "winograd", true, "give 3×3 stride-1 convolutions a Winograd alternative task (tuned like any task; the build keeps the faster; --winograd=false: direct only)")
}

// partitionOptions are the options of partition.Extract the flags give.
func (m *modelFlags) partitionOptions() partition.Options {
	return partition.Options{Winograd: m.winograd}
}

// loadOptions are the options of onnx.Load the flags give.
func (m *modelFlags) loadOptions() onnx.LoadOptions {
	return onnx.LoadOptions{Inputs: m.inputs, Freeze: m.freeze, NoPass: m.noPass}
}

// loaded is a model as onnx.Load returns it; g is its graph.
type loaded struct {
	*onnx.Loaded
	g *graph.Graph
}

// loadModel reads the model at path as the flags say (onnx.Load).
func loadModel(path string, mf modelFlags) (*loaded, error) {
	l, err := onnx.Load(path, mf.loadOptions())
	if err != nil {
		return nil, err
	}
	return &loaded{Loaded: l, g: l.Graph}, nil
}

// printNotes writes the notes of how the model was read to w, one line
// each.
func (l *loaded) printNotes(w io.Writer, prefix string) { printNotes(w, prefix, l.Notes) }

func printNotes(w io.Writer, prefix string, notes []string) {
	for _, n := range notes {
		fmt.Fprintf(w, "%s: note: %s\n", prefix, printable(n))
	}
}

// modelTasks loads a model and returns its tasks.
func modelTasks(path string, mf modelFlags) ([]*partition.Task, error) {
	l, err := loadModel(path, mf)
	if err != nil {
		return nil, err
	}
	plan, err := partition.Extract(l.g, mf.partitionOptions())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return plan.Tasks, nil
}

// shapesFlag collects repeated `--input name=d0,d1,...` flags.
type shapesFlag map[string][]int

func (s shapesFlag) String() string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(s)) {
		dims := make([]string, len(s[n]))
		for k, d := range s[n] {
			dims[k] = strconv.Itoa(d)
		}
		parts = append(parts, n+"="+strings.Join(dims, ","))
	}
	return strings.Join(parts, " ")
}

func (s shapesFlag) Set(v string) error {
	name, dims, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want name=d0,d1,... (e.g. input=1,3,224,224), got %q", v)
	}
	if _, dup := s[name]; dup {
		return fmt.Errorf("input %s given twice", name)
	}
	var shape []int
	if dims != "" {
		for _, f := range strings.Split(dims, ",") {
			d, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || d <= 0 {
				return fmt.Errorf("dimension %q of %s is not a positive integer", f, name)
			}
			shape = append(shape, d)
		}
	}
	s[name] = shape
	return nil
}

// valuesFlag collects repeated `--freeze name=v0,v1,...` flags: the values
// as written, parsed once the input's dtype is known (onnx.Load).
type valuesFlag map[string][]string

func (f valuesFlag) String() string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(f)) {
		parts = append(parts, n+"="+strings.Join(f[n], ","))
	}
	return strings.Join(parts, " ")
}

func (f valuesFlag) Set(v string) error {
	name, vals, ok := strings.Cut(v, "=")
	if !ok || name == "" || strings.TrimSpace(vals) == "" {
		return fmt.Errorf("want name=v0,v1,... (e.g. sr=16000), got %q", v)
	}
	if _, dup := f[name]; dup {
		return fmt.Errorf("input %s frozen twice", name)
	}
	for _, s := range strings.Split(vals, ",") {
		f[name] = append(f[name], strings.TrimSpace(s))
	}
	return nil
}

// namesFlag collects a repeated flag's values (`--no-pass cse --no-pass dce`;
// commas separate several names too).
type namesFlag map[string]bool

func (n namesFlag) String() string { return strings.Join(slices.Sorted(maps.Keys(n)), ",") }

func (n namesFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			n[s] = true
		}
	}
	return nil
}

// listFlag collects a repeated flag's values in order (`--db a.db --db b.db`).
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, " ") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// bytesFlag is a byte count given with an optional binary unit: 8GiB,
// 512MiB, 8G (= 8GiB), 1048576.
type bytesFlag int64

func (b *bytesFlag) String() string { return measure.Bytes(int64(*b)) }

func (b *bytesFlag) Set(v string) error {
	s := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(v), "B"), "i")
	shift := 0
	if n := len(s); n > 0 {
		if k := strings.IndexByte("KMGT", s[n-1]); k >= 0 {
			shift = 10 * (k + 1)
			s = s[:n-1]
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64>>shift {
		return fmt.Errorf("want a positive size such as 8GiB, 512MiB or 1048576, got %q", v)
	}
	*b = bytesFlag(n << shift)
	return nil
}

// maxMemoryFlag registers --max-memory, the memory limit of a run or of
// measuring a task, whose help says what it bounds.
func maxMemoryFlag(fs *flag.FlagSet, help string) *bytesFlag {
	b := bytesFlag(measure.DefaultMaxMemory)
	fs.Var(&b, "max-memory", help)
	return &b
}
