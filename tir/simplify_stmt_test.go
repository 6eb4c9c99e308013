// Tests of SimplifyStmt (simplify_stmt.go).

package tir

import (
	"testing"
)

func TestSimplifyStmt(t *testing.T) {
	A := &Buffer{Name: "A", DType: Float32, Shape: []int{64}}
	Bb := &Buffer{Name: "Bb", DType: Float32, Shape: []int{64}, Scope: Local}
	io, ii, o := NewVar("io"), NewVar("ii"), NewVar("o")
	idx := AddE(MulE(io, ic(4)), ii)
	store := func(e Expr) Stmt { return &Store{Buf: A, Indices: []Expr{e}, Value: F32(1)} }

	cases := []struct {
		name string
		s    Stmt
		dom  map[*Var]Interval
		want string
	}{
		{"loop range used", &For{Var: io, Extent: 16, Body: &For{Var: ii, Extent: 4, Kind: Vectorized,
			Body: store(FloorModE(idx, ic(4)))}}, nil,
			"for io in 0..16 {\n  for ii in 0..4 vectorized {\n    A[ii] = 1.0\n  }\n}\n"},
		{"extent 1 removed", &For{Var: io, Extent: 16, Kind: Parallel, Body: &For{Var: o, Extent: 1,
			Body: store(AddE(io, MulE(o, ic(16))))}}, nil,
			"for io in 0..16 parallel {\n  A[io] = 1.0\n}\n"},
		{"extent 0 removed", SeqOf(&For{Var: io, Extent: 0, Body: store(io)}, store(ic(3))), nil,
			"A[3] = 1.0\n"},
		{"guard proven true", &For{Var: io, Extent: 16, Body: &IfThenElse{
			Cond: Cmp(LT, io, ic(16)), Then: store(io), Else: store(ic(0))}}, nil,
			"for io in 0..16 {\n  A[io] = 1.0\n}\n"},
		{"guard proven false", &For{Var: io, Extent: 16, Body: &IfThenElse{
			Cond: Cmp(GE, io, ic(16)), Then: store(io), Else: store(ic(0))}}, nil,
			"for io in 0..16 {\n  A[0] = 1.0\n}\n"},
		{"guard kept", &For{Var: io, Extent: 16, Body: &IfThenElse{
			Cond: Cmp(LT, AddE(io, ic(1)), ic(16)), Then: store(io)}}, nil,
			"for io in 0..16 {\n  if ((io + 1) < 16) {\n    A[io] = 1.0\n  }\n}\n"},
		{"false guard without else", SeqOf(&IfThenElse{Cond: Cmp(LT, si, ic(0)), Then: store(ic(1))}, store(ic(2))),
			map[*Var]Interval{si: {0, 3}}, "A[2] = 1.0\n"},
		{"empty then", &IfThenElse{Cond: Cmp(LT, sx, ic(0)), Then: &IfThenElse{Cond: Cmp(LT, ic(1), ic(0)), Then: store(ic(1))},
			Else: store(ic(2))}, nil,
			"if (x >= 0) {\n  A[2] = 1.0\n}\n"},
		{"let const", &Let{Var: sx, Value: AddE(ic(2), ic(3)), Body: store(MulE(sx, ic(2)))}, nil,
			"A[10] = 1.0\n"},
		{"let range", &For{Var: io, Extent: 4, Body: &Let{Var: sx, Value: MulE(io, ic(2)),
			Body: store(FloorDivE(sx, ic(8)))}}, nil,
			"for io in 0..4 {\n  let x = (io * 2)\n  A[0] = 1.0\n}\n"},
		{"nested kinds kept", &Pragma{Key: "auto_unroll_max_step", Value: 16, Body: &Allocate{Buf: Bb,
			Body: &For{Var: io, Extent: 2, Kind: Unrolled, Body: &Store{Buf: Bb, Indices: []Expr{io},
				Value: MulE(&Load{Buf: A, Indices: []Expr{AddE(io, ic(0))}}, F32(1))}}}}, nil,
			"pragma auto_unroll_max_step=16\nalloc Bb[64] local\nfor io in 0..2 unrolled {\n  Bb[io] = A[io]\n}\n"},
		{"everything removed", &For{Var: io, Extent: 0, Body: store(io)}, nil, ""},
		{"caller dom", store(FloorDivE(si, ic(4))), map[*Var]Interval{si: {0, 3}}, "A[0] = 1.0\n"},
	}
	for _, tc := range cases {
		got := SimplifyStmt(tc.s, tc.dom)
		if got == nil {
			t.Errorf("%s: nil statement", tc.name)
			continue
		}
		if s := StmtString(got); s != tc.want {
			t.Errorf("%s:\n got:\n%s want:\n%s", tc.name, s, tc.want)
		}
	}
	// The caller's dom is not modified.
	dom := map[*Var]Interval{}
	SimplifyStmt(&For{Var: io, Extent: 4, Body: store(io)}, dom)
	if len(dom) != 0 {
		t.Error("SimplifyStmt modified dom")
	}
}
