package codegen

import (
	"testing"

	"github.com/tessera-ml/tessera/tir"
)

// TestLaneFreeCasts: a conversion inside a vectorized loop of a load whose
// index mentions the lane but, over the lanes' range, does not depend on
// it (a grouped convolution's group of 24 channels read by vectors of 8:
// floordiv(16·m + v, 24) is floordiv(2·m, 3) for every v < 8) is printed
// from the load's lane-free form. It was printed from the expression as
// written, which names the lane variable where it is not in scope: a
// quantized RegNet (QLinearConv, 24 channels a group) failed to build
// ("variable i3.3 is not in scope"). The int8 → int32 → float32 and the
// int8 → float32 conversions, each compared with the interpreter.
func TestLaneFreeCasts(t *testing.T) {
	A := &tir.Buffer{Name: "A", DType: tir.Int8, Shape: []int{8}, Scope: tir.Global}
	O := gbuf("O", 4, 16)
	P := &tir.Buffer{Name: "P", DType: tir.Int32, Shape: []int{4, 16}, Scope: tir.Global}
	m, ch, v := tir.NewVar("m"), tir.NewVar("ch"), tir.NewVar("v")
	group := tir.FloorDivE(add(mul(m, c(16)), mul(ch, c(8)), v), c(24))
	a := ld(A, group)
	col := add(mul(ch, c(8)), v)
	body := loop(m, 4, tir.Serial, loop(ch, 2, tir.Unrolled, loop(v, 8, tir.Vectorized,
		st(O, tir.AddE(&tir.Cast{To: tir.Float32, X: a}, fc(0.5)), m, col),
		st(P, tir.AddE(&tir.Cast{To: tir.Int32, X: a}, tir.IntOf(tir.Int32, 3)), m, col))))
	runTable(t, []ccase{{name: "lanefree", f: fnc("lanefree", []*tir.Buffer{A, O, P}, body)}})
}

// TestGuardedIntegerStore: an integer store in a vectorized loop under a
// guard that excludes the last lanes of the last vector (19 elements in
// vectors of 8), whose value reads past the end for those lanes, computes
// the value as a select on the guard, whose other branch is a zero of the
// value's type. It was a float zero, a select of two types that failed to
// print ("malformed select") for a quantized matmul's random schedule.
func TestGuardedIntegerStore(t *testing.T) {
	A := &tir.Buffer{Name: "A", DType: tir.Int32, Shape: []int{19}, Scope: tir.Global}
	O := &tir.Buffer{Name: "O", DType: tir.Uint8, Shape: []int{19}, Scope: tir.Global}
	i, v := tir.NewVar("i"), tir.NewVar("v")
	idx := add(mul(i, c(8)), v)
	q := tir.MinE(tir.MaxE(tir.AddE(ld(A, idx), tir.IntOf(tir.Int32, 7)), tir.IntOf(tir.Int32, 0)), tir.IntOf(tir.Int32, 255))
	body := loop(i, 3, tir.Serial, loop(v, 8, tir.Vectorized,
		&tir.IfThenElse{Cond: tir.Cmp(tir.LT, idx, c(19)), Then: st(O, &tir.Cast{To: tir.Uint8, X: q}, idx)}))
	runTable(t, []ccase{{name: "guarded_u8", f: fnc("guarded_u8", []*tir.Buffer{A, O}, body)}})
}
