// Interval analysis: the Interval type and its saturating arithmetic,
// ConstBound (constant bounds of an integer expression) and EvalRange
// (symbolic bounds over a set of ranging variables).

package tir

import "math"

// Interval is a closed integer interval [Lo, Hi]. Unbounded ends use
// math.MinInt64 / math.MaxInt64.
//
// Lo == math.MinInt64 means "no lower bound" and Hi == math.MaxInt64 means "no
// upper bound". Results that do not fit in an int64 saturate toward the
// weaker bound, so an Interval is always sound: a Lo of math.MaxInt64 reads as
// "at least math.MaxInt64", a Hi of math.MinInt64 as "at most math.MinInt64".
type Interval struct{ Lo, Hi int64 }

// Everything returns the unbounded interval [MinInt64, MaxInt64].
func Everything() Interval { return Interval{math.MinInt64, math.MaxInt64} }

// Point returns the interval [v, v].
func Point(v int64) Interval { return Interval{v, v} }

// ConstBound returns bounds of an integer-typed expression, given intervals
// for variables (a variable missing from dom is unbounded). The bound is sound
// (never too narrow), and tight for affine expressions (it is computed on the
// canonical affine form, so x - x is exactly 0), floordiv/floormod by positive
// constants, min/max, select (union of branches) and products with constants.
// Nothing overflows silently: ends that leave the int64 range saturate to
// unbounded. A non-integer expression gets Everything().
func ConstBound(e Expr, dom map[*Var]Interval) Interval {
	if e == nil || e.Type() != Int {
		return Everything()
	}
	s := newSimplifier(dom, e)
	defer s.release()
	return s.boundForm(s.linear(e))
}

// boundForm bounds a linear form: the sum of coef × bound(atom), plus the
// constant. Atoms are treated as independent.
func (s *simplifier) boundForm(f linearForm) Interval {
	iv := Point(f.c)
	for _, t := range f.terms {
		iv = ivAdd(iv, ivScale(s.boundExpr(t.atom), t.coef))
	}
	return iv
}

// boundExpr bounds an already simplified integer expression by interval
// arithmetic over its structure. On a canonical form every atom occurs once,
// so this is as tight as boundForm.
func (s *simplifier) boundExpr(e Expr) Interval {
	switch n := e.(type) { // leaves are cheaper to redo than to look up
	case *IntImm:
		return Point(n.V)
	case *Var:
		if d, ok := s.dom[n]; ok && n.T == Int {
			return d
		}
		return Everything()
	}
	if iv, ok := s.bounds[e]; ok {
		return iv
	}
	iv := Everything()
	switch n := e.(type) {
	case *Binary:
		a, b := s.boundExpr(n.A), s.boundExpr(n.B)
		switch n.Op {
		case Add:
			iv = ivAdd(a, b)
		case Sub:
			iv = ivAdd(a, ivScale(b, -1))
		case Mul:
			iv = ivMul(a, b)
		case FloorDiv:
			iv = ivFloorDiv(a, b)
		case FloorMod:
			iv = ivFloorMod(a, b)
		case Min:
			iv = Interval{min(a.Lo, b.Lo), min(a.Hi, b.Hi)}
		case Max:
			iv = Interval{max(a.Lo, b.Lo), max(a.Hi, b.Hi)}
		}
	case *Select:
		switch {
		case IsTrue(n.Cond):
			iv = s.boundExpr(n.T)
		case IsFalse(n.Cond):
			iv = s.boundExpr(n.F)
		default:
			iv = ivUnion(s.boundExpr(n.T), s.boundExpr(n.F))
		}
	case *Cast:
		switch n.X.Type() {
		case Int:
			iv = s.boundExpr(n.X)
		case Bool:
			iv = Interval{0, 1}
		}
	}
	memoize(&s.bounds, e, iv)
	return iv
}

// ---- saturating interval arithmetic ----

// ext is an extended integer: -∞, a finite int64, or +∞. Interval ends are
// converted to ext (a Lo of MinInt64 is -∞, a Hi of MaxInt64 is +∞), combined,
// and converted back with clamping; clamping always weakens a bound.
type ext struct {
	inf int8 // -1: -∞, +1: +∞, 0: the finite value v
	v   int64
}

func fin(v int64) ext { return ext{v: v} }

func loExt(x int64) ext {
	if x == math.MinInt64 {
		return ext{inf: -1}
	}
	return fin(x)
}

func hiExt(x int64) ext {
	if x == math.MaxInt64 {
		return ext{inf: 1}
	}
	return fin(x)
}

func (e ext) clamp() int64 {
	switch e.inf {
	case -1:
		return math.MinInt64
	case 1:
		return math.MaxInt64
	}
	return e.v
}

func (e ext) sign() int {
	switch {
	case e.inf != 0:
		return int(e.inf)
	case e.v > 0:
		return 1
	case e.v < 0:
		return -1
	}
	return 0
}

func (e ext) less(f ext) bool {
	if e.inf != f.inf {
		return e.inf < f.inf
	}
	return e.inf == 0 && e.v < f.v
}

func extMin(xs ...ext) ext {
	m := xs[0]
	for _, x := range xs[1:] {
		if x.less(m) {
			m = x
		}
	}
	return m
}

func extMax(xs ...ext) ext {
	m := xs[0]
	for _, x := range xs[1:] {
		if m.less(x) {
			m = x
		}
	}
	return m
}

func extNeg(e ext) ext {
	if e.inf != 0 {
		return ext{inf: -e.inf}
	}
	if e.v == math.MinInt64 {
		return ext{inf: 1}
	}
	return fin(-e.v)
}

// extAdd adds; opposite infinities (which the callers never produce) resolve
// to dir, the weak direction of the bound being computed.
func extAdd(a, b ext, dir int8) ext {
	switch {
	case a.inf != 0 && b.inf != 0 && a.inf != b.inf:
		return ext{inf: dir}
	case a.inf != 0:
		return a
	case b.inf != 0:
		return b
	}
	if s, ok := add64(a.v, b.v); ok {
		return fin(s)
	}
	return ext{inf: int8(a.sign())}
}

// extMul multiplies; 0 × ∞ is 0 because the infinite end stands for finite
// values.
func extMul(a, b ext) ext {
	sa, sb := a.sign(), b.sign()
	if sa == 0 || sb == 0 {
		return fin(0)
	}
	if a.inf != 0 || b.inf != 0 {
		return ext{inf: int8(sa * sb)}
	}
	if p, ok := mul64(a.v, b.v); ok {
		return fin(p)
	}
	return ext{inf: int8(sa * sb)}
}

// extFloorDiv divides by a positive d (finite, or +∞ meaning the limit).
func extFloorDiv(x, d ext) ext {
	if d.inf > 0 {
		switch {
		case x.inf != 0:
			return x
		case x.v >= 0:
			return fin(0)
		}
		return fin(-1)
	}
	if x.inf != 0 {
		return x
	}
	q, _ := floorDiv64(x.v, d.v) // d > 0: cannot overflow
	return fin(q)
}

func ivAdd(a, b Interval) Interval {
	return Interval{
		extAdd(loExt(a.Lo), loExt(b.Lo), -1).clamp(),
		extAdd(hiExt(a.Hi), hiExt(b.Hi), 1).clamp(),
	}
}

func ivScale(a Interval, k int64) Interval {
	x, y := extMul(loExt(a.Lo), fin(k)), extMul(hiExt(a.Hi), fin(k))
	return Interval{extMin(x, y).clamp(), extMax(x, y).clamp()}
}

func ivMul(a, b Interval) Interval {
	al, ah, bl, bh := loExt(a.Lo), hiExt(a.Hi), loExt(b.Lo), hiExt(b.Hi)
	c := []ext{extMul(al, bl), extMul(al, bh), extMul(ah, bl), extMul(ah, bh)}
	return Interval{extMin(c...).clamp(), extMax(c...).clamp()}
}

func ivUnion(a, b Interval) Interval {
	return Interval{min(a.Lo, b.Lo), max(a.Hi, b.Hi)}
}

// ivFloorDiv bounds floordiv(x, d) for x in a and d in b. floor(x/d) grows
// with x for d > 0; in d it falls when x ≥ 0 and rises when x < 0, so the
// extremes sit at the corners. A negative divisor is reduced to a positive one
// by floordiv(x, d) = floordiv(-x, -d); a divisor range holding 0 gives
// Everything.
func ivFloorDiv(a, b Interval) Interval {
	switch {
	case b.Lo > 0:
		x1, x2 := loExt(a.Lo), hiExt(a.Hi)
		d1, d2 := fin(b.Lo), hiExt(b.Hi)
		var lo, hi ext
		if x1.sign() >= 0 {
			lo = extFloorDiv(x1, d2)
		} else {
			lo = extFloorDiv(x1, d1)
		}
		if x2.sign() >= 0 {
			hi = extFloorDiv(x2, d1)
		} else {
			hi = extFloorDiv(x2, d2)
		}
		return Interval{lo.clamp(), hi.clamp()}
	case b.Hi < 0:
		return ivFloorDiv(ivScale(a, -1), ivScale(b, -1))
	}
	return Everything()
}

// ivFloorMod bounds floormod(x, d) for x in a and d in b: within one period of
// a constant divisor it is x minus a constant; otherwise [0, d-1] for positive
// d (also at most x when x ≥ 0), [d+1, 0] for negative d.
func ivFloorMod(a, b Interval) Interval {
	finite := a.Lo != math.MinInt64 && a.Hi != math.MaxInt64
	point := b.Lo == b.Hi && b.Lo != math.MinInt64 && b.Hi != math.MaxInt64 // saturated ends are not points
	if point && b.Lo != 0 && finite {
		c := b.Lo
		q1, ok1 := floorDiv64(a.Lo, c)
		q2, ok2 := floorDiv64(a.Hi, c)
		if ok1 && ok2 && q1 == q2 {
			return Interval{floorMod64(a.Lo, c), floorMod64(a.Hi, c)}
		}
	}
	switch {
	case b.Lo > 0:
		if a.Lo >= 0 && a.Hi < b.Lo {
			return a
		}
		hi := extAdd(hiExt(b.Hi), fin(-1), 1)
		if a.Lo >= 0 {
			hi = extMin(hi, hiExt(a.Hi))
		}
		return Interval{0, hi.clamp()}
	case b.Hi < 0:
		return Interval{extAdd(loExt(b.Lo), fin(1), -1).clamp(), 0}
	}
	return Everything()
}

// ---- checked int64 helpers ----

func add64(a, b int64) (int64, bool) {
	s := a + b
	if (a > 0 && b > 0 && s < 0) || (a < 0 && b < 0 && s >= 0) {
		return 0, false
	}
	return s, true
}

func mul64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	if (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	p := a * b
	if p/b != a {
		return 0, false
	}
	return p, true
}

// floorDiv64 divides rounding toward negative infinity; ok is false when b is
// 0 or the quotient overflows (MinInt64 / -1).
func floorDiv64(a, b int64) (int64, bool) {
	if b == 0 || (a == math.MinInt64 && b == -1) {
		return 0, false
	}
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q, true
}

// floorMod64 is a - b*floorDiv64(a, b): the remainder with the sign of b.
// b must not be 0.
func floorMod64(a, b int64) int64 {
	r := a % b // Go defines MinInt64 % -1 == 0
	if r != 0 && (r < 0) != (b < 0) {
		r += b
	}
	return r
}

func absU(v int64) uint64 {
	if v < 0 {
		return uint64(-(v + 1)) + 1
	}
	return uint64(v)
}

// GCD returns the greatest common divisor of |a| and |b| (|b| when a is 0).
func GCD(a, b int64) int64 {
	return int64(gcdU(absU(a), absU(b)))
}

func gcdU(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// ---- EvalRange ----

// EvalRange returns symbolic bounds lo ≤ e ≤ hi over all values of the
// variables in ranging (each over its interval), as expressions in the
// remaining (fixed, symbolic) variables, valid whenever the fixed variables
// lie within fixed (a variable in neither map is fixed and unbounded).
//
// It is exact for expressions affine in the ranging variables (the sign of
// each coefficient picks the end); floordiv by a positive constant and
// min/max recurse on their operands' ranges (they are monotone); floormod(x, c)
// uses x's range when that range provably stays within one period of c, and
// [0, c-1] (or the tighter constant bound) otherwise; select, loads, products
// and anything else fall back to the constant bound under ranging ∪ fixed.
// An unbounded end is returned as Const(math.MinInt64) / Const(math.MaxInt64).
//
// When e is affine in the ranging variables, the fixed part appears
// identically in lo and hi, so Simplify(hi - lo) is a constant. Returned
// expressions are simplified.
func EvalRange(e Expr, ranging map[*Var]Interval, fixed map[*Var]Interval) (lo, hi Expr) {
	if e == nil || e.Type() != Int {
		return Const(math.MinInt64), Const(math.MaxInt64)
	}
	dom := make(map[*Var]Interval, len(ranging)+len(fixed))
	for v, iv := range fixed {
		dom[v] = iv
	}
	for v, iv := range ranging {
		dom[v] = iv
	}
	r := &ranger{s: newSimplifier(dom, e), ranging: ranging, memo: map[Expr]bool{}}
	defer r.s.release()
	l, h := r.form(r.s.linear(e))
	lo, hi = Const(math.MinInt64), Const(math.MaxInt64)
	if !l.inf {
		lo = buildForm(l.f)
	}
	if !h.inf {
		hi = buildForm(h.f)
	}
	return lo, hi
}

// symBound is one end of a symbolic range: a linear form in the fixed
// variables, or unbounded.
type symBound struct {
	f   linearForm
	inf bool
}

var unbounded = symBound{inf: true}

type ranger struct {
	s       *simplifier
	ranging map[*Var]Interval
	memo    map[Expr]bool
}

func (r *ranger) mentionsRanging(e Expr) bool {
	return mentions(e, func(v *Var) bool { _, ok := r.ranging[v]; return ok }, r.memo)
}

// plus returns a + k*b; overflow makes the end unbounded.
func (r *ranger) plus(a symBound, k int64, b symBound) symBound {
	if a.inf || b.inf {
		return unbounded
	}
	f, ok := r.s.axpy(a.f, k, b.f)
	if !ok {
		return unbounded
	}
	return symBound{f: r.s.normalize(f)}
}

// form ranges a linear form: fixed atoms go to both ends unchanged; each
// ranging atom contributes its low or high end according to its sign.
func (r *ranger) form(f linearForm) (lo, hi symBound) {
	lo = symBound{f: constForm(f.c)}
	hi = lo
	for _, t := range f.terms {
		one := symBound{f: linearForm{terms: []term{{t.atom, t.text, 1}}}}
		if !r.mentionsRanging(t.atom) {
			lo, hi = r.plus(lo, t.coef, one), r.plus(hi, t.coef, one)
			continue
		}
		al, ah := r.atom(t.atom)
		if t.coef > 0 {
			lo, hi = r.plus(lo, t.coef, al), r.plus(hi, t.coef, ah)
		} else {
			lo, hi = r.plus(lo, t.coef, ah), r.plus(hi, t.coef, al)
		}
	}
	return lo, hi
}

// atom ranges one atom that mentions a ranging variable.
func (r *ranger) atom(a Expr) (lo, hi symBound) {
	switch n := a.(type) {
	case *Var:
		iv := r.ranging[n]
		return r.constEnd(iv.Lo, math.MinInt64), r.constEnd(iv.Hi, math.MaxInt64)
	case *Binary:
		c, isConst := IsConst(n.B)
		switch {
		case n.Op == FloorDiv && isConst && c > 0:
			xl, xh := r.form(r.s.linear(n.A))
			return r.orConst(a, r.divEnd(xl, c), r.divEnd(xh, c))
		case n.Op == FloorMod && isConst && c > 0:
			if lo, hi, ok := r.modRange(n.A, c); ok {
				return lo, hi
			}
		case n.Op == Min || n.Op == Max:
			lo, hi := r.minMaxRange(n.Op, a)
			return r.orConst(a, lo, hi)
		}
	}
	return r.orConst(a, unbounded, unbounded)
}

func (r *ranger) constEnd(v, unboundedValue int64) symBound {
	if v == unboundedValue {
		return unbounded
	}
	return symBound{f: constForm(v)}
}

// orConst replaces unbounded ends by the atom's constant bound, when finite.
func (r *ranger) orConst(a Expr, lo, hi symBound) (symBound, symBound) {
	if lo.inf || hi.inf {
		iv := r.s.boundExpr(a)
		if lo.inf {
			lo = r.constEnd(iv.Lo, math.MinInt64)
		}
		if hi.inf {
			hi = r.constEnd(iv.Hi, math.MaxInt64)
		}
	}
	return lo, hi
}

func (r *ranger) divEnd(x symBound, c int64) symBound {
	if x.inf {
		return unbounded
	}
	f, ok := r.s.floorDivPos(x.f, c, nil)
	if !ok {
		return unbounded
	}
	return symBound{f: f}
}

// modRange ranges floormod(x, c) when x's range [xl, xh] provably lies within
// one period: floordiv(xl, c) == floordiv(xh, c) simplifies to true. Then
// floormod(x, c) = x - c*k for one k, so it spans [floormod(xl, c),
// floormod(xl, c) + (xh - xl)].
func (r *ranger) modRange(x Expr, c int64) (lo, hi symBound, ok bool) {
	xl, xh := r.form(r.s.linear(x))
	if xl.inf || xh.inf {
		return lo, hi, false
	}
	ql, ok1 := r.s.floorDivPos(xl.f, c, nil)
	qh, ok2 := r.s.floorDivPos(xh.f, c, nil)
	if !ok1 || !ok2 {
		return lo, hi, false
	}
	if d, ok := r.s.axpy(qh, -1, ql); !ok || len(d.terms) != 0 || d.c != 0 {
		return lo, hi, false
	}
	ml, ok1 := r.s.floorModPos(xl.f, c, nil)
	width, ok2 := r.s.axpy(xh.f, -1, xl.f)
	if !ok1 || !ok2 {
		return lo, hi, false
	}
	lo = symBound{f: ml}
	return lo, r.plus(lo, 1, symBound{f: width}), true
}

// minMaxRange ranges a (flattened) min or max chain operand by operand: both
// are monotone in every operand.
func (r *ranger) minMaxRange(op BinOp, a Expr) (lo, hi symBound) {
	leaves := flattenChain(op, a, nil)
	for i, leaf := range leaves {
		l, h := r.form(r.s.linear(leaf))
		if i == 0 {
			lo, hi = l, h
			continue
		}
		lo, hi = r.combine(op, lo, l, -1), r.combine(op, hi, h, 1)
	}
	return lo, hi
}

// combine takes min or max of two ends of direction dir (-1 low, +1 high).
// An unbounded end is -∞ when dir < 0 and +∞ when dir > 0.
func (r *ranger) combine(op BinOp, a, b symBound, dir int) symBound {
	// min(-∞, b) = -∞, max(-∞, b) = b; min(+∞, b) = b, max(+∞, b) = +∞.
	absorbing := (op == Min) == (dir < 0)
	switch {
	case a.inf && b.inf:
		return unbounded
	case a.inf || b.inf:
		if absorbing {
			return unbounded
		}
		if a.inf {
			return b
		}
		return a
	}
	return symBound{f: r.s.minMax(op, a.f, b.f)}
}
