// Tests of float folding (simplify_float.go).

package tir

import (
	"math"
	"testing"
)

func TestSimplifyFloat(t *testing.T) {
	negZero := &FloatImm{V: math.Copysign(0, -1)}
	runSimplifyCases(t, []simplifyCase{
		{"add", AddE(F32(1.5), F32(2.25)), nil, "3.75"},
		{"float32 rounding", AddE(F32(16777216), F32(1)), nil, "1.6777216e+07"},
		{"div", DivE(F32(1), F32(3)), nil, "0.33333334"},
		{"min", MinE(F32(1), F32(-2)), nil, "-2.0"},
		{"max", MaxE(F32(1), F32(-2)), nil, "1.0"},
		{"min of zeros kept", MinE(F32(0), negZero), nil, "min(0.0, -0.0)"},
		{"div by zero kept", DivE(F32(1), F32(0)), nil, "(1.0 / 0.0)"},
		{"overflow kept", MulE(F32(3e38), F32(10)), nil, "(3e+38 * 10.0)"},
		{"x*1", MulE(sfa, F32(1)), nil, "a"},
		{"1*x", MulE(F32(1), sfa), nil, "a"},
		{"x/1", DivE(sfa, F32(1)), nil, "a"},
		{"x-0", SubE(sfa, F32(0)), nil, "a"},
		{"x+(-0)", AddE(sfa, negZero), nil, "a"},
		{"x+0 kept (-0 + 0 is +0)", AddE(sfa, F32(0)), nil, "(a + 0.0)"},
		{"x*0 kept (NaN, -0)", MulE(sfa, F32(0)), nil, "(a * 0.0)"},
		{"no reassociation", AddE(AddE(sfa, F32(1)), F32(2)), nil, "((a + 1.0) + 2.0)"},
		{"inner fold", MulE(sfa, AddE(F32(1), F32(1))), nil, "(a * 2.0)"},
		{"cmp", Cmp(LT, F32(1), F32(2)), nil, "(0 == 0)"},
		{"select", SelectE(Cmp(LT, ic(2), ic(1)), sfa, F32(0)), nil, "0.0"},
		{"cast int", &Cast{To: Float32, X: AddE(ic(16777217), ic(0))}, nil, "1.6777216e+07"},
		{"cast float noop", &Cast{To: Float32, X: sfa}, nil, "a"},
		{"call fabs", CallE("fabs", F32(-2)), nil, "2.0"},
		{"call sqrt", CallE("sqrt", F32(2)), nil, "1.4142135"},
		{"call sqrt nan kept", CallE("sqrt", F32(-1)), nil, "sqrt(-1.0)"},
		{"call exp kept", CallE("exp", F32(1)), nil, "exp(1.0)"},
		{"load index", &Load{Buf: &Buffer{Name: "A", DType: Float32}, Indices: []Expr{AddE(sx, SubE(sy, sy))}}, nil, "A[x]"},
	})
}

func TestSimplifyStmtFloatLet(t *testing.T) {
	A := &Buffer{Name: "A", DType: Float32, Shape: []int{4}}
	p := &Var{Name: "p", T: Bool}
	s := &Let{Var: sfa, Value: AddE(F32(1), F32(1)), Body: &Let{Var: p, Value: Cmp(LT, ic(1), ic(2)),
		Body: &Store{Buf: A, Indices: []Expr{ic(0)}, Value: SelectE(p, MulE(sfa, F32(3)), F32(0))}}}
	if got := StmtString(SimplifyStmt(s, nil)); got != "A[0] = 6.0\n" {
		t.Errorf("got %s", got)
	}
}
