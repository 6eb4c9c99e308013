package sketch

import (
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// simplifyConstTensor is Ansor's SimplifyComputeWithConstTensor: a
// reduction that reads a small constant matrix (te.ConstMatrix, such as
// Winograd's transforms) is a sum of a few constant-weighted terms per
// output. The rule unrolls the iterators that index the matrix (its reduce
// iterators and the spatial ones that index the matrix), so that every
// coefficient is a literal in the generated code and the zero terms drop
// out, and splits the other spatial iterators in two, outer tiles first.
// The innermost of those tiles stays innermost, below the unrolled loops,
// for the vectorizer. Order: other outer tiles, other inner tiles but the
// last, matrix-indexing spatial, reduce, the last inner tile.
type simplifyConstTensor struct{}

func (simplifyConstTensor) Name() string { return "simplify_compute_with_const_tensor" }

func (simplifyConstTensor) Condition(g *generator, s *schedule.State, i int) Cond {
	st := s.Stages[i]
	if !schedulable(s, i) || !te.HasReduce(st.Tensor) || len(constMatrixIndexVars(st.Tensor)) == 0 {
		return Skip
	}
	return ApplyAndSkipRest
}

// constMatrixIndexVars returns the variables that index a constant matrix
// read by t's body (nil when it reads none).
func constMatrixIndexVars(t *te.Tensor) map[*tir.Var]bool {
	var out map[*tir.Var]bool
	tir.WalkExpr(t.Body, func(e tir.Expr) bool {
		l, ok := e.(*tir.Load)
		if !ok {
			return true
		}
		if src, ok := l.Buf.Owner.(*te.Tensor); ok && src.Matrix != nil {
			if out == nil {
				out = map[*tir.Var]bool{}
			}
			for _, ix := range l.Indices {
				tir.UsesVar(ix, func(v *tir.Var) bool { out[v] = true; return false })
			}
		}
		return true
	})
	return out
}

func (simplifyConstTensor) Apply(g *generator, s *schedule.State, i int) ([]next, error) {
	t := s.Stages[i].Tensor
	indexing := constMatrixIndexVars(t)
	// Positions of the initial iterators: the spatial axes, then the
	// reduce axes (a stage no rule touched).
	var others, constSpatial, reduce []int
	for p, ax := range t.Axis {
		if indexing[ax.Var] {
			constSpatial = append(constSpatial, p)
		} else {
			others = append(others, p)
		}
	}
	for p := range t.ReduceAxis {
		reduce = append(reduce, len(t.Axis)+p)
	}
	// Split the other spatial iterators, last first so that the positions
	// before it stay valid: position p becomes (p, p+1).
	n := s
	for k := len(others) - 1; k >= 0; k-- {
		var err error
		if n, err = n.Apply(&schedule.Split{Stage: i, Iter: others[k], Lengths: []int{0}}); err != nil {
			return nil, err
		}
	}
	// After the splits, the position of an initial iterator p is p plus
	// the number of split iterators before it.
	pos := func(p int) int {
		shift := 0
		for _, o := range others {
			if o < p {
				shift++
			}
		}
		return p + shift
	}
	var order, unrolled []int
	for _, o := range others {
		order = append(order, pos(o)) // outer tiles
	}
	for k, o := range others {
		if k < len(others)-1 {
			order = append(order, pos(o)+1) // inner tiles but the last
		}
	}
	for _, p := range constSpatial {
		unrolled = append(unrolled, pos(p))
	}
	for _, p := range reduce {
		unrolled = append(unrolled, pos(p))
	}
	order = append(order, unrolled...)
	if len(others) > 0 {
		order = append(order, pos(others[len(others)-1])+1)
	}
	var err error
	if n, err = n.Apply(&schedule.Reorder{Stage: i, Order: order}); err != nil {
		return nil, err
	}
	// The unrolled iterators now sit after the outer and inner tiles.
	first := 2*len(others) - 1
	if len(others) == 0 {
		first = 0
	}
	for k := range unrolled {
		if n, err = n.Apply(&schedule.Annotate{Stage: i, Iter: first + k, Ann: schedule.Unroll}); err != nil {
			return nil, err
		}
	}
	return []next{{n, i - 1}}, nil
}
