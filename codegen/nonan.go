package codegen

import (
	"fmt"
	"math"
	"strings"

	"github.com/tessera-ml/tessera/tir"
)

// NaN-free values. A clamp keeps NaN where it meets one (tsr_maxc_vLf:
// a compare and a blend, as te.Eval and numpy propagate NaN), and a
// QuantizeLinear sends NaN to zero (tsr_nan0_vLf: a compare and an and).
// A requantization of an integer accumulator cannot meet NaN: its float
// value is converted from integers and scaled by finite constants. There
// the clamp is vmaxps/vminps (tsr_maxn_vLf) and nan0 nothing. So is a
// clamp whose value is converted to an integer type right away, whatever
// it clamps: a NaN converted to an integer is a fault (tir.Cast), so the
// clamp's NaN handling decides nothing (the first requantization of an
// accumulator, scaled by a buffer of per-channel multipliers). A
// convolution's epilogue with a residual add has two requantizations,
// and these cut a third of its time (ResNet-50 int8 on Zen 5).

// magnitude returns a bound on |e| in float64 arithmetic: finite where e
// is built from integers, finite constants, sums, differences, products,
// quotients by constants, minima, maxima, selects and roundings of such
// values, +Inf where anything else may make it large or NaN (a float
// buffer's load, an unknown function).
func magnitude(e tir.Expr) float64 {
	inf := math.Inf(1)
	switch e := e.(type) {
	case *tir.FloatImm:
		if math.IsNaN(e.V) {
			return inf
		}
		return math.Abs(e.V)
	case *tir.IntImm:
		return math.Abs(float64(e.V))
	case *tir.Var, *tir.Load:
		return intRange(e.Type())
	case *tir.Cast:
		if b := intRange(e.To); !math.IsInf(b, 1) {
			return b
		}
		if b := intRange(e.X.Type()); !math.IsInf(b, 1) {
			return b
		}
		return magnitude(e.X)
	case *tir.Binary:
		if b := intRange(e.Type()); !math.IsInf(b, 1) {
			return b
		}
		a, b := magnitude(e.A), magnitude(e.B)
		switch e.Op {
		case tir.Add, tir.Sub:
			return a + b
		case tir.Mul:
			return a * b
		case tir.Div:
			if c, ok := e.B.(*tir.FloatImm); ok && c.V != 0 && !math.IsNaN(c.V) {
				return a / math.Abs(c.V)
			}
		case tir.Min, tir.Max:
			return max(a, b)
		}
	case *tir.Select:
		return max(magnitude(e.T), magnitude(e.F))
	case *tir.Call:
		if len(e.Args) != 1 {
			return inf
		}
		a := magnitude(e.Args[0])
		switch e.Fn {
		case "rint", "floor", "ceil", "trunc", "round":
			return a + 1
		case "fabs", "nan0":
			return a
		case "sigmoid", "tanh", "erf":
			if !math.IsInf(a, 1) {
				return 1
			}
		case "exp":
			return math.Exp(a)
		}
	}
	return inf
}

// intRange returns the largest magnitude of integer type t, +Inf for
// float types.
func intRange(t tir.DType) float64 {
	switch {
	case t == tir.Bool:
		return 1
	case t == tir.Int || t.IntElem():
		lo, hi := t.Range()
		return max(-float64(lo), float64(hi))
	}
	return math.Inf(1)
}

// noNaN reports whether float32 expression e is never NaN: its magnitude
// is bounded well inside float32's range (no infinity to subtract from
// another or multiply by zero), whatever float32 rounding adds.
func noNaN(e tir.Expr) bool { return magnitude(e) <= math.MaxFloat32/4 }

// noNaNMinMax returns tsr_maxn_vLf and tsr_minn_vLf, the minimum and
// maximum of operands that are never NaN: a > b ? a : b (a < b ? a : b),
// b where they are equal, as tsr_max_vLf and tsr_maxc_vLf give for such
// operands, and as x86's maxps and minps compute in one instruction.
func noNaNMinMax(L int) string {
	f := vt(L)
	var isa, mx, mn string
	switch L {
	case 4:
		isa, mx, mn = "__SSE__", "__builtin_ia32_maxps(a, b)", "__builtin_ia32_minps(a, b)"
	case 8:
		isa, mx, mn = "__AVX__", "__builtin_ia32_maxps256(a, b)", "__builtin_ia32_minps256(a, b)"
	case 16:
		isa, mx, mn = "__AVX512F__", "__builtin_ia32_maxps512_mask(a, b, a, (unsigned short)-1, 4)", "__builtin_ia32_minps512_mask(a, b, a, (unsigned short)-1, 4)"
	}
	var b strings.Builder
	if isa != "" {
		fmt.Fprintf(&b, "%s\n", gccX86(isa))
		fmt.Fprintf(&b, "static inline %s tsr_maxn_v%df(%s a, %s b) { return %s; }\n", f, L, f, f, mx)
		fmt.Fprintf(&b, "static inline %s tsr_minn_v%df(%s a, %s b) { return %s; }\n", f, L, f, f, mn)
		b.WriteString("#else\n")
	}
	fmt.Fprintf(&b, "static inline %s tsr_maxn_v%df(%s a, %s b) { return tsr_select_v%df(a > b, a, b); }\n", f, L, f, f, L)
	fmt.Fprintf(&b, "static inline %s tsr_minn_v%df(%s a, %s b) { return tsr_select_v%df(a < b, a, b); }\n", f, L, f, f, L)
	if isa != "" {
		b.WriteString("#endif\n")
	}
	return b.String()
}

// markCastClamps marks the minima and maxima at the top of x, the float
// operand of a vector conversion to an integer type (min(max(v, lo), hi)
// and its nestings through the first operand), as k.castClamps; the caller
// unmarks them once x is printed.
func (k *kernel) markCastClamps(x tir.Expr) []*tir.Binary {
	var marked []*tir.Binary
	for {
		b, ok := x.(*tir.Binary)
		if !ok || b.Op != tir.Min && b.Op != tir.Max || k.castClamps[b] {
			return marked
		}
		if k.castClamps == nil {
			k.castClamps = map[*tir.Binary]bool{}
		}
		k.castClamps[b] = true
		marked = append(marked, b)
		x = b.A
	}
}
