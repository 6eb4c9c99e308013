// Facts about float values: the range, integrality, NaN and -0 that an
// expression's every value respects, for the rewrites that drop a clamp
// or a conversion which cannot change a value.

package tir

import "math"

// Quantized models clamp twice and convert back and forth: QuantizeLinear
// is q = min(max(rint(x / s) + z, 0), 255), its storage uint8(min(max(
// nan0(q), 0), 255)), and the DequantizeLinear after it reads float32 of
// that byte. Once inlined, the second clamp holds for every q and the
// round trip through uint8 gives back the value it converted (an integral
// float in the byte's range, never NaN, never -0), but a C compiler
// cannot know either: in a BERT layer's quantized GELU chain the clamps
// and conversions were a third of the epilogue's instructions, all on
// the critical path. floatFacts bounds an expression; the simplifier then
// drops
//
//	max(a, c), min(a, c)        where a's range already lies on c's side,
//	nan0(a)                     where a is never NaN,
//	float32(T(a)) for integer T where a is integral, in T's range, never
//	                            NaN and never -0,
//
// each the identity on every value a can take, so the result is bitwise
// the same.

// floatFact is what floatFacts proves of a float expression: its every
// value lies in [lo, hi] (infinities included), is an integer (or an
// infinity) where integral is set, and can be NaN, or -0, only where nan,
// or negZero, is set.
type floatFact struct {
	lo, hi       float64
	integral     bool
	nan, negZero bool
}

// unknownFloat is the fact of an expression nothing is known of.
var unknownFloat = floatFact{lo: math.Inf(-1), hi: math.Inf(1), nan: true, negZero: true}

// maxFactDepth bounds floatFacts' recursion: a deeper expression is
// unknown (an epilogue's chain of requantizations is some 40 deep).
const maxFactDepth = 64

// floatFacts returns what holds of every value of float expression e.
func floatFacts(e Expr) floatFact { return factsAt(e, maxFactDepth) }

func factsAt(e Expr, depth int) floatFact {
	if depth == 0 || e == nil || e.Type() != Float32 {
		return unknownFloat
	}
	sub := func(x Expr) floatFact { return factsAt(x, depth-1) }
	switch n := e.(type) {
	case *FloatImm:
		v := float64(float32(n.V))
		return floatFact{lo: v, hi: v, integral: v == math.Trunc(v) || math.IsInf(v, 0), nan: math.IsNaN(v), negZero: v == 0 && math.Signbit(v)}
	case *Cast:
		if n.X == nil {
			return unknownFloat
		}
		switch t := n.X.Type(); {
		case t == Bool:
			return floatFact{lo: 0, hi: 1, integral: true}
		case t.IntElem() && t != Int:
			lo, hi := t.Range()
			return floatFact{lo: float64(lo), hi: float64(hi), integral: true}
		}
	case *Call:
		if len(n.Args) != 1 {
			return unknownFloat
		}
		a := sub(n.Args[0])
		switch n.Fn {
		case "rint", "floor", "ceil", "trunc":
			// -0 from any value in (-1, 0] (floor of -0.3 is -1, but
			// bounding it more tightly gains nothing).
			return floatFact{lo: math.Floor(a.lo), hi: math.Ceil(a.hi), integral: true, nan: a.nan, negZero: a.negZero || a.lo < 1 && a.hi > -1}
		case "nan0":
			return floatFact{lo: math.Min(a.lo, 0), hi: math.Max(a.hi, 0), integral: a.integral, negZero: a.negZero}
		}
	case *Binary:
		a, b := sub(n.A), sub(n.B)
		switch n.Op {
		case Add:
			return floatFact{lo: down32(a.lo + b.lo), hi: up32(a.hi + b.hi), integral: a.integral && b.integral,
				nan:     a.nan || b.nan || math.IsInf(a.hi, 1) && math.IsInf(b.lo, -1) || math.IsInf(a.lo, -1) && math.IsInf(b.hi, 1),
				negZero: a.negZero && b.negZero}
		case Sub:
			return floatFact{lo: down32(a.lo - b.hi), hi: up32(a.hi - b.lo), integral: a.integral && b.integral,
				nan:     a.nan || b.nan || math.IsInf(a.hi, 1) && math.IsInf(b.hi, 1) || math.IsInf(a.lo, -1) && math.IsInf(b.lo, -1),
				negZero: a.negZero && b.lo <= 0 && b.hi >= 0}
		case Max:
			// max(a, b) is a where a > b (or a is NaN), else b.
			return floatFact{lo: math.Max(a.lo, b.lo), hi: math.Max(a.hi, b.hi), integral: a.integral && b.integral,
				nan: a.nan || b.nan, negZero: b.negZero || a.negZero && b.lo < 0}
		case Min:
			return floatFact{lo: math.Min(a.lo, b.lo), hi: math.Min(a.hi, b.hi), integral: a.integral && b.integral,
				nan: a.nan || b.nan, negZero: b.negZero || a.negZero && b.hi > 0}
		}
	case *Select:
		a, b := sub(n.T), sub(n.F)
		return floatFact{lo: math.Min(a.lo, b.lo), hi: math.Max(a.hi, b.hi), integral: a.integral && b.integral,
			nan: a.nan || b.nan, negZero: a.negZero || b.negZero}
	}
	return unknownFloat
}

// down32 and up32 widen a bound computed in float64 by float32's
// rounding of the same operation (half an ulp either way).
func down32(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	return float64(math.Nextafter32(float32(v), float32(math.Inf(-1))))
}

func up32(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	return float64(math.Nextafter32(float32(v), float32(math.Inf(1))))
}

// clampHolds reports whether max(a, c) (op Max) or min(a, c) (op Min) is
// a for every value of a: a's range on c's side, and where c is a zero, a
// never -0 (max(-0, +0) is +0).
func clampHolds(op BinOp, a Expr, c *FloatImm) bool {
	f := floatFacts(a)
	v := float64(float32(c.V))
	if math.IsNaN(v) {
		return false
	}
	if v == 0 && (f.negZero || math.Signbit(v)) {
		return false
	}
	if op == Max {
		return f.lo >= v
	}
	return f.hi <= v
}

// roundTripHolds reports whether float32(T(a)), for float a and integer
// type t, is a for every value of a.
func roundTripHolds(a Expr, t DType) bool {
	if a == nil || a.Type() != Float32 || !t.IntElem() || t == Int {
		return false
	}
	f := floatFacts(a)
	lo, hi := t.Range()
	return f.integral && !f.nan && !f.negZero && f.lo >= float64(lo) && f.hi <= float64(hi)
}
