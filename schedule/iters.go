package schedule

import (
	"tessera/tir"
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
			prod := 1
			for _, l := range r.lengths {
				prod *= l
			}
			outer := 0
			if e := d.ext[r.parent]; e > 0 && prod > 0 {
				outer = (e + prod - 1) / prod
			}
			d.ext[r.children[0]] = outer
			d.kind[r.children[0]] = d.kind[r.parent]
			for i, l := range r.lengths {
				d.ext[r.children[i+1]] = l
				d.kind[r.children[i+1]] = d.kind[r.parent]
			}
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
			cover := d.ext[r.children[0]]
			for j, l := range r.lengths {
				e = tir.AddE(tir.MulE(e, tir.Const(int64(l))), val[r.children[j+1]])
				cover *= l
			}
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
