package ops

import (
	"fmt"

	"tessera/te"
)

// Ops that write data at run-time indices: ScatterElements (and Scatter,
// its name before opset 11), ScatterND, and GatherND, which reads the way
// ScatterND writes; their computes are te's (te/ops_index.go), where a
// scatter is a search over the updates aimed at each output element.

func init() {
	define(
		&Op{Name: "ScatterElements", MinIn: 3, MaxIn: 3, Pattern: Opaque, Lower: lowerScatterElements},
		&Op{Name: "Scatter", MinIn: 3, MaxIn: 3, Pattern: Opaque, Lower: lowerScatterElements},
		&Op{Name: "ScatterND", MinIn: 3, MaxIn: 3, Pattern: Opaque, Lower: lowerScatterND},
		&Op{Name: "GatherND", MinIn: 2, MaxIn: 2, Pattern: Injective, Lower: lowerGatherND},
	)
}

// scatterReduction returns the reducer of the reduction attribute (opset
// 16 on; NoReduce for "none") and its neutral element.
func (c *lowerCtx) scatterReduction() (te.Reducer, error) {
	r, err := c.n.Str("reduction", "none")
	if err != nil {
		return 0, err
	}
	switch r {
	case "none":
		return te.NoReduce, nil
	case "add":
		return te.Sum, nil
	case "mul":
		return te.ProdReduce, nil
	case "max":
		return te.MaxReduce, nil
	case "min":
		return te.MinReduce, nil
	}
	return 0, fmt.Errorf("reduction %q", r)
}

func lowerScatterElements(c *lowerCtx) ([]*te.Tensor, error) {
	data, idx, axis, err := c.gatherOperands()
	if err != nil {
		return nil, err
	}
	upd, err := c.in(2)
	if err != nil {
		return nil, err
	}
	red, err := c.scatterReduction()
	if err != nil {
		return nil, err
	}
	return one(te.ScatterElements(c.name(0), data, idx, upd, axis, red))
}

func lowerScatterND(c *lowerCtx) ([]*te.Tensor, error) {
	xs, err := c.ins() // data, indices, updates
	if err != nil {
		return nil, err
	}
	red, err := c.scatterReduction()
	if err != nil {
		return nil, err
	}
	return one(te.ScatterND(c.name(0), xs[0], xs[1], xs[2], red))
}

func lowerGatherND(c *lowerCtx) ([]*te.Tensor, error) {
	xs, err := c.ins() // data, indices
	if err != nil {
		return nil, err
	}
	b, err := c.n.Int("batch_dims", 0)
	if err != nil {
		return nil, err
	}
	return one(te.GatherND(c.name(0), xs[0], xs[1], int(b)))
}
