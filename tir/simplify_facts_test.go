// Tests of the rewrites float facts allow (simplify_facts.go).

package tir

import (
	"math"
	"testing"
)

// quantExpr is QuantizeLinear's value of x, clamped once: min(max(rint(x
// / s) + z, 0), 255).
func quantExpr(x Expr, s, z float64) Expr {
	return MinE(MaxE(AddE(CallE("rint", DivE(x, F32(s))), F32(z)), F32(0)), F32(255))
}

// TestSimplifyFloatFacts: a clamp that holds already, a nan0 of a value
// never NaN and a conversion through an integer type that gives the value
// back are dropped; each is kept where a value could tell (NaN, -0, a
// fraction, a value out of the type's range).
func TestSimplifyFloatFacts(t *testing.T) {
	q := quantExpr(sfa, 0.5, 3)
	u8 := func(e Expr) Expr { return &Cast{To: Uint8, X: e} }
	f32 := func(e Expr) Expr { return &Cast{To: Float32, X: e} }
	runSimplifyCases(t, []simplifyCase{
		{"second clamp", MinE(MaxE(CallE("nan0", q), F32(0)), F32(255)), nil, "nan0(min(max((rint((a / 0.5)) + 3.0), 0.0), 255.0))"},
		{"round trip through uint8", f32(u8(CallE("nan0", q))), nil, "nan0(min(max((rint((a / 0.5)) + 3.0), 0.0), 255.0))"},
		{"nan0 of an integer", CallE("nan0", f32(&Cast{To: Int32, X: sfa})), nil, "float32(int32(a))"},
		{"clamp of a byte", MaxE(f32(u8(sfa)), F32(0)), nil, "float32(uint8(a))"},
		{"clamp constant first", MinE(F32(255), f32(u8(sfa))), nil, "float32(uint8(a))"},
		{"round trip kept: NaN", f32(u8(q)), nil, "float32(uint8(min(max((rint((a / 0.5)) + 3.0), 0.0), 255.0)))"},
		{"round trip kept: a fraction", f32(u8(CallE("nan0", MinE(MaxE(sfa, F32(0)), F32(255))))), nil, "float32(uint8(nan0(min(max(a, 0.0), 255.0))))"},
		{"round trip kept: out of range", f32(&Cast{To: Int8, X: CallE("nan0", q)}), nil, "float32(int8(nan0(min(max((rint((a / 0.5)) + 3.0), 0.0), 255.0))))"},
		{"round trip kept: -0", f32(u8(CallE("nan0", MinE(CallE("rint", sfa), F32(255))))), nil, "float32(uint8(nan0(min(rint(a), 255.0))))"},
		{"clamp kept: it bites", MaxE(f32(u8(sfa)), F32(1)), nil, "max(float32(uint8(a)), 1.0)"},
		{"clamp kept: -0 against 0", MaxE(CallE("rint", MinE(MaxE(sfa, F32(-3)), F32(3))), F32(-0.5)), nil, "max(rint(min(max(a, -3.0), 3.0)), -0.5)"},
		{"clamp kept: -0 against +0", MaxE(SelectE(Cmp(LT, sfa, F32(1)), &FloatImm{V: math.Copysign(0, -1)}, F32(2)), F32(0)), nil, "max(select((a < 1.0), -0.0, 2.0), 0.0)"},
		{"nan0 kept", CallE("nan0", q), nil, "nan0(min(max((rint((a / 0.5)) + 3.0), 0.0), 255.0))"},
	})
}

// TestFloatFactsRewritesExact: every rewrite above gives, on values that
// probe its edges (NaN, ±0, ±Inf, halves, the limits of the types, huge
// values), the same bits as the expression it replaces, in the
// interpreter.
func TestFloatFactsRewritesExact(t *testing.T) {
	q := quantExpr(sfa, 0.25, 126)
	exprs := []Expr{
		MinE(MaxE(CallE("nan0", q), F32(0)), F32(255)),
		&Cast{To: Float32, X: &Cast{To: Uint8, X: CallE("nan0", q)}},
		&Cast{To: Float32, X: &Cast{To: Int8, X: CallE("nan0", MinE(MaxE(AddE(CallE("rint", sfa), F32(-7)), F32(-128)), F32(127)))}},
		CallE("nan0", &Cast{To: Float32, X: &Cast{To: Int16, X: CallE("nan0", MinE(MaxE(sfa, F32(-9)), F32(9)))}}),
		MaxE(F32(0), &Cast{To: Float32, X: &Cast{To: Uint8, X: CallE("nan0", q)}}),
		MaxE(MinE(CallE("floor", MinE(MaxE(sfa, F32(-1)), F32(3))), F32(4)), F32(-2)),
	}
	values := []float32{float32(math.NaN()), 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		0.5, -0.5, 1.5, 2.5, -0.125, -31.5, 31.5, 32.25, 63.875, 1e9, -1e9, 3e38, -3e38, 127.4, -128.6, 255.5, 8.999}
	A := &Buffer{Name: "A", DType: Float32, Shape: []int{len(values)}}
	i := &Var{Name: "i", T: Int}
	for k, e := range exprs {
		s := Simplify(e, nil)
		if ExprString(s) == ExprString(e) {
			t.Errorf("expression %d: not rewritten: %s", k, ExprString(e))
		}
		run := func(x Expr) []float32 {
			O := &Buffer{Name: "O", DType: Float32, Shape: []int{len(values)}}
			body := &For{Var: i, Extent: len(values), Kind: Serial, Body: &Store{Buf: O, Indices: []Expr{i},
				Value: Substitute(x, map[*Var]Expr{sfa: &Load{Buf: A, Indices: []Expr{i}}})}}
			args := [][]float32{append([]float32(nil), values...), make([]float32, len(values))}
			if err := Run(&PrimFunc{Name: "f", Params: []*Buffer{A, O}, Body: body}, args); err != nil {
				t.Fatal(err)
			}
			return args[1]
		}
		want, got := run(e), run(s)
		for j := range values {
			if math.Float32bits(want[j]) != math.Float32bits(got[j]) {
				t.Errorf("expression %d at %v: %v rewritten, %v as written (%s -> %s)", k, values[j], got[j], want[j], ExprString(e), ExprString(s))
			}
		}
	}
}
