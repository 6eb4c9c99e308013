package te

import (
	"fmt"
	"sort"

	"github.com/tessera-ml/tessera/tir"
)

// Conventions of the op library (ops_*.go).
//
// Every op is a function of a name, its input tensors and its attributes,
// returning the output tensor or an error that names the op and what is
// wrong; invalid shapes or attributes never panic. The name is the name of
// the op's final tensor; intermediate stages are named name+"_"+suffix
// ("conv_pad", "softmax_max"). An empty name stands for the op's default
// name (its snake_case ONNX name). Shapes are static, every dimension must be
// positive (the DAG cannot hold empty tensors), and the element type is
// float32. Attributes follow ONNX (opset 13 and later); where an ONNX default
// differs from Go's zero value the attribute struct has a Default…
// constructor.

// OpNames lists the ONNX ops the library implements, sorted.
func OpNames() []string {
	names := []string{
		"Abs", "Add", "AveragePool", "BatchNormalization", "Clip", "Concat",
		"Conv", "ConvTranspose", "CumSum", "DFT", "Div", "Einsum", "Erf", "Exp", "Expand", "Flatten",
		"Gather", "GatherElements", "GatherND", "Gelu", "Gemm", "GridSample",
		"GlobalAveragePool", "GlobalMaxPool", "HardSigmoid", "HardSwish",
		"LayerNormalization", "LeakyRelu", "LRN", "Log", "LogSoftmax", "MatMul", "Max",
		"MaxPool", "Min", "Mul", "Neg", "OneHot", "Pad", "Pow", "Reciprocal",
		"ReduceMax", "ReduceMean", "ReduceMin", "ReduceSum", "Relu", "Reshape", "ReverseSequence",
		"STFT", "ScatterElements", "ScatterND", "Sigmoid", "Slice", "Softmax", "Sqrt",
		"Squeeze", "Sub", "Tanh", "TopK", "Transpose", "Unsqueeze",
	}
	sort.Strings(names)
	return names
}

// opError formats an op's error: "te: Conv conv1: ...".
func opError(op, name, format string, args ...any) error {
	return fmt.Errorf("te: %s %s: %s", op, name, fmt.Sprintf(format, args...))
}

// orDefault returns name, or def when name is empty.
func orDefault(name, def string) string {
	if name == "" {
		return def
	}
	return name
}

// checkInputs reports a nil required input.
func checkInputs(op, name string, ts ...*Tensor) error {
	for i, t := range ts {
		if t == nil {
			return opError(op, name, "input %d is missing", i)
		}
	}
	return nil
}

// normAxis maps an axis in [-rank, rank) to [0, rank).
func normAxis(op, name string, axis, rank int) (int, error) {
	if axis < -rank || axis >= rank {
		return 0, opError(op, name, "axis %d out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += rank
	}
	return axis, nil
}

// normAxes normalizes a list of axes, rejecting duplicates.
func normAxes(op, name string, axes []int, rank int) ([]int, error) {
	out := make([]int, len(axes))
	seen := map[int]bool{}
	for i, a := range axes {
		n, err := normAxis(op, name, a, rank)
		if err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, opError(op, name, "axis %d repeated in %v", a, axes)
		}
		seen[n] = true
		out[i] = n
	}
	return out, nil
}

// checkShape rejects shapes with empty dimensions (which te cannot hold).
func checkShape(op, name string, shape []int) error {
	for i, d := range shape {
		if d <= 0 {
			return opError(op, name, "output dimension %d has extent %d (empty tensors are not supported)", i, d)
		}
	}
	return nil
}

func numElems(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// Index arithmetic with constant folding, so that definitions print and
// analyse as the affine expressions they are (h*1 + 0 stays h).

func iconst(e tir.Expr) (int64, bool) { return tir.IsConst(e) }

// iadd returns a + b.
func iadd(a, b tir.Expr) tir.Expr {
	ca, oka := iconst(a)
	cb, okb := iconst(b)
	switch {
	case oka && okb:
		return tir.Const(ca + cb)
	case oka && ca == 0:
		return b
	case okb && cb == 0:
		return a
	case okb && cb < 0:
		return tir.SubE(a, tir.Const(-cb))
	}
	return tir.AddE(a, b)
}

// iaddc returns e + c.
func iaddc(e tir.Expr, c int) tir.Expr { return iadd(e, tir.Const(int64(c))) }

// imulc returns e * c.
func imulc(e tir.Expr, c int) tir.Expr {
	if v, ok := iconst(e); ok {
		return tir.Const(v * int64(c))
	}
	switch c {
	case 0:
		return tir.Const(0)
	case 1:
		return e
	}
	return tir.MulE(e, tir.Const(int64(c)))
}

// icsub returns c - e.
func icsub(c int, e tir.Expr) tir.Expr {
	if v, ok := iconst(e); ok {
		return tir.Const(int64(c) - v)
	}
	return tir.SubE(tir.Const(int64(c)), e)
}

// idivc returns floordiv(e, c).
func idivc(e tir.Expr, c int) tir.Expr {
	if c == 1 {
		return e
	}
	if v, ok := iconst(e); ok {
		return tir.Const(floorDiv(v, int64(c)))
	}
	return tir.FloorDivE(e, tir.Const(int64(c)))
}

// imodc returns floormod(e, c).
func imodc(e tir.Expr, c int) tir.Expr {
	if c == 1 {
		return tir.Const(0)
	}
	if v, ok := iconst(e); ok {
		return tir.Const(v - floorDiv(v, int64(c))*int64(c))
	}
	return tir.FloorModE(e, tir.Const(int64(c)))
}

// iabs returns |e| as max(e, 0 - e).
func iabs(e tir.Expr) tir.Expr {
	if v, ok := iconst(e); ok {
		return tir.Const(max(v, -v))
	}
	return tir.MaxE(e, tir.SubE(tir.Const(0), e))
}

// andCond returns a && b, where a nil operand stands for true.
func andCond(a, b tir.Expr) tir.Expr {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return tir.AndE(a, b)
}

// toFloat converts an integer expression to float32.
func toFloat(e tir.Expr) tir.Expr {
	if v, ok := iconst(e); ok {
		return tir.F32(float64(v))
	}
	return &tir.Cast{To: tir.Float32, X: e}
}

// copyOf is the identity stage: out[i] = x[i].
func copyOf(name string, x *Tensor) *Tensor {
	return Compute(name, x.Shape, func(i []tir.Expr) tir.Expr { return x.At(i...) })
}

// insertAxis returns idx with e inserted at position axis.
func insertAxis(idx []tir.Expr, axis int, e tir.Expr) []tir.Expr {
	out := make([]tir.Expr, 0, len(idx)+1)
	out = append(out, idx[:axis]...)
	out = append(out, e)
	return append(out, idx[axis:]...)
}

// dropAxis returns s without position axis.
func dropAxis[T any](s []T, axis int) []T {
	out := make([]T, 0, len(s))
	out = append(out, s[:axis]...)
	return append(out, s[axis+1:]...)
}
