// Tests of the boolean rules, the boolean constants and Prove (simplify_bool.go).

package tir

import (
	"testing"
)

func TestSimplifySelectAndBool(t *testing.T) {
	d := map[*Var]Interval{si: {0, 15}, sj: {0, 3}}
	runSimplifyCases(t, []simplifyCase{
		{"select true", SelectE(Cmp(LT, ic(1), ic(2)), sx, sy), nil, "x"},
		{"select false", SelectE(Cmp(GT, ic(1), ic(2)), sx, sy), nil, "y"},
		{"select by dom", SelectE(Cmp(LT, si, ic(16)), sx, sy), d, "x"},
		{"select same branches", SelectE(Cmp(LT, sx, sy), AddE(sz, ic(1)), AddE(ic(1), sz)), nil, "(z + 1)"},
		{"select kept", SelectE(Cmp(LT, si, ic(8)), sx, sy), d, "select((i < 8), x, y)"},
		{"cmp fold", Cmp(LE, ic(-3), ic(-3)), nil, "(0 == 0)"},
		{"cmp diff", Cmp(LT, sx, AddE(sx, ic(1))), nil, "(0 == 0)"},
		{"cmp diff false", Cmp(GE, sx, AddE(sx, ic(1))), nil, "(0 != 0)"},
		{"cmp eq", Cmp(EQ, AddE(sx, sy), AddE(sy, sx)), nil, "(0 == 0)"},
		{"cmp ne by dom", Cmp(NE, sj, ic(7)), d, "(0 == 0)"},
		{"cmp eq by dom", Cmp(EQ, sj, ic(7)), d, "(0 != 0)"},
		{"cmp affine dom", Cmp(LT, AddE(MulE(si, ic(4)), sj), ic(64)), d, "(0 == 0)"},
		{"cmp dom edge", Cmp(LT, AddE(MulE(si, ic(4)), sj), ic(63)), d, "(((i * 4) + j) < 63)"},
		{"cmp kept", Cmp(GT, si, sj), d, "(i > j)"},
		{"and true", AndE(Cmp(GE, si, ic(0)), Cmp(LT, sx, ic(3))), d, "(x < 3)"},
		{"and false", AndE(Cmp(LT, sx, ic(3)), Cmp(LT, si, ic(0))), d, "(0 != 0)"},
		{"or true", OrE(Cmp(LT, sx, ic(3)), Cmp(LT, si, ic(16))), d, "(0 == 0)"},
		{"or false", OrE(Cmp(LT, si, ic(0)), Cmp(LT, sx, ic(3))), d, "(x < 3)"},
		{"and same", AndE(Cmp(LT, sx, ic(3)), Cmp(LT, sx, ic(3))), nil, "(x < 3)"},
		{"not const", NotE(Cmp(LT, ic(1), ic(2))), nil, "(0 != 0)"},
		{"not not", NotE(NotE(sbp)), nil, "p"},
		{"not int cmp", NotE(Cmp(LT, sx, ic(3))), nil, "(x >= 3)"},
		{"not float cmp kept", NotE(Cmp(LT, sfa, F32(3))), nil, "!(a < 3.0)"},
		{"bool eq", Cmp(EQ, True, False), nil, "(0 != 0)"},
		{"bool select", SelectE(sbp, Cmp(LT, ic(1), ic(2)), Cmp(LT, ic(1), ic(2))), nil, "(0 == 0)"},
		{"cast to bool", &Cast{To: Bool, X: ic(3)}, nil, "(0 == 0)"},
	})
}

func TestBoolConstants(t *testing.T) {
	if !IsTrue(True) || IsFalse(True) || !IsFalse(False) || IsTrue(False) {
		t.Fatal("True/False not recognised")
	}
	if ExprString(True) != "(0 == 0)" || ExprString(False) != "(0 != 0)" {
		t.Fatal("unexpected printing of True/False")
	}
	if !IsTrue(Cmp(LT, ic(1), ic(2))) || !IsFalse(Cmp(EQ, ic(1), ic(2))) {
		t.Error("comparisons of constants")
	}
	if IsTrue(Cmp(EQ, sx, sx)) || IsFalse(sbp) || IsTrue(F32(1)) {
		t.Error("non-constants recognised as constants")
	}
	if Simplify(True, nil) != True || Simplify(Cmp(LT, sx, AddE(sx, ic(1))), nil) != True {
		t.Error("Simplify should return the canonical True")
	}
}

func TestProve(t *testing.T) {
	d := map[*Var]Interval{si: {0, 15}, sj: {0, 3}, sk: {-4, -1}}
	cases := []struct {
		cond          Expr
		value, proven bool
	}{
		{Cmp(LT, si, ic(16)), true, true},
		{Cmp(LT, si, ic(15)), false, false},
		{Cmp(LE, si, ic(15)), true, true},
		{Cmp(GT, sk, ic(-1)), false, true},
		{Cmp(GE, sk, ic(-4)), true, true},
		{Cmp(EQ, sk, ic(0)), false, true},
		{Cmp(NE, sk, ic(0)), true, true},
		{Cmp(LT, AddE(MulE(si, ic(4)), sj), ic(64)), true, true},
		{Cmp(LT, AddE(MulE(si, ic(4)), sj), MulE(AddE(si, ic(1)), ic(4))), true, true},
		{Cmp(LT, sx, sx), false, true},
		{Cmp(LT, sx, sy), false, false},
		{AndE(Cmp(GE, si, ic(0)), Cmp(LT, sj, ic(4))), true, true},
		{AndE(Cmp(GE, si, ic(0)), Cmp(LT, sx, ic(4))), false, false},
		{OrE(Cmp(LT, sx, ic(0)), Cmp(LT, sj, ic(4))), true, true},
		{NotE(Cmp(LT, si, ic(16))), false, true},
		{Cmp(LT, FloorModE(sx, ic(8)), ic(8)), true, true},
		{Cmp(GE, FloorDivE(si, ic(4)), ic(0)), true, true},
		{Cmp(LE, MinE(sx, ic(3)), ic(3)), true, true},
		{Cmp(LT, SelectE(Cmp(LT, sx, ic(0)), ic(1), ic(2)), ic(3)), true, true},
	}
	for _, tc := range cases {
		v, p := Prove(tc.cond, d)
		if v != tc.value || p != tc.proven {
			t.Errorf("Prove(%s) = %v, %v; want %v, %v", ExprString(tc.cond), v, p, tc.value, tc.proven)
		}
	}
}
