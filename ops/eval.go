package ops

import (
	"github.com/tessera-ml/tessera/graph"
	"math"
	"slices"
)

// MaxFoldElems caps the size of a tensor that shape inference evaluates
// (an op's Eval) and constant folding materializes: larger constant
// subgraphs are left to run time, and a malicious model cannot make the
// compiler allocate gigabytes.
const MaxFoldElems = 1 << 22

// The constant evaluator: small helpers the ops' eval functions share. It
// computes in float64 (float32 tensors) or int64 and never allocates more
// than the inferred output size, which shape inference caps at
// MaxFoldElems.

// forEachIndex calls f with every multi-index of shape in row-major order
// (once, with an empty index, for a scalar).
func forEachIndex(shape []int, f func(idx []int)) {
	for _, d := range shape {
		if d == 0 {
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

// remap builds a tensor of the given shape whose element at idx is t's
// element at flat position src(idx).
func remap(t *graph.Tensor, shape []int, src func(idx []int) int) *graph.Tensor {
	out := &graph.Tensor{DType: t.DType, Shape: slices.Clone(shape)}
	n := graph.NumElems(shape)
	if t.DType.IsInt() {
		out.I64 = make([]int64, 0, n)
	} else {
		out.F32 = make([]float32, 0, n)
	}
	forEachIndex(shape, func(idx []int) {
		s := src(idx)
		if t.DType.IsInt() {
			out.I64 = append(out.I64, t.I64[s])
		} else {
			out.F32 = append(out.F32, t.F32[s])
		}
	})
	if out.I64 == nil && out.DType.IsInt() {
		out.I64 = []int64{}
	}
	if out.F32 == nil && out.DType == graph.Float32 {
		out.F32 = []float32{}
	}
	return out
}

// reshaped returns t's data with another shape of the same element count.
func reshaped(t *graph.Tensor, shape []int) *graph.Tensor {
	return &graph.Tensor{DType: t.DType, Shape: slices.Clone(shape), F32: t.F32, I64: t.I64}
}

// mapN evaluates an n-ary elementwise op with broadcasting: fi for int64
// inputs, ff for float32 ones (either may be nil when the op does not
// exist for that dtype; the caller's infer has already checked dtypes).
func mapN(shape []int, ins []*graph.Tensor, fi func(v []int64) int64, ff func(v []float64) float64) *graph.Tensor {
	dt := ins[0].DType
	out := &graph.Tensor{DType: dt, Shape: slices.Clone(shape)}
	sts := make([][]int, len(ins))
	for k, t := range ins {
		sts[k] = graph.Strides(t.Shape)
	}
	vi := make([]int64, len(ins))
	vf := make([]float64, len(ins))
	n := graph.NumElems(shape)
	if dt.IsInt() {
		out.I64 = make([]int64, 0, n)
	} else {
		out.F32 = make([]float32, 0, n)
	}
	forEachIndex(shape, func(idx []int) {
		for k, t := range ins {
			s := 0
			off := len(idx) - len(t.Shape)
			for i, d := range t.Shape {
				if d != 1 {
					s += idx[off+i] * sts[k][i]
				}
			}
			if t.DType.IsInt() {
				vi[k], vf[k] = t.I64[s], float64(t.I64[s])
			} else {
				vi[k], vf[k] = int64(t.F32[s]), float64(t.F32[s])
			}
		}
		if dt.IsInt() {
			out.I64 = append(out.I64, fi(vi))
		} else {
			out.F32 = append(out.F32, float32(ff(vf)))
		}
	})
	return out
}

func unaryF(f func(x float64) float64) func(v []float64) float64 {
	return func(v []float64) float64 { return f(v[0]) }
}

// floatUnary are the float elementwise ops the evaluator folds.
var floatUnary = map[string]func(x float64) float64{
	"Abs":        math.Abs,
	"Neg":        func(x float64) float64 { return -x },
	"Sqrt":       math.Sqrt,
	"Exp":        math.Exp,
	"Log":        math.Log,
	"Reciprocal": func(x float64) float64 { return 1 / x },
	"Relu":       func(x float64) float64 { return max(x, 0) },
	"Sigmoid":    func(x float64) float64 { return 1 / (1 + math.Exp(-x)) },
	"Tanh":       math.Tanh,
	"Erf":        math.Erf,
	"Floor":      math.Floor,
	"Ceil":       math.Ceil,
	"Round":      math.RoundToEven,
	"Sign": func(x float64) float64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return x
	},
}

// intUnary are the int64 elementwise ops the evaluator folds.
var intUnary = map[string]func(x int64) int64{
	"Abs":  func(x int64) int64 { return max(x, -x) },
	"Neg":  func(x int64) int64 { return -x },
	"Sign": func(x int64) int64 { return int64(max(min(x, 1), -1)) },
}

// binaryOps are the binary elementwise ops the evaluator folds.
var binaryOps = map[string]struct {
	i func(a, b int64) int64
	f func(a, b float64) float64
}{
	"Add": {func(a, b int64) int64 { return a + b }, func(a, b float64) float64 { return a + b }},
	"Sub": {func(a, b int64) int64 { return a - b }, func(a, b float64) float64 { return a - b }},
	"Mul": {func(a, b int64) int64 { return a * b }, func(a, b float64) float64 { return a * b }},
	"Div": {func(a, b int64) int64 {
		if b == 0 {
			return 0
		}
		return a / b
	}, func(a, b float64) float64 { return a / b }},
	"Pow": {func(a, b int64) int64 { return int64(math.Pow(float64(a), float64(b))) }, math.Pow},
	"Max": {func(a, b int64) int64 { return max(a, b) }, math.Max},
	"Min": {func(a, b int64) int64 { return min(a, b) }, math.Min},
}

func foldN(fi func(a, b int64) int64, ff func(a, b float64) float64) (func(v []int64) int64, func(v []float64) float64) {
	return func(v []int64) int64 {
			acc := v[0]
			for _, x := range v[1:] {
				acc = fi(acc, x)
			}
			return acc
		}, func(v []float64) float64 {
			acc := v[0]
			for _, x := range v[1:] {
				acc = ff(acc, x)
			}
			return acc
		}
}

// mapTo evaluates an n-ary elementwise op with broadcasting into a tensor
// of dtype dt: f sees every input element as a float64 (exact for the
// int64 values of shape arithmetic) and its result is stored as float32,
// or converted to dt's integer range as a C cast does.
func mapTo(dt graph.DType, shape []int, ins []*graph.Tensor, f func(v []float64) float64) *graph.Tensor {
	out := &graph.Tensor{DType: dt, Shape: slices.Clone(shape)}
	n := graph.NumElems(shape)
	if dt.IsInt() {
		out.I64 = make([]int64, 0, n)
	} else {
		out.F32 = make([]float32, 0, n)
	}
	vals := make([][]float64, len(ins))
	for k, t := range ins {
		vals[k] = t.Float64s()
	}
	v := make([]float64, len(ins))
	forEachIndex(shape, func(idx []int) {
		for k, t := range ins {
			v[k] = vals[k][graph.BroadcastSrc(t.Shape, idx)]
		}
		r := f(v)
		if dt.IsInt() {
			out.I64 = append(out.I64, dt.Wrap(int64(r)))
		} else {
			out.F32 = append(out.F32, float32(r))
		}
	})
	return out
}
