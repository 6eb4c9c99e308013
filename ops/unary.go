package ops

import (
	"math"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// Elementwise ops of one input: activations, Clip, Identity, Dropout.

func init() {
	unary := map[string]func(string, *te.Tensor) (*te.Tensor, error){
		"Relu": te.Relu, "Sigmoid": te.Sigmoid, "Tanh": te.Tanh, "Exp": te.Exp, "Log": te.Log,
		"Sqrt": te.Sqrt, "Erf": te.Erf, "Neg": te.Neg, "Abs": te.Abs, "Reciprocal": te.Reciprocal,
		"HardSwish": te.HardSwish,
		// Not an ONNX op: x·Sigmoid(x), written by the frontend's
		// fuse-silu pass (onnxruntime's optimizer writes QuickGelu, α = 1).
		"Silu": te.Silu,
	}
	for name, f := range unary {
		op := &Op{Name: name, MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, Lower: lowerUnary(f)}
		if _, ok := floatUnary[name]; ok {
			op.Eval = evalUnary
		}
		define(op)
	}
	// Math functions of one float input, by ONNX name and tir.MathFuncs name.
	for name, fn := range map[string]string{
		"Floor": "floor", "Ceil": "ceil", "Round": "rint", "Sin": "sin", "Cos": "cos", "Tan": "tan",
		"Asin": "asin", "Acos": "acos", "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh",
		"Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh",
	} {
		op := &Op{Name: name, MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree,
			Lower: elementwise(func(_ *lowerCtx, v []tir.Expr) tir.Expr { return tir.CallE(fn, v[0]) })}
		if _, ok := floatUnary[name]; ok {
			op.Eval = evalUnary
		}
		define(op)
	}
	define(
		&Op{Name: "IsNaN", MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, OutType: fixed(graph.Bool),
			Lower: elementwise(func(_ *lowerCtx, v []tir.Expr) tir.Expr { return boolE(tir.Cmp(tir.NE, v[0], v[0])) })},
		&Op{Name: "IsInf", MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, OutType: fixed(graph.Bool),
			Lower: elementwise(func(c *lowerCtx, v []tir.Expr) tir.Expr {
				pos, _ := c.n.Int("detect_positive", 1)
				neg, _ := c.n.Int("detect_negative", 1)
				var hit tir.Expr = tir.Cmp(tir.NE, tir.F32(0), tir.F32(0))
				if pos != 0 {
					hit = tir.OrE(hit, tir.Cmp(tir.EQ, v[0], tir.F32(math.Inf(1))))
				}
				if neg != 0 {
					hit = tir.OrE(hit, tir.Cmp(tir.EQ, v[0], tir.F32(math.Inf(-1))))
				}
				return boolE(hit)
			})},
		// Shrink: x+bias below -lambd, x-bias above lambd, 0 between.
		&Op{Name: "Shrink", MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, Lower: elementwise(func(c *lowerCtx, v []tir.Expr) tir.Expr {
			l, _ := c.n.Float("lambd", 0.5)
			b, _ := c.n.Float("bias", 0)
			x := v[0]
			return tir.SelectE(tir.Cmp(tir.LT, x, tir.F32(-float64(l))), tir.AddE(x, tir.F32(float64(b))),
				tir.SelectE(tir.Cmp(tir.GT, x, tir.F32(float64(l))), tir.SubE(x, tir.F32(float64(b))), tir.F32(0)))
		})},
		&Op{Name: "ThresholdedRelu", MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, Lower: elementwise(func(c *lowerCtx, v []tir.Expr) tir.Expr {
			a, _ := c.n.Float("alpha", 1)
			return tir.SelectE(tir.Cmp(tir.GT, v[0], tir.F32(float64(a))), v[0], tir.F32(0))
		})},
		&Op{Name: "LeakyRelu", MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, Lower: lowerLeakyRelu},
		&Op{Name: "HardSigmoid", MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, Lower: lowerHardSigmoid},
		&Op{Name: "Gelu", MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, Lower: lowerGelu},
		&Op{Name: "Elu", MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, Lower: lowerElu},
		&Op{Name: "Selu", MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, Lower: lowerElu},
		&Op{Name: "Celu", MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, Lower: lowerCelu},
		&Op{Name: "Softplus", MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, Lower: lowerSoftplus},
		&Op{Name: "Softsign", MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, Lower: lowerSoftsign},
		// Clip's bounds are attributes before opset 11, optional inputs after.
		&Op{Name: "Clip", MinIn: 1, MaxIn: 3, Pattern: ElemWise, Layout: LayoutFree, Lower: lowerClip},
		&Op{Name: "Sign", MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, Eval: evalUnary, Lower: elementwise(func(_ *lowerCtx, v []tir.Expr) tir.Expr {
			return tir.SelectE(tir.Cmp(tir.GT, v[0], tir.F32(0)), tir.F32(1),
				tir.SelectE(tir.Cmp(tir.LT, v[0], tir.F32(0)), tir.F32(-1), tir.F32(0)))
		})},
		&Op{Name: "Identity", Copy: CopyReshape, MinIn: 1, MaxIn: 1, Pattern: ElemWise, Layout: LayoutFree, Infer: inferUnary, Eval: evalIdentity, Lower: lowerCopy},
		&Op{Name: "Dropout", Copy: CopyWhenUnchanged, MinIn: 1, MaxIn: 3, Pattern: ElemWise, Layout: LayoutFree, Infer: inferDropout, Eval: evalDropout, Lower: lowerDropout},
	)
}

// lowerUnary lowers an op that is one te library call on one input.
func lowerUnary(f func(string, *te.Tensor) (*te.Tensor, error)) func(c *lowerCtx) ([]*te.Tensor, error) {
	return func(c *lowerCtx) ([]*te.Tensor, error) {
		x, err := c.in(0)
		if err != nil {
			return nil, err
		}
		return one(f(c.name(0), x))
	}
}

func inferUnary(c *InferCtx) error {
	if err := c.OnlyOutputs(1, "extra output"); err != nil {
		return err
	}
	c.Set(0, c.DType(0), c.Shape(0))
	return nil
}

func evalUnary(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	t := in[0]
	if t.DType.IsInt() {
		f, ok := intUnary[c.N.OpType]
		if !ok {
			return nil, nil
		}
		return []*graph.Tensor{mapN(t.Shape, in, func(v []int64) int64 { return f(v[0]) }, nil)}, nil
	}
	return []*graph.Tensor{mapN(t.Shape, in, nil, unaryF(floatUnary[c.N.OpType]))}, nil
}

func evalIdentity(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	return []*graph.Tensor{in[0]}, nil
}

// inferDropout: inference mode only, or training mode with ratio 0 (no
// element dropped, none scaled: torchvision's Swin calls F.dropout with
// p=0 and the default training=True, which PyTorch exports so); the
// optional mask output is all true.
func inferDropout(c *InferCtx) error {
	if c.Has(2) {
		t, err := c.Constant(2, "training_mode")
		if err != nil {
			return err
		}
		if t.Len() == 1 && t.Int64s()[0] != 0 {
			ratio := 0.5 // the ONNX default
			if c.Has(1) {
				r, err := c.Constant(1, "ratio")
				if err != nil {
					return err
				}
				if r.Len() != 1 {
					return graph.Unsupportedf("Dropout at node %s: ratio of %d values", c.N.Name, r.Len())
				}
				ratio = r.Float64s()[0]
			}
			if ratio != 0 {
				return graph.Unsupportedf("Dropout at node %s: training mode with ratio %g", c.N.Name, ratio)
			}
		}
	}
	c.Set(0, c.DType(0), c.Shape(0))
	c.Set(1, graph.Bool, c.Shape(0))
	return nil
}

func evalDropout(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	mask := &graph.Tensor{DType: graph.Bool, Shape: in[0].Shape, I64: make([]int64, in[0].Len())}
	for i := range mask.I64 {
		mask.I64[i] = 1
	}
	return []*graph.Tensor{in[0], mask}, nil
}

func lowerDropout(c *lowerCtx) ([]*te.Tensor, error) {
	outs, err := lowerCopy(c)
	if err != nil || c.n.Output(1) == "" {
		return outs, err
	}
	mask := te.Compute(c.n.Output(1), outs[0].Shape, func([]tir.Expr) tir.Expr { return tir.F32(1) })
	return append(outs, mask), nil
}

// lowerCopy lowers Identity and inference-mode Dropout (left when the
// remove-noops pass is off) to a copy stage.
func lowerCopy(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	return one(te.Reshape(c.name(0), x, x.Shape, false))
}

func lowerLeakyRelu(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	alpha, err := c.n.Float("alpha", 0.01)
	if err != nil {
		return nil, err
	}
	return one(te.LeakyRelu(c.name(0), x, alpha))
}

func lowerHardSigmoid(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	alpha, err := c.n.Float("alpha", 0.2)
	if err != nil {
		return nil, err
	}
	beta, err := c.n.Float("beta", 0.5)
	if err != nil {
		return nil, err
	}
	return one(te.HardSigmoid(c.name(0), x, alpha, beta))
}

func lowerGelu(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	a, err := c.n.Str("approximate", "none")
	if err != nil {
		return nil, err
	}
	return one(te.Gelu(c.name(0), x, a))
}

// lowerClip: min and max are attributes before opset 11, optional inputs
// from 11 on.
func lowerClip(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	var bounds [2]*float32
	for i, what := range []string{"min", "max"} {
		v, ok, err := graph.FloatParam(c.g, c.n, 1+i, what, what)
		if err != nil {
			return nil, err
		}
		if ok {
			bounds[i] = &v
		}
	}
	return one(te.Clip(c.name(0), x, bounds[0], bounds[1]))
}

// negPart returns min(x, 0).
func (c *lowerCtx) negPart(x *te.Tensor) (*te.Tensor, error) {
	return te.Min(c.sub("neg"), x, c.scalar(0))
}

// lowerElu: Elu = relu(x) + alpha*(exp(min(x, 0)) - 1); Selu is gamma
// times the same with its own defaults.
func lowerElu(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	alpha, gamma := float32(1), float32(1)
	if c.n.OpType == "Selu" {
		alpha, gamma = 1.67326319217681884765625, 1.05070102214813232421875
		if gamma, err = c.n.Float("gamma", gamma); err != nil {
			return nil, err
		}
	}
	if alpha, err = c.n.Float("alpha", alpha); err != nil {
		return nil, err
	}
	neg, err := c.negPart(x)
	if err != nil {
		return nil, err
	}
	scaled, err := c.expm1Scaled(neg, alpha)
	if err != nil {
		return nil, err
	}
	pos, err := te.Relu(c.sub("pos"), x)
	if err != nil {
		return nil, err
	}
	if gamma == 1 {
		return one(te.Add(c.name(0), pos, scaled))
	}
	sum, err := te.Add(c.sub("sum"), pos, scaled)
	if err != nil {
		return nil, err
	}
	return one(te.Mul(c.name(0), sum, c.scalar(float64(gamma))))
}

// expm1Scaled returns alpha·(exp(y) − 1), the negative branch of Elu,
// Selu and Celu.
func (c *lowerCtx) expm1Scaled(y *te.Tensor, alpha float32) (*te.Tensor, error) {
	e, err := te.Exp(c.sub("exp"), y)
	if err != nil {
		return nil, err
	}
	em1, err := te.Sub(c.sub("expm1"), e, c.scalar(1))
	if err != nil {
		return nil, err
	}
	return te.Mul(c.sub("scaled"), em1, c.scalar(float64(alpha)))
}

// lowerCelu: max(0, x) + min(0, alpha*(exp(x/alpha) - 1)).
func lowerCelu(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	alpha, err := c.n.Float("alpha", 1)
	if err != nil {
		return nil, err
	}
	xs, err := te.Div(c.sub("div"), x, c.scalar(float64(alpha)))
	if err != nil {
		return nil, err
	}
	scaled, err := c.expm1Scaled(xs, alpha)
	if err != nil {
		return nil, err
	}
	neg, err := c.negPart(scaled)
	if err != nil {
		return nil, err
	}
	pos, err := te.Relu(c.sub("pos"), x)
	if err != nil {
		return nil, err
	}
	return one(te.Add(c.name(0), pos, neg))
}

// lowerSoftplus: log(exp(x) + 1).
func lowerSoftplus(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	e, err := te.Exp(c.sub("exp"), x)
	if err != nil {
		return nil, err
	}
	s, err := te.Add(c.sub("add"), e, c.scalar(1))
	if err != nil {
		return nil, err
	}
	return one(te.Log(c.name(0), s))
}

// lowerSoftsign: x / (1 + |x|).
func lowerSoftsign(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	a, err := te.Abs(c.sub("abs"), x)
	if err != nil {
		return nil, err
	}
	d, err := te.Add(c.sub("add"), a, c.scalar(1))
	if err != nil {
		return nil, err
	}
	return one(te.Div(c.name(0), x, d))
}
