// The order of atoms: the canonical order of the atoms of linear forms, so
// that equal sums print and compare equal.

package tir

import (
	"math"
	"strconv"
	"strings"
)

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
