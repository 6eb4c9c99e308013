package ops

import (
	"fmt"
	"math"
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// Elementwise ops of several inputs with numpy broadcasting.

func init() {
	binary := map[string]func(string, *te.Tensor, *te.Tensor) (*te.Tensor, error){
		"Add": te.Add, "Sub": te.Sub, "Mul": te.Mul, "Pow": te.Pow,
	}
	for name, f := range binary {
		define(&Op{Name: name, MinIn: 2, MaxIn: 2, Pattern: Broadcast, Layout: LayoutFree, Eval: evalBinary, Lower: lowerBinary(f)})
	}
	for name, f := range map[string]func(string, ...*te.Tensor) (*te.Tensor, error){"Max": te.Max, "Min": te.Min} {
		define(&Op{Name: name, MinIn: 1, MaxIn: -1, Pattern: Broadcast, Layout: LayoutFree, Eval: evalBinary, Lower: lowerVariadic(f)})
	}
	define(
		// Integer division truncates toward zero.
		&Op{Name: "Div", MinIn: 2, MaxIn: 2, Pattern: Broadcast, Layout: LayoutFree, Eval: evalBinary, Lower: elementwise(func(c *lowerCtx, v []tir.Expr) tir.Expr {
			if c.dtype(0).IsInt() {
				return truncE(tir.DivE(v[0], v[1]))
			}
			return tir.DivE(v[0], v[1])
		})},
		&Op{Name: "Mod", MinIn: 2, MaxIn: 2, Pattern: Broadcast, Layout: LayoutFree, Eval: evalMod, Lower: elementwise(lowerMod)},
		&Op{Name: "Sum", MinIn: 1, MaxIn: -1, Pattern: Broadcast, Layout: LayoutFree, Lower: lowerSum},
		&Op{Name: "Mean", MinIn: 1, MaxIn: -1, Pattern: Broadcast, Layout: LayoutFree, Lower: lowerSum},
		&Op{Name: "PRelu", MinIn: 2, MaxIn: 2, Pattern: Broadcast, Layout: LayoutFree, Lower: lowerPRelu},
		&Op{Name: "BitShift", MinIn: 2, MaxIn: 2, Pattern: Broadcast, Layout: LayoutFree, Lower: lowerBitShift},
	)
}

func lowerBinary(f func(string, *te.Tensor, *te.Tensor) (*te.Tensor, error)) func(c *lowerCtx) ([]*te.Tensor, error) {
	return func(c *lowerCtx) ([]*te.Tensor, error) {
		a, err := c.in(0)
		if err != nil {
			return nil, err
		}
		b, err := c.in(1)
		if err != nil {
			return nil, err
		}
		return one(f(c.name(0), a, b))
	}
}

func lowerVariadic(f func(string, ...*te.Tensor) (*te.Tensor, error)) func(c *lowerCtx) ([]*te.Tensor, error) {
	return func(c *lowerCtx) ([]*te.Tensor, error) {
		xs, err := c.ins()
		if err != nil {
			return nil, err
		}
		return one(f(c.name(0), xs...))
	}
}

func evalBinary(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	op := binaryOps[c.N.OpType]
	fi, ff := foldN(op.i, op.f)
	return []*graph.Tensor{mapN(c.Out[0].Shape, in, fi, ff)}, nil
}

// PReLUSlopeShape returns the shape slope must be viewed with to
// broadcast against x: before opset 7 a 1-D slope of x's channel count
// applies along axis 1; from 7 on, broadcasting is numpy's.
func PReLUSlopeShape(opset int, x, slope []int) []int {
	if opset < 7 && len(slope) == 1 && len(x) >= 2 && slope[0] == x[1] && slope[0] != 1 {
		s := make([]int, len(x)-1)
		for i := range s {
			s[i] = 1
		}
		s[0] = slope[0]
		return s
	}
	return slope
}

// lowerPRelu: max(x, 0) + slope * min(x, 0).
func lowerPRelu(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	slope, err := c.in(1)
	if err != nil {
		return nil, err
	}
	ss := PReLUSlopeShape(c.opset, x.Shape, slope.Shape)
	if out, err := te.BroadcastShapes(x.Shape, ss); err != nil || !slices.Equal(out, x.Shape) {
		return nil, fmt.Errorf("slope %v does not broadcast to %v", slope.Shape, x.Shape)
	}
	if !slices.Equal(ss, slope.Shape) {
		if slope, err = te.Reshape(c.sub("slope"), slope, ss, false); err != nil {
			return nil, err
		}
	}
	pos, err := te.Relu(c.sub("pos"), x)
	if err != nil {
		return nil, err
	}
	neg, err := c.negPart(x)
	if err != nil {
		return nil, err
	}
	sn, err := te.Mul(c.sub("scaled"), neg, slope)
	if err != nil {
		return nil, err
	}
	return one(te.Add(c.name(0), pos, sn))
}

// lowerSum lowers Sum (a chain of Adds) and Mean (the sum divided by the
// input count).
func lowerSum(c *lowerCtx) ([]*te.Tensor, error) {
	xs, err := c.ins()
	if err != nil {
		return nil, err
	}
	mean := c.n.OpType == "Mean"
	if len(xs) == 1 {
		return lowerCopy(c)
	}
	acc := xs[0]
	for i, x := range xs[1:] {
		name := c.sub(fmt.Sprintf("add%d", i))
		if i == len(xs)-2 && !mean {
			name = c.name(0)
		}
		if acc, err = te.Add(name, acc, x); err != nil {
			return nil, err
		}
	}
	if !mean {
		return []*te.Tensor{acc}, nil
	}
	return one(te.Div(c.name(0), acc, c.scalar(float64(len(xs)))))
}

// lowerMod: fmod=1 is C's fmod (the sign of the dividend); fmod=0, for
// integers only, takes the sign of the divisor as Python's %.
func lowerMod(c *lowerCtx, v []tir.Expr) tir.Expr {
	r := tir.CallE("fmod", v[0], v[1])
	if f, _ := c.n.Int("fmod", 0); f != 0 {
		return r
	}
	opposite := tir.OrE(
		tir.AndE(tir.Cmp(tir.LT, r, tir.F32(0)), tir.Cmp(tir.GT, v[1], tir.F32(0))),
		tir.AndE(tir.Cmp(tir.GT, r, tir.F32(0)), tir.Cmp(tir.LT, v[1], tir.F32(0))))
	return tir.SelectE(opposite, tir.AddE(r, v[1]), r)
}

func evalMod(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	f, _ := c.N.Int("fmod", 0)
	return []*graph.Tensor{mapTo(c.Out[0].DType, c.Out[0].Shape, in, func(v []float64) float64 {
		r := math.Mod(v[0], v[1])
		if f == 0 && r != 0 && (r < 0) != (v[1] < 0) {
			r += v[1]
		}
		return r
	})}, nil
}

// lowerBitShift shifts unsigned integers (carried as float32, exact
// within ±2^24): left multiplies by 2^y and wraps at the type's width,
// right divides by 2^y and rounds down. uint64 never reaches here (the
// decoder refuses it).
func lowerBitShift(c *lowerCtx) ([]*te.Tensor, error) {
	dt := c.dtype(0)
	width := map[graph.DType]int{graph.Uint8: 8, graph.Uint16: 16, graph.Uint32: 32}[dt]
	if width == 0 || c.dtype(1) != dt {
		return nil, fmt.Errorf("operands are %s and %s, want one unsigned integer type", dt, c.dtype(1))
	}
	dir, err := c.n.Str("direction", "")
	if err != nil {
		return nil, err
	}
	if dir != "LEFT" && dir != "RIGHT" {
		return nil, fmt.Errorf("direction %q (LEFT or RIGHT)", dir)
	}
	return elementwise(func(_ *lowerCtx, v []tir.Expr) tir.Expr {
		p := tir.CallE("pow", tir.F32(2), v[1])
		if dir == "RIGHT" {
			return tir.CallE("floor", tir.DivE(v[0], p))
		}
		return tir.CallE("fmod", tir.MulE(v[0], p), tir.F32(math.Ldexp(1, width)))
	})(c)
}
