// Tests of linear forms, products and LinearIn (simplify_linear.go).

package tir

import (
	"testing"
)

func TestSimplifyAffine(t *testing.T) {
	runSimplifyCases(t, []simplifyCase{
		{"fold", AddE(ic(2), MulE(ic(3), ic(4))), nil, "14"},
		{"x+0", AddE(sx, ic(0)), nil, "x"},
		{"0+x", AddE(ic(0), sx), nil, "x"},
		{"x*1", MulE(sx, ic(1)), nil, "x"},
		{"x*0", MulE(sx, ic(0)), nil, "0"},
		{"0*load", MulE(ic(0), &Load{Buf: propBuf, Indices: []Expr{sx}}), nil, "0"},
		{"x-x", SubE(sx, sx), nil, "0"},
		{"collect", AddE(AddE(sx, sy), SubE(MulE(ic(2), sx), sy)), nil, "(x * 3)"},
		{"order", AddE(AddE(ic(5), sz), AddE(sy, sx)), nil, "(((x + y) + z) + 5)"},
		{"negative", SubE(ic(3), AddE(sx, MulE(sy, ic(2)))), nil, "(((x * -1) - (y * 2)) + 3)"},
		{"negative const", SubE(sx, ic(4)), nil, "(x - 4)"},
		{"neg first", SubE(ic(0), sx), nil, "(x * -1)"},
		{"distribute const", MulE(AddE(sx, ic(2)), ic(3)), nil, "((x * 3) + 6)"},
		{"nested", SubE(MulE(SubE(sx, sy), ic(2)), MulE(ic(-2), sy)), nil, "(x * 2)"},
		{"int cast dropped", &Cast{To: Int, X: AddE(sx, ic(1))}, nil, "(x + 1)"},
		{"bool cast", &Cast{To: Int, X: Cmp(LT, ic(1), ic(2))}, nil, "1"},
		{"float cast truncates", &Cast{To: Int, X: F32(-2.75)}, nil, "-2"},
		{"row-major index", AddE(MulE(AddE(MulE(si, ic(8)), sj), ic(4)), sk), nil, "(((i * 32) + (j * 4)) + k)"},
	})
}

func TestSimplifyProducts(t *testing.T) {
	runSimplifyCases(t, []simplifyCase{
		{"coef out", MulE(MulE(sx, ic(2)), MulE(sy, ic(3))), nil, "((x * y) * 6)"},
		{"commute", MulE(sy, sx), nil, "(x * y)"},
		{"assoc", MulE(sz, MulE(sy, sx)), nil, "((x * y) * z)"},
		{"sum factor kept", MulE(AddE(sx, ic(1)), sy), nil, "((x + 1) * y)"},
		{"like products", AddE(MulE(sx, sy), MulE(sy, sx)), nil, "((x * y) * 2)"},
	})
}

func TestLinearIn(t *testing.T) {
	cases := []struct {
		e    Expr
		v    *Var
		coef int64
		rest string
		ok   bool
	}{
		{AddE(MulE(sx, ic(4)), sy), sx, 4, "y", true},
		{AddE(MulE(sx, ic(4)), sy), sy, 1, "(x * 4)", true},
		{AddE(MulE(sx, ic(4)), sy), sz, 0, "((x * 4) + y)", true},
		{SubE(AddE(sx, ic(3)), MulE(ic(2), sx)), sx, -1, "3", true},
		{SubE(sx, sx), sx, 0, "0", true},
		{AddE(MulE(AddE(sx, sy), ic(2)), FloorDivE(sy, ic(3))), sx, 2, "(floordiv(y, 3) + (y * 2))", true},
		{AddE(sx, FloorDivE(sx, ic(2))), sx, 0, "", false},
		{MinE(sx, ic(3)), sx, 0, "", false},
		{MulE(sx, sy), sx, 0, "", false},
		{&Load{Buf: propBuf, Indices: []Expr{sx}}, sx, 0, "", false},
		{AddE(MulE(FloorDivE(sx, ic(4)), ic(4)), FloorModE(sx, ic(4))), sx, 1, "0", true},
		{Cmp(LT, sx, ic(1)), sx, 0, "", false},
	}
	for _, tc := range cases {
		coef, rest, ok := LinearIn(tc.e, tc.v)
		if ok != tc.ok || coef != tc.coef || (ok && ExprString(rest) != tc.rest) {
			r := "<nil>"
			if rest != nil {
				r = ExprString(rest)
			}
			t.Errorf("LinearIn(%s, %s) = %d, %s, %v; want %d, %s, %v",
				ExprString(tc.e), tc.v.Name, coef, r, ok, tc.coef, tc.rest, tc.ok)
		}
	}
}
