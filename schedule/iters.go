package schedule

import (
	"github.com/tessera-ml/tessera/tir"
)

// iterDomain is the derivation of a stage's iterators from its root axes,
// evaluated for given root extents: the extent and kind of every iterator
// that ever existed in the stage (roots, intermediate and current), indexed
// by identity.
type iterDomain struct {
	ext  []int
	kind []IterKind
}

// deriveDomain computes every iterator's extent from the root extents by
// replaying the stage's split and fuse relations.
func (st *Stage) deriveDomain(rootExt []int) iterDomain {
	d := iterDomain{ext: make([]int, st.nextID), kind: make([]IterKind, st.nextID)}
	nSpatial := len(st.Tensor.Axis)
	for i, id := range st.roots {
		d.ext[id] = rootExt[i]
		d.kind[id] = Spatial
		if i >= nSpatial {
			d.kind[id] = Reduce
		}
	}
	for _, r := range st.rels {
		if r.split {
			// A split by lengths l1..ln is n binary splits from the inside
			// out, each inner part a factor of what its parent covers; like
			// TVM's bound inference, an inner part is cut to its parent's
			// extent when the factor is larger (a tile of 8×4×16 in a region
			// of 64 rows runs 1×4×16), so a tile bigger than the region
			// attached at does not loop, and guard, past it.
			rem := d.ext[r.parent]
			for i := len(r.lengths) - 1; i >= 0; i-- {
				l := r.lengths[i]
				d.ext[r.children[i+1]] = min(l, rem)
				d.kind[r.children[i+1]] = d.kind[r.parent]
				if l > 0 {
					rem = (rem + l - 1) / l
				} else {
					rem = 0
				}
			}
			d.ext[r.children[0]] = rem
			d.kind[r.children[0]] = d.kind[r.parent]
			continue
		}
		ext := 1
		for _, p := range r.parents {
			ext *= d.ext[p]
		}
		d.ext[r.child] = ext
		d.kind[r.child] = d.kind[r.parents[0]]
	}
	return d
}

// guard is a condition an iteration must meet because a split covers more
// than its parent's extent.
type guard struct {
	cond tir.Expr
	kind IterKind
}

// rootValues expresses every root axis in terms of the values of the
// current iterators (leaf, keyed by identity), walking the relations
// backwards. It also returns the guards of splits that overshoot.
func (st *Stage) rootValues(leaf map[int]tir.Expr, d iterDomain) ([]tir.Expr, []guard) {
	val := make([]tir.Expr, st.nextID)
	for id, e := range leaf {
		val[id] = e
	}
	var guards []guard
	for i := len(st.rels) - 1; i >= 0; i-- {
		r := st.rels[i]
		if r.split {
			// parent = ((c0 * l1 + c1) * l2 + c2) ...
			e := val[r.children[0]]
			last := d.ext[r.children[0]] - 1 // the largest value e takes
			for j, l := range r.lengths {
				e = tir.AddE(tir.MulE(e, tir.Const(int64(l))), val[r.children[j+1]])
				last = last*l + d.ext[r.children[j+1]] - 1
			}
			cover := last + 1
			val[r.parent] = e
			if cover > d.ext[r.parent] {
				guards = append(guards, guard{
					cond: tir.Cmp(tir.LT, e, tir.Const(int64(d.ext[r.parent]))),
					kind: d.kind[r.parent],
				})
			}
			continue
		}
		// fused = ((p0 * e1 + p1) * e2 + p2) ...; so p_k = (fused / inner_k) % e_k
		f := val[r.child]
		inner := 1
		for k := len(r.parents) - 1; k >= 0; k-- {
			p := r.parents[k]
			e := f
			if inner > 1 {
				e = tir.FloorDivE(e, tir.Const(int64(inner)))
			}
			if k > 0 {
				e = tir.FloorModE(e, tir.Const(int64(d.ext[p])))
			}
			val[p] = e
			inner *= d.ext[p]
		}
	}
	out := make([]tir.Expr, len(st.roots))
	for i, id := range st.roots {
		out[i] = val[id]
	}
	return out, guards
}
