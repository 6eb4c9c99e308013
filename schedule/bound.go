package schedule

import (
	"fmt"
	"math"

	"github.com/tessera-ml/tessera/tir"
)

// bound gives every live stage its loop variables, extents and storage.
// Stages are visited consumers first (reverse stage order), so when a
// stage attached at a consumer's loop is visited, the loop variables of
// every consumer are known. Its region is then, per spatial axis, the range
// of the indices its consumers read while the loops enclosing the attach
// point are fixed and all loops inside it run: a symbolic start in the
// enclosing loop variables and a constant extent (conv halos included).
func (l *lowerer) bound() error {
	for i := len(l.s.Stages) - 1; i >= 0; i-- {
		if !l.live(i) {
			continue
		}
		if err := l.boundStage(i); err != nil {
			return err
		}
	}
	return nil
}

func (l *lowerer) boundStage(i int) error {
	st := l.s.Stages[i]
	t := st.Tensor
	info := &l.stages[i]
	nSpatial := len(t.Axis)
	info.rootMin = make([]tir.Expr, nSpatial)
	info.rootExt = make([]int, 0, len(st.roots))
	for _, a := range t.Axis {
		info.rootExt = append(info.rootExt, a.Extent)
	}
	for _, a := range t.ReduceAxis {
		info.rootExt = append(info.rootExt, a.Extent)
	}
	for k := range info.rootMin {
		info.rootMin[k] = tir.Const(0)
	}
	info.storage = t.Buf

	if st.Attach == At {
		c := st.AttachStage
		if c < 0 || c >= len(l.s.Stages) || !l.live(c) || c <= i {
			return fmt.Errorf("stage %s is attached at stage %d, which has no loops to hold it", t.Name, c)
		}
		pos := l.s.AttachIter(i)
		if pos < 0 {
			return fmt.Errorf("stage %s is attached at an iterator %s no longer has", t.Name, l.s.Stages[c].Tensor.Name)
		}
		info.outer = append(append([]loopVar(nil), l.stages[c].outer...), l.loops(c)[:pos+1]...)
		if err := l.inferRegion(i); err != nil {
			return err
		}
		scope := tir.Local
		if st.Scope == tir.Shared {
			scope = tir.Shared
		}
		info.storage = &tir.Buffer{Name: t.Name, DType: t.DType(), Shape: info.rootExt[:nSpatial:nSpatial], Scope: scope}
		info.local = true
	}

	info.dom = st.deriveDomain(info.rootExt)
	leaf := map[int]tir.Expr{}
	info.leaf = make([]*tir.Var, len(st.Iters))
	for k, it := range st.Iters {
		info.leaf[k] = tir.NewVar(it.Name)
		leaf[it.id] = info.leaf[k]
	}
	info.rootVal, info.guards = st.rootValues(leaf, info.dom)
	if !info.local {
		return nil
	}
	dom := varDom(append(info.outer, l.loops(i)...))
	for k := 0; k < nSpatial; k++ {
		v := tir.Simplify(tir.AddE(info.rootVal[k], info.rootMin[k]), dom)
		info.rootVal[k] = v
		// The region may reach past the tensor (a halo at a padded border,
		// or a tile that overshoots): skip the elements that do not exist.
		in := tir.AndE(tir.Cmp(tir.GE, v, tir.Const(0)), tir.Cmp(tir.LT, v, tir.Const(int64(t.Axis[k].Extent))))
		if ok, proven := tir.Prove(in, dom); !(ok && proven) {
			info.guards = append(info.guards, guard{cond: in, kind: Spatial})
		}
	}
	return nil
}

// loops returns the loop variables and extents of stage i's iterators.
func (l *lowerer) loops(i int) []loopVar {
	st := l.s.Stages[i]
	info := &l.stages[i]
	out := make([]loopVar, len(st.Iters))
	for k, it := range st.Iters {
		out[k] = loopVar{info.leaf[k], info.dom.ext[it.id], it.Ann}
	}
	return out
}

func varDom(loops []loopVar) map[*tir.Var]tir.Interval {
	m := make(map[*tir.Var]tir.Interval, len(loops))
	for _, lv := range loops {
		m[lv.v] = tir.Interval{Lo: 0, Hi: int64(lv.ext - 1)}
	}
	return m
}

// inferRegion sets the region (rootMin, rootExt of the spatial axes) of
// attached stage i from the reads of its consumers.
func (l *lowerer) inferRegion(i int) error {
	st := l.s.Stages[i]
	t := st.Tensor
	info := &l.stages[i]
	scope := info.outer
	fixed := varDom(scope)
	var relaxed []loopVar
	if l.gpu != nil && st.Scope == tir.Shared {
		// Shared memory serves the whole block: the region is what all
		// of its threads need, so the thread loops around the attach
		// point range instead of staying fixed.
		for _, lv := range scope {
			if lv.ann >= ThreadX && lv.ann <= ThreadZ {
				delete(fixed, lv.v)
				relaxed = append(relaxed, lv)
			}
		}
	}
	n := len(t.Axis)
	lo := make([]tir.Expr, n)
	hi := make([]tir.Expr, n)
	found := false
	for j := i + 1; j < len(l.s.Stages); j++ {
		if !l.live(j) || !tir.Reads(l.stages[j].body, t.Buf) {
			continue
		}
		found = true
		if l.attachedInside(j, i) {
			return fmt.Errorf("stage %s is attached inside %s, which it reads", l.s.Stages[j].Tensor.Name, t.Name)
		}
		all := append(append([]loopVar(nil), l.stages[j].outer...), l.loops(j)...)
		if !hasPrefix(all, scope) {
			return fmt.Errorf("stage %s is attached at %s.%s, but its consumer %s runs outside that loop",
				t.Name, l.s.Stages[st.AttachStage].Tensor.Name, l.s.Stages[st.AttachStage].Iters[l.s.AttachIter(i)].Name,
				l.s.Stages[j].Tensor.Name)
		}
		ranging := varDom(append(append([]loopVar(nil), relaxed...), all[len(scope):]...))
		sub := l.rootSub(j)
		tir.WalkExpr(l.stages[j].body, func(e tir.Expr) bool {
			ld, ok := e.(*tir.Load)
			if !ok || ld.Buf != t.Buf {
				return true
			}
			for k, ix := range ld.Indices {
				a, b := tir.EvalRange(tir.Substitute(ix, sub), ranging, fixed)
				if lo[k] == nil {
					lo[k], hi[k] = a, b
				} else {
					lo[k] = tir.Simplify(tir.MinE(lo[k], a), fixed)
					hi[k] = tir.Simplify(tir.MaxE(hi[k], b), fixed)
				}
			}
			return true
		})
	}
	if !found {
		return fmt.Errorf("stage %s is attached but nothing reads it", t.Name)
	}
	for k := 0; k < n; k++ {
		full := t.Axis[k].Extent
		span := tir.ConstBound(tir.Simplify(tir.SubE(hi[k], lo[k]), fixed), fixed)
		if span.Hi == math.MaxInt64 || span.Hi+1 >= int64(full) {
			info.rootMin[k], info.rootExt[k] = tir.Const(0), full
			continue
		}
		info.rootMin[k], info.rootExt[k] = lo[k], int(span.Hi+1)
	}
	return nil
}

// attachedInside reports whether stage j sits, through its chain of
// attachments, inside the loops of stage i.
func (l *lowerer) attachedInside(j, i int) bool {
	for st := l.s.Stages[j]; st.Attach == At; st = l.s.Stages[st.AttachStage] {
		if st.AttachStage == i {
			return true
		}
	}
	return false
}

func hasPrefix(all, prefix []loopVar) bool {
	if len(prefix) > len(all) {
		return false
	}
	for k := range prefix {
		if all[k].v != prefix[k].v {
			return false
		}
	}
	return true
}
