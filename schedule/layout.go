package schedule

import (
	"fmt"
	"slices"

	"github.com/tessera-ml/tessera/tir"
)

// RewriteLayout stores a constant input (a weight) in the order the loop
// nest of the one stage that reads it walks it (Ansor's layout rewrite):
// every loop of that nest that moves an index of the constant becomes a
// dimension of the packed buffer, outer loops first, so the innermost
// loops read it contiguously and a register tile's operand is one vector
// load. The layout is decided when the state is lowered, from the final
// loop nest, so the step may come before or after the steps that shape
// that nest; replaying the steps always gives the same layout. The kernel
// then takes the constant packed (tir.Packing says how): the build packs
// the model's weights once, and measurement packs its inputs too, so what
// is timed is what is built.
//
// Stage is the constant's stage (a placeholder whose tensor is Const).
type RewriteLayout struct{ Stage int }

func (st *RewriteLayout) String() string {
	return fmt.Sprintf("rewrite_layout(%s)", stageName(st.Stage))
}

func (st *RewriteLayout) apply(s *State) error {
	if st.Stage < 0 || st.Stage >= len(s.Stages) {
		return fmt.Errorf("stage %d out of range [0, %d)", st.Stage, len(s.Stages))
	}
	p := s.Stages[st.Stage]
	switch {
	case !p.IsPlaceholder():
		return fmt.Errorf("stage %s is a computation, not a constant input", p.Tensor.Name)
	case !p.Tensor.Const:
		return fmt.Errorf("input %s is not a constant: only weights known at build time can be repacked", p.Tensor.Name)
	case p.Packed:
		return fmt.Errorf("the layout of %s is rewritten already", p.Tensor.Name)
	}
	s.mutStage(st.Stage).Packed = true
	return nil
}

// maxPackGrowth bounds the size of a packed constant against the
// original: tiles that overshoot the tensor leave zeros in the packing.
const maxPackGrowth = 2

// packLayouts decides the layout of every rewritten constant from the one
// live stage that reads it, and redirects that stage's loads to the packed
// buffer. It runs after bound (loop variables are known) and before nest.
func (l *lowerer) packLayouts() error {
	for j, p := range l.s.Stages {
		if !p.IsPlaceholder() || !p.Packed {
			continue
		}
		reader := -1
		for i := range l.s.Stages {
			if l.live(i) && tir.Reads(l.stages[i].body, p.Tensor.Buf) {
				if reader >= 0 {
					return fmt.Errorf("rewrite_layout(%s): read by stages %s and %s; a packed layout serves one loop nest",
						p.Tensor.Name, l.s.Stages[reader].Tensor.Name, l.s.Stages[i].Tensor.Name)
				}
				reader = i
			}
		}
		if reader < 0 {
			return fmt.Errorf("rewrite_layout(%s): no stage reads it", p.Tensor.Name)
		}
		if err := l.packFor(j, reader); err != nil {
			return fmt.Errorf("rewrite_layout(%s) for %s: %w", p.Tensor.Name, l.s.Stages[reader].Tensor.Name, err)
		}
	}
	return nil
}

// packFor packs constant stage j for reader stage i: it writes the index
// of every load of j in i's body, in i's loop variables, as a sum of
// atoms times constant strides (an atom is a loop variable, or a floordiv
// or floormod of one, the parts of a fused loop), makes every atom a
// dimension of the packed buffer ordered by its loop's depth, and loads
// the packed buffer at the atoms.
func (l *lowerer) packFor(j, i int) error {
	t := l.s.Stages[j].Tensor
	info := &l.stages[i]
	loops := append(append([]loopVar(nil), info.outer...), l.loops(i)...)
	depth := map[*tir.Var]int{}
	for d, lv := range loops {
		depth[lv.v] = d
	}
	dom := varDom(loops)
	sub := l.rootSub(i)

	// Every load of the constant, in the order MutateExpr visits them:
	// its packing and its atoms.
	var packings []*tir.Packing
	var atoms [][]tir.Expr
	var err error
	tir.MutateExpr(info.body, func(e tir.Expr) tir.Expr {
		ld, ok := e.(*tir.Load)
		if !ok || ld.Buf != t.Buf || err != nil {
			return e
		}
		idx := make([]tir.Expr, len(ld.Indices))
		for k, ix := range ld.Indices {
			idx[k] = tir.Simplify(tir.Substitute(ix, sub), dom)
		}
		p, at, e2 := packingOf(t.Shape, idx, dom, depth)
		if e2 != nil {
			err = e2
			return e
		}
		packings, atoms = append(packings, p), append(atoms, at)
		return e
	})
	if err != nil {
		return err
	}
	packing, extra, err := mergePackings(packings)
	if err != nil {
		return err
	}
	n := 0
	body := tir.MutateExpr(info.body, func(e tir.Expr) tir.Expr {
		ld, ok := e.(*tir.Load)
		if !ok || ld.Buf != t.Buf {
			return e
		}
		at := atoms[n]
		for _, c := range extra[n] {
			at = append(slices.Clip(at), tir.Const(int64(c)))
		}
		n++
		return &tir.Load{Buf: ld.Buf, Indices: at}
	})
	size := 1
	for _, pd := range packing.Dims {
		size *= pd.Extent
	}
	if size > maxPackGrowth*t.Buf.Size() {
		return fmt.Errorf("the packed layout %v has %d elements for %d", packing, size, t.Buf.Size())
	}
	buf := &tir.Buffer{Name: t.Buf.Name, DType: t.Buf.DType, Shape: packing.PackedShape(), Scope: t.Buf.Scope, Packed: packing, Owner: t.Buf.Owner}
	// The loads now index the packed buffer with loop-variable atoms: the
	// body keeps them through substitution (they contain no root axis
	// variable) and nest finds them already in place.
	info.body = tir.MutateExpr(body, func(e tir.Expr) tir.Expr {
		if ld, ok := e.(*tir.Load); ok && ld.Buf == t.Buf {
			return &tir.Load{Buf: buf, Indices: ld.Indices}
		}
		return e
	})
	if l.packed == nil {
		l.packed = map[*tir.Buffer]*tir.Buffer{}
	}
	l.packed[t.Buf] = buf
	return nil
}

func samePacking(a, b *tir.Packing) bool {
	return slices.Equal(a.Dims, b.Dims) && slices.Equal(a.Offset, b.Offset) && slices.Equal(a.Shape, b.Shape)
}

// mergePackings returns the one packing that serves every load of a
// constant, and for each load the constant indices it takes in the
// dimensions the merge appends. Loads that walk the same loops may differ
// in constant offsets along some axes (a reduction whose body sums a group
// of adjacent elements, as IntConvOptions.Dot's): each such axis gets an
// innermost dimension spanning the offsets, so a group's elements lie
// together, in order, for every element of the loops' tile (the layout a
// dot-product instruction reads). Loads that walk different loops need
// different layouts: an error.
func mergePackings(ps []*tir.Packing) (*tir.Packing, [][]int, error) {
	if len(ps) == 0 {
		return nil, nil, fmt.Errorf("no load of the constant")
	}
	first := ps[0]
	for _, p := range ps[1:] {
		if !slices.Equal(p.Dims, first.Dims) || !slices.Equal(p.Shape, first.Shape) {
			return nil, nil, fmt.Errorf("two reads of the constant need different layouts (%v and %v)", first, p)
		}
	}
	merged := &tir.Packing{Shape: first.Shape, Dims: slices.Clone(first.Dims), Offset: slices.Clone(first.Offset)}
	extra := make([][]int, len(ps))
	for axis := range first.Offset {
		lo, hi := first.Offset[axis], first.Offset[axis]
		for _, p := range ps[1:] {
			lo, hi = min(lo, p.Offset[axis]), max(hi, p.Offset[axis])
		}
		if lo == hi {
			continue
		}
		merged.Offset[axis] = lo
		merged.Dims = append(merged.Dims, tir.PackDim{Axis: axis, Extent: hi - lo + 1, Stride: 1})
		for i, p := range ps {
			extra[i] = append(extra[i], p.Offset[axis]-lo)
		}
	}
	return merged, extra, nil
}

// atom is one term of an index: coef × e, e a loop variable or a floordiv
// or floormod of one.
type atom struct {
	e     tir.Expr
	key   string // the printed atom, for messages
	id    string // the atom with its variable's identity: two loops may share a name
	coef  int64
	axis  int
	ext   int
	depth int
	scale int64 // the divisor that makes e: the outer parts of a fused loop are larger
}

// packingOf decomposes the indices of a load into atoms (see packFor) and
// returns the packing and the atoms as the packed indices, outermost
// first.
func packingOf(shape []int, idx []tir.Expr, dom map[*tir.Var]tir.Interval, depth map[*tir.Var]int) (*tir.Packing, []tir.Expr, error) {
	var all []atom
	seen := map[string]bool{}
	offset := make([]int, len(shape))
	for k, ix := range idx {
		terms, c0, ok := affineTerms(ix)
		if !ok {
			return nil, nil, fmt.Errorf("index %d (%s) is not a sum of loop terms", k, tir.ExprString(ix))
		}
		offset[k] = int(c0)
		for _, tm := range terms {
			if tm.coef <= 0 {
				return nil, nil, fmt.Errorf("index %d (%s) steps backwards along %s", k, tir.ExprString(ix), tm.key)
			}
			if seen[tm.id] {
				return nil, nil, fmt.Errorf("%s moves two indices", tm.key)
			}
			seen[tm.id] = true
			v, scale, ok := atomVar(tm.e)
			if !ok {
				return nil, nil, fmt.Errorf("index %d: term %s is not a loop variable or a part of one", k, tm.key)
			}
			d, ok := depth[v]
			if !ok {
				return nil, nil, fmt.Errorf("index %d: %s is not a loop of the nest", k, v.Name)
			}
			r := tir.ConstBound(tm.e, dom)
			if r.Lo != 0 || r.Hi < 0 || r.Hi > int64(1)<<40 {
				return nil, nil, fmt.Errorf("index %d: term %s ranges over [%d, %d]", k, tm.key, r.Lo, r.Hi)
			}
			tm.axis, tm.ext, tm.depth, tm.scale = k, int(r.Hi+1), d, scale
			all = append(all, tm)
		}
	}
	slices.SortStableFunc(all, func(a, b atom) int {
		if a.depth != b.depth {
			return a.depth - b.depth
		}
		switch {
		case a.scale > b.scale:
			return -1
		case a.scale < b.scale:
			return 1
		}
		return 0
	})
	p := &tir.Packing{Shape: append([]int(nil), shape...), Offset: offset}
	at := make([]tir.Expr, len(all))
	for d, a := range all {
		p.Dims = append(p.Dims, tir.PackDim{Axis: a.axis, Extent: a.ext, Stride: int(a.coef)})
		at[d] = a.e
	}
	if len(at) == 0 { // a constant read at one fixed element
		p.Dims = []tir.PackDim{{Axis: 0, Extent: 1, Stride: 1}}
		at = []tir.Expr{tir.Const(0)}
	}
	return p, at, nil
}

// affineTerms writes an integer expression as Σ coef × atom + c0, where an
// atom is anything but a sum, a difference or a product with a constant.
func affineTerms(e tir.Expr) (terms []atom, c0 int64, ok bool) {
	byKey := map[string]int{}
	var walk func(e tir.Expr, scale int64) bool
	walk = func(e tir.Expr, scale int64) bool {
		switch e := e.(type) {
		case *tir.IntImm:
			c0 += scale * e.V
			return true
		case *tir.Binary:
			switch e.Op {
			case tir.Add:
				return walk(e.A, scale) && walk(e.B, scale)
			case tir.Sub:
				return walk(e.A, scale) && walk(e.B, -scale)
			case tir.Mul:
				if c, isC := e.B.(*tir.IntImm); isC {
					return walk(e.A, scale*c.V)
				}
				if c, isC := e.A.(*tir.IntImm); isC {
					return walk(e.B, scale*c.V)
				}
			}
		}
		if e.Type() != tir.Int {
			return false
		}
		key := tir.ExprString(e)
		id := key
		if v, _, isAtom := atomVar(e); isAtom {
			id = fmt.Sprintf("%s#%p", key, v)
		}
		if k, found := byKey[id]; found {
			terms[k].coef += scale
			return true
		}
		byKey[id] = len(terms)
		terms = append(terms, atom{e: e, key: key, id: id, coef: scale})
		return true
	}
	if !walk(e, 1) {
		return nil, 0, false
	}
	out := terms[:0]
	for _, t := range terms {
		if t.coef != 0 {
			out = append(out, t)
		}
	}
	return out, c0, true
}

// atomVar returns the loop variable an atom is made of and the divisor
// applied to it: v (1), floordiv(v, c) (c), floormod(v, m) (1),
// floormod(floordiv(v, c), m) (c).
func atomVar(e tir.Expr) (*tir.Var, int64, bool) {
	switch e := e.(type) {
	case *tir.Var:
		return e, 1, true
	case *tir.Binary:
		c, isC := e.B.(*tir.IntImm)
		if !isC || c.V <= 0 {
			return nil, 0, false
		}
		switch e.Op {
		case tir.FloorDiv:
			v, s, ok := atomVar(e.A)
			return v, s * c.V, ok
		case tir.FloorMod:
			return atomVar(e.A)
		}
	}
	return nil, 0, false
}
