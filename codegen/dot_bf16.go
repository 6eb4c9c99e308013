package codegen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tessera-ml/tessera/tir"
)

// bfloat16 pairs.
//
// A vectorized float32 sum in which two products of bfloat16 operands form
// a pair (te.ConvNHWCDot, te.MatMulDot with dot 2: the bf16 precision):
//
//	acc[v] + float(x[i])·float(w[2v+r]) + float(x[i+1])·float(w[2v+r+1])
//
// the activations two adjacent bfloat16 the same in every lane (possibly
// both under one guard whose other branch is 0, the padding), the weights
// packed so that each lane's pair is adjacent (rewrite_layout's merged
// dimension), is emitted as tsr_dot2bf_vL(acc, xq, &w[r]): xq the two
// activations as one 32-bit word. That is x86's vdpbf16ps where the
// compiler may use AVX512_BF16 (with VL below 16 lanes) and aarch64's
// bfdot where it may use BF16 (4 lanes): one instruction for 2L
// multiply-adds, the weights read at half float32's bytes. Elsewhere the
// generic body widens the pairs and sums them lane by lane, as the
// reference does. The instructions round differently from the reference's
// acc + (p0 + p1) (vdpbf16ps adds one product, then the other, flushing
// subnormals; bfdot rounds to odd): within the float tolerance of a sum
// taken in another order.

// bfTerm is one product of a pair, matched by matchBF16Term.
type bfTerm struct {
	x, w        *tir.Buffer
	xIdx, wRest tir.Expr // the activation's flat index; the weight's flat index less 2·v
	cond        tir.Expr // the activations' guard (0 where it fails), or nil
	condKey     string
	use         bool
}

// floatTerms flattens a sum of float32 terms.
func floatTerms(e tir.Expr, out []tir.Expr) []tir.Expr {
	if b, ok := e.(*tir.Binary); ok && b.Op == tir.Add && b.A != nil && b.B != nil && b.Type() == tir.Float32 {
		return floatTerms(b.B, floatTerms(b.A, out))
	}
	return append(out, e)
}

// matchBF16Term matches float(x)·float(w) (either order) of a bfloat16
// activation x the same in every lane, or a guard's select of it and 0,
// and a bfloat16 weight w at flat index 2·v + rest.
func (k *kernel) matchBF16Term(p *vplan, e tir.Expr) (bfTerm, bool) {
	var t bfTerm
	m, ok := e.(*tir.Binary)
	if !ok || m.Op != tir.Mul || m.A == nil || m.B == nil {
		return t, false
	}
	xs, ws := m.A, m.B
	if !dependsOn(ws, p.v) {
		xs, ws = ws, xs
	}
	if dependsOn(xs, p.v) || !dependsOn(ws, p.v) {
		return t, false
	}
	bfLoad := func(e tir.Expr) *tir.Load {
		c, ok := e.(*tir.Cast)
		if !ok || c.To != tir.Float32 || c.X == nil {
			return nil
		}
		ld, ok := c.X.(*tir.Load)
		if !ok || ld.Buf.DType != tir.BFloat16 {
			return nil
		}
		if bb, err := k.lookupBuf(ld.Buf); err != nil || bb.scal != nil {
			return nil // a scalarized local tile has no address
		}
		return ld
	}
	wl := bfLoad(ws)
	if wl == nil {
		return t, false
	}
	flat, err := p.flat(wl.Buf, wl.Indices)
	if err != nil {
		return t, false
	}
	coef, rest, ok := tir.LinearIn(flat, p.v)
	if !ok || coef != 2 {
		return t, false
	}
	t.w, t.wRest = wl.Buf, tir.Simplify(rest, k.dom)
	if s, ok := xs.(*tir.Select); ok {
		if f, isF := s.F.(*tir.FloatImm); !isF || f.V != 0 {
			return t, false
		}
		t.cond, t.condKey, xs = s.Cond, tir.ExprString(s.Cond), s.T
	}
	xl := bfLoad(xs)
	if xl == nil {
		return t, false
	}
	idx, err := simplifiedIndex(xl.Buf, xl.Indices, k.dom)
	if err != nil {
		return t, false
	}
	t.x, t.xIdx = xl.Buf, idx
	return t, true
}

// pairOf reports whether b is the second element of the pair a leads:
// the same buffers under the same guard, one element further in both.
func pairOf(a, b bfTerm) bool {
	if a.x != b.x || a.w != b.w || a.condKey != b.condKey {
		return false
	}
	dx, okx := constDiff(a.xIdx, b.xIdx)
	dw, okw := constDiff(a.wRest, b.wRest)
	return okx && okw && dx == 1 && dw == 1
}

// vdotBF16 emits a float32 sum with its bfloat16 pairs as tsr_dot2bf
// calls, or ok false when it has none.
func (k *kernel) vdotBF16(p *vplan, e *tir.Binary) (code string, ok bool, err error) {
	if !k.bf16Params {
		return "", false, nil // no bfloat16 weights: nothing to pair (and float sums stay linear to print)
	}
	terms := floatTerms(e, nil)
	if len(terms) < 2 {
		return "", false, nil
	}
	matched := make([]bfTerm, len(terms))
	is := make([]bool, len(terms))
	for i, t := range terms {
		matched[i], is[i] = k.matchBF16Term(p, t)
	}
	var pairs []bfTerm
	for i := range terms {
		if !is[i] || matched[i].use {
			continue
		}
		for c := range terms {
			if c != i && is[c] && !matched[c].use && pairOf(matched[i], matched[c]) {
				matched[i].use, matched[c].use = true, true
				pairs = append(pairs, matched[i])
				break
			}
		}
	}
	if len(pairs) == 0 {
		return "", false, nil
	}
	rest, err := k.vterms(p, terms, func(i int) bool { return matched[i].use }, tir.Float32)
	if err != nil {
		return "", false, err
	}
	acc := k.splat(p, "0.0f")
	if len(rest) > 0 {
		acc = "(" + strings.Join(rest, " + ") + ")"
	}
	for _, t := range pairs {
		wb, err := k.lookupBuf(t.w)
		if err != nil {
			return "", false, err
		}
		wi, err := k.expr(t.wRest)
		if err != nil {
			return "", false, err
		}
		xb, err := k.lookupBuf(t.x)
		if err != nil {
			return "", false, err
		}
		xi, err := k.expr(t.xIdx)
		if err != nil {
			return "", false, err
		}
		xq := fmt.Sprintf("tsr_ld32(&%s[%s])", xb.name, trimParens(xi))
		if t.cond != nil {
			c, err := k.expr(t.cond)
			if err != nil {
				return "", false, err
			}
			xq = fmt.Sprintf("(%s ? %s : 0u)", c, xq)
		}
		acc = fmt.Sprintf("tsr_dot2bf_v%d(%s, %s, &%s[%s])", p.L, trimParens(acc), xq, wb.name, trimParens(wi))
	}
	k.m.bf16Dots = true
	return acc, true, nil
}

// bf16DotHelpers returns tsr_dot2bf_vL for L float lanes: acc plus, in
// each lane l, x0·w[2l] + x1·w[2l+1], x0 and x1 the low and high bfloat16
// of xq.
func bf16DotHelpers(L int) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	f, m := vt(L), mt(L)
	name := "tsr_dot2bf_v" + strconv.Itoa(L)
	sig := fmt.Sprintf("static inline %s %s(%s acc, uint32_t xq, const uint16_t *w)", f, name, f)
	closes := 0
	if isa, ok := map[int]string{
		4:  "defined(__AVX512BF16__) && defined(__AVX512VL__)",
		8:  "defined(__AVX512BF16__) && defined(__AVX512VL__)",
		16: "defined(__AVX512BF16__)",
	}[L]; ok {
		// The instruction itself, in GNU inline assembly (gcc and clang;
		// both dialects): <immintrin.h>, which _mm512_dpbf16_ps needs,
		// was half of a bf16 kernel's compile (a ResNet-18 Winograd
		// task on a Zen 5: 1.1 s with it, 0.55 without), and the
		// instructions gcc emits are the same (it folds no operand into
		// vdpbf16ps either way). acc += the pairs of xq (broadcast) and w.
		w("#if (defined(__x86_64__) || defined(__i386__)) && %s", isa)
		w("%s {", sig)
		w("  %s wv, xv = (%s)((%s){} + (int)xq);", f, f, m)
		w("  __builtin_memcpy(&wv, w, %d);", 4*L)
		w("  __asm__(\"vdpbf16ps {%%2, %%1, %%0|%%0, %%1, %%2}\" : \"+v\"(acc) : \"v\"(xv), \"v\"(wv));")
		w("  return acc;")
		w("}")
		w("#else")
		closes++
	}
	if L == 4 {
		w("#if defined(__aarch64__) && defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC)")
		w("#include <arm_neon.h>")
		w("%s {", sig)
		w("  bfloat16x8_t wv = vreinterpretq_bf16_u16(vld1q_u16(w)), xv = vreinterpretq_bf16_u32(vdupq_n_u32(xq));")
		w("  return (%s)vbfdotq_f32((float32x4_t)acc, xv, wv);", f)
		w("}")
		w("#else")
		closes++
	}
	w("%s {", sig)
	w("  tsr_v%dbu wv;", L)
	w("  __builtin_memcpy(&wv, w, %d);", 4*L)
	w("  %s w0 = (%s)(wv << 16), w1 = (%s)(wv & 0xffff0000u);", f, f, f)
	w("  float x0 = tsr_bf2f((uint16_t)xq), x1 = tsr_bf2f((uint16_t)(xq >> 16));")
	w("  return acc + (x0 * w0 + x1 * w1);")
	w("}")
	for range closes {
		w("#endif")
	}
	return b.String()
}
