package codegen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tessera-ml/tessera/tir"
)

// Loads at data-dependent indices in vector code: a table lookup
// (ops.TableLookup: an 8-bit activation indexing a table of 256 entries,
// after a requantization), a Gather of a computed index. The index is
// computed once, as int32 lanes, instead of once per lane from the lane's
// own scalar expression (a requantization of eight lanes cost eight scalar
// conversions, roundings and clamps before):
//
//	({ tsr_v8i ix = <index of every lane>; (tsr_v8i){t[ix[0]], ..., t[ix[7]]}; })
//
// and a buffer of bytes is read by tsr_gatherb (gatherHelpers) where its
// size allows: no x86 instruction gathers bytes, and loaded lane by lane
// a lookup cost some fifty instructions per 16 lanes (an EfficientNet's
// SiLU tables, 40% of its int8 time on Zen 5).

// vgather emits load e, of flat index flat (which reads data), as a
// vector indexed by an int32 index vector, or reports false when the index
// has a form it does not compute as a vector (the caller then loads lane
// by lane).
func (k *kernel) vgather(p *vplan, e *tir.Load, bb *bufBind, flat tir.Expr) (string, bool, error) {
	if bb.scal != nil || !hasLoad(flat) || int64(e.Buf.Size()) >= 1<<31 {
		return "", false, nil
	}
	ix, ok := k.vindex(p, tir.Simplify(flat, k.dom))
	if !ok {
		return "", false, nil
	}
	k.gathers++
	name := fmt.Sprintf("tsr_ix%d", k.gathers)
	if t := e.Buf.DType; (t == tir.Uint8 || t == tir.Int8) && e.Buf.Size()%4 == 0 {
		whole := 0
		if e.Buf.Size() == 256 {
			whole = 1
		}
		return fmt.Sprintf("({ %s %s = %s; tsr_gatherb_v%d%s(%s, %s, %d); })", mt(p.L), name, trimParens(ix), p.L, laneSuffix(t), bb.name, name, whole), true, nil
	}
	parts := make([]string, p.L)
	for l := range parts {
		el := fmt.Sprintf("%s[%s[%d]]", bb.name, name, l)
		switch t := e.Buf.DType; {
		case t == tir.Float32:
			parts[l] = el
		case t == tir.BFloat16:
			parts[l] = "tsr_bf2f(" + el + ")"
		case t.IntElem():
			parts[l] = "(int32_t)" + el
		default:
			return "", false, nil
		}
	}
	return fmt.Sprintf("({ %s %s = %s; (%s){%s}; })", mt(p.L), name, trimParens(ix), vtOf(p.L, e.Buf.DType), strings.Join(parts, ", ")), true, nil
}

// vindex emits integer index e as int32 lanes: sums, differences,
// products, minima and maxima of lane-free integers, the lane variable
// and conversions of vector values to integers. It reports false for any
// other form.
func (k *kernel) vindex(p *vplan, e tir.Expr) (string, bool) {
	if e.Type() != tir.Int {
		return "", false
	}
	if !dependsOn(e, p.v) {
		s, err := k.expr(e)
		if err != nil {
			return "", false
		}
		return fmt.Sprintf("tsr_splat_v%di((int32_t)(%s))", p.L, trimParens(s)), true
	}
	switch e := e.(type) {
	case *tir.Var:
		lanes := make([]string, p.L)
		for l := range lanes {
			lanes[l] = fmt.Sprint(l)
		}
		return fmt.Sprintf("((%s){%s})", mt(p.L), strings.Join(lanes, ", ")), e == p.v
	case *tir.Binary:
		a, ok := k.vindex(p, e.A)
		if !ok {
			return "", false
		}
		b, ok := k.vindex(p, e.B)
		if !ok {
			return "", false
		}
		switch e.Op {
		case tir.Add, tir.Sub, tir.Mul:
			return "(" + a + " " + e.Op.String() + " " + b + ")", true
		case tir.Min:
			return fmt.Sprintf("tsr_min_v%di(%s, %s)", p.L, trimParens(a), trimParens(b)), true
		case tir.Max:
			return fmt.Sprintf("tsr_max_v%di(%s, %s)", p.L, trimParens(a), trimParens(b)), true
		}
	case *tir.Cast:
		if e.X == nil || e.X.Type() == tir.Int {
			return "", false
		}
		// Every value a well-formed index converts from fits in int32
		// (the buffer has fewer than 2^31 elements, and a clamp around the
		// conversion keeps an out-of-range one in bounds either way).
		s, isVec, err := k.vexpr(p, &tir.Cast{To: tir.Int32, X: e.X})
		if err != nil || !isVec {
			return "", false
		}
		return s, true
	}
	return "", false
}

// gatherHelpers returns tsr_gatherb_vL<u8|i8>(t, ix, whole): the bytes
// t[ix[l]] of a buffer whose size is a multiple of 4, widened to int32
// lanes (zero- or sign-extended); whole says (as a constant the inlined
// helper folds) that the buffer holds exactly 256 bytes. Forms, best
// first:
//
//   - AVX512_VBMI, a whole table: the table in four zmm registers (hoisted
//     out of the caller's loops), two vpermi2b on the indices' low 7 bits
//     and a blend on their 8th: five instructions per vector of lanes.
//   - AVX2 (AVX-512 at 16 lanes): vpgatherdd of the aligned 4 bytes
//     around each index, in bounds because the size is a multiple of 4,
//     and a shift by the index's low 2 bits.
//   - aarch64, a whole table: four tbl lookups of 64 bytes each.
//   - elsewhere, lane by lane.
func gatherHelpers(L int) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	m := mt(L)
	var gather, gatherISA, vbmiISA, widen string
	switch L {
	case 4:
		gather, gatherISA = "__builtin_ia32_gathersiv4si((tsr_x86_v4si){}, (const int *)t, (tsr_x86_v4si)a, (tsr_x86_v4si){-1, -1, -1, -1}, 1)", "__AVX2__"
		vbmiISA, widen = "defined(__AVX512VL__)", "__builtin_ia32_si512_si((tsr_x86_v4si)ix)"
	case 8:
		gather, gatherISA = "__builtin_ia32_gathersiv8si((tsr_x86_v8si){}, (const int *)t, (tsr_x86_v8si)a, (tsr_x86_v8si){-1, -1, -1, -1, -1, -1, -1, -1}, 1)", "__AVX2__"
		vbmiISA, widen = "defined(__AVX512VL__)", "__builtin_ia32_si512_256si((tsr_x86_v8si)ix)"
	case 16:
		gather, gatherISA = "__builtin_ia32_gathersiv16si((tsr_x86_v16si){}, t, (tsr_x86_v16si)a, (unsigned short)-1, 1)", "__AVX512F__"
		vbmiISA, widen = "1", "ix"
	}
	for _, x := range []struct{ suffix, ctype string }{{"u8", "uint8_t"}, {"i8", "int8_t"}} {
		sig := fmt.Sprintf("static inline %s tsr_gatherb_v%d%s(const %s *t, %s ix, int whole)", m, L, x.suffix, x.ctype, m)
		w("%s {", sig)
		w("  %s r;", m)
		if gather != "" {
			w("%s && defined(__AVX512VBMI__) && defined(__AVX512BW__) && %s", gccX86(""), vbmiISA)
			w("  if (whole) {")
			// Each lane's index is its int32's low byte (an index is
			// below 256): the permutes and the blend work on bytes, and
			// every lane's low byte comes out its table entry.
			w("    tsr_x86_v64qi t0, t1, t2, t3, i = (tsr_x86_v64qi)%s;", widen)
			w("    __builtin_memcpy(&t0, t, 64); __builtin_memcpy(&t1, t + 64, 64); __builtin_memcpy(&t2, t + 128, 64); __builtin_memcpy(&t3, t + 192, 64);")
			w("    tsr_x86_v16si v = (tsr_x86_v16si)__builtin_ia32_blendmb_512_mask(__builtin_ia32_vpermt2varqi512_mask(i, t0, t1, -1), __builtin_ia32_vpermt2varqi512_mask(i, t2, t3, -1), __builtin_ia32_cvtb2mask512(i));")
			w("    r = (%s)__builtin_shufflevector(v, v, %s);", m, laneList(L))
			w("    return %s;", lowByte(x.suffix))
			w("  }")
			w("#endif")
			w("%s", gccX86(gatherISA))
			w("  %s a = ix & ~3, s = (ix & 3) * 8;", m)
			w("  %s g = (%s)%s;", m, m, gather)
			if x.suffix == "u8" {
				w("  return (%s)((tsr_v%dbu)g >> (tsr_v%dbu)s) & 255;", m, L, L)
			} else {
				w("  return (g << (24 - s)) >> 24;")
			}
			w("#endif")
		}
		if L == 4 {
			// aarch64: the table in 16 registers, four tbl lookups of 64
			// bytes each (an index beyond a lookup's 64 gives 0), or'ed.
			w("#if defined(__aarch64__) && defined(__ARM_NEON)")
			w("  if (whole) {")
			w("    const uint8_t *u = (const uint8_t *)t;")
			w("    uint8x16x4_t t0 = vld1q_u8_x4(u), t1 = vld1q_u8_x4(u + 64), t2 = vld1q_u8_x4(u + 128), t3 = vld1q_u8_x4(u + 192);")
			w("    uint8x16_t i = vreinterpretq_u8_s32((int32x4_t)ix);")
			w("    uint8x16_t v = vorrq_u8(vorrq_u8(vqtbl4q_u8(t0, i), vqtbl4q_u8(t1, vsubq_u8(i, vdupq_n_u8(64)))), vorrq_u8(vqtbl4q_u8(t2, vsubq_u8(i, vdupq_n_u8(128))), vqtbl4q_u8(t3, vsubq_u8(i, vdupq_n_u8(192)))));")
			w("    r = (%s)vreinterpretq_s32_u8(v);", m)
			w("    return %s;", lowByte(x.suffix))
			w("  }")
			w("#endif")
		}
		w("  for (int l = 0; l < %d; ++l)", L)
		w("    r[l] = t[ix[l]];")
		w("  (void)whole;")
		w("  return r;")
		w("}")
	}
	return b.String()
}

// lowByte returns the C expression of int32 lanes r's low bytes, widened
// as bytes of the buffer type suffix names (u8: zero-, i8: sign-extended).
func lowByte(suffix string) string {
	if suffix == "u8" {
		return "r & 255"
	}
	return "(r << 24) >> 24"
}

// laneList returns the lane indices 0, 1, ..., n-1.
func laneList(n int) string {
	parts := make([]string, n)
	for l := range parts {
		parts[l] = strconv.Itoa(l)
	}
	return strings.Join(parts, ", ")
}
