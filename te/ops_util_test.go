package te

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The op tests compare DAG.Eval against straightforward float64 loops
// written here, independent of te: nd is a plain row-major array.

type nd struct {
	shape []int
	data  []float64
}

func zeros(shape ...int) *nd {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return &nd{shape: append([]int{}, shape...), data: make([]float64, n)}
}

// seq returns an array holding 1, 2, 3, ...
func seq(shape ...int) *nd {
	a := zeros(shape...)
	for i := range a.data {
		a.data[i] = float64(i + 1)
	}
	return a
}

func (a *nd) off(idx []int) int {
	if len(idx) != len(a.shape) {
		panic(fmt.Sprintf("nd: rank %d indexed with %v", len(a.shape), idx))
	}
	o := 0
	for i, d := range a.shape {
		if idx[i] < 0 || idx[i] >= d {
			panic(fmt.Sprintf("nd: index %v out of %v", idx, a.shape))
		}
		o = o*d + idx[i]
	}
	return o
}

func (a *nd) at(idx ...int) float64     { return a.data[a.off(idx)] }
func (a *nd) set(v float64, idx ...int) { a.data[a.off(idx)] = v }

// eachIndex calls f with every index of shape in row-major order (once with
// an empty index for rank 0). f must not keep idx.
func eachIndex(shape []int, f func(idx []int)) {
	for _, d := range shape {
		if d <= 0 {
			return
		}
	}
	idx := make([]int, len(shape))
	for {
		f(idx)
		k := len(shape) - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// opEnv creates placeholders with random data and evaluates op outputs.
type opEnv struct {
	rng   *rand.Rand
	feeds map[*Tensor]*nd
}

func newEnv(seed uint64) *opEnv {
	return &opEnv{rng: rand.New(rand.NewPCG(seed, 7)), feeds: map[*Tensor]*nd{}}
}

// random returns values in [lo, hi), representable as float32.
func (e *opEnv) random(lo, hi float64, shape ...int) *nd {
	a := zeros(shape...)
	for i := range a.data {
		a.data[i] = float64(float32(lo + (hi-lo)*e.rng.Float64()))
	}
	return a
}

// in declares a placeholder with random data in [-2, 2).
func (e *opEnv) in(name string, shape ...int) (*Tensor, *nd) {
	return e.feed(name, e.random(-2, 2, shape...))
}

// feed declares a placeholder holding v.
func (e *opEnv) feed(name string, v *nd) (*Tensor, *nd) {
	t := Placeholder(name, v.shape...)
	e.feeds[t] = v
	return t, v
}

// result is an op's return values, so that a call can be passed to run.
type result struct {
	out *Tensor
	err error
}

func res(out *Tensor, err error) result { return result{out, err} }

// run evaluates the op's output with the fed inputs.
func (e *opEnv) run(t *testing.T, r result) *nd {
	t.Helper()
	out, err := r.out, r.err
	if err != nil {
		t.Fatalf("building the op: %v", err)
	}
	d, err := NewDAG(out)
	if err != nil {
		t.Fatalf("NewDAG: %v", err)
	}
	inputs := make([][]float32, len(d.Inputs))
	for i, p := range d.Inputs {
		v, ok := e.feeds[p]
		if !ok {
			t.Fatalf("DAG input %s was not fed", p.Name)
		}
		inputs[i] = make([]float32, len(v.data))
		for j, x := range v.data {
			inputs[i][j] = float32(x)
		}
	}
	res, err := d.Eval(inputs)
	if err != nil {
		t.Fatalf("Eval: %v\n%s", err, d)
	}
	got := &nd{shape: out.Shape, data: make([]float64, len(res[0]))}
	for i, x := range res[0] {
		got.data[i] = float64(x)
	}
	return got
}

// closeTo reports whether got matches want within 1e-5, relative for
// magnitudes above 1; NaN matches NaN and infinities match exactly.
func closeTo(got, want float64) bool {
	switch {
	case math.IsNaN(want):
		return math.IsNaN(got)
	case math.IsInf(want, 0):
		return got == want
	}
	return math.Abs(got-want) <= 1e-5*math.Max(1, math.Abs(want))
}

// expect compares got against want (shape and values).
func expect(t *testing.T, got, want *nd) {
	t.Helper()
	if !slices.Equal(got.shape, want.shape) {
		t.Fatalf("shape %v, want %v", got.shape, want.shape)
	}
	bad := 0
	var msg strings.Builder
	for i := range want.data {
		if !closeTo(got.data[i], want.data[i]) {
			if bad < 5 {
				fmt.Fprintf(&msg, "\n  element %d: got %v, want %v", i, got.data[i], want.data[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d elements differ:%s", bad, len(want.data), msg.String())
	}
}

// expectErr checks that building an op failed with an error naming op.
func expectErr(t *testing.T, op string, r result) {
	t.Helper()
	out, err := r.out, r.err
	if err == nil {
		t.Fatalf("%s: no error (got %v)", op, out)
	}
	if !strings.HasPrefix(err.Error(), "te: "+op+" ") {
		t.Fatalf("error %q does not name %s", err, op)
	}
}

// bcastIndex maps an output index to an input of shape s, right-aligned,
// size-1 dimensions reading index 0.
func bcastIndex(s, idx []int) []int {
	off := len(idx) - len(s)
	in := make([]int, len(s))
	for i, d := range s {
		if d != 1 {
			in[i] = idx[off+i]
		}
	}
	return in
}

// stageNames returns the names of the compute tensors of out's DAG.
func stageNames(t *testing.T, out *Tensor) []string {
	t.Helper()
	d, err := NewDAG(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range d.Tensors {
		if !x.IsPlaceholder() {
			names = append(names, x.Name)
		}
	}
	return names
}
