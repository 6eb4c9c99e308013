package codegen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tessera-ml/tessera/tir"
)

// Dot products.
//
// A vectorized int32 sum in which four products of an 8-bit activation and
// an int8 weight form a group (te.IntConvOptions.Dot):
//
//	acc[v] + int32(x[i])·int32(w[4v+r]) + int32(x[i+1])·int32(w[4v+r+1])
//	       + int32(x[i+2])·int32(w[4v+r+2]) + int32(x[i+3])·int32(w[4v+r+3])
//
// the activations four adjacent bytes the same in every lane (possibly all
// under one guard that substitutes one constant, the padding), the weights
// packed so that each lane's four are adjacent (rewrite_layout's merged
// dimension), is emitted as one call of tsr_dot4a_vL<x>(acc, xq, &w[r]),
// which adds the group to acc (tsr_dot4_vL<x>(xq, &w[r]) where the sum has
// no other term): xq the four activation bytes as one 32-bit word. With
// VNNI (uint8 activations) or aarch64's sdot/usdot that is one
// instruction, which accumulates. The generic body of tsr_dot4 sums the
// products lane by lane; with gcc on x86 with AVX2 (8 lanes) it widens the
// activations and the weights to 16 bits and multiplies and adds pairs
// with vpmaddwd, exact for every 8-bit operand (a pair's sum is at most
// 2·255·128 in magnitude, far inside int32), where the int32 form takes a
// broadcast, a widening and a vpmulld per product.
//
// On aarch64 (4 lanes) the exact sums are sdot and usdot where the core
// has them (neonDot), and the saturated pairs below a 16-bit multiply and
// a saturating add (neonDot4s).
//
// A group written as two pairs each saturated to int16,
//
//	int32(int16(min(max(p0 + p1, -32768), 32767))) + int32(int16(min(max(p2 + p3, …))))
//
// (te.IntConvOptions.SaturatePairs, uint8 activations), is exactly x86's
// vpmaddubsw followed by a vpmaddwd with ones: tsr_dot4s_vLu8, the bytes
// as they are, half the instructions of the exact form.

// dotGroup is the size of a dot-product group.
const dotGroup = 4

// dotTerm is one product of a group, matched by matchDotTerm.
type dotTerm struct {
	x, w         *tir.Buffer // x nil: the activation is the constant fill
	xType        tir.DType
	xIdx, wRest  tir.Expr // the activation's flat index; the weight's flat index less 4·v
	cond         tir.Expr // the activation's guard, or nil
	fill         int64    // the value substituted where the guard fails
	condKey      string
	matched, use bool
}

// addTerms flattens a sum of int32 terms.
func addTerms(e tir.Expr, out []tir.Expr) []tir.Expr {
	if b, ok := e.(*tir.Binary); ok && b.Op == tir.Add && b.A != nil && b.B != nil && b.A.Type() == tir.Int32 {
		return addTerms(b.B, addTerms(b.A, out))
	}
	return append(out, e)
}

// matchDotTerm matches int32(x)·int32(w) (either order) of an 8-bit
// activation x the same in every lane and an int8 weight w at flat index
// 4·v + rest. x may name the lane where the lanes' range makes its index
// lane-free (a grouped convolution's group, floordiv(c + v, 24) for a
// vector of 8 within a group of 24 channels): its flat index is taken in
// the vector domain.
func (k *kernel) matchDotTerm(p *vplan, e tir.Expr) (dotTerm, bool) {
	m, ok := e.(*tir.Binary)
	if !ok || m.Op != tir.Mul || m.A == nil || m.B == nil {
		return dotTerm{}, false
	}
	if t, ok := k.matchDotOperands(p, m.A, m.B); ok {
		return t, true
	}
	return k.matchDotOperands(p, m.B, m.A)
}

// matchDotOperands is matchDotTerm of the product xs·ws, xs the
// activation and ws the weight.
func (k *kernel) matchDotOperands(p *vplan, xs, ws tir.Expr) (dotTerm, bool) {
	var t dotTerm
	if !dependsOn(ws, p.v) {
		return t, false
	}
	widened := func(e tir.Expr) tir.Expr {
		c, ok := e.(*tir.Cast)
		if !ok || c.To != tir.Int32 || c.X == nil {
			return nil
		}
		return c.X
	}
	xe, we := widened(xs), widened(ws)
	if xe == nil || we == nil {
		return t, false
	}
	// Both buffers in memory (a scalarized local tile has no address).
	addressable := func(b *tir.Buffer) bool {
		bb, err := k.lookupBuf(b)
		return err == nil && bb.scal == nil
	}
	wl, ok := we.(*tir.Load)
	if !ok || wl.Buf.DType != tir.Int8 || !addressable(wl.Buf) {
		return t, false
	}
	flat, err := p.flat(wl.Buf, wl.Indices)
	if err != nil {
		return t, false
	}
	coef, rest, ok := tir.LinearIn(flat, p.v)
	if !ok || coef != dotGroup {
		return t, false
	}
	t.w, t.wRest = wl.Buf, tir.Simplify(rest, k.dom)
	if c, ok := xe.(*tir.Cast); ok && (c.To == tir.Uint8 || c.To == tir.Int8) {
		// A constant activation: a tap that reads only padding.
		if v, isConst := tir.IsConst(c.X); isConst {
			if lo, hi := c.To.Range(); v >= lo && v <= hi {
				t.fill, t.condKey, t.xType = v, "const", c.To
				return t, true
			}
		}
		return t, false
	}
	if s, ok := xe.(*tir.Select); ok {
		c, isC := s.F.(*tir.Cast)
		if !isC || s.T == nil || c.To != s.T.Type() {
			return t, false
		}
		v, isConst := tir.IsConst(c.X)
		if !isConst {
			return t, false
		}
		if dependsOn(s.Cond, p.v) {
			return t, false
		}
		t.cond, t.fill, t.condKey, xe = s.Cond, v, tir.ExprString(s.Cond), s.T
	}
	xl, ok := xe.(*tir.Load)
	if !ok || xl.Buf.DType != tir.Uint8 && xl.Buf.DType != tir.Int8 || !addressable(xl.Buf) {
		return t, false
	}
	idx, err := p.flat(xl.Buf, xl.Indices)
	if err != nil || dependsOn(idx, p.v) {
		return t, false
	}
	t.x, t.xIdx, t.xType = xl.Buf, idx, xl.Buf.DType
	if lo, hi := xl.Buf.DType.Range(); t.cond != nil && (t.fill < lo || t.fill > hi) {
		return t, false
	}
	return t, true
}

// matchSatPair matches int32(int16(min(max(p + q, -32768), 32767))) of
// two dot terms at adjacent offsets, and returns the lower one.
func (k *kernel) matchSatPair(p *vplan, e tir.Expr) (dotTerm, bool) {
	var none dotTerm
	c32, ok := e.(*tir.Cast)
	if !ok || c32.To != tir.Int32 {
		return none, false
	}
	c16, ok := c32.X.(*tir.Cast)
	if !ok || c16.To != tir.Int16 {
		return none, false
	}
	bound := func(e tir.Expr, op tir.BinOp, v int64) tir.Expr {
		b, ok := e.(*tir.Binary)
		if !ok || b.Op != op {
			return nil
		}
		if c, ok := b.B.(*tir.Cast); ok && c.To == tir.Int32 {
			if got, ok := tir.IsConst(c.X); ok && got == v {
				return b.A
			}
		}
		return nil
	}
	inner := bound(c16.X, tir.Min, 32767)
	if inner == nil {
		return none, false
	}
	if inner = bound(inner, tir.Max, -32768); inner == nil {
		return none, false
	}
	add, ok := inner.(*tir.Binary)
	if !ok || add.Op != tir.Add {
		return none, false
	}
	a, okA := k.matchDotTerm(p, add.A)
	b, okB := k.matchDotTerm(p, add.B)
	if !okA || !okB || !sameSource(a, b) {
		return none, false
	}
	if d, ok := offset(a, b); ok && d == 1 {
		return a, true
	}
	if d, ok := offset(b, a); ok && d == 1 {
		return b, true
	}
	return none, false
}

// sameSource reports whether two dot terms read the same buffers under the
// same guard.
func sameSource(a, b dotTerm) bool {
	return a.x == b.x && a.w == b.w && a.xType == b.xType && a.condKey == b.condKey && a.fill == b.fill
}

// offset returns how far b's elements lie after a's, when both its
// activation and its weight are that constant distance further.
func offset(a, b dotTerm) (int64, bool) {
	dw, okw := constDiff(a.wRest, b.wRest)
	if a.x == nil && b.x == nil { // constant activations
		return dw, okw
	}
	dx, okx := constDiff(a.xIdx, b.xIdx)
	return dx, okx && okw && dx == dw
}

// constDiff reports b − a when it is a constant.
func constDiff(a, b tir.Expr) (int64, bool) {
	return tir.IsConst(tir.Simplify(tir.SubE(b, a), nil))
}

// vdot emits an int32 sum with its dot-product groups as tsr_dot4 calls,
// or ok false when it has none.
func (k *kernel) vdot(p *vplan, e *tir.Binary) (code string, ok bool, err error) {
	terms := addTerms(e, nil)
	if len(terms) < 2 {
		return "", false, nil
	}
	matched := make([]dotTerm, len(terms))
	sat := make([]bool, len(terms)) // a saturated pair, matched[i] its lower term
	for i, t := range terms {
		if m, ok := k.matchDotTerm(p, t); ok {
			matched[i], matched[i].matched = m, true
		} else if m, ok := k.matchSatPair(p, t); ok && m.xType == tir.Uint8 {
			matched[i], matched[i].matched, sat[i] = m, true, true
		}
	}
	var parts []string   // tsr_dot4s calls
	var groups []dotArgs // tsr_dot4 groups
	// Two saturated pairs two elements apart: one tsr_dot4s.
	for i := range terms {
		if !sat[i] || matched[i].use {
			continue
		}
		for c := range terms {
			if c == i || !sat[c] || matched[c].use || !sameSource(matched[i], matched[c]) {
				continue
			}
			if d, ok := offset(matched[i], matched[c]); !ok || d != 2 {
				continue
			}
			xq, wref, err := k.dotArgs(p, matched[i])
			if err != nil {
				return "", false, err
			}
			matched[i].use, matched[c].use = true, true
			parts = append(parts, fmt.Sprintf("tsr_dot4s_v%d%s(%s, %s)", p.L, laneSuffix(matched[i].xType), xq, wref))
			break
		}
	}
	for i := range terms {
		if !matched[i].matched || matched[i].use || sat[i] {
			continue
		}
		// A group: the terms j = 0..3 after this one's offsets.
		lead := matched[i]
		group := [dotGroup]int{i, -1, -1, -1}
		for c := range terms {
			m := matched[c]
			if c == i || !m.matched || m.use || sat[c] || !sameSource(lead, m) {
				continue
			}
			if d, ok := offset(lead, m); ok && d > 0 && d < dotGroup && group[d] < 0 {
				group[d] = c
			}
		}
		if group[1] < 0 || group[2] < 0 || group[3] < 0 {
			continue
		}
		xq, wref, err := k.dotArgs(p, lead)
		if err != nil {
			return "", false, err
		}
		for _, c := range group {
			matched[c].use = true
		}
		groups = append(groups, dotArgs{laneSuffix(lead.xType), xq, wref})
	}
	if len(parts) == 0 && len(groups) == 0 {
		return "", false, nil
	}
	rest, err := k.vterms(p, terms, func(i int) bool { return matched[i].use }, tir.Int32)
	if err != nil {
		return "", false, err
	}
	// The groups accumulate into the rest of the sum, one after the other
	// (tsr_dot4a: one vpdpbusd each with VNNI, which adds its four
	// products to its accumulator); integer sums are exact in any order.
	rest = append(rest, parts...)
	var acc string
	switch {
	case len(rest) == 1:
		acc = rest[0]
	case len(rest) > 1:
		acc = "(" + strings.Join(rest, " + ") + ")"
	default:
		g := groups[0]
		acc, groups = fmt.Sprintf("tsr_dot4_v%d%s(%s, %s)", p.L, g.suffix, g.xq, g.w), groups[1:]
	}
	for _, g := range groups {
		acc = fmt.Sprintf("tsr_dot4a_v%d%s(%s, %s, %s)", p.L, g.suffix, trimParens(acc), g.xq, g.w)
	}
	return acc, true, nil
}

// dotArgs are a dot-product group's operands as C: the activations' lane
// suffix, the four activation bytes as a 32-bit word and the address of
// the weights.
type dotArgs struct{ suffix, xq, w string }

// vterms emits the terms of a sum that a dot-product helper did not take
// (used reports those it took) as vectors of type t, a scalar broadcast.
func (k *kernel) vterms(p *vplan, terms []tir.Expr, used func(i int) bool, t tir.DType) ([]string, error) {
	var out []string
	for i, e := range terms {
		if used(i) {
			continue
		}
		s, isVec, err := k.vexpr(p, e)
		if err != nil {
			return nil, err
		}
		if !isVec {
			s = k.splatOf(p, s, t)
		}
		out = append(out, s)
	}
	return out, nil
}

// dotArgs returns the operands of the group whose first term is t as C:
// the four activation bytes as one 32-bit word (the fill's bytes where
// its guard fails) and the address of its weights.
func (k *kernel) dotArgs(p *vplan, t dotTerm) (xq, wref string, err error) {
	k.dots = true
	wb, err := k.lookupBuf(t.w)
	if err != nil {
		return "", "", err
	}
	wi, err := k.expr(t.wRest)
	if err != nil {
		return "", "", err
	}
	fill := fmt.Sprintf("%du", uint32(uint8(t.fill))*0x01010101)
	xq = fill
	if t.x != nil {
		xb, err := k.lookupBuf(t.x)
		if err != nil {
			return "", "", err
		}
		xi, err := k.expr(t.xIdx)
		if err != nil {
			return "", "", err
		}
		xq = fmt.Sprintf("tsr_ld32(&%s[%s])", xb.name, trimParens(xi))
		if t.cond != nil {
			c, err := k.expr(t.cond)
			if err != nil {
				return "", "", err
			}
			xq = fmt.Sprintf("(%s ? %s : %s)", c, xq, fill)
		}
	}
	return xq, fmt.Sprintf("&%s[%s]", wb.name, trimParens(wi)), nil
}

// exactDotX86 returns tsr_dot4_vL<x> (named name, returning m) for gcc on
// x86 with L = 4 (SSE4.1) or 8 (AVX2) lanes, opening a gccX86 block the
// caller closes (#else, the lane loop, #endif); "" for other widths. The
// four activations are widened to 16 bits and broadcast; each half of the
// 4L weights widened; pmaddwd sums pairs into int32 (lane 2l: output l's
// first pair, 2l+1 its second); phaddd adds the pairs of both halves. At
// 128 bits that leaves the four lanes in order; at 256 bits in 64-bit
// blocks 0, 2, 1, 3, which vpermq 0xD8 puts in order.
func exactDotX86(L int, suffix, m, name string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	ext := map[string]string{"u8": "pmovzxbw128", "i8": "pmovsxbw128"}[suffix]
	// The width's ISA, the broadcast activations' and the sums' types, the
	// 64-bit copies of the activations, the weights' half type and bytes,
	// and the builtins' width suffix.
	var isa, xb, sums, copies, half, bits string
	var halfBytes int
	switch L {
	case 4:
		isa, xb, sums, copies, half, halfBytes, bits = "__SSE4_1__", "tsr_x86_v8hi", "tsr_x86_v4si", "(tsr_x86_v2di){q, q}", "long long", 8, "128"
	case 8:
		isa, xb, sums, copies, half, halfBytes, bits = "__AVX2__", "tsr_x86_v16hi", "tsr_x86_v8si", "(tsr_x86_v4di){q, q, q, q}", "tsr_x86_v16qi", 16, "256"
	default:
		return ""
	}
	widen := func(v string) string {
		if L == 4 {
			return "__builtin_ia32_pmovsxbw128((tsr_x86_v16qi)(tsr_x86_v2di){" + v + ", 0})"
		}
		return "__builtin_ia32_pmovsxbw256(" + v + ")"
	}
	w("%s", gccX86(isa))
	w("static inline %s %s(uint32_t xq, const int8_t *w) {", m, name)
	w("  tsr_x86_v8hi x16 = __builtin_ia32_%s((tsr_x86_v16qi)(tsr_x86_v4si){(int)xq, 0, 0, 0});", ext)
	w("  long long q = ((tsr_x86_v2di)x16)[0];")
	w("  %s xb = (%s)%s;", xb, xb, copies)
	w("  %s lo, hi;", half)
	w("  __builtin_memcpy(&lo, w, %d);", halfBytes)
	w("  __builtin_memcpy(&hi, w + %d, %d);", halfBytes, halfBytes)
	w("  %s a = __builtin_ia32_pmaddwd%s(xb, %s);", sums, bits, widen("lo"))
	w("  %s c = __builtin_ia32_pmaddwd%s(xb, %s);", sums, bits, widen("hi"))
	if L == 4 {
		w("  return (%s)__builtin_ia32_phaddd128(a, c);", m)
	} else {
		w("  return (%s)__builtin_ia32_permdi256((tsr_x86_v4di)__builtin_ia32_phaddd256(a, c), 0xD8);", m)
	}
	w("}")
	w("#else")
	return b.String()
}

// neonDot returns tsr_dot4_v4<x> (named name, returning m) for aarch64
// with the dot-product instructions, opening a block the caller closes
// (#else, the lane loop, #endif); "" for other widths. The four
// activations, broadcast to the 16 bytes of a q register, against the 16
// weights of the four lanes: int8 activations by sdot (FEAT_DotProd);
// uint8 ones by usdot (FEAT_I8MM, mixed signs), or where only sdot exists
// by sdot on x − 128 (the bytes with their top bit flipped) plus 128·Σw
// (a second sdot against ones), exact as well.
func neonDot(L int, suffix, m, name string) string {
	if L != 4 {
		return ""
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	if suffix == "u8" {
		w("#if defined(__aarch64__) && defined(__ARM_FEATURE_MATMUL_INT8)")
		w("static inline %s %s(uint32_t xq, const int8_t *w) {", m, name)
		w("  return (%s)vusdotq_s32(vdupq_n_s32(0), vreinterpretq_u8_u32(vdupq_n_u32(xq)), vld1q_s8(w));", m)
		w("}")
		w("#elif defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)")
		w("static inline %s %s(uint32_t xq, const int8_t *w) {", m, name)
		w("  int8x16_t wv = vld1q_s8(w);")
		w("  int32x4_t r = vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u32(vdupq_n_u32(xq ^ 0x80808080u)), wv);")
		w("  int32x4_t sw = vdotq_s32(vdupq_n_s32(0), vdupq_n_s8(1), wv);")
		w("  return (%s)vaddq_s32(r, vshlq_n_s32(sw, 7));", m)
		w("}")
	} else {
		w("#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)")
		w("static inline %s %s(uint32_t xq, const int8_t *w) {", m, name)
		w("  return (%s)vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u32(vdupq_n_u32(xq)), vld1q_s8(w));", m)
		w("}")
	}
	w("#else")
	return b.String()
}

// dotAccHelper returns tsr_dot4a_vL<x>: acc plus tsr_dot4_vL<x>. The dot
// instructions add their products to an accumulator: VNNI's vpdpbusd
// (uint8 activations, 4, 8 and 16 lanes: vnni), aarch64's sdot (int8) and
// usdot (uint8, I8MM), one instruction where acc + tsr_dot4 would be two.
// Elsewhere it is that sum.
func dotAccHelper(L int, suffix string, vnni bool) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	m := mt(L)
	name := "tsr_dot4a_v" + strconv.Itoa(L) + suffix
	sig := fmt.Sprintf("static inline %s %s(%s acc, uint32_t xq, const int8_t *w)", m, name, m)
	closes := 0
	if vnni {
		b.WriteString(vnniDot(L, sig, "acc"))
		closes++
	}
	if L == 4 {
		if suffix == "u8" {
			w("#if defined(__aarch64__) && defined(__ARM_FEATURE_MATMUL_INT8)")
			w("%s {", sig)
			w("  return (%s)vusdotq_s32((int32x4_t)acc, vreinterpretq_u8_u32(vdupq_n_u32(xq)), vld1q_s8(w));", m)
		} else {
			w("#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)")
			w("%s {", sig)
			w("  return (%s)vdotq_s32((int32x4_t)acc, vreinterpretq_s8_u32(vdupq_n_u32(xq)), vld1q_s8(w));", m)
		}
		w("}")
		w("#else")
		closes++
	}
	w("%s { return acc + tsr_dot4_v%d%s(xq, w); }", sig, L, suffix)
	for range closes {
		w("#endif")
	}
	return b.String()
}

// vnniDot returns the VNNI body of a dot helper of L lanes (uint8
// activations) declared by sig: one vpdpbusd adding the group's products
// to acc (the accumulator's name; "": zeros), under the
// ISA's #if, opening a block the caller closes (#else, …, #endif).
func vnniDot(L int, sig, acc string) string {
	m := mt(L)
	isa := "(defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__)))"
	if L == 16 {
		isa = "defined(__AVX512VNNI__)"
	}
	v := "tsr_x86_v" + strconv.Itoa(L) + "si"
	if acc == "" {
		acc = "{}"
	}
	acc = "(" + v + ")" + acc
	var b strings.Builder
	fmt.Fprintf(&b, "%s && %s\n%s {\n", gccX86(""), isa, sig)
	fmt.Fprintf(&b, "  %s wv;\n  __builtin_memcpy(&wv, w, %d);\n", v, 4*L)
	fmt.Fprintf(&b, "  return (%s)__builtin_ia32_vpdpbusd_v%dsi(%s, (%s)((%s){} + (int)xq), wv);\n}\n#else\n", m, L, acc, v, m)
	return b.String()
}

// neonDot4s returns tsr_dot4s_v4u8 (named name, returning m) for aarch64
// (NEON, every core), opening a block the caller closes; "" for other
// widths. No instruction saturates pairs as vpmaddubsw does, but every
// u8×s8 product fits int16: the products of a 16-bit multiply, their
// pairs' sums by a saturating add of the even and the odd ones (uzp1,
// uzp2, sqadd), and each lane's two pairs by a widening pairwise add.
func neonDot4s(L int, m, name string) string {
	if L != 4 {
		return ""
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("#if defined(__aarch64__) && defined(__ARM_NEON)")
	w("static inline %s %s(uint32_t xq, const int8_t *w) {", m, name)
	w("  int16x8_t x16 = vreinterpretq_s16_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(xq))));")
	w("  int8x16_t wv = vld1q_s8(w);")
	w("  int16x8_t lo = vmulq_s16(x16, vmovl_s8(vget_low_s8(wv))), hi = vmulq_s16(x16, vmovl_s8(vget_high_s8(wv)));")
	w("  return (%s)vpaddlq_s16(vqaddq_s16(vuzp1q_s16(lo, hi), vuzp2q_s16(lo, hi)));", m)
	w("}")
	w("#else")
	return b.String()
}

// dotHelpers returns tsr_dot4_vL<x>i8 for L int32 lanes, x u8 and i8.
func dotHelpers(L int) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	m := mt(L)
	if L == 4 {
		w("#if defined(__aarch64__) && defined(__ARM_NEON)")
		w("#include <arm_neon.h>")
		w("#endif")
	}
	for _, x := range []struct{ suffix, byteType string }{{"u8", "uint8_t"}, {"i8", "int8_t"}} {
		name := "tsr_dot4_v" + strconv.Itoa(L) + x.suffix
		// With VNNI, vpdpbusd is this very sum for uint8 activations
		// (four u8×s8 products into each int32 lane, exact, no
		// saturation): one instruction. The native sweep of
		// TestSampledStatesCompiled runs it where the CPU has VNNI.
		vnni := x.suffix == "u8" && (L == 4 || L == 8 || L == 16)
		if vnni {
			b.WriteString(vnniDot(L, fmt.Sprintf("static inline %s %s(uint32_t xq, const int8_t *w)", m, name), ""))
		}
		exact := exactDotX86(L, x.suffix, m, name)
		b.WriteString(exact)
		neon := neonDot(L, x.suffix, m, name)
		b.WriteString(neon)
		w("static inline %s %s(uint32_t xq, const int8_t *w) {", m, name)
		w("  int32_t x0 = (%s)xq, x1 = (%s)(xq >> 8), x2 = (%s)(xq >> 16), x3 = (%s)(xq >> 24);", x.byteType, x.byteType, x.byteType, x.byteType)
		w("  %s r;", m)
		w("  for (int l = 0; l < %d; ++l)", L)
		w("    r[l] = x0 * w[4 * l] + x1 * w[4 * l + 1] + x2 * w[4 * l + 2] + x3 * w[4 * l + 3];")
		w("  return r;")
		w("}")
		if neon != "" {
			w("#endif")
		}
		if exact != "" {
			w("#endif")
		}
		if vnni {
			w("#endif")
		}
		b.WriteString(dotAccHelper(L, x.suffix, vnni))
	}
	// tsr_dot4s: each pair's sum saturated to int16 (vpmaddubsw), then the
	// two pairs summed into int32 (vpmaddwd with ones); uint8 activations.
	name := "tsr_dot4s_v" + strconv.Itoa(L) + "u8"
	// The x86 form of each width: the ISA macro, the bytes' and the
	// pairs' vector types, and the two multiply-adds.
	// AVX-512's builtins take a merge source and a mask (all lanes).
	sat, hasSat := map[int]struct{ isa, bytes, pairs, maddubs, madd string }{
		4:  {"__SSSE3__", "tsr_x86_v16qi", "tsr_x86_v8hi", "__builtin_ia32_pmaddubsw128(xb, wv)", "__builtin_ia32_pmaddwd128(pairs, ones)"},
		8:  {"__AVX2__", "tsr_x86_v32qi", "tsr_x86_v16hi", "__builtin_ia32_pmaddubsw256(xb, wv)", "__builtin_ia32_pmaddwd256(pairs, ones)"},
		16: {"__AVX512BW__", "tsr_x86_v64qi", "tsr_x86_v32hi", "__builtin_ia32_pmaddubsw512_mask(xb, wv, ones, 0xFFFFFFFFu)", "__builtin_ia32_pmaddwd512_mask(pairs, ones, (" + m + "){}, 0xFFFF)"},
	}[L]
	if hasSat {
		w("%s", gccX86(sat.isa))
		w("static inline %s %s(uint32_t xq, const int8_t *w) {", m, name)
		w("  %s xb = (%s)((%s){} + (int)xq);", sat.bytes, sat.bytes, m)
		w("  %s wv;", sat.bytes)
		w("  %s ones = (%s){} + 1;", sat.pairs, sat.pairs)
		w("  __builtin_memcpy(&wv, w, %d);", 4*L)
		w("  %s pairs = %s;", sat.pairs, sat.maddubs)
		w("  return (%s)%s;", m, sat.madd)
		w("}")
		w("#else")
	}
	neon := neonDot4s(L, m, name)
	b.WriteString(neon)
	w("#ifndef TSR_SAT16")
	w("#define TSR_SAT16")
	w("static inline int32_t tsr_sat16(int32_t v) { return v < -32768 ? -32768 : v > 32767 ? 32767 : v; }")
	w("#endif")
	w("static inline %s %s(uint32_t xq, const int8_t *w) {", m, name)
	w("  int32_t x0 = (uint8_t)xq, x1 = (uint8_t)(xq >> 8), x2 = (uint8_t)(xq >> 16), x3 = (uint8_t)(xq >> 24);")
	w("  %s r;", m)
	w("  for (int l = 0; l < %d; ++l)", L)
	w("    r[l] = tsr_sat16(x0 * w[4 * l] + x1 * w[4 * l + 1]) + tsr_sat16(x2 * w[4 * l + 2] + x3 * w[4 * l + 3]);")
	w("  return r;")
	w("}")
	if neon != "" {
		w("#endif")
	}
	if hasSat {
		w("#endif")
	}
	return b.String()
}
