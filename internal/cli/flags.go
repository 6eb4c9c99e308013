package cli

import (
	"flag"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tessera-ml/tessera/measure"
)

// Shapes collects repeated `--input name=d0,d1,...` flags: shapes by
// input name, each dimension a positive integer or the name of a dynamic
// dimension (N in input=N,3,224,224, given a range with --range). Make it
// before registering it.
type Shapes map[string][]string

func (s Shapes) String() string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, n+"="+strings.Join(s[n], ","))
	}
	return strings.Join(parts, " ")
}

func (s Shapes) Set(v string) error {
	name, dims, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want name=d0,d1,... (e.g. input=1,3,224,224), got %q", v)
	}
	if _, dup := s[name]; dup {
		return fmt.Errorf("input %s given twice", name)
	}
	shape := []string{}
	if dims != "" {
		for _, f := range strings.Split(dims, ",") {
			f = strings.TrimSpace(f)
			d, err := strconv.Atoi(f)
			if (err != nil || d <= 0) && !isSymbol(f) {
				return fmt.Errorf("dimension %q of %s is neither a positive integer nor a name (N, batch_size)", f, name)
			}
			shape = append(shape, f)
		}
	}
	s[name] = shape
	return nil
}

// isSymbol reports whether f is a dimension's name: a letter or _, then
// letters, digits and _.
func isSymbol(f string) bool {
	for i, c := range f {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return f != ""
}

// Dims returns the shapes with -1 for every named dimension.
func (s Shapes) Dims() map[string][]int {
	out := map[string][]int{}
	for n, dims := range s {
		shape := make([]int, len(dims))
		for k, f := range dims {
			if d, err := strconv.Atoi(f); err == nil {
				shape[k] = d
			} else {
				shape[k] = -1
			}
		}
		out[n] = shape
	}
	return out
}

// Names returns, for the inputs with a named dimension, each dimension's
// name ("" for a number).
func (s Shapes) Names() map[string][]string {
	out := map[string][]string{}
	for n, dims := range s {
		if !slices.ContainsFunc(dims, isSymbol) {
			continue
		}
		names := make([]string, len(dims))
		for k, f := range dims {
			if isSymbol(f) {
				names[k] = f
			}
		}
		out[n] = names
	}
	return out
}

// Ranges collects repeated `--range NAME=lo..hi` flags: the values a
// dynamic dimension takes, lo and hi included, by the dimension's name.
// Make it before registering it.
type Ranges map[string][2]int

func (r Ranges) String() string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(r)) {
		parts = append(parts, fmt.Sprintf("%s=%d..%d", n, r[n][0], r[n][1]))
	}
	return strings.Join(parts, " ")
}

func (r Ranges) Set(v string) error {
	name, span, ok := strings.Cut(v, "=")
	los, his, ok2 := strings.Cut(span, "..")
	if !ok || !ok2 || name == "" {
		return fmt.Errorf("want NAME=lo..hi (e.g. N=1..16), got %q", v)
	}
	if _, dup := r[name]; dup {
		return fmt.Errorf("range of %s given twice", name)
	}
	lo, err1 := strconv.Atoi(strings.TrimSpace(los))
	hi, err2 := strconv.Atoi(strings.TrimSpace(his))
	if err1 != nil || err2 != nil || lo < 1 || hi < lo {
		return fmt.Errorf("range %q of %s: want integers 1 ≤ lo ≤ hi", span, name)
	}
	r[name] = [2]int{lo, hi}
	return nil
}

// Weights collects repeated `--weights NAME=v:w,v:w,...` flags: how much
// each value of a dynamic dimension matters (its share of the runs), by
// the dimension's name and the value. Make it before registering it.
type Weights map[string]map[int]float64

func (w Weights) String() string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(w)) {
		var vs []string
		for _, v := range slices.Sorted(maps.Keys(w[n])) {
			vs = append(vs, fmt.Sprintf("%d:%g", v, w[n][v]))
		}
		parts = append(parts, n+"="+strings.Join(vs, ","))
	}
	return strings.Join(parts, " ")
}

func (w Weights) Set(v string) error {
	name, list, ok := strings.Cut(v, "=")
	if !ok || name == "" || strings.TrimSpace(list) == "" {
		return fmt.Errorf("want NAME=v:w,v:w,... (e.g. S=16:0.5,128:0.3,256:0.2), got %q", v)
	}
	if _, dup := w[name]; dup {
		return fmt.Errorf("weights of %s given twice", name)
	}
	m := map[int]float64{}
	for _, item := range strings.Split(list, ",") {
		vs, ws, ok := strings.Cut(strings.TrimSpace(item), ":")
		val, err1 := strconv.Atoi(strings.TrimSpace(vs))
		x, err2 := strconv.ParseFloat(strings.TrimSpace(ws), 64)
		if !ok || err1 != nil || err2 != nil || val < 1 || !(x > 0) || math.IsInf(x, 1) {
			return fmt.Errorf("weight %q of %s: want value:weight, a positive integer and a positive number (e.g. 128:0.3)", item, name)
		}
		if _, dup := m[val]; dup {
			return fmt.Errorf("weight of %s=%d given twice", name, val)
		}
		m[val] = x
	}
	w[name] = m
	return nil
}

// Within checks that every name weighed has a range in r (--range) and
// every value weighed lies in it.
func (w Weights) Within(r Ranges) error {
	for _, name := range slices.Sorted(maps.Keys(w)) {
		span, ok := r[name]
		if !ok {
			return fmt.Errorf("--weights %s=...: %s has no --range", name, name)
		}
		for _, v := range slices.Sorted(maps.Keys(w[name])) {
			if v < span[0] || v > span[1] {
				return fmt.Errorf("--weights: a weight on %s=%d, outside --range %s=%d..%d", name, v, name, span[0], span[1])
			}
		}
	}
	return nil
}

// Values collects repeated `--freeze name=v0,v1,...` flags: the values as
// written, parsed once the input's dtype is known (frontend.Load). Make it
// before registering it.
type Values map[string][]string

func (f Values) String() string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(f)) {
		parts = append(parts, n+"="+strings.Join(f[n], ","))
	}
	return strings.Join(parts, " ")
}

func (f Values) Set(v string) error {
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

// Names collects a repeated flag's values as a set (`--no-pass cse
// --no-pass dce`; commas separate several names too). Make it before
// registering it.
type Names map[string]bool

func (n Names) String() string { return strings.Join(slices.Sorted(maps.Keys(n)), ",") }

func (n Names) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			n[s] = true
		}
	}
	return nil
}

// List collects a repeated flag's values in order (`--db a.db --db b.db`).
type List []string

func (l *List) String() string { return strings.Join(*l, " ") }

func (l *List) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// Files collects repeated `name=FILE` flags; a bare FILE is stored under
// the name "" (the only tensor of a model, say). Make it before
// registering it.
type Files map[string]string

func (f Files) String() string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(f)) {
		parts = append(parts, n+"="+f[n])
	}
	return strings.Join(parts, " ")
}

func (f Files) Set(v string) error {
	name, file, ok := strings.Cut(v, "=")
	if !ok {
		name, file = "", v
	}
	if file == "" {
		return fmt.Errorf("want name=FILE, got %q", v)
	}
	if _, dup := f[name]; dup {
		return fmt.Errorf("%q given twice", name)
	}
	f[name] = file
	return nil
}

// Bytes is a byte count given with an optional binary unit: 8GiB,
// 512MiB, 8G (= 8GiB), 1048576.
type Bytes int64

func (b *Bytes) String() string { return measure.Bytes(int64(*b)) }

func (b *Bytes) Set(v string) error {
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
	*b = Bytes(n << shift)
	return nil
}

// MaxMemory registers --max-memory, the memory limit of a run or of
// measuring a task (measure.DefaultMaxMemory unless given), whose help
// says what it bounds.
func MaxMemory(fs *flag.FlagSet, help string) *Bytes {
	b := Bytes(measure.DefaultMaxMemory)
	fs.Var(&b, "max-memory", help)
	return &b
}
