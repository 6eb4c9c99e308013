// Tests of the min and max rules (simplify_minmax.go).

package tir

import (
	"testing"
)

func TestSimplifyMinMax(t *testing.T) {
	d := map[*Var]Interval{si: {0, 15}, sj: {0, 3}}
	runSimplifyCases(t, []simplifyCase{
		{"fold min", MinE(ic(3), ic(-2)), nil, "-2"},
		{"fold max", MaxE(ic(3), ic(-2)), nil, "3"},
		{"x vs x+1", MinE(AddE(sx, ic(1)), sx), nil, "x"},
		{"max x vs x+1", MaxE(AddE(sx, ic(1)), sx), nil, "(x + 1)"},
		{"same", MaxE(sx, AddE(sx, ic(0))), nil, "x"},
		{"sorted", MinE(sy, sx), nil, "min(x, y)"},
		{"flatten", MinE(MinE(sz, sx), MinE(sy, sx)), nil, "min(min(x, y), z)"},
		{"by dom", MinE(si, ic(20)), d, "i"},
		{"by dom max", MaxE(sj, ic(3)), d, "3"},
		{"dominated in chain", MinE(MinE(si, sx), AddE(si, ic(1))), nil, "min(i, x)"},
		{"undecided", MinE(si, ic(10)), d, "min(10, i)"},
		{"min in affine", AddE(MinE(sx, sy), MinE(sy, sx)), nil, "(min(x, y) * 2)"},
	})
}
