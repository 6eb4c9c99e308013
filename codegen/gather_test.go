package codegen

import (
	"testing"

	"github.com/tessera-ml/tessera/tir"
)

// TestVectorGather: a load at a data-dependent index in a vectorized
// loop computes the index once as int32 lanes and loads each lane from it
// (vgather), for a table lookup after a requantization (uint8 and int8
// data, integer and float tables, under a guard that excludes the last
// vector's last lanes) and for a gather whose index also names the lane.
// Each is checked against the interpreter.
func TestVectorGather(t *testing.T) {
	clamp := func(e tir.Expr, lo, hi int64) tir.Expr { return tir.MinE(tir.MaxE(e, c(lo)), c(hi)) }
	i, v := tir.NewVar("i"), tir.NewVar("v")
	idx := add(mul(i, c(8)), v)
	guard := tir.Cmp(tir.LT, idx, c(37))
	// requant: the uint8 value a requantization of x gives.
	requant := func(x tir.Expr, dt tir.DType) tir.Expr {
		lo, hi := dt.Range()
		q := tir.AddE(tir.CallE("rint", tir.MulE(&tir.Cast{To: tir.Float32, X: x}, fc(0.7))), fc(3))
		return &tir.Cast{To: dt, X: tir.MinE(tir.MaxE(q, fc(float64(lo))), fc(float64(hi)))}
	}
	var cases []ccase
	for _, tc := range []struct {
		name        string
		data, table tir.DType
		lo          int64
	}{
		{"table_u8", tir.Uint8, tir.Uint8, 0},
		{"table_i8", tir.Int8, tir.Int8, -128},
		{"table_u8_f32", tir.Uint8, tir.Float32, 0},
	} {
		X := &tir.Buffer{Name: "X", DType: tir.Int32, Shape: []int{37}, Scope: tir.Global}
		T := &tir.Buffer{Name: "T", DType: tc.table, Shape: []int{256}, Scope: tir.Global}
		O := &tir.Buffer{Name: "O", DType: tc.table, Shape: []int{37}, Scope: tir.Global}
		k := tir.SubE(&tir.Cast{To: tir.Int, X: requant(ld(X, idx), tc.data)}, c(tc.lo))
		body := loop(i, 5, tir.Serial, loop(v, 8, tir.Vectorized,
			&tir.IfThenElse{Cond: guard, Then: st(O, ld(T, clamp(k, 0, 255)), idx)}))
		cases = append(cases, ccase{name: tc.name, f: fnc(tc.name, []*tir.Buffer{X, T, O}, body), src: []string{"tsr_ix1[7]"}})
	}
	{
		// out[i, v] = T[X[i, v], v]: the flat index is X·8 + v.
		X := &tir.Buffer{Name: "X", DType: tir.Uint8, Shape: []int{5, 8}, Scope: tir.Global}
		T := gbuf("T", 256, 8)
		O := gbuf("O", 5, 8)
		body := loop(i, 5, tir.Serial, loop(v, 8, tir.Vectorized,
			st(O, ld(T, clamp(&tir.Cast{To: tir.Int, X: ld(X, i, v)}, 0, 255), v), i, v)))
		cases = append(cases, ccase{name: "gather_rows", f: fnc("gather_rows", []*tir.Buffer{X, T, O}, body), src: []string{"tsr_ix1[7]"}})
	}
	runTable(t, cases)
}
