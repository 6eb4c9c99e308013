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
