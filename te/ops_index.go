package te

import (
	"slices"

	"github.com/tessera-ml/tessera/tir"
)

// Ops that read or write at run-time indices: Gather, GatherElements,
// GatherND, OneHot, ScatterElements and ScatterND. Indices arrive as
// float32 values holding integers (the kernels' one element type); an
// index is wrapped when negative and clamped to its axis, so every load
// stays in bounds whatever the data says. The clamp keeps memory safe; it
// does not make an index out of range right (ONNX calls it an error): the
// build checks run-time indices before a kernel reads them, and shape
// inference constant ones (ops.Op.Indices). No load depends on a condition
// being evaluated first: a vectorized select computes both of its sides.

// indexAt is the index along an axis of extent n that value v (a float32
// holding an integer) names: negative counts from the end, clamped to
// [0, n).
func indexAt(v tir.Expr, n int) tir.Expr {
	i := &tir.Cast{To: tir.Int, X: v}
	wrapped := tir.SelectE(tir.Cmp(tir.LT, i, tir.Const(0)), tir.AddE(i, tir.Const(int64(n))), i)
	return clampIndex(wrapped, n)
}

// clampIndex clamps an integer expression to [0, n).
func clampIndex(e tir.Expr, n int) tir.Expr {
	return tir.MinE(tir.MaxE(e, tir.Const(0)), tir.Const(int64(n-1)))
}

// Gather is ONNX Gather: out[a..., j..., b...] = x[a..., idx[j...], b...]
// with the index on axis.
func Gather(name string, x, idx *Tensor, axis int) (*Tensor, error) {
	name = orDefault(name, "gather")
	if err := checkInputs("Gather", name, x, idx); err != nil {
		return nil, err
	}
	axis, err := normAxis("Gather", name, axis, len(x.Shape))
	if err != nil {
		return nil, err
	}
	ir := len(idx.Shape)
	out := append(append(slices.Clone(x.Shape[:axis]), idx.Shape...), x.Shape[axis+1:]...)
	return Compute(name, out, func(i []tir.Expr) tir.Expr {
		xi := slices.Clone(i[:axis])
		xi = append(xi, indexAt(idx.At(i[axis:axis+ir]...), x.Shape[axis]))
		return x.At(append(xi, i[axis+ir:]...)...)
	}), nil
}

// GatherElements is ONNX GatherElements: out[j] = x[j with axis replaced by
// idx[j]]; idx has x's rank and, off the axis, no larger extents.
func GatherElements(name string, x, idx *Tensor, axis int) (*Tensor, error) {
	name = orDefault(name, "gather_elements")
	if err := checkInputs("GatherElements", name, x, idx); err != nil {
		return nil, err
	}
	axis, err := normAxis("GatherElements", name, axis, len(x.Shape))
	if err != nil {
		return nil, err
	}
	if len(idx.Shape) != len(x.Shape) {
		return nil, opError("GatherElements", name, "indices %v and data %v differ in rank", idx.Shape, x.Shape)
	}
	for k, d := range idx.Shape {
		if k != axis && d > x.Shape[k] {
			return nil, opError("GatherElements", name, "indices %v exceed data %v on axis %d", idx.Shape, x.Shape, k)
		}
	}
	return Compute(name, idx.Shape, func(i []tir.Expr) tir.Expr {
		xi := slices.Clone(i)
		xi[axis] = indexAt(idx.At(i...), x.Shape[axis])
		return x.At(xi...)
	}), nil
}

// GatherND is ONNX GatherND: with K the last extent of idx and b batch
// dimensions (shared by x and idx), out[p..., rest...] = x[p[:b]...,
// idx[p..., 0], ..., idx[p..., K-1], rest...].
func GatherND(name string, x, idx *Tensor, batchDims int) (*Tensor, error) {
	name = orDefault(name, "gather_nd")
	if err := checkInputs("GatherND", name, x, idx); err != nil {
		return nil, err
	}
	q, b := len(idx.Shape), batchDims
	if q == 0 {
		return nil, opError("GatherND", name, "indices are a scalar")
	}
	k := idx.Shape[q-1]
	if b < 0 || b >= q || b+k > len(x.Shape) || !slices.Equal(idx.Shape[:b], x.Shape[:b]) {
		return nil, opError("GatherND", name, "batch_dims %d, indices %v and data %v do not fit", b, idx.Shape, x.Shape)
	}
	out := append(slices.Clone(idx.Shape[:q-1]), x.Shape[b+k:]...)
	return Compute(name, out, func(i []tir.Expr) tir.Expr {
		xi := slices.Clone(i[:b])
		for j := range k {
			xi = append(xi, indexAt(idx.At(append(slices.Clone(i[:q-1]), Idx(j))...), x.Shape[b+j]))
		}
		return x.At(append(xi, i[q-1:]...)...)
	}), nil
}

// OneHot is ONNX OneHot: out[..., k, ...] (k on axis, of extent depth) is
// values[1] where k is the index's value (negative counts from depth),
// values[0] elsewhere.
func OneHot(name string, idx, values *Tensor, depth, axis int) (*Tensor, error) {
	name = orDefault(name, "one_hot")
	if err := checkInputs("OneHot", name, idx, values); err != nil {
		return nil, err
	}
	if depth <= 0 {
		return nil, opError("OneHot", name, "depth %d", depth)
	}
	if len(values.Shape) != 1 || values.Shape[0] != 2 {
		return nil, opError("OneHot", name, "values %v, want [2]", values.Shape)
	}
	axis, err := normAxis("OneHot", name, axis, len(idx.Shape)+1)
	if err != nil {
		return nil, err
	}
	out := slices.Insert(slices.Clone(idx.Shape), axis, depth)
	return Compute(name, out, func(i []tir.Expr) tir.Expr {
		v := idx.At(dropAxis(i, axis)...)
		k := tir.SelectE(tir.Cmp(tir.LT, v, tir.F32(0)), tir.AddE(v, tir.F32(float64(depth))), v)
		hit := tir.Cmp(tir.EQ, k, &tir.Cast{To: tir.Float32, X: i[axis]})
		return tir.SelectE(hit, values.At(Idx(1)), values.At(Idx(0)))
	}), nil
}

// ScatterElements is ONNX ScatterElements (and Scatter): updates[j] goes
// to data[j with axis replaced by idx[j]]; idx and updates share a shape
// of data's rank. red combines the updates aimed at one element with its
// data (Sum, ProdReduce, MaxReduce, MinReduce); NoReduce keeps the last
// one (ONNX leaves duplicates undefined there).
func ScatterElements(name string, data, idx, upd *Tensor, axis int, red Reducer) (*Tensor, error) {
	name = orDefault(name, "scatter_elements")
	if err := checkInputs("ScatterElements", name, data, idx, upd); err != nil {
		return nil, err
	}
	axis, err := normAxis("ScatterElements", name, axis, len(data.Shape))
	if err != nil {
		return nil, err
	}
	if !slices.Equal(idx.Shape, upd.Shape) || len(idx.Shape) != len(data.Shape) {
		return nil, opError("ScatterElements", name, "indices %v and updates %v must have one shape, of data's rank %d", idx.Shape, upd.Shape, len(data.Shape))
	}
	for k, d := range idx.Shape {
		if k != axis && d > data.Shape[k] {
			return nil, opError("ScatterElements", name, "indices %v exceed data %v on axis %d", idx.Shape, data.Shape, k)
		}
	}
	// An output element beyond the indices' extent on an axis other than
	// the scatter axis receives no update; its loads read a clamped
	// position.
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
	pos := func(i []tir.Expr, k tir.Expr) tir.Expr { return upd.At(at(i, clampIndex(k, idx.Shape[axis]))...) }
	return scatter(name, data, []int{idx.Shape[axis]}, red, aims, value, pos), nil
}

// ScatterND is ONNX ScatterND: with K the last extent of idx and P its
// other extents, updates [P..., data's extents past K] go to data[idx[p,
// 0..K-1], rest...]; red as for ScatterElements.
func ScatterND(name string, data, idx, upd *Tensor, red Reducer) (*Tensor, error) {
	name = orDefault(name, "scatter_nd")
	if err := checkInputs("ScatterND", name, data, idx, upd); err != nil {
		return nil, err
	}
	if len(idx.Shape) == 0 {
		return nil, opError("ScatterND", name, "indices are a scalar")
	}
	k := idx.Shape[len(idx.Shape)-1]
	p := idx.Shape[:len(idx.Shape)-1]
	if k == 0 || k > len(data.Shape) || !slices.Equal(upd.Shape, append(slices.Clone(p), data.Shape[k:]...)) {
		return nil, opError("ScatterND", name, "updates %v, want indices %v without their last axis, then data %v past its first %d axes", upd.Shape, idx.Shape, data.Shape, k)
	}
	tuple := func(r []tir.Expr, j int) []tir.Expr { return append(slices.Clone(r), Idx(j)) }
	aims := func(i, r []tir.Expr) tir.Expr {
		var cond tir.Expr
		for j := range k {
			cond = andCond(cond, tir.Cmp(tir.EQ, indexAt(idx.At(tuple(r[:len(p)], j)...), data.Shape[j]), i[j]))
		}
		return cond
	}
	value := func(i, r []tir.Expr) tir.Expr { return upd.At(append(slices.Clone(r[:len(p)]), i[k:]...)...) }
	strides := make([]int, len(p))
	for a, s := len(p)-1, 1; a >= 0; a-- {
		strides[a], s = s, s*p[a]
	}
	pos := func(i []tir.Expr, flat tir.Expr) tir.Expr {
		flat = clampIndex(flat, numElems(p))
		var r []tir.Expr
		for a, d := range p {
			r = append(r, imodc(idivc(flat, strides[a]), d))
		}
		return upd.At(append(r, i[k:]...)...)
	}
	return scatter(name, data, p, red, aims, value, pos), nil
}

// scatter builds the output of a scatter over data: rshape are the extents
// of the update positions that may aim at an element (a reduce axis each);
// aims says whether position r aims at output element i, value is the
// update at r for element i, and pos the update at flat position k
// (NoReduce). A kernel computes each output element, so the scatter is a
// search: a reduction over the positions combines the updates aimed at the
// element (or, for NoReduce, finds the last one as name_last), and the
// element combines them with its data (or takes the last one, if any).
func scatter(name string, data *Tensor, rshape []int, red Reducer, aims func(i, r []tir.Expr) tir.Expr,
	value func(i, r []tir.Expr) tir.Expr, pos func(i []tir.Expr, k tir.Expr) tir.Expr) *Tensor {
	if len(rshape) == 0 { // a single update position: one reduce axis of 1
		rshape = []int{1}
	}
	if red == NoReduce {
		strides := make([]int, len(rshape))
		for a, s := len(rshape)-1, 1; a >= 0; a-- {
			strides[a], s = s, s*rshape[a]
		}
		last := Reduce(name+"_last", data.Shape, MaxReduce, rshape, func(i, r []tir.Expr) tir.Expr {
			var k tir.Expr = Idx(0)
			for a, v := range r {
				k = iadd(k, imulc(v, strides[a]))
			}
			return tir.SelectE(aims(i, r), &tir.Cast{To: tir.Float32, X: k}, tir.F32(-1))
		})
		return Compute(name, data.Shape, func(i []tir.Expr) tir.Expr {
			l := last.At(i...)
			return tir.SelectE(tir.Cmp(tir.GE, l, tir.F32(0)), pos(i, &tir.Cast{To: tir.Int, X: l}), data.At(i...))
		})
	}
	id := tir.F32(red.Identity())
	acc := Reduce(name+"_acc", data.Shape, red, rshape, func(i, r []tir.Expr) tir.Expr {
		return tir.SelectE(aims(i, r), value(i, r), id)
	})
	return Compute(name, data.Shape, func(i []tir.Expr) tir.Expr {
		return red.Combine(data.At(i...), acc.At(i...))
	})
}

// ReverseSequence is ONNX ReverseSequence: along timeAxis, the first
// lens[b] elements of batch entry b (b on batchAxis) are reversed, the rest
// kept.
func ReverseSequence(name string, x, lens *Tensor, timeAxis, batchAxis int) (*Tensor, error) {
	name = orDefault(name, "reverse_sequence")
	if err := checkInputs("ReverseSequence", name, x, lens); err != nil {
		return nil, err
	}
	if len(x.Shape) < 2 || timeAxis == batchAxis || timeAxis < 0 || batchAxis < 0 || timeAxis > 1 || batchAxis > 1 {
		return nil, opError("ReverseSequence", name, "time axis %d and batch axis %d of %v (0 and 1, or 1 and 0)", timeAxis, batchAxis, x.Shape)
	}
	if len(lens.Shape) != 1 || lens.Shape[0] != x.Shape[batchAxis] {
		return nil, opError("ReverseSequence", name, "sequence_lens %v for a batch of %d", lens.Shape, x.Shape[batchAxis])
	}
	T := x.Shape[timeAxis]
	return Compute(name, x.Shape, func(i []tir.Expr) tir.Expr {
		n := clampIndex(&tir.Cast{To: tir.Int, X: lens.At(i[batchAxis])}, T+1)
		t := i[timeAxis]
		rev := clampIndex(tir.SubE(tir.SubE(n, Idx(1)), t), T)
		xi := slices.Clone(i)
		xi[timeAxis] = tir.SelectE(tir.Cmp(tir.LT, t, n), rev, t)
		return x.At(xi...)
	}), nil
}

// TableLookup is out[i] = table[x[i] − lo] for a table of n entries: an
// elementwise function of integer data x of n values from lo, tabulated
// (the index is clamped to the table, so a value out of range reads an
// end, unless every value of x's type is inside: 8-bit data and a table of
// its 256 values need no clamp, which would cost two vector operations a
// lookup in a kernel's epilogue).
func TableLookup(name string, x, table *Tensor, lo int64) (*Tensor, error) {
	name = orDefault(name, "table_lookup")
	if err := checkInputs("TableLookup", name, x, table); err != nil {
		return nil, err
	}
	if len(table.Shape) != 1 {
		return nil, opError("TableLookup", name, "table has shape %v, want one axis", table.Shape)
	}
	n := int64(table.Shape[0])
	inside := false
	if dt := x.DType(); dt.IntElem() {
		dlo, dhi := dt.Range()
		inside = dlo >= lo && dhi-lo <= n-1
	}
	return Compute(name, x.Shape, func(i []tir.Expr) tir.Expr {
		k := tir.SubE(&tir.Cast{To: tir.Int, X: x.At(i...)}, tir.Const(lo))
		if inside {
			return table.At(k)
		}
		return table.At(tir.MinE(tir.MaxE(k, tir.Const(0)), tir.Const(n-1)))
	}), nil
}
