package codegen

import (
	"fmt"
	"strings"

	"github.com/tessera-ml/tessera/tir"
)

// Loads at data-dependent indices in vector code: a table lookup
// (ops.TableLookup: an 8-bit activation indexing a table of 256 entries,
// after a requantization), a Gather of a computed index. No x86 or Arm
// vector instruction gathers bytes, so each lane is still loaded alone;
// what is vectorized is the index: it is computed once, as int32 lanes,
//
//	({ tsr_v8i ix = <index of every lane>; (tsr_v8i){t[ix[0]], ..., t[ix[7]]}; })
//
// instead of once per lane from the lane's own scalar expression (a
// requantization of eight lanes cost eight scalar conversions, roundings
// and clamps before).

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
