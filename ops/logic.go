package ops

import (
	"math"
	"slices"

	"github.com/x448/float16"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// Comparisons, logic, Where and Cast: the ops of masks and of dtype
// changes. Bool tensors are 0 and 1 in kernels (see the package comment).

func init() {
	for name, cmp := range map[string]tir.CmpOp{
		"Equal": tir.EQ, "Less": tir.LT, "Greater": tir.GT, "LessOrEqual": tir.LE, "GreaterOrEqual": tir.GE,
	} {
		define(&Op{Name: name, MinIn: 2, MaxIn: 2, Pattern: Broadcast, Layout: LayoutFree, OutType: fixed(graph.Bool),
			Lower: elementwise(func(_ *lowerCtx, v []tir.Expr) tir.Expr { return boolE(tir.Cmp(cmp, v[0], v[1])) }),
			Eval:  evalElementwise(fixed(graph.Bool), func(v []float64) float64 { return b2f(compare(cmp, v[0], v[1])) })})
	}
	logic := map[string]func(a, b bool) bool{
		"And": func(a, b bool) bool { return a && b },
		"Or":  func(a, b bool) bool { return a || b },
		"Xor": func(a, b bool) bool { return a != b },
	}
	for name, f := range logic {
		define(&Op{Name: name, MinIn: 2, MaxIn: 2, Pattern: Broadcast, Layout: LayoutFree, OutType: fixed(graph.Bool),
			Lower: elementwise(func(_ *lowerCtx, v []tir.Expr) tir.Expr {
				a, b := truthE(v[0]), truthE(v[1])
				switch name {
				case "And":
					return boolE(tir.AndE(a, b))
				case "Or":
					return boolE(tir.OrE(a, b))
				}
				return boolE(tir.Cmp(tir.NE, v[0], v[1]))
			}),
			Eval: evalElementwise(fixed(graph.Bool), func(v []float64) float64 { return b2f(f(v[0] != 0, v[1] != 0)) })})
	}
	define(
		&Op{Name: "Not", MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, OutType: fixed(graph.Bool),
			Lower: elementwise(func(_ *lowerCtx, v []tir.Expr) tir.Expr { return boolE(tir.Cmp(tir.EQ, v[0], tir.F32(0))) }),
			Eval:  evalElementwise(fixed(graph.Bool), func(v []float64) float64 { return b2f(v[0] == 0) })},
		// Where(cond, x, y) broadcasts all three.
		&Op{Name: "Where", MinIn: 3, MaxIn: 3, Pattern: Broadcast, Layout: LayoutFree, OutType: sameAs(1),
			Lower: elementwise(func(_ *lowerCtx, v []tir.Expr) tir.Expr { return tir.SelectE(truthE(v[0]), v[1], v[2]) }),
			Eval: evalElementwise(sameAs(1), func(v []float64) float64 {
				if v[0] != 0 {
					return v[1]
				}
				return v[2]
			})},
		&Op{Name: "Cast", Copy: CopyWhenUnchanged, MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, OutType: castType, Lower: lowerCastOp, Eval: evalCast},
		&Op{Name: "CastLike", MinIn: 2, MaxIn: 2, Pattern: ElemWise, Layout: LayoutFree, OutType: sameAs(1), Lower: lowerCastOp, Eval: evalCast},
	)
}

// evalElementwise evaluates an elementwise op on constants (any dtypes)
// into the dtype its rule gives.
func evalElementwise(out func(c *InferCtx) graph.DType, f func(v []float64) float64) func(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	return func(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
		return []*graph.Tensor{mapTo(out(c), c.Out[0].Shape, in, f)}, nil
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func compare(op tir.CmpOp, a, b float64) bool {
	switch op {
	case tir.EQ:
		return a == b
	case tir.LT:
		return a < b
	case tir.GT:
		return a > b
	case tir.LE:
		return a <= b
	}
	return a >= b
}

// castType is Cast's output dtype: the "to" attribute. A type the graph
// does not hold (float64, string, ...) is unsupported; the zero dtype
// stands for it so that Lower reports the error.
func castType(c *InferCtx) graph.DType {
	to, _ := c.N.Int("to", 0)
	d, _ := graph.DTypeFromONNX(int32(to))
	return d
}

// castTarget returns the dtype Cast or CastLike converts to.
func castTarget(c *lowerCtx) (graph.DType, error) {
	if c.n.OpType == "CastLike" {
		return c.dtype(1), nil
	}
	to, err := c.n.Int("to", 0)
	if err != nil {
		return 0, err
	}
	d, ok := graph.DTypeFromONNX(int32(to))
	if !ok {
		return 0, graph.Unsupportedf("Cast at node %s: to data type %d (float32, float16, bfloat16, integers and bool are supported)", c.n.Name, to)
	}
	return d, nil
}

func lowerCastOp(c *lowerCtx) ([]*te.Tensor, error) {
	if _, err := castTarget(c); err != nil {
		return nil, err
	}
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	return one(te.Elementwise(c.name(0), []*te.Tensor{x}, func(v []tir.Expr) tir.Expr { return lowerCast(c, v) }))
}

// lowerCast: to an integer type, a float truncates toward zero (the width's
// wrap-around is not modelled: values stay within ±2^24); to bool, nonzero
// is 1; to float16 or bfloat16, the float32 value is rounded to the
// nearest one, ties to even (kernels compute both in float32); integers,
// bools and float16 and bfloat16 values are already exact float32 values.
func lowerCast(c *lowerCtx, v []tir.Expr) tir.Expr {
	to, err := castTarget(c)
	from := c.dtype(0)
	switch {
	case err != nil || to == graph.Float32 || from == to:
		return v[0]
	case to == graph.Float16:
		if from == graph.Bool || from == graph.Int8 || from == graph.Uint8 {
			return v[0] // within ±255: each one a float16
		}
		return tir.CallE("roundhalf", v[0])
	case to == graph.BFloat16:
		if from == graph.Bool || from == graph.Int8 || from == graph.Uint8 {
			return v[0] // within ±256: each one a bfloat16
		}
		return &tir.Cast{To: tir.Float32, X: &tir.Cast{To: tir.BFloat16, X: v[0]}}
	case to == graph.Bool:
		return boolE(truthE(v[0]))
	case from.IsFloat():
		return truncE(v[0])
	}
	return v[0]
}

func evalCast(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	t := in[0]
	to := c.Out[0].DType
	if to == t.DType {
		return []*graph.Tensor{t}, nil
	}
	out := &graph.Tensor{DType: to, Shape: slices.Clone(t.Shape)}
	vals := t.Float64s()
	if to.IsInt() {
		out.I64 = make([]int64, len(vals))
		for i, v := range vals {
			switch {
			case to == graph.Bool:
				out.I64[i] = int64(b2f(v != 0))
			case t.DType.IsInt():
				out.I64[i] = to.Wrap(t.I64[i])
			case math.IsNaN(v) || math.IsInf(v, 0):
				out.I64[i] = 0
			default:
				out.I64[i] = to.Wrap(int64(v))
			}
		}
	} else {
		out.F32 = make([]float32, len(vals))
		for i, v := range vals {
			out.F32[i] = float32(v)
			switch to {
			case graph.Float16:
				out.F32[i] = float16.Fromfloat32(out.F32[i]).Float32()
			case graph.BFloat16:
				out.F32[i] = tir.RoundBFloat16(out.F32[i])
			}
		}
	}
	return []*graph.Tensor{out}, nil
}
