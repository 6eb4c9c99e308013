package codegen

import (
	"fmt"
	"sort"

	"github.com/tessera-ml/tessera/tir"
)

// Scalarization of Local buffers.
//
// A Local buffer whose every access, as the printer will emit it, has a
// constant flat index (and every vector access a constant base aligned to
// its lane count) becomes plain variables: "float acc_3" per element, or,
// when it is accessed by vector code, "tsr_v16f acc_v2" per chunk of lanes
// (a scalar access then reads or writes one lane, acc_v2[5]). Compilers keep
// such variables in registers; an array they would keep in memory.

const (
	maxScalarElems  = 512 // scalar variables per buffer
	maxScalarChunks = 128 // vector variables per buffer
)

type scalarPlan struct {
	lanes  int              // 0: one scalar per element; else vectors of lanes
	elems  map[int64]string // lanes == 0: element -> variable
	chunks map[int64]string // lanes > 0: chunk -> variable
}

func (p *scalarPlan) elem(c int64) (string, error) {
	if p.lanes == 0 {
		if name, ok := p.elems[c]; ok {
			return name, nil
		}
	} else if name, ok := p.chunks[c/int64(p.lanes)]; ok && c >= 0 {
		return fmt.Sprintf("%s[%d]", name, c%int64(p.lanes)), nil
	}
	return "", fmt.Errorf("internal: element %d of a scalarized buffer was not planned", c)
}

func (p *scalarPlan) chunk(c int64) (string, error) {
	if name, ok := p.chunks[c]; ok {
		return name, nil
	}
	return "", fmt.Errorf("internal: chunk %d of a scalarized buffer was not planned", c)
}

// scalarScan collects the accesses to one buffer the way the printer will
// emit them.
type scalarScan struct {
	k      *kernel
	buf    *tir.Buffer
	ok     bool
	lanes  int
	elems  map[int64]bool
	chunks map[int64]bool
}

// planScalarize returns how to scalarize a Local allocation, or nil to keep
// it an array.
func (k *kernel) planScalarize(a *tir.Allocate) *scalarPlan {
	s := &scalarScan{k: k, buf: a.Buf, ok: true, elems: map[int64]bool{}, chunks: map[int64]bool{}}
	s.stmt(a.Body, copyDom(k.dom), nil)
	if !s.ok {
		return nil
	}
	size := int64(a.Buf.Size())
	if s.lanes == 0 {
		if len(s.elems) > maxScalarElems {
			return nil
		}
		p := &scalarPlan{elems: map[int64]string{}}
		for c := range s.elems {
			p.elems[c] = ""
		}
		return p
	}
	if a.Buf.DType != tir.Float32 {
		return nil
	}
	L := int64(s.lanes)
	for c := range s.elems {
		if (c/L+1)*L > size {
			return nil
		}
		s.chunks[c/L] = true
	}
	if len(s.chunks) > maxScalarChunks {
		return nil
	}
	p := &scalarPlan{lanes: s.lanes, chunks: map[int64]string{}}
	for c := range s.chunks {
		p.chunks[c] = ""
	}
	return p
}

// declareScalarized names and declares the variables of a plan.
func (k *kernel) declareScalarized(buf *tir.Buffer, p *scalarPlan) error {
	t, err := k.scalarType(buf.DType)
	if err != nil {
		return err
	}
	if p.lanes == 0 {
		return k.declareElems(buf, p, t)
	}
	for _, c := range sortedInt64(p.chunks) {
		name := k.declare(fmt.Sprintf("%s_v%d", buf.Name, c))
		p.chunks[c] = name
		k.line("%s %s = tsr_splat_v%df(0.0f);", vt(p.lanes), name, p.lanes)
	}
	k.m.used[p.lanes] = true
	return nil
}

func (k *kernel) declareElems(buf *tir.Buffer, p *scalarPlan, t string) error {
	for _, c := range sortedInt64(p.elems) {
		name := k.declare(fmt.Sprintf("%s_%d", buf.Name, c))
		p.elems[c] = name
		zero := "0"
		if buf.DType == tir.Float32 {
			zero = "0.0f"
		}
		k.line("%s %s = %s;", t, name, zero)
	}
	return nil
}

func sortedInt64(m map[int64]string) []int64 {
	ks := make([]int64, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

func (s *scalarScan) fail() { s.ok = false }

func (s *scalarScan) stmt(st tir.Stmt, dom domain, vp *vplan) {
	if !s.ok {
		return
	}
	switch st := st.(type) {
	case nil:
	case *tir.Seq:
		for _, c := range st.Stmts {
			s.stmt(c, dom, vp)
		}
	case *tir.For:
		if st.Var == nil || st.Extent <= 0 {
			return
		}
		if st.Extent == 1 {
			s.stmt(substStmt(st.Body, map[*tir.Var]tir.Expr{st.Var: tir.Const(0)}), dom, vp)
			return
		}
		if st.Kind == tir.Vectorized && vp == nil && s.k.gpu != nil && st.Extent <= 4 {
			// GPU vector code reads and writes local buffers lane by
			// lane (gpu.go).
			for l := range st.Extent {
				s.stmt(substStmt(st.Body, map[*tir.Var]tir.Expr{st.Var: tir.Const(int64(l))}), dom, nil)
			}
			return
		}
		if st.Kind == tir.Vectorized && vp == nil && s.k.gpu == nil {
			if plan, _, _ := s.k.planVector(st, dom); plan != nil {
				s.items(plan.items, plan)
				return
			}
		}
		d := copyDom(dom)
		d[st.Var] = tir.Interval{Lo: 0, Hi: int64(st.Extent) - 1}
		s.stmt(st.Body, d, nil)
	case *tir.Store:
		if st.Buf == s.buf {
			s.access(st.Indices, dom, vp)
		}
		for _, x := range st.Indices {
			s.expr(x, dom, vp)
		}
		s.expr(st.Value, dom, vp)
	case *tir.Allocate:
		if st.Buf == s.buf {
			return // shadowed
		}
		s.stmt(st.Body, dom, vp)
	case *tir.IfThenElse:
		if st.Cond == nil {
			s.fail()
			return
		}
		c := simplifyCond(st.Cond, dom)
		switch {
		case tir.IsTrue(c):
			s.stmt(st.Then, dom, vp)
		case tir.IsFalse(c):
			s.stmt(st.Else, dom, vp)
		default:
			s.expr(c, dom, vp)
			s.stmt(st.Then, dom, vp)
			s.stmt(st.Else, dom, vp)
		}
	case *tir.Let:
		if st.Var == nil || st.Value == nil {
			s.fail()
			return
		}
		s.expr(st.Value, dom, vp)
		d := dom
		if st.Var.T == tir.Int {
			val := st.Value
			if !hasFloat(val) {
				val = tir.Simplify(val, dom)
			}
			d = copyDom(dom)
			d[st.Var] = letBound(val, dom)
		}
		s.stmt(st.Body, d, vp)
	case *tir.Pragma:
		s.stmt(st.Body, dom, vp)
	case *tir.Barrier:
	default:
		s.fail()
	}
}

func (s *scalarScan) items(items []vitem, p *vplan) {
	for _, it := range items {
		if it.st == nil {
			s.expr(it.cond, p.dom, p)
			s.items(it.then, p)
			s.items(it.otherwise, p)
			continue
		}
		s.stmt(it.st, p.dom, p)
	}
}

func (s *scalarScan) expr(e tir.Expr, dom domain, vp *vplan) {
	if e == nil || !s.ok {
		return
	}
	tir.WalkExpr(e, func(x tir.Expr) bool {
		if l, ok := x.(*tir.Load); ok && l.Buf == s.buf {
			s.access(l.Indices, dom, vp)
		}
		return s.ok
	})
}

func (s *scalarScan) access(idx []tir.Expr, dom domain, vp *vplan) {
	var flat tir.Expr
	var err error
	if vp != nil {
		flat, err = vp.flat(s.buf, idx)
	} else {
		flat, err = simplifiedIndex(s.buf, idx, dom)
	}
	if err != nil {
		s.fail()
		return
	}
	size := int64(s.buf.Size())
	if c, ok := tir.IsConst(flat); ok {
		if c < 0 || c >= size {
			s.fail()
			return
		}
		s.elems[c] = true
		return
	}
	if vp == nil {
		s.fail()
		return
	}
	coef, rest, ok := tir.LinearIn(flat, vp.v)
	if !ok || coef != 1 {
		s.fail()
		return
	}
	r, ok := tir.IsConst(tir.Simplify(rest, dom))
	L := int64(vp.L)
	if !ok || r < 0 || r%L != 0 || r+L > size || (s.lanes != 0 && s.lanes != vp.L) {
		s.fail()
		return
	}
	s.lanes = vp.L
	s.chunks[r/L] = true
}
