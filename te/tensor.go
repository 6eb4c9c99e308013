// Package te describes tensor computations: placeholders and compute
// definitions (tensor.go), the compute DAG of a fused subgraph with its access
// analysis (dag.go), the op library with one compute definition per ONNX op
// (ops_*.go), the reference evaluator that is the oracle for every
// schedule (eval.go), and the DAG's JSON codec, which round-trips exactly
// so that a process without the model can rebuild a task (codec.go).
//
// A compute definition gives one output element as a tir expression of its
// axis variables; reads of other tensors are tir.Loads of their buffers. A
// reduction combines Body over its reduce axes with a Reducer.
package te

import (
	"fmt"
	"math"

	"github.com/tessera-ml/tessera/tir"
)

// IterVar is an axis of a compute definition: a variable ranging over
// [0, Extent).
type IterVar struct {
	Var    *tir.Var
	Extent int
}

// Reducer combines the values of a reduction.
type Reducer uint8

const (
	NoReduce Reducer = iota
	Sum
	MaxReduce
	MinReduce
	ProdReduce
)

func (r Reducer) String() string {
	return [...]string{"none", "sum", "max", "min", "prod"}[r]
}

// Identity returns the reducer's neutral element.
func (r Reducer) Identity() float64 {
	switch r {
	case MaxReduce:
		return math.Inf(-1)
	case MinReduce:
		return math.Inf(1)
	case ProdReduce:
		return 1
	}
	return 0
}

// IdentityOf returns the reducer's neutral element as a constant of
// element type dt: a float32, or the integer type's own (its smallest
// value for max, its largest for min).
func (r Reducer) IdentityOf(dt tir.DType) tir.Expr {
	if dt.IntElem() {
		return tir.IntOf(dt, intIdentity(r, dt))
	}
	return tir.F32(r.Identity())
}

// Combine returns the tir expression that folds v into acc.
func (r Reducer) Combine(acc, v tir.Expr) tir.Expr {
	switch r {
	case MaxReduce:
		return tir.MaxE(acc, v)
	case MinReduce:
		return tir.MinE(acc, v)
	case ProdReduce:
		return tir.MulE(acc, v)
	}
	return tir.AddE(acc, v)
}

// Tensor is the output of an operation: a placeholder (an input or a weight)
// when Body is nil, else a compute definition.
//
// Invariant: len(Axis) == len(Shape) for compute tensors, Axis[i].Extent ==
// Shape[i]; Reducer != NoReduce iff len(ReduceAxis) > 0.
type Tensor struct {
	Name       string
	Shape      []int
	Axis       []IterVar
	ReduceAxis []IterVar
	Reducer    Reducer
	Body       tir.Expr
	Buf        *tir.Buffer // the buffer loads of this tensor read
	// Const marks a placeholder whose data is known when the model is
	// built (a weight), not when it runs. A schedule may store a constant
	// in another layout than its shape's row-major order
	// (schedule.RewriteLayout): the build packs it once.
	Const bool
	// Reused marks a constant that most occurrences of the DAG's task in
	// the model read as the occurrence before them did (partition sets
	// it: a recurrent layer's weights, read by each of its steps), so that
	// the model runs them with it in the caches: its kernels are timed with
	// it warm, where other constants are evicted before every call
	// (measure.Arg.Weight). It is not part of the DAG's key; its JSON form
	// carries it, so that a tune worker times it as the tuner would.
	Reused bool
	// Matrix holds the entries of a constant matrix made by ConstMatrix
	// (a compute tensor that reads nothing); nil for every other tensor.
	Matrix [][]float64
}

// IsPlaceholder reports whether t is an input rather than a computation.
func (t *Tensor) IsPlaceholder() bool { return t.Body == nil }

// Size returns the number of elements.
func (t *Tensor) Size() int { return t.Buf.Size() }

// At returns a load of t at the given indices.
func (t *Tensor) At(idx ...tir.Expr) tir.Expr {
	if len(idx) != len(t.Shape) {
		panic(fmt.Sprintf("te: %s has rank %d, indexed with %d indices", t.Name, len(t.Shape), len(idx)))
	}
	return &tir.Load{Buf: t.Buf, Indices: idx}
}

func (t *Tensor) String() string { return fmt.Sprintf("%s%v", t.Name, t.Shape) }

// Placeholder declares an input tensor.
func Placeholder(name string, shape ...int) *Tensor {
	shape = append([]int(nil), shape...)
	t := &Tensor{Name: name, Shape: shape}
	t.Buf = &tir.Buffer{Name: name, DType: tir.Float32, Shape: shape, Owner: t}
	return t
}

// TypedPlaceholder declares an input tensor of element type dt.
func TypedPlaceholder(name string, dt tir.DType, shape ...int) *Tensor {
	t := Placeholder(name, shape...)
	t.Buf.DType = dt
	return t
}

// Constant declares an input tensor whose data is fixed when the model is
// built: a weight (see Tensor.Const).
func Constant(name string, shape ...int) *Tensor {
	t := Placeholder(name, shape...)
	t.Const = true
	return t
}

// Compute defines an elementwise or injective tensor: out[i...] = f(i...).
func Compute(name string, shape []int, f func(i []tir.Expr) tir.Expr) *Tensor {
	t, axis := newCompute(name, shape)
	t.Body = f(axis)
	t.typeFromBody()
	return t
}

// typeFromBody gives a compute tensor whose body is of an integer element
// type (tir.DType.IntElem) or BFloat16 a buffer of that type; every other
// body (a float, or a bool or index stored as a float) keeps Float32.
func (t *Tensor) typeFromBody() {
	if dt := t.Body.Type(); dt.IntElem() || dt == tir.BFloat16 {
		t.Buf.DType = dt
	}
}

// Reduce defines a reduction: out[i...] = red over r... of f(i..., r...).
// rshape gives the extents of the reduce axes.
func Reduce(name string, shape []int, red Reducer, rshape []int, f func(i, r []tir.Expr) tir.Expr) *Tensor {
	if red == NoReduce || len(rshape) == 0 {
		panic("te: Reduce needs a reducer and at least one reduce axis")
	}
	t, axis := newCompute(name, shape)
	raxis := make([]tir.Expr, len(rshape))
	for i, e := range rshape {
		v := tir.NewVar(fmt.Sprintf("r%d", i))
		t.ReduceAxis = append(t.ReduceAxis, IterVar{Var: v, Extent: e})
		raxis[i] = v
	}
	t.Reducer = red
	t.Body = f(axis, raxis)
	t.typeFromBody()
	return t
}

func newCompute(name string, shape []int) (*Tensor, []tir.Expr) {
	shape = append([]int(nil), shape...)
	t := &Tensor{Name: name, Shape: shape}
	t.Buf = &tir.Buffer{Name: name, DType: tir.Float32, Shape: shape, Owner: t}
	axis := make([]tir.Expr, len(shape))
	for i, e := range shape {
		v := tir.NewVar(fmt.Sprintf("i%d", i))
		t.Axis = append(t.Axis, IterVar{Var: v, Extent: e})
		axis[i] = v
	}
	return t, axis
}

// Idx is shorthand for an integer constant index.
func Idx(v int) tir.Expr { return tir.Const(int64(v)) }
