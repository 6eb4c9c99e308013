package codegen

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/internal/crosstest"

	"github.com/tessera-ml/tessera/tir"
)

// TestVectorGather: a load at a data-dependent index in a vectorized
// loop computes the index once as int32 lanes (vgather), for a table
// lookup after a requantization (uint8 and int8 data, integer and float
// tables, under a guard that excludes the last vector's last lanes) and
// for a gather whose index also names the lane. A table of bytes is read
// by tsr_gatherb in each of its forms: whole (256 bytes: vpermi2b where
// the CPU has AVX512_VBMI), a multiple of 4 bytes (vpgatherdd at x86-64-v3
// and v4) and any other size (lane by lane), at 4, 8 and 16 lanes; every
// table ends at a guard page, so a read past it faults. Each is checked
// against the interpreter at every ISA level the machine runs, and once
// more at -march=native where the machine has AVX512_VBMI.
func TestVectorGather(t *testing.T) {
	cases := gatherCases()
	runTable(t, cases)
	host, err := machine.Native()
	if err != nil {
		t.Fatal(err)
	}
	if !host.Has("avx512vbmi") {
		t.Logf("native run skipped: this machine lacks AVX512_VBMI")
		return
	}
	mod := caseModule(t, cases, host.VectorBits())
	for _, cc := range testCompilers(t) {
		t.Run("native/"+cc.name, func(t *testing.T) { checkCases(t, cc, host, nil, mod, cases) })
	}
}

// TestVectorGatherAarch64 runs TestVectorGather's cases for aarch64 under
// qemu: a whole table by tbl lookups, the others lane by lane.
func TestVectorGatherAarch64(t *testing.T) {
	tools := crosstest.RequireAarch64(t)
	m, err := machine.Level("armv8-a")
	if err != nil {
		t.Fatal(err)
	}
	cases := gatherCases()
	mod := caseModule(t, cases, m.VectorBits())
	if !strings.Contains(mod.Code, "vqtbl4q_u8(t0, i)") {
		t.Error("no tbl lookup in the aarch64 source")
	}
	checkCases(t, compiler{"aarch64-gcc", tools.CC, []string{"-fopenmp"}}, m, tools.Exec, mod, cases)
}

// gatherCases are TestVectorGather's kernels.
func gatherCases() []ccase {
	clamp := func(e tir.Expr, lo, hi int64) tir.Expr { return tir.MinE(tir.MaxE(e, c(lo)), c(hi)) }
	// requant: the 8-bit value a requantization of x gives. x is an
	// int32 of ±2^20 (randomArgs): scaled by 3e-4, to ±315, most values
	// of the table are read, not only its two ends.
	requant := func(x tir.Expr, dt tir.DType) tir.Expr {
		lo, hi := dt.Range()
		q := tir.AddE(tir.CallE("rint", tir.MulE(&tir.Cast{To: tir.Float32, X: x}, fc(3e-4))), fc(3))
		return &tir.Cast{To: dt, X: tir.MinE(tir.MaxE(q, fc(float64(lo))), fc(float64(hi)))}
	}
	var cases []ccase
	for _, lanes := range []int{4, 8, 16} {
		i, v := tir.NewVar("i"), tir.NewVar("v")
		n := 5*lanes - 3
		idx := add(mul(i, c(int64(lanes))), v)
		guard := tir.Cmp(tir.LT, idx, c(int64(n)))
		for _, tc := range []struct {
			name        string
			data, table tir.DType
			size        int // of the table: its last size-256 entries are never read
			lo          int64
			src         string // the load, in the source
		}{
			{"table_u8", tir.Uint8, tir.Uint8, 256, 0, "tsr_gatherb_v%du8(T, tsr_ix1, 1)"},
			{"table_i8", tir.Int8, tir.Int8, 256, -128, "tsr_gatherb_v%di8(T, tsr_ix1, 1)"},
			{"table_u8_260", tir.Uint8, tir.Uint8, 260, 0, "tsr_gatherb_v%du8(T, tsr_ix1, 0)"},
			{"table_i8_260", tir.Int8, tir.Int8, 260, -128, "tsr_gatherb_v%di8(T, tsr_ix1, 0)"},
			{"table_u8_258", tir.Uint8, tir.Uint8, 258, 0, "tsr_ix1[%d]"},
			{"table_u8_f32", tir.Uint8, tir.Float32, 256, 0, "tsr_ix1[%d]"},
		} {
			name := fmt.Sprintf("%s_v%d", tc.name, lanes)
			X := &tir.Buffer{Name: "X", DType: tir.Int32, Shape: []int{n}, Scope: tir.Global}
			T := &tir.Buffer{Name: "T", DType: tc.table, Shape: []int{tc.size}, Scope: tir.Global}
			O := &tir.Buffer{Name: "O", DType: tc.table, Shape: []int{n}, Scope: tir.Global}
			k := tir.SubE(&tir.Cast{To: tir.Int, X: requant(ld(X, idx), tc.data)}, c(tc.lo))
			body := loop(i, 5, tir.Serial, loop(v, lanes, tir.Vectorized,
				&tir.IfThenElse{Cond: guard, Then: st(O, ld(T, clamp(k, 0, 255)), idx)}))
			src := fmt.Sprintf(tc.src, lanes)
			if strings.Contains(tc.src, "[%d]") {
				src = fmt.Sprintf(tc.src, lanes-1)
			}
			for _, g := range []string{"aaa", "aba"} { // the table's guard page after it, then before it
				cases = append(cases, ccase{name: name + "_" + g, f: fnc(name+"_"+g, []*tir.Buffer{X, T, O}, body), guards: g, src: []string{src}})
			}
		}
	}
	{
		// out[i, v] = T[X[i, v], v]: the flat index is X·8 + v.
		i, v := tir.NewVar("i"), tir.NewVar("v")
		X := &tir.Buffer{Name: "X", DType: tir.Uint8, Shape: []int{5, 8}, Scope: tir.Global}
		T := gbuf("T", 256, 8)
		O := gbuf("O", 5, 8)
		body := loop(i, 5, tir.Serial, loop(v, 8, tir.Vectorized,
			st(O, ld(T, clamp(&tir.Cast{To: tir.Int, X: ld(X, i, v)}, 0, 255), v), i, v)))
		cases = append(cases, ccase{name: "gather_rows", f: fnc("gather_rows", []*tir.Buffer{X, T, O}, body), src: []string{"tsr_ix1[7]"}})
	}
	return cases
}
