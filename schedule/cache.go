package schedule

import (
	"fmt"

	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// CacheWrite computes Stage into a new buffer of the given scope first (a
// new stage inserted before it, named "<tensor>.<scope>"); Stage itself
// becomes a copy out of that buffer. It is how a tiled reduction keeps its
// accumulators local.
type CacheWrite struct {
	Stage int
	Scope tir.Scope
}

// CacheRead copies Stage (often an input) into a new buffer of the given
// scope (a new stage inserted after it) and makes the stages Readers read
// the copy.
type CacheRead struct {
	Stage   int
	Scope   tir.Scope
	Readers []int
}

// Rfactor factors the reduction of Stage along its reduce iterator Iter: a
// new stage "<tensor>.rf" inserted before it reduces over the other reduce
// iterators with Iter as an extra spatial axis, and Stage reduces the
// partial results over Iter. It creates parallelism in reductions with a
// small output.
type Rfactor struct {
	Stage, Iter int
}

func (st *CacheWrite) String() string {
	return fmt.Sprintf("cache_write(%s, %v)", stageName(st.Stage), st.Scope)
}

func (st *CacheRead) String() string {
	return fmt.Sprintf("cache_read(%s, %v, %v)", stageName(st.Stage), st.Scope, st.Readers)
}

func (st *Rfactor) String() string {
	return fmt.Sprintf("rfactor(%s, %d)", stageName(st.Stage), st.Iter)
}

// checkFresh checks that a stage rebuilt by a step has no history that the
// rebuild would lose.
func (s *State) checkFresh(i int) error {
	st := s.Stages[i]
	if st.Attach != Root {
		return fmt.Errorf("stage %s is not at the root", st.Tensor.Name)
	}
	if s.attachedTo(i) {
		return fmt.Errorf("stages are attached at %s", st.Tensor.Name)
	}
	return nil
}

func (st *CacheWrite) apply(s *State) error {
	stg, err := s.stage(st.Stage)
	if err != nil {
		return err
	}
	if err := s.checkFresh(st.Stage); err != nil {
		return err
	}
	if len(stg.rels) > 0 {
		return fmt.Errorf("stage %s is already transformed", stg.Tensor.Name)
	}
	t := stg.Tensor
	cache := &te.Tensor{
		Name:       t.Name + "." + st.Scope.String(),
		Shape:      t.Shape,
		Axis:       t.Axis,
		ReduceAxis: t.ReduceAxis,
		Reducer:    t.Reducer,
		Body:       t.Body,
	}
	cache.Buf = &tir.Buffer{Name: cache.Name, DType: t.DType(), Shape: t.Shape, Scope: st.Scope, Owner: cache}
	cstage := newStage(cache, false)
	cstage.Scope = st.Scope
	orig := newStage(copyOf(t.Name, t.Buf, cache), stg.Output)
	orig.Scope = stg.Scope
	s.Stages[st.Stage] = orig
	s.insertStage(st.Stage, cstage)
	return nil
}

// copyOf returns a tensor named name stored in buf whose elements are
// those of src.
func copyOf(name string, buf *tir.Buffer, src *te.Tensor) *te.Tensor {
	c := te.Compute(name, src.Shape, func(i []tir.Expr) tir.Expr { return src.At(i...) })
	c.Buf = buf
	return c
}

func (st *CacheRead) apply(s *State) error {
	if st.Stage < 0 || st.Stage >= len(s.Stages) {
		return fmt.Errorf("stage %d out of range [0, %d)", st.Stage, len(s.Stages))
	}
	p := s.Stages[st.Stage]
	if p.Attach == Inlined {
		return fmt.Errorf("stage %s is inlined", p.Tensor.Name)
	}
	if len(st.Readers) == 0 {
		return fmt.Errorf("no readers")
	}
	consumers := map[int]bool{}
	for _, c := range s.Consumers(st.Stage) {
		consumers[c] = true
	}
	for i, r := range st.Readers {
		if !consumers[r] {
			return fmt.Errorf("stage %d does not read %s", r, p.Tensor.Name)
		}
		if i > 0 && r <= st.Readers[i-1] {
			return fmt.Errorf("readers %v are not increasing", st.Readers)
		}
	}
	name := p.Tensor.Name + "." + st.Scope.String()
	cache := te.Compute(name, p.Tensor.Shape, func(i []tir.Expr) tir.Expr { return p.Tensor.At(i...) })
	cache.Buf.Scope = st.Scope
	for _, r := range st.Readers {
		m := s.mutStage(r)
		t := *m.Tensor
		t.Body = tir.MutateExpr(t.Body, func(e tir.Expr) tir.Expr {
			if l, ok := e.(*tir.Load); ok && l.Buf == p.Tensor.Buf {
				return &tir.Load{Buf: cache.Buf, Indices: l.Indices}
			}
			return e
		})
		m.Tensor = &t
	}
	cstage := newStage(cache, false)
	cstage.Scope = st.Scope
	s.insertStage(st.Stage+1, cstage)
	return nil
}

func (st *Rfactor) apply(s *State) error {
	stg, err := s.iter(st.Stage, st.Iter)
	if err != nil {
		return err
	}
	if err := s.checkFresh(st.Stage); err != nil {
		return err
	}
	t := stg.Tensor
	factor := stg.Iters[st.Iter]
	if factor.Kind != Reduce {
		return fmt.Errorf("iterator %s is not a reduce iterator", factor.Name)
	}
	// Unfilled extents (a sketch) give a partial tensor with extent 0 on
	// those axes; filling the lengths and replaying rebuilds it.
	var others []Iter
	for _, it := range stg.Iters {
		if it.Kind == Reduce && it.id != factor.id {
			others = append(others, it)
		}
	}
	if len(others) == 0 {
		return fmt.Errorf("no reduce iterator left besides %s", factor.Name)
	}

	// The partial reduction: spatial axes, then the factor axis; reduced
	// over the other reduce iterators.
	rootExt := make([]int, 0, len(stg.roots))
	for _, a := range t.Axis {
		rootExt = append(rootExt, a.Extent)
	}
	for _, a := range t.ReduceAxis {
		rootExt = append(rootExt, a.Extent)
	}
	dom := stg.deriveDomain(rootExt)
	rshape := make([]int, len(others))
	for i, it := range others {
		rshape[i] = it.Extent
	}
	rf := te.Reduce(t.Name+".rf", append(append([]int(nil), t.Shape...), factor.Extent), t.Reducer, rshape,
		func(i, r []tir.Expr) tir.Expr {
			leaf := map[int]tir.Expr{factor.id: i[len(t.Shape)]}
			for k, it := range others {
				leaf[it.id] = r[k]
			}
			for _, it := range stg.Iters {
				if _, ok := leaf[it.id]; !ok {
					leaf[it.id] = tir.Const(0) // spatial: replaced by the axes below
				}
			}
			roots, guards := stg.rootValues(leaf, dom)
			sub := map[*tir.Var]tir.Expr{}
			for k, a := range t.Axis {
				sub[a.Var] = i[k]
			}
			for k, a := range t.ReduceAxis {
				sub[a.Var] = roots[len(t.Axis)+k]
			}
			body := tir.Substitute(t.Body, sub)
			var cond tir.Expr
			for _, g := range guards {
				if g.kind != Reduce {
					continue
				}
				if cond == nil {
					cond = g.cond
				} else {
					cond = tir.AndE(cond, g.cond)
				}
			}
			if cond != nil {
				body = tir.SelectE(cond, body, t.Reducer.IdentityOf(t.DType()))
			}
			return body
		})
	final := te.Reduce(t.Name, t.Shape, t.Reducer, []int{factor.Extent}, func(i, r []tir.Expr) tir.Expr {
		return rf.At(append(append([]tir.Expr(nil), i...), r[0])...)
	})
	final.Buf = t.Buf
	orig := newStage(final, stg.Output)
	orig.Scope = stg.Scope
	s.Stages[st.Stage] = orig
	s.insertStage(st.Stage, newStage(rf, false))
	return nil
}
