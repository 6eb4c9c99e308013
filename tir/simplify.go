// The simplifier: constant folding for every type, the canonical affine form
// of integer expressions (linearForm), the floordiv/floormod and min/max
// rules, boolean folding by interval proofs, and the entry points Simplify,
// SimplifyStmt, LinearIn and Prove, with the boolean constants True/False.

package tir

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// True and False are the canonical boolean constants (0 == 0 and 0 != 0).
// Simplify returns one of them for every condition it decides.
var (
	True  Expr = &Compare{Op: EQ, A: Const(0), B: Const(0)}
	False Expr = &Compare{Op: NE, A: Const(0), B: Const(0)}
)

// IsTrue reports whether e is a constant true condition: True, or any
// comparison of two integer constants that holds.
func IsTrue(e Expr) bool {
	v, ok := boolConst(e)
	return ok && v
}

// IsFalse reports whether e is a constant false condition: False, or any
// comparison of two integer constants that fails.
func IsFalse(e Expr) bool {
	v, ok := boolConst(e)
	return ok && !v
}

func boolConst(e Expr) (value, ok bool) {
	c, isCmp := e.(*Compare)
	if !isCmp {
		return false, false
	}
	a, aok := c.A.(*IntImm)
	b, bok := c.B.(*IntImm)
	if !aok || !bok {
		return false, false
	}
	return cmpInt(c.Op, a.V, b.V), true
}

func boolExpr(b bool) Expr {
	if b {
		return True
	}
	return False
}

func cmpInt(op CmpOp, a, b int64) bool {
	switch op {
	case EQ:
		return a == b
	case NE:
		return a != b
	case LT:
		return a < b
	case LE:
		return a <= b
	case GT:
		return a > b
	}
	return a >= b
}

func cmpFloat(op CmpOp, a, b float32) bool {
	switch op {
	case EQ:
		return a == b
	case NE:
		return a != b
	case LT:
		return a < b
	case LE:
		return a <= b
	case GT:
		return a > b
	}
	return a >= b
}

// mirrorCmp returns the operator of b op' a when a op b: swapped sides.
func mirrorCmp(op CmpOp) CmpOp {
	return [...]CmpOp{EQ: EQ, NE: NE, LT: GT, LE: GE, GT: LT, GE: LE}[op]
}

// negateCmp returns the operator of !(a op b), exact for integers.
func negateCmp(op CmpOp) CmpOp {
	return [...]CmpOp{EQ: NE, NE: EQ, LT: GE, LE: GT, GT: LE, GE: LT}[op]
}

// Simplify returns an expression equal to e wherever the variables lie in dom
// (nil: unbounded; a variable missing from dom is unbounded).
//
// Integers are mathematical integers: the result equals e at every point of
// dom where e is defined (divides by no zero) and its evaluation fits in
// int64. Constant folding never wraps: an operation whose result would not
// fit is kept as written. Subterms whose value cannot matter may be dropped
// (x*0 = 0 even if x divides by zero).
//
// Every integer expression is put in canonical affine form: a sum of
// coef × atom plus a constant, an atom being a variable or a non-affine
// subterm (floordiv, floormod, min, max, select, load, cast, a product of
// non-constants), itself simplified. Terms are ordered by the atom's printed
// form (ExprString), so equal affine expressions print identically; atoms
// that print alike (distinct variables or buffers of equal names) are ordered
// by where their variables and buffers first appear in e, in pre-order. The
// result is built as ((t1 + t2) - t3) + c, a term being atom or atom*coef,
// the constant last. Min/max chains are flattened and their operands, like
// the factors of products, sorted the same way. Sums are not multiplied out.
//
// Rules, beyond folding and collecting terms (c > 0 a constant):
//
//	floordiv(c*q + r, c) = q + floordiv(r, c),  floormod(c*q + r, c) = floormod(r, c)
//	floordiv(r, c) = k, floormod(r, c) = r - k*c      when bound(r) ⊆ [k*c, k*c+c-1]
//	floordiv(g*y + r0, g*c) = floordiv(y, c)          0 ≤ r0 < g
//	floormod(g*y + r0, g*c) = g*floormod(y, c) + r0   0 ≤ r0 < g
//	floordiv(floordiv(x, a) + r0, c) = floordiv(x + a*r0, a*c)   a > 0
//	floormod(floormod(x, a) + r0, c) = floormod(x + r0, c)       a > 0, c divides a
//	k*c*floordiv(x, c) + k*floormod(x, c) = k*x
//	floordiv(x, 1) = x, floordiv(x, -1) = -x, floormod(x, ±1) = 0
//	min/max: operands another provably dominates are dropped
//	x = k when dom gives x the interval [k, k]
//
// Integer comparisons that the bound of the difference of their sides
// decides become True or False; And/Or/Not/Select with constant conditions
// fold; !(a < b) becomes a >= b for integers.
//
// Floats are folded only where the float32 result is finite, never
// reassociated, and only the identities that hold for every float including
// -0 and NaN are used: x*1, x/1, x-0.0, x+(-0.0). x+0.0 (-0 + 0 is +0) and
// x*0.0 (NaN, -0) are kept; min/max of -0 and +0 are kept; only fabs, floor,
// ceil and sqrt of constants are folded (exp, log, ... may differ by an ulp
// between Go and C libraries).
func Simplify(e Expr, dom map[*Var]Interval) Expr {
	if e == nil {
		return nil
	}
	s := newSimplifier(dom, e)
	defer s.release()
	return s.simplify(e)
}

// Prove reports whether cond is provably always true (value=true,
// proven=true) or always false (value=false, proven=true) under dom. Integer
// comparisons are decided by ConstBound of the difference of their sides;
// And, Or and Not combine the results.
func Prove(cond Expr, dom map[*Var]Interval) (value bool, proven bool) {
	c := Simplify(cond, dom)
	switch {
	case IsTrue(c):
		return true, true
	case IsFalse(c):
		return false, true
	}
	return false, false
}

// LinearIn decomposes the integer expression e as coef*v + rest where rest
// does not mention v. ok is false when e is not affine in v (v appears inside
// a floordiv, min, load index, product with another variable, ...). e is
// simplified first (with no domain); rest is simplified.
func LinearIn(e Expr, v *Var) (coef int64, rest Expr, ok bool) {
	if e == nil || e.Type() != Int {
		return 0, nil, false
	}
	s := newSimplifier(nil, e)
	defer s.release()
	f := s.linear(e)
	r := linearForm{c: f.c}
	memo := map[Expr]bool{}
	for _, t := range f.terms {
		if t.atom == Expr(v) {
			coef = t.coef
			continue
		}
		if mentions(t.atom, func(x *Var) bool { return x == v }, memo) {
			return 0, nil, false
		}
		r.terms = append(r.terms, t)
	}
	return coef, buildForm(r), true
}

// ---- the simplifier ----

// simplifier holds the state of one simplification: the domain, memo tables
// keyed by node (nodes are immutable, so a node's result never changes).
//
// SimplifyStmt uses one simplifier for a whole statement tree. The memo
// tables depend on the domain and the substitution, so they are cleared
// whenever those change (reset). Atoms that print alike but differ are
// ordered by the first appearance of their variables and buffers in the
// expression being simplified (root); a result that depended on that order
// holds only for that root, so the memo tables are cleared after such an
// expression too.
type simplifier struct {
	dom    map[*Var]Interval
	subst  map[*Var]Expr // variables replaced while simplifying (SimplifyStmt)
	root   Expr          // the expression being simplified
	ord    ordinals      // of root, built on the first tie (see tieBreak)
	tied   bool          // a result depended on ord
	scope  int           // SimplifyStmt: the scope dom and subst belong to
	scopes int           // SimplifyStmt: scope numbers handed out
	forms  map[Expr]linearForm
	simple map[Expr]Expr
	bounds map[Expr]Interval
	chunk  []term // the chunk newTerms cuts term slices from
	free   []term // the part of chunk not yet cut
}

// simplifiers recycles simplifiers: the memo tables keep their capacity,
// and making and growing them is most of what a small simplification costs.
var simplifiers = sync.Pool{New: func() any { return new(simplifier) }}

// newSimplifier returns a simplifier of root under dom, which the caller
// releases when done with it and with every form it returned.
func newSimplifier(dom map[*Var]Interval, root Expr) *simplifier {
	s := simplifiers.Get().(*simplifier)
	s.dom, s.root = dom, root
	return s
}

// release clears s and returns it to the pool. The last chunk of terms is
// used again: nothing a simplification returns refers to a form.
func (s *simplifier) release() {
	clear(s.forms)
	clear(s.simple)
	clear(s.bounds)
	s.ord.clear()
	clear(s.chunk[:len(s.chunk)-len(s.free)]) // drop the atoms it refers to
	*s = simplifier{ord: s.ord, forms: s.forms, simple: s.simple, bounds: s.bounds, chunk: s.chunk, free: s.chunk}
	simplifiers.Put(s)
}

// memoize stores (*m)[e] = v, making the map on first use: many
// simplifications need few of the tables.
func memoize[V any](m *map[Expr]V, e Expr, v V) {
	if *m == nil {
		*m = map[Expr]V{}
	}
	(*m)[e] = v
}

// reset forgets every result that depends on the domain, the substitution
// or the root's ordinals.
func (s *simplifier) reset() {
	clear(s.forms)
	clear(s.simple)
	clear(s.bounds)
	s.tied = false
}

// mentions reports whether e mentions a variable for which pred holds,
// visiting each shared node once; memo belongs to one pred.
func mentions(e Expr, pred func(*Var) bool, memo map[Expr]bool) bool {
	if r, ok := memo[e]; ok {
		return r
	}
	found := false
	if v, ok := e.(*Var); ok {
		found = pred(v)
	} else {
		WalkExpr(e, func(x Expr) bool {
			if x == e {
				return true
			}
			found = found || mentions(x, pred, memo)
			return false // children only; they recurse themselves
		})
	}
	memo[e] = found
	return found
}

// simplify dispatches on the type of e.
func (s *simplifier) simplify(e Expr) Expr {
	switch n := e.(type) { // leaves are cheaper to redo than to look up
	case nil:
		return nil
	case *IntImm:
		return n
	case *Var:
		if n.T == Int {
			return buildForm(s.variable(n))
		}
	}
	if r, ok := s.simple[e]; ok {
		return r
	}
	var r Expr
	switch e.Type() {
	case Int:
		if f := s.linear(e); formIs(f, e) {
			r = e // already in canonical form
		} else {
			r = buildForm(f)
		}
	case Bool:
		r = s.simplifyBool(e)
	default:
		r = s.simplifyFloat(e)
	}
	memoize(&s.simple, e, r)
	return r
}

// ---- the order of atoms ----

// atomText is the printed form of an atom (ExprString), which orders atoms.
// Terms carry it, so it is printed once per atom.
func atomText(e Expr) string {
	if v, ok := e.(*Var); ok {
		return v.Name // what ExprString prints, without the allocation
	}
	var b strings.Builder
	b.Grow(32)
	writeExpr(&b, e)
	return b.String()
}

// compareAtoms orders atoms a and b, printed as at and bt: by printed form;
// atoms that print alike but are not identical (distinct variables or
// buffers of equal names) by tieBreak; identical atoms compare equal.
func (s *simplifier) compareAtoms(a Expr, at string, b Expr, bt string) int {
	if c := strings.Compare(at, bt); c != 0 {
		return c
	}
	if identical(a, b) {
		return 0
	}
	return s.tieBreak(a, b)
}

// identical reports whether a and b are the same expression: equal
// structure, the same variables and buffers (by pointer), equal constants
// (floats by their bits).
func identical(a, b Expr) bool {
	if a == b {
		return true
	}
	switch x := a.(type) {
	case *IntImm:
		y, ok := b.(*IntImm)
		return ok && x.V == y.V
	case *FloatImm:
		y, ok := b.(*FloatImm)
		return ok && math.Float64bits(x.V) == math.Float64bits(y.V)
	case *Binary:
		y, ok := b.(*Binary)
		return ok && x.Op == y.Op && identical(x.A, y.A) && identical(x.B, y.B)
	case *Compare:
		y, ok := b.(*Compare)
		return ok && x.Op == y.Op && identical(x.A, y.A) && identical(x.B, y.B)
	case *And:
		y, ok := b.(*And)
		return ok && identical(x.A, y.A) && identical(x.B, y.B)
	case *Or:
		y, ok := b.(*Or)
		return ok && identical(x.A, y.A) && identical(x.B, y.B)
	case *Not:
		y, ok := b.(*Not)
		return ok && identical(x.A, y.A)
	case *Select:
		y, ok := b.(*Select)
		return ok && identical(x.Cond, y.Cond) && identical(x.T, y.T) && identical(x.F, y.F)
	case *Cast:
		y, ok := b.(*Cast)
		return ok && x.To == y.To && identical(x.X, y.X)
	case *Load:
		y, ok := b.(*Load)
		return ok && x.Buf == y.Buf && identicalLists(x.Indices, y.Indices)
	case *Call:
		y, ok := b.(*Call)
		return ok && x.Fn == y.Fn && identicalLists(x.Args, y.Args)
	}
	return false // distinct variables, or different types
}

func identicalLists(a, b []Expr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !identical(a[i], b[i]) {
			return false
		}
	}
	return true
}

// ordinals number the variables and buffers of an expression, root, in
// order of first appearance (pre-order).
type ordinals struct {
	root Expr // nil: not built
	vars map[*Var]int
	bufs map[*Buffer]int
	seen map[Expr]bool // shared subtrees (not leaves) are walked once
}

func (o *ordinals) clear() {
	o.root = nil
	clear(o.vars)
	clear(o.bufs)
	clear(o.seen)
}

// build numbers the variables and buffers of root.
func (o *ordinals) build(root Expr) {
	o.clear()
	if o.vars == nil {
		o.vars, o.bufs, o.seen = map[*Var]int{}, map[*Buffer]int{}, map[Expr]bool{}
	}
	o.root = root
	WalkExpr(root, func(x Expr) bool {
		switch x := x.(type) {
		case *Var:
			o.varOrdinal(x)
			return false
		case *IntImm, *FloatImm:
			return false
		}
		if o.seen[x] {
			return false
		}
		o.seen[x] = true
		if l, ok := x.(*Load); ok {
			o.bufOrdinal(l.Buf)
		}
		return true
	})
}

// tieBreak orders two atoms that print alike but are not identical by their
// ids: unambiguous serializations in which variables and buffers are named
// by their ordinals in the root. It marks the simplifier tied: the result
// being computed holds for this root only.
func (s *simplifier) tieBreak(a, b Expr) int {
	s.tied = true
	if s.ord.root != s.root {
		s.ord.build(s.root)
	}
	var ia, ib strings.Builder
	s.ord.writeID(&ia, a)
	s.ord.writeID(&ib, b)
	return strings.Compare(ia.String(), ib.String())
}

func (o *ordinals) varOrdinal(v *Var) int {
	if i, ok := o.vars[v]; ok {
		return i
	}
	i := len(o.vars)
	o.vars[v] = i
	return i
}

func (o *ordinals) bufOrdinal(b *Buffer) int {
	if i, ok := o.bufs[b]; ok {
		return i
	}
	i := len(o.bufs)
	o.bufs[b] = i
	return i
}

func (o *ordinals) writeID(b *strings.Builder, e Expr) {
	num := func(tag byte, v int64) {
		b.WriteByte(tag)
		b.WriteString(strconv.FormatInt(v, 10))
		b.WriteByte(';')
	}
	list := func(es []Expr) {
		num('#', int64(len(es)))
		for _, x := range es {
			o.writeID(b, x)
		}
	}
	switch n := e.(type) {
	case nil:
		b.WriteByte('_')
	case *Var:
		num('v', int64(o.varOrdinal(n)))
	case *IntImm:
		num('i', n.V)
	case *FloatImm:
		num('f', int64(math.Float64bits(n.V)))
	case *Binary:
		num('b', int64(n.Op))
		o.writeID(b, n.A)
		o.writeID(b, n.B)
	case *Compare:
		num('c', int64(n.Op))
		o.writeID(b, n.A)
		o.writeID(b, n.B)
	case *And:
		b.WriteByte('&')
		o.writeID(b, n.A)
		o.writeID(b, n.B)
	case *Or:
		b.WriteByte('|')
		o.writeID(b, n.A)
		o.writeID(b, n.B)
	case *Not:
		b.WriteByte('!')
		o.writeID(b, n.A)
	case *Select:
		b.WriteByte('?')
		o.writeID(b, n.Cond)
		o.writeID(b, n.T)
		o.writeID(b, n.F)
	case *Cast:
		num('t', int64(n.To))
		o.writeID(b, n.X)
	case *Load:
		num('l', int64(o.bufOrdinal(n.Buf)))
		list(n.Indices)
	case *Call:
		num('k', int64(len(n.Fn)))
		b.WriteString(n.Fn)
		list(n.Args)
	default:
		b.WriteString("?" + ExprString(e) + ";")
	}
}

// ---- linear forms ----

// term is coef × atom; text is the atom's printed form.
type term struct {
	atom Expr
	text string
	coef int64
}

// linearForm is Σ coef×atom + c with terms sorted by compareAtoms, no two
// terms on the same atom and no zero coefficient. Forms are values:
// operations build new term slices and never modify their inputs.
type linearForm struct {
	terms []term
	c     int64
}

func constForm(c int64) linearForm { return linearForm{c: c} }

func (f linearForm) isConst() (int64, bool) { return f.c, len(f.terms) == 0 }

// newTerms returns an empty term slice of capacity n. Forms are many and
// small, so their slices are cut from larger chunks; the capacity is capped,
// so that appending to one never writes into the next.
func (s *simplifier) newTerms(n int) []term {
	if n > len(s.free) {
		s.chunk = make([]term, max(n, 256))
		s.free = s.chunk
	}
	t := s.free[:0:n]
	s.free = s.free[n:]
	return t
}

func (s *simplifier) atomForm(atom Expr) linearForm {
	return linearForm{terms: append(s.newTerms(1), term{atom, atomText(atom), 1})}
}

// axpy returns a + k*b; ok is false on int64 overflow.
func (s *simplifier) axpy(a linearForm, k int64, b linearForm) (linearForm, bool) {
	kc, ok1 := mul64(k, b.c)
	c, ok2 := add64(a.c, kc)
	if !ok1 || !ok2 {
		return linearForm{}, false
	}
	switch { // forms never modify their terms, so they may share them
	case len(b.terms) == 0:
		return linearForm{a.terms, c}, true
	case len(a.terms) == 0 && k == 1:
		return linearForm{b.terms, c}, true
	}
	out := s.newTerms(len(a.terms) + len(b.terms))
	i, j := 0, 0
	for i < len(a.terms) || j < len(b.terms) {
		cmp := 0
		switch {
		case j == len(b.terms):
			cmp = -1
		case i == len(a.terms):
			cmp = 1
		default:
			cmp = s.compareAtoms(a.terms[i].atom, a.terms[i].text, b.terms[j].atom, b.terms[j].text)
		}
		if cmp < 0 {
			out = append(out, a.terms[i])
			i++
			continue
		}
		kb, ok := mul64(k, b.terms[j].coef)
		if !ok {
			return linearForm{}, false
		}
		t := b.terms[j]
		t.coef = kb
		j++
		if cmp == 0 {
			if t.coef, ok = add64(a.terms[i].coef, kb); !ok {
				return linearForm{}, false
			}
			i++
		}
		if t.coef != 0 {
			out = append(out, t)
		}
	}
	return linearForm{out, c}, true
}

// scale returns k*f; ok is false on overflow.
func (s *simplifier) scale(f linearForm, k int64) (linearForm, bool) {
	return s.axpy(constForm(0), k, f)
}

// buildForm turns a form into an expression: terms in key order, the first
// as atom or atom*coef, the others added or (for negative coefficients)
// subtracted, the constant last.
func buildForm(f linearForm) Expr {
	var e Expr
	for _, t := range f.terms {
		switch {
		case e == nil:
			e = termExpr(t.atom, t.coef)
		case t.coef < 0 && t.coef != math.MinInt64:
			e = SubE(e, termExpr(t.atom, -t.coef))
		default:
			e = AddE(e, termExpr(t.atom, t.coef))
		}
	}
	switch {
	case e == nil:
		return Const(f.c)
	case f.c < 0 && f.c != math.MinInt64:
		return SubE(e, Const(-f.c))
	case f.c != 0:
		return AddE(e, Const(f.c))
	}
	return e
}

func termExpr(atom Expr, coef int64) Expr {
	if coef == 1 {
		return atom
	}
	return MulE(atom, Const(coef))
}

// formIs reports whether e is identical to buildForm(f), without building
// it: then e can stand for the form.
func formIs(f linearForm, e Expr) bool {
	if len(f.terms) == 0 {
		c, ok := IsConst(e)
		return ok && c == f.c
	}
	// buildForm, undone from the outside in: the constant, then the terms.
	switch {
	case f.c < 0 && f.c != math.MinInt64:
		e = leftOf(e, Sub, func(x Expr) bool { c, ok := IsConst(x); return ok && c == -f.c })
	case f.c != 0:
		e = leftOf(e, Add, func(x Expr) bool { c, ok := IsConst(x); return ok && c == f.c })
	}
	for i := len(f.terms) - 1; i > 0 && e != nil; i-- {
		t := f.terms[i]
		if t.coef < 0 && t.coef != math.MinInt64 {
			e = leftOf(e, Sub, func(x Expr) bool { return termIs(x, t.atom, -t.coef) })
		} else {
			e = leftOf(e, Add, func(x Expr) bool { return termIs(x, t.atom, t.coef) })
		}
	}
	return e != nil && termIs(e, f.terms[0].atom, f.terms[0].coef)
}

// leftOf returns the left operand of e when e is op(x, y) and right(y);
// else nil.
func leftOf(e Expr, op BinOp, right func(Expr) bool) Expr {
	if b, ok := e.(*Binary); ok && b.Op == op && right(b.B) {
		return b.A
	}
	return nil
}

// termIs reports whether e is identical to termExpr(atom, coef).
func termIs(e, atom Expr, coef int64) bool {
	if coef == 1 {
		return identical(e, atom)
	}
	m, ok := e.(*Binary)
	if !ok || m.Op != Mul {
		return false
	}
	c, ok := IsConst(m.B)
	return ok && c == coef && identical(m.A, atom)
}

// linear returns the canonical form of an integer expression.
func (s *simplifier) linear(e Expr) linearForm {
	// Leaves, and operations on two leaves, are cheaper to redo than to
	// look up; every other node is memoized, so the work stays linear in
	// the number of distinct nodes.
	switch n := e.(type) {
	case *IntImm:
		return constForm(n.V)
	case *Var:
		return s.variable(n)
	case *Binary:
		if isLeaf(n.A) && isLeaf(n.B) {
			return s.binaryInt(n)
		}
	}
	if f, ok := s.forms[e]; ok {
		return f
	}
	var f linearForm
	switch n := e.(type) {
	case *Binary:
		f = s.binaryInt(n)
	case *Select:
		f = s.selectInt(n)
	case *Cast:
		f = s.castInt(n)
	case *Load:
		f = s.atomForm(s.load(n))
	default: // not an integer node; keep it whole
		f = s.atomForm(s.simplify(e))
	}
	memoize(&s.forms, e, f)
	return f
}

func isLeaf(e Expr) bool {
	switch e.(type) {
	case *IntImm, *Var:
		return true
	}
	return false
}

// variable is a substituted value, the constant of a point domain
// (x ∈ [k, k] is k), or the variable itself.
func (s *simplifier) variable(v *Var) linearForm {
	if r, ok := s.subst[v]; ok {
		return s.linear(r)
	}
	if iv, ok := s.dom[v]; ok && iv.Lo == iv.Hi && iv.Lo != math.MinInt64 && iv.Hi != math.MaxInt64 {
		return constForm(iv.Lo)
	}
	return s.atomForm(v)
}

// opaque keeps op(a, b) as an atom with simplified operands: for what no
// rule handles and for anything that would overflow.
func (s *simplifier) opaque(n *Binary, a, b linearForm) linearForm {
	if formIs(a, n.A) && formIs(b, n.B) {
		return s.atomForm(n)
	}
	return s.atomForm(&Binary{n.Op, buildForm(a), buildForm(b)})
}

func (s *simplifier) binaryInt(n *Binary) linearForm {
	a, b := s.linear(n.A), s.linear(n.B)
	var (
		f  linearForm
		ok bool
	)
	switch n.Op {
	case Add:
		f, ok = s.axpy(a, 1, b)
		f = s.normalize(f)
	case Sub:
		f, ok = s.axpy(a, -1, b)
		f = s.normalize(f)
	case Mul:
		f, ok = s.mul(a, b)
	case FloorDiv:
		f, ok = s.floorDiv(a, b, n)
	case FloorMod:
		f, ok = s.floorMod(a, b, n)
	case Min, Max:
		f, ok = s.minMax(n.Op, a, b), true
	}
	if !ok { // Div (not an integer operator), or overflow
		return s.opaque(n, a, b)
	}
	return f
}

// ---- products ----

// mul multiplies two forms. A constant side scales the other (x*0 = 0 for
// integers). Otherwise the result is coef × product, the product being the
// sorted factors of both sides, each factor an atom or a non-monomial sum;
// sums are not expanded.
func (s *simplifier) mul(a, b linearForm) (linearForm, bool) {
	if c, ok := b.isConst(); ok {
		return s.scale(a, c)
	}
	if c, ok := a.isConst(); ok {
		return s.scale(b, c)
	}
	ca, fa := factorOut(a)
	cb, fb := factorOut(b)
	coef, ok := mul64(ca, cb)
	if !ok {
		return linearForm{}, false
	}
	factors := flattenChain(Mul, fa, nil)
	factors = flattenChain(Mul, fb, factors)
	s.sortByKey(factors)
	prod := factors[0]
	for _, x := range factors[1:] {
		prod = MulE(prod, x)
	}
	return linearForm{terms: append(s.newTerms(1), term{prod, atomText(prod), coef})}, true
}

// factorOut splits a non-constant form into coef × factor.
func factorOut(f linearForm) (int64, Expr) {
	if len(f.terms) == 1 && f.c == 0 {
		return f.terms[0].coef, f.terms[0].atom
	}
	return 1, buildForm(f)
}

// flattenChain appends to out the operands of the op-chain e (nested
// Binary{op} nodes); for Mul, a node with a constant operand is a scaled
// term, not a product, and stays whole.
func flattenChain(op BinOp, e Expr, out []Expr) []Expr {
	if b, ok := e.(*Binary); ok && b.Op == op {
		_, ca := IsConst(b.A)
		_, cb := IsConst(b.B)
		if op != Mul || (!ca && !cb) {
			out = flattenChain(op, b.A, out)
			return flattenChain(op, b.B, out)
		}
	}
	return append(out, e)
}

func (s *simplifier) sortByKey(es []Expr) {
	ts := make([]term, len(es))
	for i, e := range es {
		ts[i] = term{atom: e, text: atomText(e)}
	}
	slices.SortStableFunc(ts, func(a, b term) int { return s.compareAtoms(a.atom, a.text, b.atom, b.text) })
	for i, t := range ts {
		es[i] = t.atom
	}
}

// ---- normalization: c*floordiv(x, c) + floormod(x, c) = x ----

// normalize merges every pair k*c*floordiv(x, c) + k*floormod(x, c) of a form
// into k*x (exact for any non-zero c under floor semantics), and every pair
// k*c1*floormod(floordiv(x, c1) + r0, c2) + k*floormod(x, c1) into
// k*floormod(x + c1*r0, c1*c2) (c1, c2 > 0): the index of a fused loop
// split into its digits, put back together (a cooperative fetch's
// (t/3 % 3)*3 + t%3 is t % 9).
func (s *simplifier) normalize(f linearForm) linearForm {
	for range 64 { // each merge removes an atom; the bound only guards
		g, ok := s.mergeDivMod(f)
		if !ok {
			break
		}
		f = g
	}
	return f
}

// mergeDivMod merges one pair of f's terms k*floormod(x, c) and k*c*a,
// where a is the quotient's part of x: a = floordiv(x, c) makes k*x,
// a = floormod(floordiv(x, c) + r0, c2) makes k*floormod(x + c*r0, c*c2)
// (modChain).
func (s *simplifier) mergeDivMod(f linearForm) (linearForm, bool) {
	for _, t := range f.terms {
		m, ok := t.atom.(*Binary)
		if !ok || m.Op != FloorMod {
			continue
		}
		c, ok := IsConst(m.B)
		if !ok || c == 0 {
			continue
		}
		want, ok := mul64(t.coef, c)
		if !ok {
			continue
		}
		for _, u := range f.terms {
			d, ok := u.atom.(*Binary)
			if u.coef != want || !ok {
				continue
			}
			var by linearForm
			switch {
			case d.Op == FloorDiv && identical(d.A, m.A) && identical(d.B, m.B):
				by = s.linear(m.A)
			case d.Op == FloorMod && c > 0:
				if by, ok = s.modChain(m, d, c); !ok {
					continue
				}
			default:
				continue
			}
			g, ok1 := s.axpy(f, -t.coef, linearForm{terms: []term{{t.atom, t.text, 1}}})
			g, ok2 := s.axpy(g, -u.coef, linearForm{terms: []term{{u.atom, u.text, 1}}})
			g, ok3 := s.axpy(g, t.coef, by)
			if ok1 && ok2 && ok3 {
				return g, true
			}
		}
	}
	return f, false
}

// modChain returns floormod(x + c1*r0, c1*c2) for mod = floormod(x, c1)
// and outer = floormod(floordiv(x, c1) + r0, c2), c1, c2 > 0: the sum
// c1*outer + mod. With q = floordiv(x, c1): x = c1*q + floormod(x, c1), and
// floordiv(x + c1*r0, c1*c2) = floordiv(q + r0, c2), so both sides are
// x + c1*r0 - c1*c2*floordiv(q + r0, c2).
func (s *simplifier) modChain(mod, outer *Binary, c1 int64) (linearForm, bool) {
	c2, ok := IsConst(outer.B)
	if !ok || c2 <= 0 {
		return linearForm{}, false
	}
	y := s.linear(outer.A)
	if len(y.terms) != 1 || y.terms[0].coef != 1 {
		return linearForm{}, false
	}
	d, ok := y.terms[0].atom.(*Binary)
	if !ok || d.Op != FloorDiv || !identical(d.A, mod.A) || !identical(d.B, mod.B) {
		return linearForm{}, false
	}
	shift, ok1 := mul64(c1, y.c)
	c12, ok2 := mul64(c1, c2)
	x, ok3 := s.axpy(s.linear(mod.A), 1, constForm(shift))
	if !ok1 || !ok2 || !ok3 {
		return linearForm{}, false
	}
	return s.floorModPos(x, c12, nil)
}

// ---- floordiv and floormod ----

// floorDiv folds constants and applies the rules for positive constant
// divisors; other divisors keep the division whole. orig, if not nil, is
// the expression being simplified (see divModAtom).
func (s *simplifier) floorDiv(a, b linearForm, orig *Binary) (linearForm, bool) {
	c, ok := b.isConst()
	if !ok || c == 0 {
		return linearForm{}, false
	}
	if v, ok := a.isConst(); ok {
		q, ok := floorDiv64(v, c)
		return constForm(q), ok
	}
	switch {
	case c == -1:
		return s.scale(a, -1)
	case c < 0:
		return linearForm{}, false
	}
	return s.floorDivPos(a, c, orig)
}

func (s *simplifier) floorMod(a, b linearForm, orig *Binary) (linearForm, bool) {
	c, ok := b.isConst()
	if !ok || c == 0 {
		return linearForm{}, false
	}
	if v, ok := a.isConst(); ok {
		return constForm(floorMod64(v, c)), true
	}
	switch {
	case c == 1 || c == -1:
		return constForm(0), true
	case c < 0:
		return linearForm{}, false
	}
	return s.floorModPos(a, c, orig)
}

// splitMultiples writes a as c*q + r, where q takes the terms whose
// coefficient c divides and floordiv(a.c, c), and r keeps the other terms and
// floormod(a.c, c) ∈ [0, c). c > 0.
func (s *simplifier) splitMultiples(a linearForm, c int64) (q, r linearForm) {
	qc, _ := floorDiv64(a.c, c)
	q.c, r.c = qc, floorMod64(a.c, c)
	n := 0
	for _, t := range a.terms {
		if t.coef%c == 0 {
			n++
		}
	}
	if n == 0 {
		r.terms = a.terms
		return q, r
	}
	q.terms = s.newTerms(n)
	if n < len(a.terms) {
		r.terms = s.newTerms(len(a.terms) - n)
	}
	for _, t := range a.terms {
		if t.coef%c == 0 {
			q.terms = append(q.terms, term{t.atom, t.text, t.coef / c})
		} else {
			r.terms = append(r.terms, t)
		}
	}
	return q, r
}

// samePeriod reports whether r's bound lies within one period
// [k*c, k*c + c-1], and k.
func (s *simplifier) samePeriod(r linearForm, c int64) (int64, bool) {
	iv := s.boundForm(r)
	if iv.Lo == math.MinInt64 || iv.Hi == math.MaxInt64 {
		return 0, false
	}
	k1, _ := floorDiv64(iv.Lo, c)
	k2, _ := floorDiv64(iv.Hi, c)
	return k1, k1 == k2
}

// commonFactor returns gcd(c, coefficients of r's terms) and, when it is
// g > 1, r = g*y + r0 with r0 = floormod(r.c, g).
func (s *simplifier) commonFactor(r linearForm, c int64) (g int64, y linearForm, r0 int64) {
	gu := uint64(c)
	for _, t := range r.terms {
		gu = gcdU(gu, absU(t.coef))
	}
	g = int64(gu)
	if g <= 1 {
		return g, y, 0
	}
	r0 = floorMod64(r.c, g)
	y.c = (r.c - r0) / g
	y.terms = s.newTerms(len(r.terms))
	for _, t := range r.terms {
		y.terms = append(y.terms, term{t.atom, t.text, t.coef / g})
	}
	return g, y, r0
}

// nestedOp reports whether r is exactly 1*op(x, a) + r.c for a constant
// a > 0, and returns x and a.
func nestedOp(r linearForm, op BinOp) (Expr, int64, bool) {
	if len(r.terms) != 1 || r.terms[0].coef != 1 {
		return nil, 0, false
	}
	b, ok := r.terms[0].atom.(*Binary)
	if !ok || b.Op != op {
		return nil, 0, false
	}
	a, ok := IsConst(b.B)
	if !ok || a <= 0 {
		return nil, 0, false
	}
	return b.A, a, true
}

// floorDivPos simplifies floordiv(a, c) for c > 0:
//
//	floordiv(c*q + r, c)           = q + floordiv(r, c)
//	floordiv(r, c)                 = k        when bound(r) ⊆ [k*c, k*c+c-1]
//	floordiv(g*y + r0, g*c')       = floordiv(y, c')       0 ≤ r0 < g
//	floordiv(floordiv(x, a) + r0, c) = floordiv(x + a*r0, a*c)   a > 0
func (s *simplifier) floorDivPos(a linearForm, c int64, orig *Binary) (linearForm, bool) {
	if c == 1 {
		return a, true
	}
	q, r := s.splitMultiples(a, c)
	d, ok := s.divRemainder(r, c, orig)
	if !ok {
		return linearForm{}, false
	}
	f, ok := s.axpy(q, 1, d)
	return s.normalize(f), ok
}

// divRemainder is floordiv(r, c) for r as left by splitMultiples.
func (s *simplifier) divRemainder(r linearForm, c int64, orig *Binary) (linearForm, bool) {
	if v, ok := r.isConst(); ok {
		q, _ := floorDiv64(v, c)
		return constForm(q), true
	}
	if k, ok := s.samePeriod(r, c); ok {
		return constForm(k), true
	}
	if g, y, _ := s.commonFactor(r, c); g > 1 {
		return s.floorDivPos(y, c/g, orig)
	}
	if x, a, ok := nestedOp(r, FloorDiv); ok {
		ar0, ok1 := mul64(a, r.c)
		ac, ok2 := mul64(a, c)
		inner, ok3 := s.axpy(s.linear(x), 1, constForm(ar0))
		if ok1 && ok2 && ok3 {
			return s.floorDivPos(inner, ac, orig)
		}
	}
	return s.atomForm(divModAtom(FloorDiv, r, c, orig)), true
}

// floorModPos simplifies floormod(a, c) for c > 0:
//
//	floormod(c*q + r, c)     = floormod(r, c)
//	floormod(r, c)           = r - k*c   when bound(r) ⊆ [k*c, k*c+c-1]
//	floormod(g*y + r0, g*c') = g*floormod(y, c') + r0     0 ≤ r0 < g
//	floormod(floormod(x, a) + r0, c) = floormod(x + r0, c)  when c divides a
func (s *simplifier) floorModPos(a linearForm, c int64, orig *Binary) (linearForm, bool) {
	if c == 1 {
		return constForm(0), true
	}
	_, r := s.splitMultiples(a, c)
	if v, ok := r.isConst(); ok {
		return constForm(v), true
	}
	if k, ok := s.samePeriod(r, c); ok {
		kc, ok1 := mul64(k, c)
		f, ok2 := s.axpy(r, -1, constForm(kc))
		return f, ok1 && ok2
	}
	if g, y, r0 := s.commonFactor(r, c); g > 1 {
		m, ok := s.floorModPos(y, c/g, orig)
		if !ok {
			return linearForm{}, false
		}
		f, ok1 := s.scale(m, g)
		f, ok2 := s.axpy(f, 1, constForm(r0))
		return f, ok1 && ok2
	}
	if x, a, ok := nestedOp(r, FloorMod); ok && a%c == 0 {
		if inner, ok := s.axpy(s.linear(x), 1, constForm(r.c)); ok {
			return s.floorModPos(inner, c, orig)
		}
	}
	return s.atomForm(divModAtom(FloorMod, r, c, orig)), true
}

// divModAtom returns op(r, c) as an atom: orig itself when it is exactly
// that expression (simplified input is kept, not rebuilt), else a new node.
func divModAtom(op BinOp, r linearForm, c int64, orig *Binary) Expr {
	if orig != nil && orig.Op == op {
		if k, ok := IsConst(orig.B); ok && k == c && formIs(r, orig.A) {
			return orig
		}
	}
	return &Binary{op, buildForm(r), Const(c)}
}

// ---- min and max ----

// minMax flattens nested chains of the same operator, drops every operand
// that another provably dominates (bound of their difference), and sorts the
// rest; a single survivor is the result.
func (s *simplifier) minMax(op BinOp, a, b linearForm) linearForm {
	ops := append(s.chainOperands(op, a), s.chainOperands(op, b)...)
	alive := make([]bool, len(ops))
	for i := range alive {
		alive[i] = true
	}
	for i := range ops {
		for j := i + 1; j < len(ops) && alive[i]; j++ {
			if !alive[j] {
				continue
			}
			le, ge := s.order(ops[i], ops[j]) // ops[i] ≤ ops[j], ops[i] ≥ ops[j]
			if op == Max {
				le, ge = ge, le
			}
			// now le means "ops[i] wins", ge means "ops[j] wins"
			switch {
			case le:
				alive[j] = false
			case ge:
				alive[i] = false
			}
		}
	}
	var exprs []Expr
	var last linearForm
	for i, f := range ops {
		if alive[i] {
			exprs = append(exprs, buildForm(f))
			last = f
		}
	}
	if len(exprs) == 1 {
		return last
	}
	s.sortByKey(exprs)
	chain := exprs[0]
	for _, x := range exprs[1:] {
		chain = &Binary{op, chain, x}
	}
	return s.atomForm(chain)
}

// order reports whether a ≤ b and whether a ≥ b provably hold, from the
// bound of a - b (or of b - a when only that one fits in an int64).
func (s *simplifier) order(a, b linearForm) (le, ge bool) {
	if d, ok := s.axpy(a, -1, b); ok {
		iv := s.boundForm(d)
		return iv.Hi <= 0, iv.Lo >= 0
	}
	if d, ok := s.axpy(b, -1, a); ok {
		iv := s.boundForm(d)
		return iv.Lo >= 0, iv.Hi <= 0
	}
	return false, false
}

// chainOperands returns the operands of f when f is a single op-chain atom,
// else f itself.
func (s *simplifier) chainOperands(op BinOp, f linearForm) []linearForm {
	if len(f.terms) != 1 || f.terms[0].coef != 1 || f.c != 0 {
		return []linearForm{f}
	}
	if b, ok := f.terms[0].atom.(*Binary); !ok || b.Op != op {
		return []linearForm{f}
	}
	var out []linearForm
	for _, x := range flattenChain(op, f.terms[0].atom, nil) {
		out = append(out, s.linear(x))
	}
	return out
}

// ---- select, cast, load ----

func (s *simplifier) selectInt(n *Select) linearForm {
	c := s.simplify(n.Cond)
	switch {
	case IsTrue(c):
		return s.linear(n.T)
	case IsFalse(c):
		return s.linear(n.F)
	}
	t, f := s.simplify(n.T), s.simplify(n.F)
	if identical(t, f) {
		return s.linear(n.T)
	}
	if c == n.Cond && t == n.T && f == n.F {
		return s.atomForm(n)
	}
	return s.atomForm(&Select{c, t, f})
}

// selectExpr simplifies a float or boolean select.
func (s *simplifier) selectExpr(n *Select) Expr {
	c := s.simplify(n.Cond)
	switch {
	case IsTrue(c):
		return s.simplify(n.T)
	case IsFalse(c):
		return s.simplify(n.F)
	}
	t, f := s.simplify(n.T), s.simplify(n.F)
	if identical(t, f) {
		return t
	}
	if c == n.Cond && t == n.T && f == n.F {
		return n
	}
	return &Select{c, t, f}
}

func (s *simplifier) load(n *Load) *Load {
	if idx, changed := s.simplifyAll(n.Indices); changed {
		return &Load{n.Buf, idx}
	}
	return n
}

// simplifyAll simplifies each of es; changed is false, and the slice es
// itself, when every one was already simplified.
func (s *simplifier) simplifyAll(es []Expr) (out []Expr, changed bool) {
	for i, x := range es {
		y := s.simplify(x)
		if y != x && out == nil {
			out = make([]Expr, len(es))
			copy(out, es[:i])
		}
		if out != nil {
			out[i] = y
		}
	}
	if out == nil {
		return es, false
	}
	return out, true
}

// castInt simplifies a cast to Int: int→int is dropped; bool and float
// constants fold (floats truncate toward zero, as in C, when in range).
func (s *simplifier) castInt(n *Cast) linearForm {
	if n.X.Type() == Int {
		return s.linear(n.X)
	}
	x := s.simplify(n.X)
	switch {
	case IsTrue(x):
		return constForm(1)
	case IsFalse(x):
		return constForm(0)
	}
	if f, ok := x.(*FloatImm); ok {
		t := math.Trunc(float64(float32(f.V)))
		if t >= -(1<<63) && t < 1<<63 { // false for NaN and ±Inf
			return constForm(int64(t))
		}
	}
	if x == n.X {
		return s.atomForm(n)
	}
	return s.atomForm(&Cast{Int, x})
}

// castExpr simplifies a cast to Float32 or Bool.
func (s *simplifier) castExpr(n *Cast) Expr {
	x := s.simplify(n.X)
	if x.Type() == n.To {
		return x
	}
	switch n.To {
	case Float32:
		if v, ok := IsConst(x); ok {
			return &FloatImm{V: float64(float32(v))} // one rounding, as in C
		}
		if b, ok := boolConst(x); ok {
			if b {
				return F32(1)
			}
			return F32(0)
		}
	case Bool:
		if v, ok := IsConst(x); ok {
			return boolExpr(v != 0)
		}
		if f, ok := x.(*FloatImm); ok {
			return boolExpr(float32(f.V) != 0)
		}
	}
	if x == n.X {
		return n
	}
	return &Cast{n.To, x}
}

// ---- booleans ----

func (s *simplifier) simplifyBool(e Expr) Expr {
	switch n := e.(type) {
	case *Compare:
		return s.compare(n)
	case *And:
		a := s.simplify(n.A)
		if IsFalse(a) {
			return False
		}
		b := s.simplify(n.B)
		switch {
		case IsFalse(b):
			return False
		case IsTrue(a):
			return b
		case IsTrue(b), identical(a, b):
			return a
		}
		if a == n.A && b == n.B {
			return n
		}
		return &And{a, b}
	case *Or:
		a := s.simplify(n.A)
		if IsTrue(a) {
			return True
		}
		b := s.simplify(n.B)
		switch {
		case IsTrue(b):
			return True
		case IsFalse(a):
			return b
		case IsFalse(b), identical(a, b):
			return a
		}
		if a == n.A && b == n.B {
			return n
		}
		return &Or{a, b}
	case *Not:
		a := s.simplify(n.A)
		if v, ok := boolConst(a); ok {
			return boolExpr(!v)
		}
		switch a := a.(type) {
		case *Not:
			return a.A
		case *Compare:
			if a.A.Type() == Int { // exact for integers only (floats have NaN)
				return &Compare{negateCmp(a.Op), a.A, a.B}
			}
		}
		if a == n.A {
			return n
		}
		return &Not{a}
	case *Select:
		return s.selectExpr(n)
	case *Cast:
		return s.castExpr(n)
	case *Load:
		return s.load(n)
	case *Var:
		if r, ok := s.subst[n]; ok {
			return s.simplify(r)
		}
	}
	return e
}

// compare decides integer comparisons by the bound of the difference of the
// sides, folds float constants, and otherwise keeps the simplified sides.
func (s *simplifier) compare(n *Compare) Expr {
	switch n.A.Type() {
	case Int:
		a, b := s.linear(n.A), s.linear(n.B)
		if d, ok := s.axpy(a, -1, b); ok {
			if v, ok := decide(n.Op, s.boundForm(d)); ok {
				return boolExpr(v)
			}
		} else if d, ok := s.axpy(b, -1, a); ok { // b - a op' 0, op' mirrored
			if v, ok := decide(mirrorCmp(n.Op), s.boundForm(d)); ok {
				return boolExpr(v)
			}
		}
		x, y := s.simplify(n.A), s.simplify(n.B)
		if x == n.A && y == n.B {
			return n
		}
		return &Compare{n.Op, x, y}
	case Float32:
		a, b := s.simplify(n.A), s.simplify(n.B)
		x, xok := a.(*FloatImm)
		y, yok := b.(*FloatImm)
		if xok && yok {
			return boolExpr(cmpFloat(n.Op, float32(x.V), float32(y.V)))
		}
		if a == n.A && b == n.B {
			return n
		}
		return &Compare{n.Op, a, b}
	}
	a, b := s.simplify(n.A), s.simplify(n.B)
	x, xok := boolConst(a)
	y, yok := boolConst(b)
	if xok && yok && (n.Op == EQ || n.Op == NE) {
		return boolExpr((x == y) == (n.Op == EQ))
	}
	if a == n.A && b == n.B {
		return n
	}
	return &Compare{n.Op, a, b}
}

// decide reports whether d op 0 holds for every d in iv (value true), for
// none (value false), or neither (ok false).
func decide(op CmpOp, iv Interval) (value, ok bool) {
	// Unbounded ends are MinInt64/MaxInt64, which never satisfy the finite
	// tests below in the wrong direction.
	pos, nonneg := iv.Lo > 0, iv.Lo >= 0
	neg, nonpos := iv.Hi < 0, iv.Hi <= 0
	switch op {
	case LT:
		return neg, neg || nonneg
	case LE:
		return nonpos, nonpos || pos
	case GT:
		return pos, pos || nonpos
	case GE:
		return nonneg, nonneg || neg
	case EQ:
		zero := iv.Lo == 0 && iv.Hi == 0
		return zero, zero || pos || neg
	}
	zero := iv.Lo == 0 && iv.Hi == 0
	return !zero, zero || pos || neg
}

// ---- floats ----

func (s *simplifier) simplifyFloat(e Expr) Expr {
	switch n := e.(type) {
	case *Binary:
		return floatBinary(n, s.simplify(n.A), s.simplify(n.B))
	case *Select:
		return s.selectExpr(n)
	case *Cast:
		return s.castExpr(n)
	case *Load:
		return s.load(n)
	case *Call:
		args, changed := s.simplifyAll(n.Args)
		return foldCall(n, args, changed)
	case *Var:
		if r, ok := s.subst[n]; ok {
			return s.simplify(r)
		}
	}
	return e
}

// floatBinary folds n, with operands simplified to a and b: two float
// constants when the float32 result is finite, and the operations that are
// the identity for every float.
func floatBinary(n *Binary, a, b Expr) Expr {
	op := n.Op
	x, xok := a.(*FloatImm)
	y, yok := b.(*FloatImm)
	if xok && yok {
		if r, ok := foldFloat(op, float32(x.V), float32(y.V)); ok {
			return &FloatImm{V: float64(r)}
		}
	}
	is := func(f *FloatImm, ok bool, bits uint32) bool {
		return ok && math.Float32bits(float32(f.V)) == bits
	}
	const one, posZero, negZero = 0x3f800000, 0, 0x80000000
	switch {
	case op == Mul && is(y, yok, one), op == Div && is(y, yok, one),
		op == Sub && is(y, yok, posZero), op == Add && is(y, yok, negZero):
		return a
	case op == Mul && is(x, xok, one), op == Add && is(x, xok, negZero):
		return b
	}
	if a == n.A && b == n.B {
		return n
	}
	return &Binary{op, a, b}
}

func foldFloat(op BinOp, x, y float32) (float32, bool) {
	var r float32
	switch op {
	case Add:
		r = x + y
	case Sub:
		r = x - y
	case Mul:
		r = x * y
	case Div:
		r = x / y
	case Min, Max:
		// Not for -0 against +0: which one comes back differs by target.
		if x == y && math.Float32bits(x) != math.Float32bits(y) {
			return 0, false
		}
		if (op == Min) == (x < y) {
			r = x
		} else {
			r = y
		}
	default:
		return 0, false
	}
	return r, !math.IsInf(float64(r), 0) && !math.IsNaN(float64(r))
}

// foldCall folds the math functions whose float32 result is exact (fabs,
// floor, ceil) or correctly rounded in both Go and C (sqrt); the others
// (exp, log, ...) may differ by an ulp between libraries and are kept.
// args are n's arguments simplified; changed is false when they are n's.
func foldCall(n *Call, args []Expr, changed bool) Expr {
	fn := n.Fn
	if len(args) == 1 {
		if x, ok := args[0].(*FloatImm); ok {
			v := float64(float32(x.V))
			var r float64
			switch fn {
			case "fabs":
				r = math.Abs(v)
			case "floor":
				r = math.Floor(v)
			case "ceil":
				r = math.Ceil(v)
			case "sqrt":
				r = math.Sqrt(v)
			default:
				return newCall(n, args, changed)
			}
			r = float64(float32(r))
			if !math.IsInf(r, 0) && !math.IsNaN(r) {
				return &FloatImm{V: r}
			}
		}
	}
	return newCall(n, args, changed)
}

func newCall(n *Call, args []Expr, changed bool) Expr {
	if !changed {
		return n
	}
	return &Call{n.Fn, args}
}

// ---- statements ----

// SimplifyStmt simplifies every expression in s. While descending into a
// For it adds the loop variable's range [0, Extent-1] to dom (and a Let's
// variable the bound of its value). A For with Extent 1 is removed and its
// variable replaced by 0; an IfThenElse whose condition is proven true/false
// is replaced by the right branch; Lets of constants are substituted.
// Statements left with nothing to do (a For with Extent ≤ 0 or an empty body,
// an IfThenElse with no branch left) are dropped; if the whole of s goes, the
// result is an empty *Seq. Loop kinds are not changed otherwise.
func SimplifyStmt(s Stmt, dom map[*Var]Interval) Stmt {
	if s == nil {
		return nil
	}
	env := stmtEnv{dom: maps.Clone(dom), subst: map[*Var]Expr{}}
	if env.dom == nil {
		env.dom = map[*Var]Interval{}
	}
	env.s = newSimplifier(env.dom, nil) // in scope 0, like env
	defer env.s.release()
	if out := env.stmt(s); out != nil {
		return out
	}
	return &Seq{}
}

// stmtEnv is what SimplifyStmt knows at a statement: variable ranges and
// variables replaced by constants. The two maps belong to the SimplifyStmt
// call: a statement that binds a variable adds its entry for the duration of
// its body, in a new scope, and then restores the previous entry. The
// simplifier is shared by the whole statement tree; it keeps its memo tables
// from one expression to the next while they are in the same scope.
type stmtEnv struct {
	dom   map[*Var]Interval
	subst map[*Var]Expr
	scope int
	s     *simplifier
}

func (env stmtEnv) expr(e Expr) Expr {
	if e == nil {
		return nil
	}
	s := env.s
	if s.scope != env.scope {
		s.reset()
		s.dom, s.subst, s.scope = env.dom, env.subst, env.scope
	}
	s.root = e
	r := s.simplify(e)
	if s.tied { // results in the memo tables may hold for e only
		s.reset()
	}
	return r
}

// inRange simplifies body with v ranging over iv.
func (env stmtEnv) inRange(v *Var, iv Interval, body Stmt) Stmt {
	old, had := env.dom[v]
	env.dom[v] = iv
	out := env.newScope().stmt(body)
	if had {
		env.dom[v] = old
	} else {
		delete(env.dom, v)
	}
	return out
}

// withValue simplifies body with v replaced by val.
func (env stmtEnv) withValue(v *Var, val Expr, body Stmt) Stmt {
	old, had := env.subst[v]
	env.subst[v] = val
	out := env.newScope().stmt(body)
	if had {
		env.subst[v] = old
	} else {
		delete(env.subst, v)
	}
	return out
}

func (env stmtEnv) newScope() stmtEnv {
	env.s.scopes++
	env.scope = env.s.scopes
	return env
}

// stmt simplifies st; nil means it does nothing.
func (env stmtEnv) stmt(st Stmt) Stmt {
	switch n := st.(type) {
	case nil:
		return nil
	case *For:
		switch {
		case n.Extent <= 0:
			return nil
		case n.Extent == 1:
			return env.withValue(n.Var, Const(0), n.Body)
		}
		body := env.inRange(n.Var, Interval{0, int64(n.Extent) - 1}, n.Body)
		if body == nil {
			return nil
		}
		return &For{Var: n.Var, Extent: n.Extent, Kind: n.Kind, Thread: n.Thread, Body: body}
	case *Store:
		idx := make([]Expr, len(n.Indices))
		for i, x := range n.Indices {
			idx[i] = env.expr(x)
		}
		return &Store{Buf: n.Buf, Indices: idx, Value: env.expr(n.Value)}
	case *Allocate:
		body := env.stmt(n.Body)
		if body == nil {
			return nil
		}
		return &Allocate{Buf: n.Buf, Body: body}
	case *IfThenElse:
		c := env.expr(n.Cond)
		switch {
		case IsTrue(c):
			return env.stmt(n.Then)
		case IsFalse(c):
			return env.stmt(n.Else)
		}
		then, els := env.stmt(n.Then), env.stmt(n.Else)
		switch {
		case then == nil && els == nil:
			return nil
		case then == nil:
			return &IfThenElse{Cond: env.expr(NotE(c)), Then: els}
		}
		return &IfThenElse{Cond: c, Then: then, Else: els}
	case *Seq:
		stmts := make([]Stmt, 0, len(n.Stmts))
		for _, c := range n.Stmts {
			stmts = append(stmts, env.stmt(c))
		}
		out := SeqOf(stmts...)
		if q, ok := out.(*Seq); ok && len(q.Stmts) == 0 {
			return nil
		}
		return out
	case *Let:
		v := env.expr(n.Value)
		switch v.(type) {
		case *IntImm, *FloatImm:
			return env.withValue(n.Var, v, n.Body)
		}
		if IsTrue(v) || IsFalse(v) {
			return env.withValue(n.Var, v, n.Body)
		}
		var body Stmt
		if n.Var.T == Int && v.Type() == Int {
			body = env.inRange(n.Var, ConstBound(v, env.dom), n.Body)
		} else {
			body = env.stmt(n.Body)
		}
		if body == nil {
			return nil
		}
		return &Let{Var: n.Var, Value: v, Body: body}
	case *Pragma:
		body := env.stmt(n.Body)
		if body == nil {
			return nil
		}
		return &Pragma{Key: n.Key, Value: n.Value, Body: body}
	case *Barrier:
		return n
	}
	return st
}
