// Property tests of the arithmetic layer: a reference evaluator over
// mathematical integers (math/big), a generator of random integer expression
// trees, and the checks shared with FuzzSimplify: Simplify keeps the value at
// every point of the domain, ConstBound / EvalRange / Prove / LinearIn are
// sound, and Simplify is idempotent.

package tir

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// ---- reference evaluator ----

type evalPoint map[*Var]int64

// propBuf is the integer buffer loads read in generated expressions; its
// element at any index is propLoadValue(index).
var propBuf = &Buffer{Name: "B", DType: Int, Shape: []int{16}}

func propLoadValue(idx []*big.Int) *big.Int {
	acc := big.NewInt(0)
	for k, x := range idx {
		t := new(big.Int).Mul(x, big.NewInt(int64(7+6*k)))
		acc.Add(acc, t)
	}
	acc.Add(acc, big.NewInt(3))
	_, m := bigFloorDivMod(acc, big.NewInt(11))
	return m.Sub(m, big.NewInt(5))
}

func bigFloorDivMod(a, b *big.Int) (q, m *big.Int) {
	q, m = new(big.Int).QuoRem(a, b, new(big.Int))
	if m.Sign() != 0 && (m.Sign() < 0) != (b.Sign() < 0) {
		q.Sub(q, big.NewInt(1))
		m.Add(m, b)
	}
	return q, m
}

// evalInt evaluates an integer expression; ok is false where it is undefined
// (division by zero).
func evalInt(e Expr, p evalPoint) (*big.Int, bool) {
	switch n := e.(type) {
	case *IntImm:
		return big.NewInt(n.V), true
	case *Var:
		v, ok := p[n]
		if !ok {
			panic("unbound variable " + n.Name)
		}
		return big.NewInt(v), true
	case *Binary:
		a, ok1 := evalInt(n.A, p)
		if !ok1 {
			return nil, false
		}
		b, ok2 := evalInt(n.B, p)
		if !ok2 {
			return nil, false
		}
		r := new(big.Int)
		switch n.Op {
		case Add:
			return r.Add(a, b), true
		case Sub:
			return r.Sub(a, b), true
		case Mul:
			return r.Mul(a, b), true
		case FloorDiv, FloorMod:
			if b.Sign() == 0 {
				return nil, false
			}
			q, m := bigFloorDivMod(a, b)
			if n.Op == FloorDiv {
				return q, true
			}
			return m, true
		case Min:
			if a.Cmp(b) <= 0 {
				return a, true
			}
			return b, true
		case Max:
			if a.Cmp(b) >= 0 {
				return a, true
			}
			return b, true
		}
	case *Select:
		c, ok := evalBool(n.Cond, p)
		if !ok {
			return nil, false
		}
		if c {
			return evalInt(n.T, p)
		}
		return evalInt(n.F, p)
	case *Cast:
		switch n.X.Type() {
		case Int:
			return evalInt(n.X, p)
		case Bool:
			c, ok := evalBool(n.X, p)
			if !ok {
				return nil, false
			}
			if c {
				return big.NewInt(1), true
			}
			return big.NewInt(0), true
		}
	case *Load:
		idx := make([]*big.Int, len(n.Indices))
		for i, x := range n.Indices {
			v, ok := evalInt(x, p)
			if !ok {
				return nil, false
			}
			idx[i] = v
		}
		return propLoadValue(idx), true
	}
	panic(fmt.Sprintf("evalInt: unexpected %T %s", e, ExprString(e)))
}

// evalBool evaluates a condition; && and || short-circuit as in C.
func evalBool(e Expr, p evalPoint) (bool, bool) {
	switch n := e.(type) {
	case *Compare:
		a, ok1 := evalInt(n.A, p)
		if !ok1 {
			return false, false
		}
		b, ok2 := evalInt(n.B, p)
		if !ok2 {
			return false, false
		}
		c := a.Cmp(b)
		switch n.Op {
		case EQ:
			return c == 0, true
		case NE:
			return c != 0, true
		case LT:
			return c < 0, true
		case LE:
			return c <= 0, true
		case GT:
			return c > 0, true
		}
		return c >= 0, true
	case *And:
		a, ok := evalBool(n.A, p)
		if !ok || !a {
			return false, ok
		}
		return evalBool(n.B, p)
	case *Or:
		a, ok := evalBool(n.A, p)
		if !ok || a {
			return a, ok
		}
		return evalBool(n.B, p)
	case *Not:
		a, ok := evalBool(n.A, p)
		return !a, ok
	case *Select:
		c, ok := evalBool(n.Cond, p)
		if !ok {
			return false, false
		}
		if c {
			return evalBool(n.T, p)
		}
		return evalBool(n.F, p)
	}
	panic(fmt.Sprintf("evalBool: unexpected %T %s", e, ExprString(e)))
}

// allPoints enumerates every assignment of vars over dom.
func allPoints(vars []*Var, dom map[*Var]Interval) []evalPoint {
	out := []evalPoint{{}}
	for _, v := range vars {
		iv := dom[v]
		var next []evalPoint
		for _, p := range out {
			for x := iv.Lo; x <= iv.Hi; x++ {
				q := evalPoint{v: x}
				for k, y := range p {
					q[k] = y
				}
				next = append(next, q)
			}
		}
		out = next
	}
	return out
}

func inBound(v *big.Int, iv Interval) bool {
	if iv.Lo != math.MinInt64 && v.Cmp(big.NewInt(iv.Lo)) < 0 {
		return false
	}
	if iv.Hi != math.MaxInt64 && v.Cmp(big.NewInt(iv.Hi)) > 0 {
		return false
	}
	return true
}

// ---- random expressions ----

// propChooser is the source of choices: math/rand for the random test, the fuzz
// input for FuzzSimplify.
type propChooser interface{ IntN(n int) int }

type byteChoice struct {
	data []byte
	i    int
}

func (b *byteChoice) IntN(n int) int {
	if b.i >= len(b.data) {
		return 0
	}
	c := int(b.data[b.i])
	b.i++
	return c % n
}

type propGen struct {
	r    propChooser
	vars []*Var
	pool []Expr // earlier subexpressions, reused to make shared atoms
}

var bigConsts = []int64{math.MaxInt64, math.MinInt64, 1 << 62, -(1 << 62), math.MaxInt64 - 1, math.MinInt64 + 1}

func (g *propGen) constant() int64 {
	switch g.r.IntN(40) {
	case 0:
		return bigConsts[g.r.IntN(len(bigConsts))]
	case 1, 2:
		return int64(g.r.IntN(201)) - 100
	}
	return int64(g.r.IntN(19)) - 9
}

func (g *propGen) leaf() Expr {
	if g.r.IntN(10) < 7 {
		return g.vars[g.r.IntN(len(g.vars))]
	}
	return Const(g.constant())
}

func (g *propGen) divisor(depth int) Expr {
	switch k := g.r.IntN(20); {
	case k < 14:
		return Const([]int64{1, 2, 2, 3, 4, 4, 5, 6, 8, 16}[g.r.IntN(10)])
	case k < 17:
		return Const([]int64{-1, -2, -3, -4}[g.r.IntN(4)])
	case k < 18:
		return Const(0)
	}
	return g.intExpr(depth - 1)
}

func (g *propGen) intExpr(depth int) Expr {
	if depth <= 0 || g.r.IntN(6) == 0 {
		return g.leaf()
	}
	e := g.intNode(depth)
	g.pool = append(g.pool, e)
	return e
}

func (g *propGen) intNode(depth int) Expr {
	d := depth - 1
	switch g.r.IntN(19) {
	case 0, 1, 2:
		return AddE(g.intExpr(d), g.intExpr(d))
	case 3:
		return SubE(g.intExpr(d), g.intExpr(d))
	case 4, 5:
		return MulE(g.intExpr(d), Const(g.constant()))
	case 6:
		return MulE(g.intExpr(d-1), g.intExpr(d-1))
	case 7, 8:
		return FloorDivE(g.intExpr(d), g.divisor(depth))
	case 9, 10:
		return FloorModE(g.intExpr(d), g.divisor(depth))
	case 11:
		return MinE(g.intExpr(d), g.intExpr(d))
	case 12:
		return MaxE(g.intExpr(d), g.intExpr(d))
	case 13:
		return SelectE(g.boolExpr(d), g.intExpr(d), g.intExpr(d))
	case 14:
		return &Load{Buf: propBuf, Indices: []Expr{g.intExpr(d)}}
	case 15:
		return &Cast{To: Int, X: g.boolExpr(d)}
	case 16:
		if len(g.pool) > 0 {
			return g.pool[g.r.IntN(len(g.pool))]
		}
		return g.leaf()
	case 17:
		// k*c1*floormod(floordiv(x, c1) + r0, c2) + k*floormod(x, c1):
		// a fused index's digits put back together
		x := g.intExpr(d)
		c1, c2 := Const(int64(g.r.IntN(6)+2)), Const(int64(g.r.IntN(6)+2))
		k, r0 := int64(g.r.IntN(5))-2, Const(int64(g.r.IntN(7))-3)
		return AddE(MulE(FloorModE(AddE(FloorDivE(x, c1), r0), c2), Const(k*c1.V)), MulE(FloorModE(x, c1), Const(k)))
	}
	// k*c*floordiv(x, c) + k*floormod(x, c) (+ y): the div/mod recombination
	x := g.intExpr(d)
	c := Const(int64(g.r.IntN(6) + 2))
	k := int64(g.r.IntN(5)) - 2
	e := AddE(MulE(FloorDivE(x, c), Const(k*c.V)), MulE(FloorModE(x, c), Const(k)))
	if g.r.IntN(2) == 0 {
		e = AddE(g.intExpr(d), e)
	}
	return e
}

func (g *propGen) boolExpr(depth int) Expr {
	if depth <= 0 {
		return Cmp(CmpOp(g.r.IntN(6)), g.leaf(), g.leaf())
	}
	d := depth - 1
	switch g.r.IntN(8) {
	case 0:
		return AndE(g.boolExpr(d), g.boolExpr(d))
	case 1:
		return OrE(g.boolExpr(d), g.boolExpr(d))
	case 2:
		return NotE(g.boolExpr(d))
	}
	return Cmp(CmpOp(g.r.IntN(6)), g.intExpr(d), g.intExpr(d))
}

// ---- the checks ----

// checkProps runs every property on one integer expression e and one condition
// b over vars ranging in dom; pick chooses the ranging variables of EvalRange.
func checkProps(t testing.TB, e, b Expr, vars []*Var, dom map[*Var]Interval, pick propChooser) {
	t.Helper()
	pts := allPoints(vars, dom)
	desc := func() string {
		s := ExprString(e) + " over"
		for _, v := range vars {
			s += fmt.Sprintf(" %s%p∈[%d,%d]", v.Name, v, dom[v].Lo, dom[v].Hi)
		}
		return s
	}

	simplified := Simplify(e, dom)
	free := Simplify(e, nil)
	// Idempotence holds when variable names are distinct and constants stay
	// far from int64 overflow. Atoms that print alike are ordered by first
	// appearance in the input, which the output of Simplify may not
	// preserve; and a rule blocked by an overflow on one pass may apply on
	// the next, once constants have been regrouped.
	distinct := true
	for i := range vars {
		for j := range i {
			distinct = distinct && vars[i].Name != vars[j].Name
		}
	}
	WalkExpr(e, func(x Expr) bool {
		if v, ok := IsConst(x); ok && (v > 1<<40 || v < -(1<<40)) {
			distinct = false
		}
		return distinct
	})
	if again := Simplify(simplified, dom); distinct && ExprString(again) != ExprString(simplified) {
		t.Errorf("Simplify not idempotent on %s:\n once:  %s\n twice: %s", desc(), ExprString(simplified), ExprString(again))
	}
	if again := Simplify(free, nil); distinct && ExprString(again) != ExprString(free) {
		t.Errorf("Simplify(nil dom) not idempotent on %s:\n once:  %s\n twice: %s", desc(), ExprString(free), ExprString(again))
	}
	bound := ConstBound(e, dom)
	// A domain missing the last variable: that one is unbounded.
	partial := map[*Var]Interval{}
	for _, v := range vars[:len(vars)-1] {
		partial[v] = dom[v]
	}
	partialSimplified := Simplify(e, partial)
	partialBound := ConstBound(e, partial)
	for _, p := range pts {
		want, ok := evalInt(e, p)
		if !ok {
			continue
		}
		for _, s := range []Expr{simplified, free, partialSimplified} {
			got, ok := evalInt(s, p)
			if !ok || got.Cmp(want) != 0 {
				t.Fatalf("Simplify changed the value of %s\n simplified: %s\n at %v: want %v, got %v (defined %v)",
					desc(), ExprString(s), p, want, got, ok)
			}
		}
		if !inBound(want, bound) {
			t.Fatalf("ConstBound(%s) = %v does not hold %v at %v", desc(), bound, want, p)
		}
		if !inBound(want, partialBound) {
			t.Fatalf("ConstBound(%s) without %s = %v does not hold %v at %v", desc(), vars[len(vars)-1].Name, partialBound, want, p)
		}
	}

	// Prove
	if value, proven := Prove(b, dom); proven {
		for _, p := range pts {
			if got, ok := evalBool(b, p); ok && got != value {
				t.Fatalf("Prove(%s) = %v, but it is %v at %v", ExprString(b), value, got, p)
			}
		}
	}
	sb := Simplify(b, dom)
	for _, p := range pts {
		want, ok := evalBool(b, p)
		if !ok {
			continue
		}
		if got, ok := evalBool(sb, p); !ok || got != want {
			t.Fatalf("Simplify changed condition %s into %s: at %v want %v got %v", ExprString(b), ExprString(sb), p, want, got)
		}
	}

	// LinearIn
	for _, v := range vars {
		coef, rest, ok := LinearIn(e, v)
		if !ok {
			continue
		}
		if UsesVar(rest, func(x *Var) bool { return x == v }) {
			t.Fatalf("LinearIn(%s, %s): rest %s mentions the variable", desc(), v.Name, ExprString(rest))
		}
		for _, p := range pts {
			want, ok := evalInt(e, p)
			if !ok {
				continue
			}
			r, ok := evalInt(rest, p)
			got := new(big.Int).Mul(big.NewInt(coef), big.NewInt(p[v]))
			if !ok || got.Add(got, r).Cmp(want) != 0 {
				t.Fatalf("LinearIn(%s, %s) = %d, %s: wrong at %v", desc(), v.Name, coef, ExprString(rest), p)
			}
		}
	}

	// EvalRange: a random non-empty subset ranges, the rest is fixed.
	ranging, fixed := map[*Var]Interval{}, map[*Var]Interval{}
	var fixedVars, rangingVars []*Var
	for i, v := range vars {
		if i == 0 || pick.IntN(2) == 0 {
			ranging[v] = dom[v]
			rangingVars = append(rangingVars, v)
		} else {
			fixed[v] = dom[v]
			fixedVars = append(fixedVars, v)
		}
	}
	fixedDom := fixed
	if pick.IntN(3) == 0 {
		fixedDom = nil // fixed variables unbounded: the bounds must hold anyway
	}
	lo, hi := EvalRange(e, ranging, fixedDom)
	for _, e2 := range []Expr{lo, hi} {
		if UsesVar(e2, func(x *Var) bool { _, ok := ranging[x]; return ok }) {
			t.Fatalf("EvalRange(%s): %s mentions a ranging variable", desc(), ExprString(e2))
		}
	}
	for _, fp := range allPoints(fixedVars, fixed) {
		l, okl := evalInt(lo, fp)
		h, okh := evalInt(hi, fp)
		if !okl || !okh {
			// A bound may be undefined only where e itself is.
			continue
		}
		for _, rp := range allPoints(rangingVars, ranging) {
			p := evalPoint{}
			for k, x := range fp {
				p[k] = x
			}
			for k, x := range rp {
				p[k] = x
			}
			v, ok := evalInt(e, p)
			if !ok {
				continue
			}
			lb, hb := l.Cmp(big.NewInt(math.MinInt64)) == 0, h.Cmp(big.NewInt(math.MaxInt64)) == 0
			if (!lb && v.Cmp(l) < 0) || (!hb && v.Cmp(h) > 0) {
				t.Fatalf("EvalRange(%s) ranging %v = [%s, %s] = [%v, %v] at fixed %v, but e = %v at %v",
					desc(), varNames(rangingVars), ExprString(lo), ExprString(hi), l, h, fp, v, p)
			}
		}
	}
}

func varNames(vs []*Var) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

// propDomain makes 2 or 3 variables with small ranges; sometimes two of
// them share a name.
func propDomain(r propChooser) ([]*Var, map[*Var]Interval) {
	n := 2 + r.IntN(2)
	vars := make([]*Var, n)
	dom := map[*Var]Interval{}
	for i := range vars {
		vars[i] = NewVar(string(rune('x' + i)))
		lo := int64(r.IntN(10)) - 5
		if r.IntN(3) == 0 {
			lo = 0
		}
		dom[vars[i]] = Interval{lo, lo + int64(r.IntN(7))}
	}
	if r.IntN(5) == 0 {
		vars[1].Name = vars[0].Name
	}
	return vars, dom
}

func TestRandomProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 4000
	if testing.Short() {
		n = 500
	}
	for range n {
		vars, dom := propDomain(r)
		g := &propGen{r: r, vars: vars}
		e := g.intExpr(2 + r.IntN(4))
		b := g.boolExpr(1 + r.IntN(3))
		checkProps(t, e, b, vars, dom, r)
		if t.Failed() {
			return
		}
	}
}

// Equal affine expressions print identically whatever their association and
// order.
func TestRandomCanonicalAffine(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x, y, z := NewVar("x"), NewVar("y"), NewVar("z")
	atoms := []Expr{x, y, z, FloorDivE(x, Const(4)), FloorModE(AddE(y, z), Const(3)), MinE(x, y), &Load{Buf: propBuf, Indices: []Expr{x}}}
	for range 500 {
		type tm struct {
			a Expr
			c int64
		}
		var terms []tm
		for range 1 + r.IntN(6) {
			terms = append(terms, tm{atoms[r.IntN(len(atoms))], int64(r.IntN(11)) - 5})
		}
		k := int64(r.IntN(21)) - 10
		build := func() Expr {
			order := r.Perm(len(terms))
			var e Expr = Const(k)
			for _, i := range order {
				te := Expr(MulE(Const(terms[i].c), terms[i].a))
				switch r.IntN(3) {
				case 0:
					e = AddE(e, te)
				case 1:
					e = AddE(te, e)
				default:
					e = SubE(e, MulE(terms[i].a, Const(-terms[i].c)))
				}
			}
			return e
		}
		a, b := Simplify(build(), nil), Simplify(build(), nil)
		if ExprString(a) != ExprString(b) {
			t.Fatalf("equal affine expressions print differently: %s vs %s", ExprString(a), ExprString(b))
		}
	}
}

// Shuffled operands of min/max chains and products print identically.
func TestRandomCanonicalChains(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x, y, z := NewVar("x"), NewVar("y"), NewVar("z")
	ops := []Expr{x, y, z, AddE(x, Const(3)), FloorDivE(y, Const(2))}
	for _, op := range []BinOp{Min, Max, Mul} {
		for range 200 {
			k := 2 + r.IntN(3)
			perm := r.Perm(len(ops))[:k]
			build := func() Expr {
				p := slices.Clone(perm)
				r.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
				var e Expr = ops[p[0]]
				for _, i := range p[1:] {
					if r.IntN(2) == 0 {
						e = &Binary{op, e, ops[i]}
					} else {
						e = &Binary{op, ops[i], e}
					}
				}
				return e
			}
			a, b := Simplify(build(), nil), Simplify(build(), nil)
			if ExprString(a) != ExprString(b) {
				t.Fatalf("%v chain prints differently: %s vs %s", op, ExprString(a), ExprString(b))
			}
		}
	}
}
