package ops

import (
	"fmt"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
)

// Spectral ops: DFT and STFT, reductions over the samples with their
// cosines and sines computed in the kernel (te/ops_dft.go). Lengths, steps
// and axes must be constants.

func init() {
	define(
		&Op{Name: "DFT", MinIn: 1, MaxIn: 3, Pattern: CommReduce, Lower: lowerDFT},
		&Op{Name: "STFT", MinIn: 2, MaxIn: 4, Pattern: CommReduce, Lower: lowerSTFT},
	)
}

// scalarInput returns constant scalar input i, or def when it is omitted.
func (c *lowerCtx) scalarInput(i int, what string, def int) (int, error) {
	name := c.n.Input(i)
	if name == "" {
		return def, nil
	}
	t := c.g.ConstOf(name)
	if t == nil {
		return 0, &graph.NotConstantError{Value: name, Node: c.n.Name, Op: c.n.OpType, What: what}
	}
	if t.Len() != 1 {
		return 0, fmt.Errorf("%s has shape %v, want a scalar", what, t.Shape)
	}
	return int(t.Int64s()[0]), nil
}

func lowerDFT(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	r := len(x.Shape)
	// The axis is an attribute (default 1) before opset 20, an input
	// (default −2, counted over every axis) after.
	axis := 1
	if c.opset >= 20 {
		if axis, err = c.scalarInput(2, "axis", -2); err != nil {
			return nil, err
		}
		if axis < 0 {
			axis += r
		}
	} else if a, err := c.n.Int("axis", 1); err != nil {
		return nil, err
	} else {
		axis = int(a)
	}
	if axis < 0 || axis >= r-1 {
		return nil, fmt.Errorf("axis %d of input %v (the last axis holds the real and imaginary parts)", axis, x.Shape)
	}
	n, err := c.scalarInput(1, "dft_length", x.Shape[axis])
	if err != nil {
		return nil, err
	}
	inv, err := c.n.Int("inverse", 0)
	if err != nil {
		return nil, err
	}
	one1, err := c.n.Int("onesided", 0)
	if err != nil {
		return nil, err
	}
	return one(te.DFT(c.name(0), x, axis, n, inv != 0, one1 != 0))
}

func lowerSTFT(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	step, err := c.scalarInput(1, "frame_step", 0)
	if err != nil {
		return nil, err
	}
	window, err := c.opt(2)
	if err != nil {
		return nil, err
	}
	def := 0
	if window != nil {
		def = window.Shape[0]
	}
	length, err := c.scalarInput(3, "frame_length", def)
	if err != nil {
		return nil, err
	}
	onesided, err := c.n.Int("onesided", 1)
	if err != nil {
		return nil, err
	}
	return one(te.STFT(c.name(0), x, window, step, length, onesided != 0))
}
