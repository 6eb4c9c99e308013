package ops

import (
	"fmt"
	"slices"

	"tessera/graph"
	"tessera/te"
)

// Elementwise ops of several inputs with numpy broadcasting.

func init() {
	binary := map[string]func(string, *te.Tensor, *te.Tensor) (*te.Tensor, error){
		"Add": te.Add, "Sub": te.Sub, "Mul": te.Mul, "Div": te.Div, "Pow": te.Pow,
	}
	for name, f := range binary {
		define(&Op{Name: name, MinIn: 2, MaxIn: 2, Pattern: Broadcast, Eval: evalBinary, Lower: lowerBinary(f)})
	}
	for name, f := range map[string]func(string, ...*te.Tensor) (*te.Tensor, error){"Max": te.Max, "Min": te.Min} {
		define(&Op{Name: name, MinIn: 1, MaxIn: -1, Pattern: Broadcast, Eval: evalBinary, Lower: lowerVariadic(f)})
	}
	define(
		&Op{Name: "Sum", MinIn: 1, MaxIn: -1, Pattern: Broadcast, Lower: lowerSum},
		&Op{Name: "Mean", MinIn: 1, MaxIn: -1, Pattern: Broadcast, Lower: lowerSum},
		&Op{Name: "PRelu", MinIn: 2, MaxIn: 2, Pattern: Broadcast, Lower: lowerPRelu},
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

func evalBinary(c *inferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
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
