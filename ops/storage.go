package ops

import (
	"fmt"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// Storage. A value's tensor holds, in kernels, the element type Storage
// gives it: its own for int32 constants (biases) and, in a graph that runs
// on integer kernels (graph.Graph.Integer), for 8-bit integers (quantized
// data), exactly; float32 for every other value (integers and bools as
// float32 values, exact within ±2^24: a float kernel reads them without a
// conversion) and for the model's inputs and outputs, which cross the API
// as float32 whatever their type.
//
// A lowering reads its data inputs as float32 (lowerCtx.in: a value of
// integer storage is read through a conversion stage that fusion inlines)
// unless it computes on integers itself (lowerCtx.raw); LowerNode converts
// each output to its value's storage, saturating a float to an integer
// type's range. So every op runs on quantized data, and the integer
// lowerings (QLinearConv, ...) read and write it as it is stored.

// Storage returns the element type value name of g has in kernels.
func Storage(g *graph.Graph, name string) tir.DType {
	v := g.Values[name]
	if v == nil || g.IsInput(name) || g.IsOutput(name) {
		return tir.Float32
	}
	switch v.DType {
	case graph.Int8:
		if g.Integer {
			return tir.Int8
		}
	case graph.Uint8:
		if g.Integer {
			return tir.Uint8
		}
	case graph.Int32:
		if v.Const != nil {
			return tir.Int32
		}
	case graph.BFloat16:
		return tir.BFloat16 // a bf16 build's rounded weights (BFloat16WeightsName)
	}
	return tir.Float32
}

// Placeholder returns a new placeholder for value name of g (an input or
// a constant) with its storage type; Const is set for a constant.
func Placeholder(g *graph.Graph, name string) *te.Tensor {
	v := g.Values[name]
	t := te.TypedPlaceholder(name, Storage(g, name), v.Shape...)
	t.Const = v.Const != nil
	return t
}

// ConstSlots returns the data of constant name as kernels read it, in
// tir's one-slot-per-element form, and its storage type: float32 values,
// or the exact integers of an integer storage.
func ConstSlots(g *graph.Graph, name string) ([]float32, tir.DType, error) {
	v := g.Values[name]
	if v == nil || v.Const == nil {
		return nil, 0, fmt.Errorf("%s is not a constant", name)
	}
	dt := Storage(g, name)
	if !dt.IntElem() {
		data, err := v.Const.KernelData()
		return data, dt, err
	}
	out := make([]float32, len(v.Const.I64))
	for i, x := range v.Const.I64 {
		out[i] = tir.IntSlot(x)
	}
	return out, dt, nil
}

// floatView returns t as float32: t itself, or for an integer or
// bfloat16 tensor a conversion stage named name.
func floatView(name string, t *te.Tensor) *te.Tensor {
	if dt := t.DType(); !dt.IntElem() && dt != tir.BFloat16 {
		return t
	}
	return te.Compute(name, t.Shape, func(i []tir.Expr) tir.Expr {
		return &tir.Cast{To: tir.Float32, X: t.At(i...)}
	})
}

// stored converts t, the lowering of value name, to the value's storage
// type dt: t itself when it has it, else a conversion stage named after
// the value and the type; a float becomes an integer saturated to the
// type's range, NaN becoming 0.
func stored(name string, t *te.Tensor, dt tir.DType) *te.Tensor {
	if t.DType() == dt {
		return t
	}
	return te.Compute(name+"_"+dt.String(), t.Shape, func(i []tir.Expr) tir.Expr {
		x := t.At(i...)
		if !dt.IntElem() {
			return &tir.Cast{To: dt, X: x}
		}
		if t.DType().IntElem() {
			lo, hi := dt.Range()
			return &tir.Cast{To: dt, X: tir.MinE(tir.MaxE(&tir.Cast{To: tir.Int32, X: x}, tir.IntOf(tir.Int32, lo)), tir.IntOf(tir.Int32, hi))}
		}
		return saturate(x, dt)
	})
}

// saturate converts float x to integer type dt, clamped to its range
// (NaN to 0), with C's truncation.
func saturate(x tir.Expr, dt tir.DType) tir.Expr {
	lo, hi := dt.Range()
	fhi := float64(hi)
	if dt == tir.Int32 {
		fhi = 2147483520 // float32 has no 2^31-1: the largest below 2^31
	}
	return &tir.Cast{To: dt, X: tir.MinE(tir.MaxE(tir.CallE("nan0", x), tir.F32(float64(lo))), tir.F32(fhi))}
}
