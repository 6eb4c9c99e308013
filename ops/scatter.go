package ops

import (
	"fmt"
	"math"
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
)

// Ops that write data at run-time indices: ScatterElements (and Scatter,
// its name before opset 11), ScatterND, and GatherND, which reads the way
// ScatterND writes; their computes are te's (te/ops_index.go), where a
// scatter is a search over the updates aimed at each output element.

func init() {
	define(
		&Op{Name: "ScatterElements", MinIn: 3, MaxIn: 3, Pattern: Opaque, Lower: lowerScatterElements, Indices: axisIndices},
		&Op{Name: "Scatter", MinIn: 3, MaxIn: 3, Pattern: Opaque, Lower: lowerScatterElements, Indices: axisIndices},
		&Op{Name: "ScatterND", MinIn: 3, MaxIn: 3, Pattern: Opaque, Eval: evalScatterND, Lower: lowerScatterND, Indices: scatterNDIndices},
		&Op{Name: "GatherND", MinIn: 2, MaxIn: 2, Pattern: Injective, Lower: lowerGatherND, Indices: gatherNDIndices},
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

// evalScatterND folds a ScatterND of constants: PyTorch writes the
// attention mask of Swin's shifted windows as 45 of them (img_mask[:, h,
// w, :] = cnt), which would otherwise run as kernels on every inference.
// The output is data with updates[i...] written (or combined by the
// reduction) at the index tuple indices[i..., :] and the slice it names.
func evalScatterND(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	data, idx, upd := in[0], in[1], in[2]
	red, err := c.N.Str("reduction", "none")
	if err != nil {
		return nil, err
	}
	combine := map[string]func(a, b float64) float64{
		"none": func(_, b float64) float64 { return b },
		"add":  func(a, b float64) float64 { return a + b },
		"mul":  func(a, b float64) float64 { return a * b },
		"max":  math.Max,
		"min":  math.Min,
	}[red]
	if combine == nil {
		return nil, c.N.Errorf("reduction %q", red)
	}
	if len(idx.Shape) == 0 || !idx.DType.IsInt() || data.DType != upd.DType {
		return nil, c.N.Errorf("indices %v %v, data %v, updates %v", idx.DType, idx.Shape, data.DType, upd.DType)
	}
	k := idx.Shape[len(idx.Shape)-1]
	if k > len(data.Shape) {
		return nil, c.N.Errorf("index tuples of %d for data of rank %d", k, len(data.Shape))
	}
	slice := graph.NumElems(data.Shape[k:])
	tuples := graph.NumElems(idx.Shape[:len(idx.Shape)-1])
	if graph.NumElems(upd.Shape) != tuples*slice {
		return nil, c.N.Errorf("updates %v for %d index tuples of slices of %d", upd.Shape, tuples, slice)
	}
	out := &graph.Tensor{DType: data.DType, Shape: slices.Clone(data.Shape)}
	strides := graph.Strides(data.Shape)
	ids := idx.Int64s()
	offsets := make([]int, tuples)
	for t := range tuples {
		for j := range k {
			i := ids[t*k+j]
			if i < 0 {
				i += int64(data.Shape[j])
			}
			if i < 0 || i >= int64(data.Shape[j]) {
				return nil, c.N.Errorf("index %d out of range of axis %d (%d)", ids[t*k+j], j, data.Shape[j])
			}
			offsets[t] += int(i) * strides[j]
		}
	}
	if data.DType.IsInt() {
		// Integers stay int64: float64 would round those past 2^53.
		out.I64 = slices.Clone(data.I64)
		combineInt := map[string]func(a, b int64) int64{
			"none": func(_, b int64) int64 { return b }, "add": func(a, b int64) int64 { return a + b },
			"mul": func(a, b int64) int64 { return a * b }, "max": func(a, b int64) int64 { return max(a, b) },
			"min": func(a, b int64) int64 { return min(a, b) },
		}[red]
		for t, off := range offsets {
			for e := range slice {
				out.I64[off+e] = combineInt(out.I64[off+e], upd.I64[t*slice+e])
			}
		}
		return []*graph.Tensor{out}, nil
	}
	out.F32 = slices.Clone(data.F32)
	for t, off := range offsets {
		for e := range slice {
			out.F32[off+e] = float32(combine(float64(out.F32[off+e]), float64(upd.F32[t*slice+e])))
		}
	}
	return []*graph.Tensor{out}, nil
}
