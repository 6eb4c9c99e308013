package ops

import (
	"fmt"
	"slices"

	"tessera/graph"
	"tessera/te"
	"tessera/tir"
)

// Ops that write data at run-time indices: ScatterElements (and Scatter,
// its name before opset 11), ScatterND, and GatherND, which reads the way
// ScatterND writes. A kernel computes each output element, so a scatter
// becomes a search: a reduction over the updates finds those aimed at the
// element, and combines them (reduction add, mul, max, min) or keeps the
// last one (reduction none; ONNX leaves duplicates undefined there) before
// the element takes it or keeps its data. Indices are clamped after the
// negative wrap, as Gather's are.

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

// scatter builds the output of a scatter over data: rshape are the extents
// of the updates' positions that may aim at an element (a reduce axis
// each); aims says whether position r aims at output element i (a
// condition whose loads are in bounds), value is the update at r for
// element i, and pos the update of flat position k (reduction none).
func (c *lowerCtx) scatter(data *te.Tensor, rshape []int, red te.Reducer, aims func(i, r []tir.Expr) tir.Expr,
	value func(i, r []tir.Expr) tir.Expr, pos func(i []tir.Expr, k tir.Expr) tir.Expr) *te.Tensor {
	if len(rshape) == 0 { // a single update position
		rshape = []int{1}
		inner, innerValue := aims, value
		aims = func(i, r []tir.Expr) tir.Expr { return inner(i, nil) }
		value = func(i, r []tir.Expr) tir.Expr { return innerValue(i, nil) }
	}
	if red == te.NoReduce {
		// The last update aimed at each element, as a flat position, or -1.
		strides := graph.Strides(rshape)
		last := te.Reduce(c.sub("last"), data.Shape, te.MaxReduce, rshape, func(i, r []tir.Expr) tir.Expr {
			var k tir.Expr = tir.Const(0)
			for a, v := range r {
				k = tir.AddE(k, tir.MulE(v, tir.Const(int64(strides[a]))))
			}
			return tir.SelectE(aims(i, r), &tir.Cast{To: tir.Float32, X: k}, tir.F32(-1))
		})
		return te.Compute(c.name(0), data.Shape, func(i []tir.Expr) tir.Expr {
			l := last.At(i...)
			return tir.SelectE(tir.Cmp(tir.GE, l, tir.F32(0)), pos(i, &tir.Cast{To: tir.Int, X: l}), data.At(i...))
		})
	}
	id := tir.F32(red.Identity())
	acc := te.Reduce(c.sub("acc"), data.Shape, red, rshape, func(i, r []tir.Expr) tir.Expr {
		return tir.SelectE(aims(i, r), value(i, r), id)
	})
	return te.Compute(c.name(0), data.Shape, func(i []tir.Expr) tir.Expr {
		return red.Combine(data.At(i...), acc.At(i...))
	})
}

// lowerScatterElements: updates[j] goes to data[j with axis a replaced by
// indices[j]].
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
	if !slices.Equal(idx.Shape, upd.Shape) || len(idx.Shape) != len(data.Shape) {
		return nil, fmt.Errorf("indices %v and updates %v must have one shape, of data's rank %d", idx.Shape, upd.Shape, len(data.Shape))
	}
	for k, d := range idx.Shape {
		if k != axis && d > data.Shape[k] {
			return nil, fmt.Errorf("indices %v exceed data %v on axis %d", idx.Shape, data.Shape, k)
		}
	}
	// Every load stays in bounds whatever the conditions say (a vectorized
	// select may evaluate both sides): an output element beyond the
	// indices' extent on another axis than the scatter axis, which no
	// update aims at, reads a clamped position.
	at := func(i []tir.Expr, u tir.Expr) []tir.Expr {
		j := slices.Clone(i)
		for k, d := range idx.Shape {
			if k != axis && d < data.Shape[k] {
				j[k] = tir.MinE(j[k], tir.Const(int64(d-1)))
			}
		}
		j[axis] = u
		return j
	}
	aims := func(i, r []tir.Expr) tir.Expr {
		cond := tir.Cmp(tir.EQ, indexAt(idx.At(at(i, r[0])...), data.Shape[axis]), i[axis])
		for k, d := range idx.Shape {
			if k != axis && d < data.Shape[k] {
				cond = tir.AndE(tir.Cmp(tir.LT, i[k], tir.Const(int64(d))), cond)
			}
		}
		return cond
	}
	value := func(i, r []tir.Expr) tir.Expr { return upd.At(at(i, r[0])...) }
	pos := func(i []tir.Expr, k tir.Expr) tir.Expr { return upd.At(at(i, clampE(k, idx.Shape[axis]))...) }
	return []*te.Tensor{c.scatter(data, []int{idx.Shape[axis]}, red, aims, value, pos)}, nil
}

// ndOperands returns data, indices and their last extent K for ScatterND
// and GatherND.
func (c *lowerCtx) ndOperands() (data, idx *te.Tensor, k int, err error) {
	if data, err = c.in(0); err != nil {
		return nil, nil, 0, err
	}
	if idx, err = c.in(1); err != nil {
		return nil, nil, 0, err
	}
	if len(idx.Shape) == 0 {
		return nil, nil, 0, fmt.Errorf("indices are a scalar")
	}
	k = idx.Shape[len(idx.Shape)-1]
	return data, idx, k, nil
}

// lowerScatterND: updates[p, rest] goes to data[indices[p, 0..K-1], rest].
func lowerScatterND(c *lowerCtx) ([]*te.Tensor, error) {
	data, idx, k, err := c.ndOperands()
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
	p := idx.Shape[:len(idx.Shape)-1]
	if k > len(data.Shape) || !slices.Equal(upd.Shape, append(slices.Clone(p), data.Shape[k:]...)) {
		return nil, fmt.Errorf("updates %v, want indices %v without their last axis, then data %v past its first %d axes", upd.Shape, idx.Shape, data.Shape, k)
	}
	tuple := func(r []tir.Expr, j int) []tir.Expr { return append(slices.Clone(r), tir.Const(int64(j))) }
	aims := func(i, r []tir.Expr) tir.Expr {
		var cond tir.Expr
		for j := range k {
			eq := tir.Cmp(tir.EQ, indexAt(idx.At(tuple(r, j)...), data.Shape[j]), i[j])
			if cond == nil {
				cond = eq
			} else {
				cond = tir.AndE(cond, eq)
			}
		}
		return cond
	}
	value := func(i, r []tir.Expr) tir.Expr { return upd.At(append(slices.Clone(r), i[k:]...)...) }
	strides := graph.Strides(p)
	pos := func(i []tir.Expr, flat tir.Expr) tir.Expr {
		var r []tir.Expr
		flat = clampE(flat, graph.NumElems(p))
		for a, d := range p {
			r = append(r, tir.FloorModE(tir.FloorDivE(flat, tir.Const(int64(strides[a]))), tir.Const(int64(d))))
		}
		return upd.At(append(r, i[k:]...)...)
	}
	return []*te.Tensor{c.scatter(data, p, red, aims, value, pos)}, nil
}

// lowerGatherND: out[p, rest] = data[p[:b], indices[p, 0..K-1], rest] for
// batch_dims b.
func lowerGatherND(c *lowerCtx) ([]*te.Tensor, error) {
	data, idx, k, err := c.ndOperands()
	if err != nil {
		return nil, err
	}
	bd, err := c.n.Int("batch_dims", 0)
	if err != nil {
		return nil, err
	}
	b := int(bd)
	q := len(idx.Shape)
	if b < 0 || b >= q || b+k > len(data.Shape) || !slices.Equal(idx.Shape[:b], data.Shape[:b]) {
		return nil, fmt.Errorf("batch_dims %d, indices %v and data %v do not fit", b, idx.Shape, data.Shape)
	}
	out := append(slices.Clone(idx.Shape[:q-1]), data.Shape[b+k:]...)
	return []*te.Tensor{te.Compute(c.name(0), out, func(i []tir.Expr) tir.Expr {
		xi := slices.Clone(i[:b])
		for j := range k {
			xi = append(xi, indexAt(idx.At(append(slices.Clone(i[:q-1]), tir.Const(int64(j)))...), data.Shape[b+j]))
		}
		return data.At(append(xi, i[q-1:]...)...)
	})}, nil
}

// clampE clamps an integer expression to [0, n).
func clampE(e tir.Expr, n int) tir.Expr {
	return tir.MinE(tir.MaxE(e, tir.Const(0)), tir.Const(int64(n-1)))
}
