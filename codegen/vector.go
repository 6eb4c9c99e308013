package codegen

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tessera-ml/tessera/tir"
)

// Vectorized loops.
//
// A Vectorized For of L lanes (L a power of two in [2, 64]; longer loops
// were split into chunks of the native width by splitVectors) whose body is
// straight-line stores, possibly under lane-invariant ifs, is emitted as
// GCC vector-extension code without a loop: the lane variable v ranges over
// the lanes of each vector value. An expression that does not mention v is
// a scalar, broadcast where it meets a vector. A load whose flat index is
// 1*v + rest is one contiguous (unaligned) vector load; other lane-dependent
// loads are gathered lane by lane. Conditions become masks (int32 lanes,
// all ones for true); a Select whose condition depends on v blends both
// branches only when every load in them is provably in bounds, and is
// otherwise evaluated lane by lane so that a guarded load is never performed
// for a lane whose guard is false.
//
// An if whose condition depends on v (the guard of a tile that overruns its
// extent: a split whose factor does not divide it) masks the stores under
// it: the stored value is computed for every lane, as a Select on the guard
// where one of its loads may be out of bounds for a lane the guard excludes;
// a store into a buffer of this thread's own (a Local or workspace buffer
// allocated where no parallel loop can share it) at an index in bounds for
// every lane blends the new lanes into the old ones, any other store is
// made lane by lane under the mask, so that no lane the guard excludes is
// written and no other thread's element is touched.
//
// Everything else falls back to the scalar loop: nested loops, allocations,
// stores whose index does not depend on v (a reduction across lanes),
// non-float stores, and bodies in which one lane may observe another lane's
// store.

// vplan is the vector form of one vectorized loop.
type vplan struct {
	v     *tir.Var
	L     int
	dom   domain // the enclosing ranges plus v in [0, L)
	items []vitem
}

// vitem is a store, or an if over items: a C if when its condition is
// lane-invariant, a mask on the stores under it when it depends on the lane
// (lane true).
type vitem struct {
	st              *tir.Store
	cond            tir.Expr
	lane            bool
	then, otherwise []vitem
}

// masked reports whether the plan masks stores under a lane-dependent if.
func (p *vplan) masked() bool {
	var any func([]vitem) bool
	any = func(items []vitem) bool {
		for _, it := range items {
			if it.lane || any(it.then) || any(it.otherwise) {
				return true
			}
		}
		return false
	}
	return any(p.items)
}

// planVector decides how a vectorized loop is emitted. It returns the plan,
// or nil with the reason and whether the scalar fallback may still carry
// "#pragma omp simd" (independent iterations, straight-line body).
func (k *kernel) planVector(f *tir.For, dom domain) (plan *vplan, why string, simd bool) {
	L := f.Extent
	vdom := copyDom(dom)
	vdom[f.Var] = tir.Interval{Lo: 0, Hi: int64(L) - 1}
	items, why := flattenVec(f.Body, f.Var, vdom)
	if why != "" {
		return nil, why, false
	}
	p := &vplan{v: f.Var, L: L, dom: vdom, items: items}
	if why := p.check(); why != "" {
		return nil, why, false
	}
	if why := p.dependences(); why != "" {
		return nil, why, false
	}
	if !isPow2(L) || L < 2 || L > 64 {
		return nil, fmt.Sprintf("extent %d is not a power of two in [2, 64]", L), true
	}
	return p, "", false
}

// flattenVec turns a vectorized loop body into items, substituting lets and
// loops of extent 1 and folding provable ifs.
func flattenVec(s tir.Stmt, v *tir.Var, dom domain) ([]vitem, string) {
	switch s := s.(type) {
	case nil:
		return nil, ""
	case *tir.Seq:
		var out []vitem
		for _, c := range s.Stmts {
			items, why := flattenVec(c, v, dom)
			if why != "" {
				return nil, why
			}
			out = append(out, items...)
		}
		return out, ""
	case *tir.Store:
		return []vitem{{st: s}}, ""
	case *tir.Let:
		if s.Var == nil || s.Value == nil || s.Var.T != s.Value.Type() {
			return nil, "malformed let"
		}
		return flattenVec(substStmt(s.Body, map[*tir.Var]tir.Expr{s.Var: s.Value}), v, dom)
	case *tir.Pragma:
		return flattenVec(s.Body, v, dom)
	case *tir.For:
		if s.Extent <= 0 {
			return nil, ""
		}
		if s.Extent == 1 && s.Var != nil {
			return flattenVec(substStmt(s.Body, map[*tir.Var]tir.Expr{s.Var: tir.Const(0)}), v, dom)
		}
		return nil, "nested loop"
	case *tir.IfThenElse:
		if s.Cond == nil || s.Cond.Type() != tir.Bool {
			return nil, "malformed if"
		}
		c := simplifyCond(s.Cond, dom)
		switch {
		case tir.IsTrue(c):
			return flattenVec(s.Then, v, dom)
		case tir.IsFalse(c):
			return flattenVec(s.Else, v, dom)
		}
		t, why := flattenVec(s.Then, v, dom)
		if why != "" {
			return nil, why
		}
		e, why := flattenVec(s.Else, v, dom)
		if why != "" {
			return nil, why
		}
		if !dependsOn(c, v) {
			return []vitem{{cond: c, then: t, otherwise: e}}, ""
		}
		// The lane-invariant conjuncts of a guard without an else stay a C
		// if around the mask of the others.
		var inv, lane tir.Expr
		for _, x := range conjuncts(c) {
			if dependsOn(x, v) || len(e) > 0 {
				lane = andOf(lane, x)
			} else {
				inv = andOf(inv, x)
			}
		}
		masked := []vitem{{cond: lane, lane: true, then: t, otherwise: e}}
		if inv == nil {
			return masked, ""
		}
		return []vitem{{cond: inv, then: masked}}, ""
	case *tir.Allocate:
		return nil, "allocation"
	}
	return nil, fmt.Sprintf("statement %T", s)
}

// flat returns the simplified flat index of an access in the vector body,
// with floordiv and floormod by constants rewritten where they are affine
// across the lanes (see laneNormalize).
func (p *vplan) flat(buf *tir.Buffer, idx []tir.Expr) (tir.Expr, error) {
	flat, err := simplifiedIndex(buf, idx, p.dom)
	if err != nil || !dependsOn(flat, p.v) {
		return flat, err
	}
	if n := laneNormalize(flat, p.v, p.L); n != flat {
		flat = tir.Simplify(n, p.dom)
	}
	return flat, nil
}

// laneNormalize rewrites floordiv(c*v + r, m) and floormod(c*v + r, m)
// (c > 0, m > 0 constants, r free of v) when no two lanes straddle a
// multiple of m: if r = k (mod g) with g = gcd(m, the modulus of r) and
// k + c*(L-1) < g, then floordiv(c*v + r, m) = floordiv(r, m) and
// floormod(c*v + r, m) = floormod(r, m) + c*v. Fused-then-split loops
// produce such indices; rewritten, they are contiguous in the lane.
func laneNormalize(e tir.Expr, v *tir.Var, L int) tir.Expr {
	return tir.MutateExpr(e, func(x tir.Expr) tir.Expr {
		b, ok := x.(*tir.Binary)
		if !ok || (b.Op != tir.FloorDiv && b.Op != tir.FloorMod) || !dependsOn(b.A, v) {
			return x
		}
		m, ok := tir.IsConst(b.B)
		if !ok || m <= 0 {
			return x
		}
		c, r, ok := tir.LinearIn(b.A, v)
		if !ok || c <= 0 || c > 1<<20 {
			return x
		}
		G, k := modInfo(r)
		g := tir.GCD(G, m)
		k = ((k % g) + g) % g
		if k+c*int64(L-1) >= g {
			return x
		}
		if b.Op == tir.FloorDiv {
			return tir.FloorDivE(r, tir.Const(m))
		}
		return tir.AddE(tir.FloorModE(r, tir.Const(m)), tir.MulE(tir.Const(c), v))
	})
}

// modInfo returns (G, k) such that e = k (mod G) for every value of its
// variables; G = 0 means e is exactly k.
func modInfo(e tir.Expr) (G, k int64) {
	const lim = 1 << 40
	small := func(x int64) bool { return x > -lim && x < lim }
	switch e := e.(type) {
	case *tir.IntImm:
		if small(e.V) {
			return 0, e.V
		}
	case *tir.Binary:
		switch e.Op {
		case tir.Add, tir.Sub:
			g1, k1 := modInfo(e.A)
			g2, k2 := modInfo(e.B)
			if e.Op == tir.Sub {
				k2 = -k2
			}
			return tir.GCD(g1, g2), k1 + k2
		case tir.Mul:
			g1, k1 := modInfo(e.A)
			g2, k2 := modInfo(e.B)
			if g2 != 0 {
				g1, k1, g2, k2 = g2, k2, g1, k1
			}
			if g2 == 0 && small(g1*k2) && small(k1*k2) {
				if k2 < 0 {
					return -g1 * k2, k1 * k2
				}
				return g1 * k2, k1 * k2
			}
		}
	}
	return 1, 0
}

func (p *vplan) walk(items []vitem, f func(*tir.Store)) {
	for _, it := range items {
		if it.st != nil {
			f(it.st)
			continue
		}
		p.walk(it.then, f)
		p.walk(it.otherwise, f)
	}
}

// check rejects stores that vector code cannot express.
func (p *vplan) check() string {
	why := ""
	p.walk(p.items, func(st *tir.Store) {
		if why != "" {
			return
		}
		if st.Buf == nil || st.Value == nil {
			why = "malformed store"
			return
		}
		if t := st.Buf.DType; !(t.IsFloat() || t.IntElem()) || st.Value.Type() != t {
			why = "store of a value of another type"
			return
		}
		flat, err := p.flat(st.Buf, st.Indices)
		if err != nil {
			why = err.Error()
			return
		}
		if coef, _, ok := tir.LinearIn(flat, p.v); ok && coef == 0 {
			why = "store index does not depend on the lane (reduction across lanes)"
		}
	})
	return why
}

// dependences rejects bodies where running each statement for all lanes
// at once could differ from running the lanes one after another: every
// buffer written must be accessed by all its loads and stores at one index,
// injective in the lane (or be written by a single store and never read).
func (p *vplan) dependences() string {
	type access struct {
		idx   tir.Expr
		store bool
	}
	accs := map[*tir.Buffer][]access{}
	bad := ""
	addLoads := func(e tir.Expr) {
		tir.WalkExpr(e, func(x tir.Expr) bool {
			if l, ok := x.(*tir.Load); ok {
				flat, err := p.flat(l.Buf, l.Indices)
				if err != nil {
					bad = err.Error()
					return false
				}
				accs[l.Buf] = append(accs[l.Buf], access{idx: flat})
			}
			return true
		})
	}
	var visit func(items []vitem)
	visit = func(items []vitem) {
		for _, it := range items {
			if it.st == nil {
				addLoads(it.cond)
				visit(it.then)
				visit(it.otherwise)
				continue
			}
			flat, err := p.flat(it.st.Buf, it.st.Indices)
			if err != nil {
				bad = err.Error()
				return
			}
			accs[it.st.Buf] = append(accs[it.st.Buf], access{idx: flat, store: true})
			for _, x := range it.st.Indices {
				addLoads(x)
			}
			addLoads(it.st.Value)
		}
	}
	visit(p.items)
	if bad != "" {
		return bad
	}
	for buf, list := range accs {
		stores, loads := 0, 0
		for _, a := range list {
			if a.store {
				stores++
			} else {
				loads++
			}
		}
		if stores == 0 || stores == 1 && loads == 0 {
			continue // read only, or one scatter in lane order
		}
		forms := make([]linForm, len(list))
		for n, a := range list {
			forms[n] = p.linear(a.idx)
		}
		for x := range list {
			if !list[x].store {
				continue
			}
			for y := range list {
				if !p.independent(list[x].idx, list[y].idx, forms[x], forms[y]) {
					return "lanes may depend on each other through " + buf.Name
				}
			}
		}
	}
	return ""
}

// linForm is an index as coef*v + rest, when it is affine in v.
type linForm struct {
	coef int64
	rest tir.Expr
	ok   bool
}

func (p *vplan) linear(idx tir.Expr) linForm {
	coef, rest, ok := tir.LinearIn(idx, p.v)
	return linForm{coef, rest, ok}
}

// independent reports whether two accesses, the first a store, never touch
// one element from two different lanes.
func (p *vplan) independent(i1, i2 tir.Expr, f1, f2 linForm) bool {
	if f1.ok && f2.ok {
		d, isConst := tir.IsConst(tir.Simplify(tir.SubE(f1.rest, f2.rest), p.dom))
		if isConst {
			// Lane l1 of the first meets lane l2 of the second when
			// c2*l2 = c1*l1 + d.
			for l1 := int64(0); l1 < int64(p.L); l1++ {
				num := f1.coef*l1 + d
				if f2.coef == 0 {
					if num == 0 {
						return false
					}
					continue
				}
				if num%f2.coef != 0 {
					continue
				}
				if l2 := num / f2.coef; l2 >= 0 && l2 < int64(p.L) && l2 != l1 {
					return false
				}
			}
			return true
		}
	}
	// Otherwise only the same injective index is known to be safe.
	return exprEqual(i1, i2) && f1.ok && f1.coef != 0
}

// vectorLoop emits a vectorized loop as vector code or as its fallback.
func (k *kernel) vectorLoop(f *tir.For) error {
	plan, why, simd := k.planVector(f, k.dom)
	if plan == nil {
		k.line("/* %s: scalar loop, %s */", sanitize(f.Var.Name), comment(why))
		if simd {
			k.line("#pragma omp simd")
		}
		return k.serialLoop(f)
	}
	if len(plan.items) == 0 {
		return nil
	}
	k.m.used[plan.L] = true
	if len(plan.items) > 1 || plan.items[0].st == nil {
		k.line("/* %s: %d lanes */", sanitize(f.Var.Name), plan.L)
	}
	saved := k.dom
	k.dom = plan.dom
	defer func() { k.dom = saved }()
	return k.vitems(plan, plan.items)
}

func (k *kernel) vitems(p *vplan, items []vitem) error {
	return k.walkItems(p, items, nil, k.vstore)
}

// walkItems emits the items of a vector plan: each store by store, under
// guard (the lane-dependent conditions around it, nil for none), each
// lane-invariant if as a C if.
func (k *kernel) walkItems(p *vplan, items []vitem, guard tir.Expr, store func(*vplan, *tir.Store, tir.Expr) error) error {
	for _, it := range items {
		if it.st != nil {
			if err := store(p, it.st, guard); err != nil {
				return err
			}
			continue
		}
		if it.lane {
			if err := k.walkItems(p, it.then, andOf(guard, it.cond), store); err != nil {
				return err
			}
			if err := k.walkItems(p, it.otherwise, andOf(guard, tir.NotE(it.cond)), store); err != nil {
				return err
			}
			continue
		}
		c, err := k.expr(it.cond)
		if err != nil {
			return err
		}
		k.line("if (%s) {", trimParens(c))
		k.indent++
		if err := k.walkItems(p, it.then, guard, store); err != nil {
			return err
		}
		k.indent--
		if len(it.otherwise) > 0 {
			k.line("} else {")
			k.indent++
			if err := k.walkItems(p, it.otherwise, guard, store); err != nil {
				return err
			}
			k.indent--
		}
		k.line("}")
	}
	return nil
}

// andOf is a && b, where a nil operand is true.
func andOf(a, b tir.Expr) tir.Expr {
	if a == nil {
		return b
	}
	return tir.AndE(a, b)
}

func vt(L int) string { return fmt.Sprintf("tsr_v%df", L) }
func mt(L int) string { return fmt.Sprintf("tsr_v%di", L) }

// vstore emits a store for every lane, or, under a guard, for the lanes
// where it holds.
func (k *kernel) vstore(p *vplan, st *tir.Store, guard tir.Expr) error {
	bb, err := k.lookupBuf(st.Buf)
	if err != nil {
		return err
	}
	flat, err := p.flat(st.Buf, st.Indices)
	if err != nil {
		return err
	}
	value := st.Value
	if guard != nil {
		value = k.guardLoads(p, value, guard)
	}
	val, isv, err := k.vexpr(p, value)
	if err != nil {
		return err
	}
	if !isv {
		val = k.splatOf(p, val, st.Value.Type())
	}
	val = trimParens(val)
	coef, rest, ok := tir.LinearIn(flat, p.v)
	if guard != nil {
		return k.maskedStore(p, bb, st, flat, val, guard)
	}
	if ok && coef == 1 {
		rest = tir.Simplify(rest, k.dom)
		if bb.scal != nil {
			name, err := k.chunkAt(bb, rest, p.L)
			if err != nil {
				return err
			}
			k.line("%s = %s;", name, val)
			return nil
		}
		r, err := k.expr(rest)
		if err != nil {
			return err
		}
		k.line("tsr_store_v%d%s(&%s[%s], %s);", p.L, laneSuffix(st.Buf.DType), bb.name, trimParens(r), val)
		return nil
	}
	// Scatter, lane by lane in lane order.
	k.line("{")
	k.indent++
	k.line("const %s tsr_s = %s;", vtOf(p.L, st.Value.Type()), val)
	for l := 0; l < p.L; l++ {
		idx := tir.Simplify(tir.Substitute(flat, map[*tir.Var]tir.Expr{p.v: tir.Const(int64(l))}), k.dom)
		ref, err := k.elemAt(bb, idx)
		if err != nil {
			return err
		}
		k.line("%s = %s;", ref, laneElem(st.Buf.DType, l))
	}
	k.indent--
	k.line("}")
	return nil
}

// guardLoads makes the value of a store under guard safe to compute for
// every lane: each load that may be out of bounds for a lane the guard
// excludes becomes a Select on the guard. A load the same in every lane is
// made by the lanes the guard admits anyway, so it needs none where the
// guard provably admits one (its first or last lane); otherwise the whole
// value is the Select.
func (k *kernel) guardLoads(p *vplan, value, guard tir.Expr) tir.Expr {
	if inBounds(value, k.dom) {
		return value
	}
	// The other branch is a zero of the value's type (a Select of two
	// types is malformed: an integer store under such a guard failed to
	// print).
	var zero tir.Expr = tir.F32(0)
	switch t := value.Type(); {
	case t == tir.BFloat16:
		zero = &tir.Cast{To: tir.BFloat16, X: zero}
	case t.IntElem():
		zero = tir.IntOf(t, 0)
	}
	whole := &tir.Select{Cond: guard, T: value, F: zero}
	admits := false
	for _, l := range []int64{0, int64(p.L) - 1} {
		c := tir.Substitute(guard, map[*tir.Var]tir.Expr{p.v: tir.Const(l)})
		admits = admits || tir.IsTrue(simplifyCond(c, k.dom))
	}
	if !admits {
		return whole
	}
	ok := true
	out := tir.MutateExpr(value, func(x tir.Expr) tir.Expr {
		ld, isLoad := x.(*tir.Load)
		if !isLoad || !dependsOn(ld, p.v) || inBounds(ld, k.dom) {
			return x
		}
		if ld.Type() != tir.Float32 {
			ok = false
			return x
		}
		return &tir.Select{Cond: guard, T: ld, F: tir.F32(0)}
	})
	if !ok {
		return whole
	}
	return out
}

// maskedStore stores the lanes of val where guard holds: a blend into the
// old lanes where the buffer is this thread's own and every lane's index
// is in bounds, else lane by lane.
func (k *kernel) maskedStore(p *vplan, bb *bufBind, st *tir.Store, flat tir.Expr, val string, guard tir.Expr) error {
	m, mv, err := k.vexpr(p, guard)
	if err != nil {
		return err
	}
	if !mv {
		m = k.splatMask(p, m)
	}
	m = trimParens(m)
	coef, rest, ok := tir.LinearIn(flat, p.v)
	if ok && coef == 1 && bb.private && st.Buf.DType == tir.Float32 && inBounds(&tir.Load{Buf: st.Buf, Indices: st.Indices}, k.dom) {
		rest = tir.Simplify(rest, k.dom)
		if bb.scal != nil {
			name, err := k.chunkAt(bb, rest, p.L)
			if err != nil {
				return err
			}
			k.line("%s = tsr_select_v%df(%s, %s, %s);", name, p.L, m, val, name)
			return nil
		}
		r, err := k.expr(rest)
		if err != nil {
			return err
		}
		at := fmt.Sprintf("&%s[%s]", bb.name, trimParens(r))
		k.line("tsr_store_v%df(%s, tsr_select_v%df(%s, %s, tsr_load_v%df(%s)));", p.L, at, p.L, m, val, p.L, at)
		return nil
	}
	k.line("{")
	k.indent++
	k.line("const %s tsr_s = %s;", vtOf(p.L, st.Value.Type()), val)
	k.line("const %s tsr_m = %s;", mt(p.L), m)
	for l := 0; l < p.L; l++ {
		idx := tir.Simplify(tir.Substitute(flat, map[*tir.Var]tir.Expr{p.v: tir.Const(int64(l))}), k.dom)
		if iv := tir.ConstBound(idx, k.dom); iv.Lo >= int64(st.Buf.Size()) || iv.Hi < 0 {
			continue // never in bounds, so never stored by the lane
		}
		ref, err := k.elemAt(bb, idx)
		if err != nil {
			return err
		}
		k.line("if (tsr_m[%d]) %s = %s;", l, ref, laneElem(st.Buf.DType, l))
	}
	k.indent--
	k.line("}")
	return nil
}

// chunkAt names the vector variable holding elements rest..rest+L-1 of a
// scalarized buffer.
func (k *kernel) chunkAt(bb *bufBind, rest tir.Expr, L int) (string, error) {
	c, ok := tir.IsConst(rest)
	if !ok || bb.scal.lanes != L || c%int64(L) != 0 {
		return "", fmt.Errorf("internal: vector access at %s into scalarized buffer %s", tir.ExprString(rest), bb.buf.Name)
	}
	return bb.scal.chunk(c / int64(L))
}

// laneElem is lane l of the vector tsr_s as an element of a buffer of
// type t: a bfloat16 lane (a float holding a bfloat16 value) as its bits.
func laneElem(t tir.DType, l int) string {
	if t == tir.BFloat16 {
		return fmt.Sprintf("tsr_f2bf(tsr_s[%d])", l)
	}
	return fmt.Sprintf("tsr_s[%d]", l)
}

func (k *kernel) splat(p *vplan, s string) string {
	return fmt.Sprintf("tsr_splat_v%df(%s)", p.L, trimParens(s))
}

// splatOf broadcasts scalar s of type t: a float, or an integer element
// as int32 lanes.
func (k *kernel) splatOf(p *vplan, s string, t tir.DType) string {
	if t.IntElem() {
		return fmt.Sprintf("tsr_splat_v%di((int32_t)%s)", p.L, s)
	}
	if t == tir.BFloat16 {
		return k.splat(p, "tsr_bf2f("+trimParens(s)+")") // a scalar bfloat16 is its bits
	}
	return k.splat(p, s)
}

// vtOf is the vector type of expressions of type t: float lanes (for
// BFloat16 too, holding its values), or int32 lanes for an integer
// element type (narrower values widened) and for masks.
func vtOf(L int, t tir.DType) string {
	if t.IsFloat() {
		return vt(L)
	}
	return mt(L)
}

func minOf(t tir.DType) int64 { lo, _ := t.Range(); return lo }
func maxOf(t tir.DType) int64 { _, hi := t.Range(); return hi }

// laneSuffix names the vector load and store helpers of a buffer type:
// f for float32, i8, u8, i16 or i32 for the integer types, whose lanes
// are int32 in registers.
func laneSuffix(t tir.DType) string {
	switch t {
	case tir.Int8:
		return "i8"
	case tir.Uint8:
		return "u8"
	case tir.Int16:
		return "i16"
	case tir.Int32:
		return "i32"
	case tir.BFloat16:
		return "bf"
	}
	return "f"
}

func (k *kernel) splatMask(p *vplan, s string) string {
	return fmt.Sprintf("tsr_splat_v%di(-(int32_t)%s)", p.L, s)
}

// vexpr emits e inside vector code. It returns a scalar C expression
// (isVec false) when e does not depend on the lane, else a vector of
// tsr_vLf (float) or tsr_vLi (mask, for booleans; int32 lanes for the
// integer element types, narrower ones widened).
func (k *kernel) vexpr(p *vplan, e tir.Expr) (code string, isVec bool, err error) {
	if e == nil {
		return "", false, fmt.Errorf("nil expression")
	}
	if !dependsOn(e, p.v) {
		s, err := k.expr(e)
		return s, false, err
	}
	if e.Type() == tir.Int {
		return "", false, fmt.Errorf("internal: integer vector expression %s", tir.ExprString(e))
	}
	switch e := e.(type) {
	case *tir.Load:
		return k.vload(p, e)
	case *tir.Binary:
		return k.vbinary(p, e)
	case *tir.Compare:
		return k.vcompare(p, e)
	case *tir.And:
		return k.vlogic(p, e, e.A, e.B, true)
	case *tir.Or:
		return k.vlogic(p, e, e.A, e.B, false)
	case *tir.Not:
		if e.A == nil || e.A.Type() != tir.Bool {
			return "", false, fmt.Errorf("logical not of a non-boolean")
		}
		a, _, err := k.vexpr(p, e.A)
		if err != nil {
			return "", false, err
		}
		return "(~" + a + ")", true, nil
	case *tir.Select:
		return k.vselect(p, e)
	case *tir.Cast:
		return k.vcast(p, e)
	case *tir.Call:
		if _, err := checkCall(e); err != nil {
			return "", false, err
		}
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			s, v, err := k.vexpr(p, a)
			if err != nil {
				return "", false, err
			}
			if !v {
				s = k.splat(p, s)
			}
			args[i] = trimParens(s)
		}
		if e.Fn == "nan0" && noNaN(e.Args[0]) {
			return args[0], true, nil
		}
		if k.inTile > 0 && polynomial[e.Fn] {
			// Called, not inlined: see vectorMathCalls.
			return fmt.Sprintf("tsr_%s_call_v%df(%s)", e.Fn, p.L, strings.Join(args, ", ")), true, nil
		}
		return fmt.Sprintf("tsr_%s_v%df(%s)", e.Fn, p.L, strings.Join(args, ", ")), true, nil
	}
	return k.laneWise(p, e)
}

// laneWise builds a vector from the scalar value of e in each lane; each
// lane is evaluated with C's own (lazy) semantics.
func (k *kernel) laneWise(p *vplan, e tir.Expr) (string, bool, error) {
	parts := make([]string, p.L)
	for l := range parts {
		s, err := k.expr(tir.Substitute(e, map[*tir.Var]tir.Expr{p.v: tir.Const(int64(l))}))
		if err != nil {
			return "", false, err
		}
		switch t := e.Type(); {
		case t == tir.Float32:
			parts[l] = trimParens(s)
		case t == tir.BFloat16:
			parts[l] = "tsr_bf2f(" + trimParens(s) + ")"
		case t == tir.Bool:
			parts[l] = "-" + s
		case t.IntElem():
			parts[l] = "(int32_t)" + s
		default:
			return "", false, fmt.Errorf("internal: integer vector expression %s", tir.ExprString(e))
		}
	}
	t := vtOf(p.L, e.Type())
	return "(" + t + "){" + strings.Join(parts, ", ") + "}", true, nil
}

func (k *kernel) vload(p *vplan, e *tir.Load) (string, bool, error) {
	bb, err := k.lookupBuf(e.Buf)
	if err != nil {
		return "", false, err
	}
	flat, err := p.flat(e.Buf, e.Indices)
	if err != nil {
		return "", false, err
	}
	coef, rest, ok := tir.LinearIn(flat, p.v)
	switch {
	case ok && coef == 0:
		s, err := k.elemAt(bb, tir.Simplify(rest, k.dom))
		return s, false, err
	case ok && coef == 1 && (e.Buf.DType.IntElem() || e.Buf.DType == tir.BFloat16):
		r, err := k.expr(tir.Simplify(rest, k.dom))
		if err != nil {
			return "", false, err
		}
		return fmt.Sprintf("tsr_load_v%d%s(&%s[%s])", p.L, laneSuffix(e.Buf.DType), bb.name, trimParens(r)), true, nil
	case ok && coef == 1 && e.Buf.DType == tir.Float32:
		rest = tir.Simplify(rest, k.dom)
		if bb.scal != nil {
			s, err := k.chunkAt(bb, rest, p.L)
			return s, true, err
		}
		r, err := k.expr(rest)
		if err != nil {
			return "", false, err
		}
		return fmt.Sprintf("tsr_load_v%df(&%s[%s])", p.L, bb.name, trimParens(r)), true, nil
	}
	if s, ok, err := k.vgather(p, e, bb, flat); ok || err != nil {
		return s, ok, err
	}
	return k.laneWise(p, e)
}

// vpair emits the operands of a binary operation or comparison of type t
// as vectors (a scalar operand broadcast).
func (k *kernel) vpair(p *vplan, A, B tir.Expr, t tir.DType) (a, b string, err error) {
	a, av, err := k.vexpr(p, A)
	if err != nil {
		return "", "", err
	}
	b, bv, err := k.vexpr(p, B)
	if err != nil {
		return "", "", err
	}
	if !av {
		a = k.splatOf(p, a, t)
	}
	if !bv {
		b = k.splatOf(p, b, t)
	}
	return a, b, nil
}

// vbinary emits float32 arithmetic on float lanes, or int32 arithmetic on
// int32 lanes.
func (k *kernel) vbinary(p *vplan, e *tir.Binary) (string, bool, error) {
	if e.A == nil || e.B == nil || e.A.Type() != e.B.Type() || e.A.Type() != tir.Float32 && e.A.Type() != tir.Int32 {
		return "", false, fmt.Errorf("binary %v of mismatched operands in %s", e.Op, tir.ExprString(e))
	}
	t := e.A.Type()
	if e.Op == tir.Add && t == tir.Int32 {
		if s, ok, err := k.vdot(p, e); ok || err != nil {
			return s, ok, err
		}
	}
	if e.Op == tir.Add && t == tir.Float32 {
		if s, ok, err := k.vdotBF16(p, e); ok || err != nil {
			return s, ok, err
		}
	}
	a, b, err := k.vpair(p, e.A, e.B, t)
	if err != nil {
		return "", false, err
	}
	suffix := "f"
	if t == tir.Int32 {
		suffix = "i"
	}
	switch {
	case e.Op == tir.Add, e.Op == tir.Sub, e.Op == tir.Mul, e.Op == tir.Div && t == tir.Float32:
		return "(" + a + " " + e.Op.String() + " " + b + ")", true, nil
	case e.Op == tir.Min, e.Op == tir.Max:
		fn := map[bool]string{true: "min", false: "max"}[e.Op == tir.Min]
		if t == tir.Float32 && (k.castClamps[e] || noNaN(e.A) && noNaN(e.B)) {
			fn += "n" // no NaN to keep: vmaxps (tsr_maxn_vLf)
		} else if c, ok := e.B.(*tir.FloatImm); ok && !math.IsNaN(c.V) {
			fn += "c" // a clamp's bound: one comparison (tsr_maxc_vLf)
		}
		return fmt.Sprintf("tsr_%s_v%d%s(%s, %s)", fn, p.L, suffix, trimParens(a), trimParens(b)), true, nil
	}
	return "", false, fmt.Errorf("%v on %v in %s", e.Op, t, tir.ExprString(e))
}

func (k *kernel) vcompare(p *vplan, e *tir.Compare) (string, bool, error) {
	if e.A == nil || e.B == nil || e.A.Type() != e.B.Type() {
		return "", false, fmt.Errorf("comparison %s of mismatched operands", tir.ExprString(e))
	}
	switch t := e.A.Type(); t {
	case tir.Float32, tir.Int8, tir.Uint8, tir.Int16, tir.Int32:
		a, b, err := k.vpair(p, e.A, e.B, t)
		if err != nil {
			return "", false, err
		}
		return "(" + a + " " + e.Op.String() + " " + b + ")", true, nil
	case tir.Int:
		// coef*v + rest OP 0  <=>  coef*v OP -rest, with coef*v a constant
		// vector and -rest clamped just outside the range of coef*v.
		d := tir.Simplify(tir.SubE(e.A, e.B), k.dom)
		coef, rest, ok := tir.LinearIn(d, p.v)
		if ok && coef != 0 && coef > -(1<<20) && coef < 1<<20 && !hasFloat(rest) {
			lo, hi := int64(0), coef*int64(p.L-1)
			if hi < lo {
				lo, hi = hi, lo
			}
			rest = tir.Simplify(rest, k.dom)
			var bound string
			if r, ok := tir.IsConst(rest); ok {
				bound = fmt.Sprint(max(lo-1, min(hi+1, -r)))
			} else {
				r, err := k.expr(rest)
				if err != nil {
					return "", false, err
				}
				bound = fmt.Sprintf("tsr_clamp32(-%s, %d, %d)", r, lo-1, hi+1)
			}
			lanes := make([]string, p.L)
			for l := range lanes {
				lanes[l] = fmt.Sprint(coef * int64(l))
			}
			return fmt.Sprintf("((%s){%s} %s tsr_splat_v%di(%s))",
				mt(p.L), strings.Join(lanes, ", "), e.Op, p.L, bound), true, nil
		}
	}
	return k.laneWise(p, e)
}

// vlogic emits And (and=true) or Or. The right operand is only evaluated
// eagerly when that cannot read out of bounds.
func (k *kernel) vlogic(p *vplan, e, A, B tir.Expr, and bool) (string, bool, error) {
	if A == nil || B == nil || A.Type() != tir.Bool || B.Type() != tir.Bool {
		return "", false, fmt.Errorf("logical operation on non-booleans")
	}
	if !inBounds(B, k.dom) {
		if !dependsOn(A, p.v) {
			// Scalar guard: C's ?: keeps B lazy.
			a, err := k.expr(A)
			if err != nil {
				return "", false, err
			}
			b, bv, err := k.vexpr(p, B)
			if err != nil {
				return "", false, err
			}
			if !bv {
				b = k.splatMask(p, b)
			}
			if and {
				return fmt.Sprintf("(%s ? %s : tsr_splat_v%di(0))", a, b, p.L), true, nil
			}
			return fmt.Sprintf("(%s ? tsr_splat_v%di(-1) : %s)", a, p.L, b), true, nil
		}
		return k.laneWise(p, e)
	}
	a, av, err := k.vexpr(p, A)
	if err != nil {
		return "", false, err
	}
	b, bv, err := k.vexpr(p, B)
	if err != nil {
		return "", false, err
	}
	if !av {
		a = k.splatMask(p, a)
	}
	if !bv {
		b = k.splatMask(p, b)
	}
	op := " | "
	if and {
		op = " & "
	}
	return "(" + a + op + b + ")", true, nil
}

func (k *kernel) vselect(p *vplan, e *tir.Select) (string, bool, error) {
	if e.Cond == nil || e.T == nil || e.F == nil || e.Cond.Type() != tir.Bool || e.T.Type() != e.F.Type() {
		return "", false, fmt.Errorf("malformed select %s", tir.ExprString(e))
	}
	c := simplifyCond(e.Cond, k.dom)
	switch {
	case tir.IsTrue(c):
		return k.vexpr(p, e.T)
	case tir.IsFalse(c):
		return k.vexpr(p, e.F)
	}
	et := e.Type()
	if !et.IsFloat() && !et.IntElem() {
		return k.laneWise(p, e)
	}
	sel := "f"
	if et.IntElem() {
		sel = "i"
	}
	branches := func() (string, string, error) {
		t, tv, err := k.vexpr(p, e.T)
		if err != nil {
			return "", "", err
		}
		f, fv, err := k.vexpr(p, e.F)
		if err != nil {
			return "", "", err
		}
		if !tv {
			t = k.splatOf(p, t, et)
		}
		if !fv {
			f = k.splatOf(p, f, et)
		}
		return trimParens(t), trimParens(f), nil
	}
	if !dependsOn(c, p.v) {
		cs, err := k.expr(c)
		if err != nil {
			return "", false, err
		}
		t, f, err := branches()
		if err != nil {
			return "", false, err
		}
		return "(" + cs + " ? " + t + " : " + f + ")", true, nil
	}
	if !inBounds(e.T, k.dom) || !inBounds(e.F, k.dom) {
		lw, _, err := k.laneWise(p, &tir.Select{Cond: c, T: e.T, F: e.F})
		if err != nil {
			return "", false, err
		}
		all, ok := k.allLanes(p, c)
		if !ok {
			return lw, true, nil
		}
		// Where the guard holds for every lane (the interior of a padded
		// tensor), the true branch alone is safe to evaluate as a vector.
		t, tv, err := k.vexpr(p, e.T)
		if err != nil {
			return "", false, err
		}
		if !tv {
			t = k.splatOf(p, t, et)
		}
		return "(" + all + " ? " + trimParens(t) + " : " + lw + ")", true, nil
	}
	m, _, err := k.vexpr(p, c)
	if err != nil {
		return "", false, err
	}
	t, f, err := branches()
	if err != nil {
		return "", false, err
	}
	return fmt.Sprintf("tsr_select_v%d%s(%s, %s, %s)", p.L, sel, trimParens(m), t, f), true, nil
}

func (k *kernel) vcast(p *vplan, e *tir.Cast) (string, bool, error) {
	if e.X == nil {
		return "", false, fmt.Errorf("cast of nil")
	}
	from := e.X.Type()
	switch {
	case from == e.To:
		return k.vexpr(p, e.X)
	case e.To == tir.BFloat16 && from == tir.Float32, e.To == tir.Float32 && from == tir.BFloat16:
		// BFloat16 lanes are floats holding bfloat16 values: rounding to
		// them is tsr_rbf, reading them as float32 nothing.
		x, xv, err := k.vexpr(p, e.X)
		if err != nil || !xv {
			if err == nil {
				x, err = k.castOf(x, from, e.To)
			}
			return x, false, err
		}
		if e.To == tir.Float32 {
			return x, true, nil
		}
		return fmt.Sprintf("tsr_rbf_v%df(%s)", p.L, trimParens(x)), true, nil
	case e.To == tir.Float32 && from == tir.Bool:
		m, _, err := k.vexpr(p, e.X)
		if err != nil {
			return "", false, err
		}
		return fmt.Sprintf("tsr_b2f_v%df(%s)", p.L, trimParens(m)), true, nil
	case e.To == tir.Bool && from == tir.Float32:
		x, _, err := k.vexpr(p, e.X)
		if err != nil {
			return "", false, err
		}
		return fmt.Sprintf("(%s != tsr_splat_v%df(0.0f))", x, p.L), true, nil
	case e.To.IntElem() && (from == tir.Float32 || from.IntElem() || from == tir.Bool):
		var marked []*tir.Binary
		if from == tir.Float32 {
			marked = k.markCastClamps(e.X)
		}
		x, xv, err := k.vexpr(p, e.X)
		for _, b := range marked {
			delete(k.castClamps, b)
		}
		if err != nil {
			return "", false, err
		}
		if !xv {
			// The same in every lane after all (a load at an index that
			// the lanes' range makes lane-free): x is its scalar code, in
			// which the vector loop's variable no longer appears; e.X
			// itself may still mention it.
			s, err := k.castOf(x, from, e.To)
			return s, false, err
		}
		switch {
		case from == tir.Float32:
			x = fmt.Sprintf("__builtin_convertvector(%s, %s)", trimParens(x), mt(p.L)) // truncating, as C's conversion
		case from == tir.Bool:
			return "(-" + x + ")", true, nil
		}
		if from.IntElem() {
			if lo, hi := from.Range(); lo >= minOf(e.To) && hi <= maxOf(e.To) {
				return x, true, nil // widening keeps the value
			}
		}
		// Narrowing wraps; the lanes hold the narrow type's value.
		switch e.To {
		case tir.Uint8:
			x = fmt.Sprintf("(%s & tsr_splat_v%di(255))", x, p.L)
		case tir.Int8:
			x = fmt.Sprintf("((%s << 24) >> 24)", x)
		case tir.Int16:
			x = fmt.Sprintf("((%s << 16) >> 16)", x)
		}
		return x, true, nil
	case e.To == tir.Float32 && from.IntElem():
		x, xv, err := k.vexpr(p, e.X)
		if err != nil {
			return "", false, err
		}
		if !xv { // lane-free after all: x is its scalar code (see above)
			s, err := k.castOf(x, from, e.To)
			return s, false, err
		}
		return fmt.Sprintf("__builtin_convertvector(%s, %s)", trimParens(x), vt(p.L)), true, nil
	}
	return k.laneWise(p, e)
}

// allLanes returns a scalar C condition that holds exactly when c holds
// for every lane, for c a conjunction of conditions that are monotone in
// the lane: integer orderings affine in v, and lane-invariant conditions.
func (k *kernel) allLanes(p *vplan, c tir.Expr) (string, bool) {
	var conj []tir.Expr
	var split func(e tir.Expr) bool
	split = func(e tir.Expr) bool {
		if a, ok := e.(*tir.And); ok {
			return split(a.A) && split(a.B)
		}
		if !dependsOn(e, p.v) {
			conj = append(conj, e)
			return true
		}
		cmp, ok := e.(*tir.Compare)
		if !ok || cmp.A.Type() != tir.Int || cmp.Op == tir.EQ || cmp.Op == tir.NE {
			return false
		}
		if _, _, ok := tir.LinearIn(tir.Simplify(tir.SubE(cmp.A, cmp.B), k.dom), p.v); !ok {
			return false
		}
		for _, l := range []int64{0, int64(p.L) - 1} {
			conj = append(conj, tir.Substitute(e, map[*tir.Var]tir.Expr{p.v: tir.Const(l)}))
		}
		return true
	}
	if !split(c) || len(conj) == 0 {
		return "", false
	}
	all := conj[0]
	for _, x := range conj[1:] {
		all = tir.AndE(all, x)
	}
	all = simplifyCond(all, k.dom)
	if tir.IsFalse(all) {
		return "", false
	}
	s, err := k.expr(all)
	return s, err == nil
}

// gccX86 is the preprocessor test that guards gcc's x86 builtins (the
// widening loads, the dot-product helpers, their operand types): gcc,
// x86-64, and the ISA macro isa when one is given. Other compilers and
// targets take the portable form in the #else.
func gccX86(isa string) string {
	c := "#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)"
	if isa != "" {
		c += " && defined(" + isa + ")"
	}
	return c
}

// x86Operands are the vector types of the operands and results of the x86
// builtins narrowLoadStore and dotHelpers call (gcc's __builtin_ia32_*),
// as their signatures fix them: an xmm register's 16 bytes, a ymm's 32, a
// zmm's 64.
// They are facts of those instructions, not choices of the machine model,
// which decides only whether a level has them (the ISA macros that guard
// every use: __SSE4_1__, __AVX2__, __AVX512F__).
var x86Operands = []struct {
	elem, name string
	bytes      int
}{
	{"char", "tsr_x86_v16qi", 16}, {"short", "tsr_x86_v8hi", 16}, {"int", "tsr_x86_v4si", 16}, {"long long", "tsr_x86_v2di", 16},
	{"char", "tsr_x86_v32qi", 32}, {"short", "tsr_x86_v16hi", 32}, {"int", "tsr_x86_v8si", 32}, {"long long", "tsr_x86_v4di", 32},
	{"char", "tsr_x86_v64qi", 64}, {"short", "tsr_x86_v32hi", 64}, {"int", "tsr_x86_v16si", 64},
}

// narrowLoadStore returns tsr_load_vL<suffix> and tsr_store_vL<suffix>: L
// lanes of an 8- or 16-bit buffer widened to int32 on load and truncated
// back on store. __builtin_convertvector is the portable form, but gcc 12
// compiles it between a 64-bit and a 256-bit vector element by element (a
// widening load of 8 int8 lanes was 33 instructions instead of one
// vpmovsxbd, and it sat in every multiply-add of an integer convolution):
// with gcc on x86 the load is the sign- or zero-extending move of the
// register's width, and on little-endian targets the store takes the low
// bytes of each lane with one shuffle.
func narrowLoadStore(L int, suffix, ctype, nv, m string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	elem := map[string]int{"i8": 1, "u8": 1, "i16": 2}[suffix]
	src := L * elem // bytes read
	// The x86 extending move for this width: the builtin, the ISA macro,
	// and how the source bytes are put in its operand.
	var builtin, isa, operand string
	ext := map[string]string{"i8": "pmovsxbd", "u8": "pmovzxbd", "i16": "pmovsxwd"}[suffix]
	opType := map[bool]string{true: "tsr_x86_v8hi", false: "tsr_x86_v16qi"}[suffix == "i16"]
	switch {
	case 4*L == 16:
		builtin, isa = "__builtin_ia32_"+ext+"128", "__SSE4_1__"
	case 4*L == 32:
		builtin, isa = "__builtin_ia32_"+ext+"256", "__AVX2__"
	case 4*L == 64:
		builtin, isa = "__builtin_ia32_"+ext+"512_mask", "__AVX512F__"
		if suffix == "i16" {
			opType = "tsr_x86_v16hi"
		}
	}
	switch {
	case builtin == "":
	case src == 4:
		operand = fmt.Sprintf("int x; __builtin_memcpy(&x, p, 4); %s o = (%s)(tsr_x86_v4si){x, 0, 0, 0};", opType, opType)
	case src == 8:
		operand = fmt.Sprintf("long long x; __builtin_memcpy(&x, p, 8); %s o = (%s)(tsr_x86_v2di){x, 0};", opType, opType)
	default:
		operand = fmt.Sprintf("%s o; __builtin_memcpy(&o, p, %d);", opType, src)
	}
	if operand != "" {
		call := builtin + "(o)"
		if strings.HasSuffix(builtin, "_mask") {
			call = fmt.Sprintf("%s(o, (%s){0}, (unsigned short)-1)", builtin, m)
		}
		w("%s", gccX86(isa))
		w("static inline %s tsr_load_v%d%s(const %s *p) { %s return (%s)%s; }", m, L, suffix, ctype, operand, m, call)
		w("#else")
	}
	w("static inline %s tsr_load_v%d%s(const %s *p) { %s r; __builtin_memcpy(&r, p, sizeof r); return __builtin_convertvector(r, %s); }", m, L, suffix, ctype, nv, m)
	if operand != "" {
		w("#endif")
	}
	// The store: lane l's low bytes are bytes elem*... of the int32 view on
	// a little-endian target.
	view := fmt.Sprintf("tsr_v%dx%d", 4*L/elem, elem)
	idx := make([]string, L)
	for l := range idx {
		idx[l] = strconv.Itoa(l * 4 / elem)
	}
	w("#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__")
	w("static inline void tsr_store_v%d%s(%s *p, %s x) { typedef %s %s __attribute__((vector_size(%d))); %s v = (%s)x; %s r = __builtin_shufflevector(v, v, %s); __builtin_memcpy(p, &r, sizeof r); }",
		L, suffix, ctype, m, ctype, view, 4*L, view, view, nv, strings.Join(idx, ", "))
	w("#else")
	w("static inline void tsr_store_v%d%s(%s *p, %s x) { %s r = __builtin_convertvector(x, %s); __builtin_memcpy(p, &r, sizeof r); }", L, suffix, ctype, m, nv, nv)
	w("#endif")
	return b.String()
}

// vectorHelpers returns the vector types and helpers for L float lanes.
func vectorHelpers(L int) string {
	var b strings.Builder
	f, m := vt(L), mt(L)
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	lanes := func(x string) string {
		parts := make([]string, L)
		for i := range parts {
			parts[i] = x
		}
		return strings.Join(parts, ", ")
	}
	w("typedef float %s __attribute__((vector_size(%d)));", f, 4*L)
	w("typedef int32_t %s __attribute__((vector_size(%d)));", m, 4*L)
	w("%s", gccX86(""))
	w("#ifndef TSR_X86_VECTORS")
	w("#define TSR_X86_VECTORS")
	for _, o := range x86Operands {
		w("typedef %s %s __attribute__((vector_size(%d)));", o.elem, o.name, o.bytes)
	}
	w("#endif")
	w("#endif")
	w("static inline %s tsr_splat_v%df(float x) { return (%s){%s}; }", f, L, f, lanes("x"))
	w("static inline %s tsr_splat_v%di(int32_t x) { return (%s){%s}; }", m, L, m, lanes("x"))
	w("static inline %s tsr_load_v%df(const float *p) { %s r; __builtin_memcpy(&r, p, sizeof r); return r; }", f, L, f)
	w("static inline void tsr_store_v%df(float *p, %s x) { __builtin_memcpy(p, &x, sizeof x); }", L, f)
	w("static inline %s tsr_select_v%df(%s m, %s a, %s b) { return (%s)((m & (%s)a) | (~m & (%s)b)); }", f, L, m, f, f, f, m, m)
	// NaN propagates from either operand, as in tsr_minf and tsr_maxf.
	w("static inline %s tsr_min_v%df(%s a, %s b) { return tsr_select_v%df((a < b) | (a != a), a, b); }", f, L, f, f, L)
	w("static inline %s tsr_max_v%df(%s a, %s b) { return tsr_select_v%df((a > b) | (a != a), a, b); }", f, L, f, f, L)
	// Against a bound c that is not NaN (a constant: a clamp's), the same
	// results with one comparison: max(a, c) is c unless a > c or a is
	// NaN, which a <= c is false for (and min likewise).
	w("static inline %s tsr_maxc_v%df(%s a, %s c) { return tsr_select_v%df(a <= c, c, a); }", f, L, f, f, L)
	w("static inline %s tsr_minc_v%df(%s a, %s c) { return tsr_select_v%df(a >= c, c, a); }", f, L, f, f, L)
	b.WriteString(noNaNMinMax(L))
	w("static inline %s tsr_b2f_v%df(%s m) { return __builtin_convertvector(-m, %s); }", f, L, m, f)
	// Integer element buffers: lanes of int32 in registers, loaded and
	// stored in the buffer's own width.
	for _, it := range []struct{ suffix, ctype string }{{"i8", "int8_t"}, {"u8", "uint8_t"}, {"i16", "int16_t"}, {"i32", "int32_t"}} {
		nv := "tsr_v" + strconv.Itoa(L) + it.suffix
		if it.suffix != "i32" {
			w("typedef %s %s __attribute__((vector_size(%d)));", it.ctype, nv, L*map[string]int{"i8": 1, "u8": 1, "i16": 2}[it.suffix])
			b.WriteString(narrowLoadStore(L, it.suffix, it.ctype, nv, m))
			continue
		}
		w("static inline %s tsr_load_v%di32(const int32_t *p) { %s r; __builtin_memcpy(&r, p, sizeof r); return r; }", m, L, m)
		w("static inline void tsr_store_v%di32(int32_t *p, %s x) { __builtin_memcpy(p, &x, sizeof x); }", L, m)
	}
	w("static inline %s tsr_select_v%di(%s m, %s a, %s b) { return (m & a) | (~m & b); }", m, L, m, m, m)
	// bfloat16 buffers: lanes of floats holding bfloat16 values, their
	// bits the upper halves (tsr_f2bf and tsr_bf2f are the scalar forms).
	w("static inline %s tsr_load_v%dbf(const uint16_t *p) { return (%s)(tsr_load_v%di16((const int16_t *)p) << 16); }", f, L, f, L)
	w("static inline void tsr_store_v%dbf(uint16_t *p, %s x) { tsr_store_v%di16((int16_t *)p, (%s)x >> 16); }", L, f, L, m)
	w("typedef uint32_t tsr_v%dbu __attribute__((vector_size(%d)));", L, 4*L)
	w("#ifndef TSR_LD32")
	w("#define TSR_LD32")
	w("static inline uint32_t tsr_ld32(const void *p) { uint32_t x; __builtin_memcpy(&x, p, 4); return x; }")
	w("#endif")
	w("static inline %s tsr_rbf_v%df(%s x) { tsr_v%dbu u = (tsr_v%dbu)x; tsr_v%dbu r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u; tsr_v%dbu n = (u | 0x00400000u) & 0xffff0000u; return (%s)tsr_select_v%di(x != x, (%s)n, (%s)r); }",
		f, L, f, L, L, L, L, f, L, m, m)
	w("#ifndef TSR_LD32")
	w("#define TSR_LD32")
	w("static inline uint32_t tsr_ld32(const void *p) { uint32_t x; __builtin_memcpy(&x, p, 4); return x; }")
	w("#endif")
	b.WriteString(dotHelpers(L))
	b.WriteString(gatherHelpers(L))
	w("static inline %s tsr_min_v%di(%s a, %s b) { return tsr_select_v%di(a < b, a, b); }", m, L, m, m, L)
	w("static inline %s tsr_max_v%di(%s a, %s b) { return tsr_select_v%di(a > b, a, b); }", m, L, m, m, L)
	w("static inline %s tsr_fabs_v%df(%s x) { return (%s)((%s)x & tsr_splat_v%di(0x7fffffff)); }", f, L, f, f, m, L)
	fns := make([]string, 0, len(tir.MathFuncs))
	for fn := range tir.MathFuncs {
		fns = append(fns, fn)
	}
	sort.Strings(fns)
	for _, fn := range fns {
		switch mf := tir.MathFuncs[fn]; {
		case fn == "fabs":
			// a bit mask, above
		case fn == "nan0":
			// a bit mask: x == x is all ones but in NaN lanes.
			w("static inline %s tsr_nan0_v%df(%s x) { return (%s)((%s)x & (x == x)); }", f, L, f, f, m)
		case polynomial[fn]:
			// vector polynomials, below
		case mf.Arity == 1:
			round := x86Round(L, fn)
			if round != "" {
				b.WriteString(round)
				w("#else")
			}
			w("static inline %s tsr_%s_v%df(%s x) { %s r; for (int l = 0; l < %d; ++l) r[l] = %s(x[l]); return r; }",
				f, fn, L, f, f, L, mf.C)
			if round != "" {
				w("#endif")
			}
		case mf.Arity == 2:
			w("static inline %s tsr_%s_v%df(%s x, %s y) { %s r; for (int l = 0; l < %d; ++l) r[l] = %s(x[l], y[l]); return r; }",
				f, fn, L, f, f, f, L, mf.C)
		}
	}
	b.WriteString(strings.NewReplacer("VF", f, "VI", m, "L", strconv.Itoa(L)).Replace(vectorMath))
	b.WriteString(strings.NewReplacer("VF", f, "L", strconv.Itoa(L)).Replace(vectorMathCalls))
	if transposes(L) {
		b.WriteString(transposeHelper(L))
	}
	return b.String()
}

// roundingImm is the rounding-control immediate of x86's roundps (SSE4.1,
// AVX) and vrndscaleps (AVX-512) that computes each rounding function
// exactly as its C function does: rint in the current rounding mode
// (MXCSR, bit 2), floor, ceil and trunc toward their direction with the
// precision exception suppressed (bit 3), as gcc inlines floorf.
var roundingImm = map[string]int{"rint": 0x04, "floor": 0x09, "ceil": 0x0A, "trunc": 0x0B}

// x86Round returns tsr_<fn>_vLf as one rounding instruction, opening a
// gccX86 block the caller closes (#else, the lane loop, #endif), or "" when
// fn is not a rounding function or no instruction has L lanes. The lane
// loop it replaces calls rintf per lane: gcc turns each call into a scalar
// roundss, with the extracts and inserts around it; a QuantizeLinear's
// rint in a convolution's epilogue cost more than its multiply-adds.
func x86Round(L int, fn string) string {
	imm, ok := roundingImm[fn]
	if !ok {
		return ""
	}
	f := "tsr_v" + strconv.Itoa(L) + "f"
	var isa, body string
	switch L {
	case 4:
		isa, body = "__SSE4_1__", fmt.Sprintf("__builtin_ia32_roundps(x, %d)", imm)
	case 8:
		isa, body = "__AVX__", fmt.Sprintf("__builtin_ia32_roundps256(x, %d)", imm)
	case 16:
		// _mm512_roundscale_ps: all lanes, the rounding of the immediate.
		isa, body = "__AVX512F__", fmt.Sprintf("__builtin_ia32_rndscaleps_mask(x, %d, x, (unsigned short)0xFFFF, 4)", imm)
	default:
		return ""
	}
	return fmt.Sprintf("%s\nstatic inline %s tsr_%s_v%df(%s x) { return %s; }\n", gccX86(isa), f, fn, L, f, body)
}

// bitMask names the functions computed on whole vectors as a bit mask.
var bitMask = map[string]bool{"fabs": true, "nan0": true}

// polynomial names the functions vectorMath defines as polynomials.
var polynomial = map[string]bool{"exp": true, "erf": true, "sigmoid": true, "tanh": true}

// vectorMathCalls defines the polynomial functions again as calls, for a
// register tile's epilogue (a GEMM's fused GELU): inlined there, gcc
// hoists their dozen constants out of the whole loop nest, and the tile's
// accumulators, which need the registers, are spilled in its FMA loop (the
// BERT FFN GEMM with GELU: 107 stack accesses per 240 FMAs, against none
// with the call). A call per vector costs less than that; elsewhere (a
// softmax's exp loop, an elementwise GELU) the functions stay inlined.
const vectorMathCalls = `static __attribute__((noinline, unused)) VF tsr_exp_call_vLf(VF x) { return tsr_exp_vLf(x); }
static __attribute__((noinline, unused)) VF tsr_erf_call_vLf(VF x) { return tsr_erf_vLf(x); }
static __attribute__((noinline, unused)) VF tsr_sigmoid_call_vLf(VF x) { return tsr_sigmoid_vLf(x); }
static __attribute__((noinline, unused)) VF tsr_tanh_call_vLf(VF x) { return tsr_tanh_vLf(x); }
`

// vectorMath defines exp, erf, sigmoid and tanh on VF vectors of L lanes
// without a call per lane, so that a vectorized loop over them (a
// softmax, GELU's erf) stays vector code. Their accuracy, against the
// float64 functions the reference evaluator uses:
//
//   - exp: exp(x) = 2^n · exp(r), n = round(x / ln 2), r = x − n·ln 2 in
//     two parts (ln 2's first 16 bits, then the rest: n·ln2hi is exact),
//     exp(r) on |r| ≤ ln 2 / 2 by its Taylor polynomial of degree 7
//     (truncation below 6e-9 relative), evaluated by Horner in float32:
//     within 2 ulp. 2^n is built in the exponent bits as 2^(n−1)·2 for
//     n > 0, so that the whole range up to the overflow threshold
//     (88.72284, n = 128) is computed, and below it down to FLT_MIN's
//     (−87.33654, n = −126, the product rounding to a subnormal). Lanes
//     below that are 0 by a select, as the scalar tsr_expf gives (libm's
//     subnormal there is 1.2e-38 at most: an additive attention mask,
//     −10000 or −inf, sends whole rows there), above it +infinity, NaN
//     stays NaN: no lane leaves the vector path. The earlier form sent
//     lanes outside [−87, 88] to expf, and its test for one (the mask
//     folded by OR through memory, 64 bits at a time) cost a softmax's
//     exp loop a quarter of its time.
//   - erf: x·P(x²)/Q(x²), P of degree 6 and Q of degree 5 in x², a
//     rational fit (weighted least squares, refined toward minimax) of
//     erf(x)/x on |x| ≤ 4 with error below 3e-9; x is clamped to ±4
//     (erf(4) rounds to 1) and the result to ±1, NaN kept. One division
//     and 11 fused multiply-adds, no exp: GELU's epilogue spent most of
//     its time in the series, the exp and the division of the two-branch
//     form this replaced. Measured: within 3e-7 absolute (float32
//     rounding of P and Q; 5 ulp just below 1), 3 ulp below 0.5
//     (TestVectorMath).
//   - sigmoid: 1 / (1 + e^(−x)), e^(−x) by the exp above on −x clamped
//     to ±87.33654 (tsr_exp_core_vLf: n within ±126, so 2^n is one
//     normal float and the overflow split and the selects for the ends
//     are not needed), 0 where x < −87.33654 (the sigmoid is subnormal
//     there, as the scalar 1/(1+expf(−x)) may round it), NaN kept (it
//     flows through the polynomial). A SiLU over 1.38 million values
//     (EfficientNet-B1's 120×120×96 expansion), AVX-512, Zen 5: 0.68 ms
//     with the general exp, 0.40 with the core; a copy is 0.13.
//   - tanh: for |x| ≥ 0.625, 1 − 2/(e^(2|x|) + 1) with the exp core
//     (|x| clamped to 9, where tanh rounds to 1) and x's sign; below,
//     x + x³·P(x²), P of degree 4 a least-squares fit of (tanh(x) − x)/x³
//     (0.9 ulp in float32 on its own); NaN kept. Within 3 ulp
//     (TestVectorMath). libm's tanhf, called lane by lane, took a GRU
//     step's gates 4 of their 6 µs.
//
// The scalar helpers (tsr_sigmoidf, libm's expf and erff) stay as they
// are: a lane of a scalar loop and a lane of a vector may differ by these
// errors, well within the tolerance every kernel is checked at
// (te.DAG.Tolerance, at least 2e-5).
const vectorMath = `/* e^z = 2^n * p: n = round(z / ln 2) (in *n), p = e^r on |r| <= ln 2 / 2 */
static inline VF tsr_exp_poly_vLf(VF z, VI *np) {
  VF t = z * 1.44269504088896341f;
  VI n = __builtin_convertvector(t + tsr_select_vLf(t < 0.0f, tsr_splat_vLf(-0.5f), tsr_splat_vLf(0.5f)), VI);
  VF nf = __builtin_convertvector(n, VF);
  VF r = (z - nf * 0.693145751953125f) - nf * 1.428606820309417232e-6f;
  VF p = tsr_splat_vLf(1.0f / 5040.0f);
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  *np = n;
  return p;
}
static inline VF tsr_exp_vLf(VF x) {
  VF xc = tsr_select_vLf(x < -87.33654f, tsr_splat_vLf(-87.33654f), tsr_select_vLf(x > 88.72284f, tsr_splat_vLf(88.72284f), x));
  VI n;
  VF p = tsr_exp_poly_vLf(xc, &n);
  VI h = -(n > 0); /* 2^n as 2^(n-h) * 2^h: n reaches 128 below the overflow threshold */
  VI bits = (n - h + 127) << 23;
  VF y;
  __builtin_memcpy(&y, &bits, sizeof y);
  y = y * p * __builtin_convertvector(h + 1, VF);
  y = tsr_select_vLf(x < -87.33654f, tsr_splat_vLf(0.0f), y); /* e^x < FLT_MIN: 0, as tsr_expf */
  y = tsr_select_vLf(x > 88.72284f, tsr_splat_vLf(INFINITY), y);
  return tsr_select_vLf(x != x, x, y);
}
/* e^z for z within +-87.33654 (n within +-126): tsr_exp_vLf without its ends */
static inline VF tsr_exp_core_vLf(VF z) {
  VI n;
  VF p = tsr_exp_poly_vLf(z, &n);
  VI bits = (n + 127) << 23;
  VF y;
  __builtin_memcpy(&y, &bits, sizeof y);
  return y * p;
}
static inline VF tsr_sigmoid_vLf(VF x) {
  VF z = tsr_select_vLf(x > 87.33654f, tsr_splat_vLf(-87.33654f), tsr_select_vLf(x < -87.33654f, tsr_splat_vLf(87.33654f), -x));
  VF y = 1.0f / (1.0f + tsr_exp_core_vLf(z));
  return tsr_select_vLf(x < -87.33654f, tsr_splat_vLf(0.0f), y); /* subnormal: 0 */
}
static inline VF tsr_erf_vLf(VF x) {
  VF c = tsr_select_vLf(x > 4.0f, tsr_splat_vLf(4.0f), tsr_select_vLf(x < -4.0f, tsr_splat_vLf(-4.0f), x));
  VF t = c * c;
  /* erf(x)/x as P(x^2)/Q(x^2) on |x| <= 4 */
  VF p = tsr_splat_vLf(-1.34882576e-08f);
  p = p * t + 4.74418948e-06f;
  p = p * t + 3.81574355e-04f;
  p = p * t + 3.84412427e-03f;
  p = p * t + 5.43281101e-02f;
  p = p * t + 1.84910089e-01f;
  p = p * t + 1.12837923e+00f;
  VF q = tsr_splat_vLf(6.36723780e-05f);
  q = q * t + 1.30909542e-03f;
  q = q * t + 1.54578891e-02f;
  q = q * t + 1.13881625e-01f;
  q = q * t + 4.97205734e-01f;
  q = q * t + 1.0f;
  VF y = c * p / q;
  y = tsr_select_vLf(y > 1.0f, tsr_splat_vLf(1.0f), tsr_select_vLf(y < -1.0f, tsr_splat_vLf(-1.0f), y));
  return tsr_select_vLf(x != x, x, y);
}
static inline VF tsr_tanh_vLf(VF x) {
  VF a = tsr_fabs_vLf(x);
  /* |x| >= 0.625: 1 - 2/(e^(2|x|) + 1), |x| clamped to 9 (tanh rounds to 1 from 9.01), the sign put back */
  VF e = tsr_exp_core_vLf(2.0f * tsr_select_vLf(a > 9.0f, tsr_splat_vLf(9.0f), a));
  VF big = 1.0f - 2.0f / (e + 1.0f);
  big = (VF)((VI)big | ((VI)x & tsr_splat_vLi((int32_t)0x80000000u)));
  /* |x| < 0.625: x + x^3 P(x^2), P a least-squares fit of (tanh(x) - x)/x^3 */
  VF t = x * x;
  VF p = tsr_splat_vLf(-5.69201261e-03f);
  p = p * t + 2.06263196e-02f;
  p = p * t + -5.37353270e-02f;
  p = p * t + 1.33313820e-01f;
  p = p * t + -3.33332807e-01f;
  VF y = tsr_select_vLf(a < 0.625f, x + x * t * p, big);
  return tsr_select_vLf(x != x, x, y);
}
`
