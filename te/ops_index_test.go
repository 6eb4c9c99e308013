package te

import (
	"testing"

	"github.com/tessera-ml/tessera/tir"
)

// TestTableLookupClamp: the index of a table holding every value of the
// data's type (8-bit data, 256 entries from the type's least value) is the
// value itself; any other table clamps the index to its ends.
func TestTableLookupClamp(t *testing.T) {
	for _, c := range []struct {
		name  string
		dt    tir.DType
		n     int
		lo    int64
		clamp bool
	}{
		{"uint8 from 0", tir.Uint8, 256, 0, false},
		{"int8 from -128", tir.Int8, 256, -128, false},
		{"int8 from 0", tir.Int8, 256, 0, true},
		{"uint8, 128 entries", tir.Uint8, 128, 0, true},
		{"int16", tir.Int16, 256, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := TypedPlaceholder("X", c.dt, 4)
			out, err := TableLookup("out", x, TypedPlaceholder("T", tir.Uint8, c.n), c.lo)
			if err != nil {
				t.Fatal(err)
			}
			clamped := false
			tir.WalkExpr(out.Body, func(e tir.Expr) bool {
				if b, ok := e.(*tir.Binary); ok && (b.Op == tir.Min || b.Op == tir.Max) {
					clamped = true
				}
				return true
			})
			if clamped != c.clamp {
				t.Errorf("index clamped = %v, want %v: %s", clamped, c.clamp, tir.ExprString(out.Body))
			}
		})
	}
}
