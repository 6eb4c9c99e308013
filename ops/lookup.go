package ops

import (
	"fmt"
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
)

// TableLookup is Tessera's own op (never read from a model file: package
// onnx refuses it) for an elementwise function of 8-bit data, tabulated:
//
//	TableLookup(x, table)[i] = table[x[i] − min(x's type)]
//
// x is uint8 or int8, table a constant of 256 elements in the order of
// x's values. The graph pass that tabulates quantized activations
// (frontend's lookup-tables) writes it in place of a chain such as a QDQ
// model's SiLU, Q(DQ(x)·DQ(Q(Sigmoid(DQ(x))))), which would otherwise
// compute an exponential, a division and three requantizations per
// element: onnxruntime's QLinearSigmoid and QLinearLeakyRelu are tables
// too. The op is elementwise in x (the table is a constant of another
// shape that every element indexes), and layout-free: x's axes name
// nothing in it.
const TableLookup = graph.TableLookupOp

// TableSize is the number of entries of a TableLookup table.
const TableSize = 256

func init() {
	define(&Op{Name: TableLookup, MinIn: 2, MaxIn: 2, Pattern: ElemWise, OutType: sameAs(1),
		Layout: LayoutAxes, PermuteAxes: func(*graph.Graph, *graph.Node, []int) bool { return true },
		Eval: evalTableLookup, Lower: lowerTableLookup})
}

// tableOffset returns what TableLookup subtracts from an index of dtype dt
// (its smallest value), or false for a dtype it does not take.
func tableOffset(dt graph.DType) (int64, bool) {
	switch dt {
	case graph.Uint8:
		return 0, true
	case graph.Int8:
		return -128, true
	}
	return 0, false
}

// checkTableLookup checks the operands' types and the table's size.
func checkTableLookup(n *graph.Node, x graph.DType, tableShape []int) (int64, error) {
	off, ok := tableOffset(x)
	if !ok {
		return 0, n.Errorf("%s indexes its table with %s values; it takes uint8 or int8", TableLookup, x)
	}
	if !slices.Equal(tableShape, []int{TableSize}) {
		return 0, n.Errorf("%s's table has shape %v, want [%d]", TableLookup, tableShape, TableSize)
	}
	return off, nil
}

func lowerTableLookup(c *lowerCtx) ([]*te.Tensor, error) {
	tv := c.g.Values[c.n.Input(1)]
	if tv == nil || tv.Const == nil {
		return nil, fmt.Errorf("%s's table %s is not a constant", TableLookup, c.n.Input(1))
	}
	off, err := checkTableLookup(c.n, c.dtype(0), tv.Shape)
	if err != nil {
		return nil, err
	}
	x, err := c.raw(0)
	if err != nil {
		return nil, err
	}
	table, err := c.raw(1)
	if err != nil {
		return nil, err
	}
	// x holds a value of its type whether it is stored as such or as a
	// float32 (a graph without integer kernels); te's clamp keeps a float
	// graph input out of range (the API takes inputs as float32) inside
	// the table.
	return one(te.TableLookup(c.name(0), x, table, off))
}

func evalTableLookup(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, table := in[0], in[1]
	off, err := checkTableLookup(c.N, x.DType, table.Shape)
	if err != nil {
		return nil, err
	}
	out := &graph.Tensor{DType: table.DType, Shape: slices.Clone(x.Shape)}
	for _, v := range x.I64 {
		k := min(max(v-off, 0), TableSize-1)
		if table.DType.IsInt() {
			out.I64 = append(out.I64, table.I64[k])
		} else {
			out.F32 = append(out.F32, table.F32[k])
		}
	}
	return []*graph.Tensor{out}, nil
}
