package main

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"tessera/graph"
	"tessera/measure"
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

// shapesFlag collects repeated `--input name=d0,d1,...` flags.
type shapesFlag map[string][]int

func (s shapesFlag) String() string {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		dims := make([]string, len(s[n]))
		for k, d := range s[n] {
			dims[k] = strconv.Itoa(d)
		}
		parts[i] = n + "=" + strings.Join(dims, ",")
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
// as written, parsed once the input's dtype is known (frozenTensor).
type valuesFlag map[string][]string

func (f valuesFlag) String() string {
	names := make([]string, 0, len(f))
	for n := range f {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + strings.Join(f[n], ",")
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

// frozenTensor parses the values given for graph input v as a tensor of
// v's dtype. Its shape is bound (from --input), else the input's own when
// static, else [len(vals)] for an input of rank 1; the values must fill it.
func frozenTensor(v *graph.Value, bound []int, vals []string) (*graph.Tensor, error) {
	shape := bound
	switch {
	case shape != nil:
	case v.Shape != nil && !slices.Contains(v.Shape, -1):
		shape = v.Shape
	case len(v.Shape) == 1:
		shape = []int{len(vals)}
	default:
		return nil, fmt.Errorf("its shape %v has dynamic dimensions: bind them with --input %s=d0,d1,...", v.Shape, v.Name)
	}
	if n := graph.NumElems(shape); n != len(vals) {
		return nil, fmt.Errorf("%d values for shape %v (%d elements)", len(vals), shape, n)
	}
	t := &graph.Tensor{DType: v.DType, Shape: slices.Clone(shape)}
	for i, s := range vals {
		switch {
		case v.DType == graph.Float32:
			f, err := strconv.ParseFloat(s, 32)
			if err != nil {
				return nil, fmt.Errorf("value %d (%q) is not a float32", i, s)
			}
			t.F32 = append(t.F32, float32(f))
		case v.DType == graph.Bool:
			b, err := strconv.ParseBool(s)
			if err != nil {
				return nil, fmt.Errorf("value %d (%q) is not a bool (true, false, 1, 0)", i, s)
			}
			t.I64 = append(t.I64, map[bool]int64{false: 0, true: 1}[b])
		case v.DType.IsInt():
			k, err := strconv.ParseInt(s, 10, 64)
			if err != nil || v.DType.Wrap(k) != k {
				return nil, fmt.Errorf("value %d (%q) is not a valid %s", i, s, v.DType)
			}
			t.I64 = append(t.I64, k)
		default:
			return nil, fmt.Errorf("input of dtype %s", v.DType)
		}
	}
	return t, nil
}

// namesFlag collects a repeated flag's values (`--no-pass cse --no-pass dce`;
// commas separate several names too).
type namesFlag map[string]bool

func (n namesFlag) String() string {
	names := make([]string, 0, len(n))
	for k := range n {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

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
