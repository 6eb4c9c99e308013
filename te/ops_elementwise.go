package te

import (
	"math"

	"github.com/tessera-ml/tessera/tir"
)

// unaryOp is the single stage of an elementwise op: out[i] = f(x[i]).
func unaryOp(op, def, name string, x *Tensor, f func(v tir.Expr) tir.Expr) (*Tensor, error) {
	name = orDefault(name, def)
	if err := checkInputs(op, name, x); err != nil {
		return nil, err
	}
	return Compute(name, x.Shape, func(i []tir.Expr) tir.Expr { return f(x.At(i...)) }), nil
}

func mathCall(fn string) func(v tir.Expr) tir.Expr {
	return func(v tir.Expr) tir.Expr { return tir.CallE(fn, v) }
}

// Relu is max(x, 0).
func Relu(name string, x *Tensor) (*Tensor, error) {
	return unaryOp("Relu", "relu", name, x, func(v tir.Expr) tir.Expr { return tir.MaxE(v, tir.F32(0)) })
}

// LeakyRelu is x for x >= 0, alpha*x otherwise (ONNX default alpha 0.01).
func LeakyRelu(name string, x *Tensor, alpha float32) (*Tensor, error) {
	return unaryOp("LeakyRelu", "leaky_relu", name, x, func(v tir.Expr) tir.Expr {
		return tir.SelectE(tir.Cmp(tir.LT, v, tir.F32(0)), tir.MulE(tir.F32(float64(alpha)), v), v)
	})
}

// Sigmoid is 1 / (1 + exp(-x)).
func Sigmoid(name string, x *Tensor) (*Tensor, error) {
	return unaryOp("Sigmoid", "sigmoid", name, x, mathCall("sigmoid"))
}

// hardSigmoid is max(0, min(1, alpha*v + beta)).
func hardSigmoid(v tir.Expr, alpha, beta float64) tir.Expr {
	return tir.MaxE(tir.F32(0), tir.MinE(tir.F32(1), tir.AddE(tir.MulE(tir.F32(alpha), v), tir.F32(beta))))
}

// HardSigmoid is max(0, min(1, alpha*x + beta)) (ONNX defaults alpha 0.2,
// beta 0.5).
func HardSigmoid(name string, x *Tensor, alpha, beta float32) (*Tensor, error) {
	return unaryOp("HardSigmoid", "hard_sigmoid", name, x, func(v tir.Expr) tir.Expr {
		return hardSigmoid(v, float64(alpha), float64(beta))
	})
}

// HardSwish is x * max(0, min(1, x/6 + 1/2)).
func HardSwish(name string, x *Tensor) (*Tensor, error) {
	return unaryOp("HardSwish", "hard_swish", name, x, func(v tir.Expr) tir.Expr {
		return tir.MulE(v, hardSigmoid(v, 1.0/6, 0.5))
	})
}

// Tanh is tanh(x).
func Tanh(name string, x *Tensor) (*Tensor, error) {
	return unaryOp("Tanh", "tanh", name, x, mathCall("tanh"))
}

// Exp is e^x.
func Exp(name string, x *Tensor) (*Tensor, error) {
	return unaryOp("Exp", "exp", name, x, mathCall("exp"))
}

// Log is the natural logarithm.
func Log(name string, x *Tensor) (*Tensor, error) {
	return unaryOp("Log", "log", name, x, mathCall("log"))
}

// Sqrt is the square root.
func Sqrt(name string, x *Tensor) (*Tensor, error) {
	return unaryOp("Sqrt", "sqrt", name, x, mathCall("sqrt"))
}

// Erf is the error function.
func Erf(name string, x *Tensor) (*Tensor, error) {
	return unaryOp("Erf", "erf", name, x, mathCall("erf"))
}

// Neg is -x.
func Neg(name string, x *Tensor) (*Tensor, error) {
	return unaryOp("Neg", "neg", name, x, func(v tir.Expr) tir.Expr { return tir.SubE(tir.F32(0), v) })
}

// Abs is |x|.
func Abs(name string, x *Tensor) (*Tensor, error) {
	return unaryOp("Abs", "abs", name, x, mathCall("fabs"))
}

// Reciprocal is 1/x.
func Reciprocal(name string, x *Tensor) (*Tensor, error) {
	return unaryOp("Reciprocal", "reciprocal", name, x, func(v tir.Expr) tir.Expr { return tir.DivE(tir.F32(1), v) })
}

// Gelu is ONNX Gelu (opset 20): approximate "none" (or "") is the exact
// x/2 * (1 + erf(x/sqrt(2))); "tanh" is
// x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
func Gelu(name string, x *Tensor, approximate string) (*Tensor, error) {
	switch approximate {
	case "", "none":
		return unaryOp("Gelu", "gelu", name, x, func(v tir.Expr) tir.Expr {
			e := tir.CallE("erf", tir.MulE(v, tir.F32(1/math.Sqrt2)))
			return tir.MulE(tir.MulE(tir.F32(0.5), v), tir.AddE(tir.F32(1), e))
		})
	case "tanh":
		return unaryOp("Gelu", "gelu", name, x, func(v tir.Expr) tir.Expr {
			cube := tir.MulE(tir.MulE(v, v), v)
			inner := tir.MulE(tir.F32(math.Sqrt(2/math.Pi)), tir.AddE(v, tir.MulE(tir.F32(0.044715), cube)))
			return tir.MulE(tir.MulE(tir.F32(0.5), v), tir.AddE(tir.F32(1), tir.CallE("tanh", inner)))
		})
	}
	return nil, opError("Gelu", orDefault(name, "gelu"), "approximate %q is not \"none\" or \"tanh\"", approximate)
}

// Silu is x·sigmoid(x) (SiLU: Swish with β = 1) as one stage, what the
// frontend's fuse-silu pass writes for Mul(x, Sigmoid(x)).
func Silu(name string, x *Tensor) (*Tensor, error) {
	return unaryOp("Silu", "silu", name, x, func(v tir.Expr) tir.Expr { return tir.MulE(v, tir.CallE("sigmoid", v)) })
}

// Clip is min(max(x, lo), hi); a nil bound is absent. (ONNX: when lo > hi
// every element becomes hi.)
func Clip(name string, x *Tensor, lo, hi *float32) (*Tensor, error) {
	return unaryOp("Clip", "clip", name, x, func(v tir.Expr) tir.Expr {
		if lo != nil {
			v = tir.MaxE(v, tir.F32(float64(*lo)))
		}
		if hi != nil {
			v = tir.MinE(v, tir.F32(float64(*hi)))
		}
		return v
	})
}

func binaryOp(op, def, name string, a, b *Tensor, f func(x, y tir.Expr) tir.Expr) (*Tensor, error) {
	return broadcastN(op, orDefault(name, def), []*Tensor{a, b}, func(v []tir.Expr) tir.Expr { return f(v[0], v[1]) })
}

// Add is a + b with multidirectional broadcasting.
func Add(name string, a, b *Tensor) (*Tensor, error) {
	return binaryOp("Add", "add", name, a, b, tir.AddE)
}

// Sub is a - b with multidirectional broadcasting.
func Sub(name string, a, b *Tensor) (*Tensor, error) {
	return binaryOp("Sub", "sub", name, a, b, tir.SubE)
}

// Mul is a * b with multidirectional broadcasting.
func Mul(name string, a, b *Tensor) (*Tensor, error) {
	return binaryOp("Mul", "mul", name, a, b, tir.MulE)
}

// Div is a / b with multidirectional broadcasting.
func Div(name string, a, b *Tensor) (*Tensor, error) {
	return binaryOp("Div", "div", name, a, b, tir.DivE)
}

// Pow is a^b with multidirectional broadcasting.
func Pow(name string, a, b *Tensor) (*Tensor, error) {
	return binaryOp("Pow", "pow", name, a, b, func(x, y tir.Expr) tir.Expr { return tir.CallE("pow", x, y) })
}

func foldExpr(f func(a, b tir.Expr) tir.Expr) func(v []tir.Expr) tir.Expr {
	return func(v []tir.Expr) tir.Expr {
		acc := v[0]
		for _, x := range v[1:] {
			acc = f(acc, x)
		}
		return acc
	}
}

// Max is the elementwise maximum of one or more inputs, with
// multidirectional broadcasting.
func Max(name string, xs ...*Tensor) (*Tensor, error) {
	return broadcastN("Max", orDefault(name, "max"), xs, foldExpr(tir.MaxE))
}

// Min is the elementwise minimum of one or more inputs, with
// multidirectional broadcasting.
func Min(name string, xs ...*Tensor) (*Tensor, error) {
	return broadcastN("Min", orDefault(name, "min"), xs, foldExpr(tir.MinE))
}
