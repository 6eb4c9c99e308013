package schedule

import (
	"fmt"
	"slices"

	"github.com/tessera-ml/tessera/tir"
)

// LowerGPU turns a complete state into a function for a GPU: one kernel
// per stage computed at the root, launched in stage order, with the
// intermediate tensors between kernels as device temporaries (see
// tir.Kernels for the form). The passes are those of Lower, with these
// differences:
//
//	check      only kernels (root stages, in global memory) bind block and
//	           thread indices; shared stages bind thread indices only (a
//	           cooperative fetch); a reduce iterator bound to a thread
//	           index makes a cross-thread reduction
//	bound      a shared stage's region is what the whole block needs: the
//	           thread loops around its attach point range
//	nest       a store that threads would repeat is made by thread 0 of the
//	           indices its stage does not bind; a cross-thread reduction
//	           becomes per-thread partial sums, then an all-reduce in
//	           shared memory (a tree, a barrier between its steps), then
//	           one thread's store
//	threads    the loops bound to one index in a kernel are one variable:
//	           the kernel's launch dimension, as large as its largest
//	           loop; a loop shorter than that guards its stores
//	           (index < extent), and the launch loops move to the top of
//	           the kernel; vthread loops stay loops inside the threads
//	sync       a barrier wherever threads may read what others wrote to
//	           shared memory (read after write) or overwrite what others
//	           read (write after read), loops included; never inside
//	           control flow that depends on the thread
//	simplify   as Lower
//
// The function's parameters are those of Lower.
func LowerGPU(s *State, name string) (*tir.PrimFunc, error) {
	return lower(s, name, true, nil)
}

// buildKernels is the GPU's nest pass: each root stage's loop nest becomes
// a kernel, normalized to its launch dimensions, with its barriers.
func (l *lowerer) buildKernels() error {
	var kernels []tir.Stmt
	for i, st := range l.s.Stages {
		if !l.live(i) || st.Attach != Root {
			continue
		}
		n, err := l.nest(i)
		if err != nil {
			return err
		}
		k := l.gpu.kernel[i]
		body, err := k.normalize(n, nil)
		if err != nil {
			return err
		}
		body = (&syncer{threads: k.threadVars()}).insert(body)
		kernels = append(kernels, k.launch(body))
	}
	l.f = l.function(l.name, l.allocateRoots(tir.SeqOf(kernels...)))
	return nil
}

// function wraps a lowered body in the PrimFunc: the DAG's inputs (packed
// where rewritten), then its outputs.
func (l *lowerer) function(name string, body tir.Stmt) *tir.PrimFunc {
	f := &tir.PrimFunc{Name: name, Body: body}
	for _, t := range l.s.DAG.Inputs {
		if p, ok := l.packed[t.Buf]; ok {
			f.Params = append(f.Params, p)
			continue
		}
		f.Params = append(f.Params, t.Buf)
	}
	for _, t := range l.s.DAG.Outputs {
		f.Params = append(f.Params, t.Buf)
	}
	return f
}

// checkGPU rejects states a GPU cannot run as they are.
func checkGPU(s *State) error {
	for i, st := range s.Stages {
		if st.IsPlaceholder() || st.Attach == Inlined {
			continue
		}
		name := st.Tensor.Name
		if st.Attach == Root && st.Scope != tir.Global {
			return fmt.Errorf("stage %s in %v memory is computed at the root: only global memory outlives a kernel", name, st.Scope)
		}
		seen := map[Annotation]bool{}
		cross := -1
		for k, it := range st.Iters {
			if !isThreadTag(it.Ann) {
				continue
			}
			if seen[it.Ann] {
				return fmt.Errorf("stage %s binds %v twice", name, it.Ann)
			}
			seen[it.Ann] = true
			switch {
			case st.Attach == Root:
			case st.Scope == tir.Shared && it.Ann >= ThreadX:
			default:
				return fmt.Errorf("stage %s (computed at another stage, %v memory) binds %s to %v: only kernels (root stages) bind block and thread indices, and shared stages thread indices",
					name, st.Scope, it.Name, it.Ann)
			}
			if it.Kind == Reduce {
				if cross >= 0 {
					return fmt.Errorf("stage %s binds two reduce iterators to threads", name)
				}
				cross = k
			}
		}
		if cross < 0 {
			continue
		}
		first := -1
		for k, it := range st.Iters {
			if it.Kind == Reduce && first < 0 {
				first = k
			}
			if it.Kind == Spatial && first >= 0 {
				return fmt.Errorf("stage %s reduces across threads (%s) but its spatial iterator %s comes after a reduce iterator", name, st.Iters[cross].Name, it.Name)
			}
		}
		_ = i
	}
	return nil
}

// gpuLowering is what LowerGPU adds to the lowerer: the kernel of every
// live stage.
type gpuLowering struct {
	kernel map[int]*gpuKernel // by stage: the kernel of its root stage
}

// gpuKernel is one kernel: its launch dimensions.
type gpuKernel struct {
	tags map[Annotation]*launchDim
}

// launchDim is a block or thread index of a kernel: one variable, and the
// largest extent of the loops bound to it.
type launchDim struct {
	v   *tir.Var
	ext int
}

// launchOrder is the order of the launch loops at the top of a kernel.
var launchOrder = []Annotation{BlockZ, BlockY, BlockX, ThreadZ, ThreadY, ThreadX}

// launchDims groups the live stages by kernel (the root stage their
// attachments lead to) and sizes every kernel's launch dimensions.
func (l *lowerer) launchDims() {
	for i := range l.s.Stages {
		if !l.live(i) {
			continue
		}
		r := i
		for l.s.Stages[r].Attach == At {
			r = l.s.Stages[r].AttachStage
		}
		k := l.gpu.kernel[r]
		if k == nil {
			k = &gpuKernel{tags: map[Annotation]*launchDim{}}
			l.gpu.kernel[r] = k
		}
		l.gpu.kernel[i] = k
		for _, it := range l.s.Stages[i].Iters {
			if !isThreadTag(it.Ann) {
				continue
			}
			ext := l.stages[i].dom.ext[it.id]
			d := k.tags[it.Ann]
			if d == nil {
				d = &launchDim{v: tir.NewVar(it.Ann.String())}
				k.tags[it.Ann] = d
			}
			d.ext = max(d.ext, ext)
		}
	}
}

// threadVars returns the thread index variables of the kernel.
func (k *gpuKernel) threadVars() map[*tir.Var]bool {
	out := map[*tir.Var]bool{}
	for a, d := range k.tags {
		if a >= ThreadX {
			out[d.v] = true
		}
	}
	return out
}

// launch puts the launch loops around a normalized kernel body.
func (k *gpuKernel) launch(body tir.Stmt) tir.Stmt {
	for i := len(launchOrder) - 1; i >= 0; i-- {
		a := launchOrder[i]
		if d := k.tags[a]; d != nil {
			body = &tir.For{Var: d.v, Extent: d.ext, Kind: tir.ThreadBound, Thread: a.String(), Body: body}
		}
	}
	return body
}

// normalize replaces every loop bound to a block or thread index by the
// kernel's variable of that index; preds are the extents of the
// enclosing loops shorter than their launch dimension (the innermost loop
// of an index decides), whose guards (index < extent) go on every store
// below. A thread's local buffer must not be read on a thread that did
// not write it: a read under weaker guards than the writes is an error.
func (k *gpuKernel) normalize(s tir.Stmt, preds map[Annotation]int) (tir.Stmt, error) {
	n := &normalizer{k: k, written: map[*tir.Buffer]map[Annotation]int{}}
	out := n.stmt(s, preds)
	return out, n.err
}

type normalizer struct {
	k       *gpuKernel
	written map[*tir.Buffer]map[Annotation]int // local buffers: the guards of their stores
	err     error
}

func (n *normalizer) stmt(s tir.Stmt, preds map[Annotation]int) tir.Stmt {
	k := n.k
	switch s := s.(type) {
	case *tir.For:
		a, err := ParseAnnotation(s.Thread)
		if s.Kind != tir.ThreadBound || err != nil || !isThreadTag(a) {
			return &tir.For{Var: s.Var, Extent: s.Extent, Kind: s.Kind, Thread: s.Thread, Body: n.stmt(s.Body, preds)}
		}
		d := k.tags[a]
		body := substStmt(s.Body, map[*tir.Var]tir.Expr{s.Var: d.v})
		p := make(map[Annotation]int, len(preds)+1)
		for b, e := range preds {
			p[b] = e
		}
		delete(p, a)
		if s.Extent < d.ext {
			p[a] = s.Extent
		}
		return n.stmt(body, p)
	case *tir.Store:
		n.checkLocalReads(s, preds)
		if s.Buf.Scope == tir.Local {
			w := n.written[s.Buf]
			if w == nil {
				w = map[Annotation]int{}
				n.written[s.Buf] = w
			}
			for a, e := range preds {
				if old, ok := w[a]; !ok || e < old {
					w[a] = e
				}
			}
		}
		var cond tir.Expr
		for _, a := range launchOrder {
			e, ok := preds[a]
			if !ok {
				continue
			}
			c := tir.Cmp(tir.LT, k.tags[a].v, tir.Const(int64(e)))
			if cond == nil {
				cond = c
			} else {
				cond = tir.AndE(cond, c)
			}
		}
		if cond == nil {
			return s
		}
		return &tir.IfThenElse{Cond: cond, Then: s}
	case *tir.IfThenElse:
		out := &tir.IfThenElse{Cond: s.Cond, Then: n.stmt(s.Then, preds)}
		if s.Else != nil {
			out.Else = n.stmt(s.Else, preds)
		}
		return out
	case *tir.Seq:
		out := make([]tir.Stmt, len(s.Stmts))
		for i, c := range s.Stmts {
			out[i] = n.stmt(c, preds)
		}
		return &tir.Seq{Stmts: out}
	case *tir.Allocate:
		return &tir.Allocate{Buf: s.Buf, Body: n.stmt(s.Body, preds)}
	case *tir.Let:
		return &tir.Let{Var: s.Var, Value: s.Value, Body: n.stmt(s.Body, preds)}
	case *tir.Pragma:
		return &tir.Pragma{Key: s.Key, Value: s.Value, Body: n.stmt(s.Body, preds)}
	}
	return s
}

// checkLocalReads fails when a store reads a local buffer on threads
// that did not write it.
func (n *normalizer) checkLocalReads(s *tir.Store, preds map[Annotation]int) {
	check := func(e tir.Expr) {
		tir.WalkExpr(e, func(x tir.Expr) bool {
			ld, ok := x.(*tir.Load)
			if !ok || ld.Buf.Scope != tir.Local || n.err != nil {
				return true
			}
			for a, ew := range n.written[ld.Buf] {
				if er, ok := preds[a]; !ok || er > ew {
					n.err = fmt.Errorf("%s reads %s, local to each thread, on threads %v >= %d that do not compute it", s.Buf.Name, ld.Buf.Name, a, ew)
				}
			}
			return true
		})
	}
	for _, x := range s.Indices {
		check(x)
	}
	check(s.Value)
}

func substStmt(s tir.Stmt, m map[*tir.Var]tir.Expr) tir.Stmt {
	return tir.MutateStmt(s, tir.StmtFuncs{Expr: func(e tir.Expr) tir.Expr { return tir.Substitute(e, m) }})
}

// predicates are the guards that keep threads from repeating stage i's
// stores: a kernel's stage stores once per index it binds, so the
// launch dimensions it leaves unbound store from index 0 only; a shared
// stage does the same for the thread indices its own loops do not bind
// (its region serves the whole block). Stages in local memory belong to
// one thread and need none. except, when set, is a thread annotation of
// the stage to treat as unbound (the reduce index of a cross-thread
// reduction, whose result one thread stores).
func (l *lowerer) predicates(i int, except Annotation) []guard {
	if l.gpu == nil {
		return nil
	}
	st := l.s.Stages[i]
	if st.Attach != Root && st.Scope != tir.Shared {
		return nil
	}
	own := map[Annotation]bool{}
	for _, it := range st.Iters {
		if isThreadTag(it.Ann) && it.Ann != except {
			own[it.Ann] = true
		}
	}
	k := l.gpu.kernel[i]
	var out []guard
	for _, a := range launchOrder {
		d := k.tags[a]
		if d == nil || own[a] || (st.Attach != Root && a < ThreadX) {
			continue
		}
		out = append(out, guard{cond: tir.Cmp(tir.EQ, d.v, tir.Const(0)), kind: Spatial})
	}
	return out
}

// crossThreadIter returns the position of stage i's reduce iterator bound
// to a thread index, or -1.
func (l *lowerer) crossThreadIter(i int) int {
	for k, it := range l.s.Stages[i].Iters {
		if it.Kind == Reduce && isThreadTag(it.Ann) {
			return k
		}
	}
	return -1
}

// crossThreadNest lowers a stage whose reduction runs across the threads
// of its reduce index T: inside the spatial loops, every thread reduces
// its share into a local accumulator (the reduce loops, T's loop among
// them, with the stages attached there), the accumulators meet in shared
// memory and fold in a tree (log2 steps, thread t adding t+s), and thread
// 0 adds the last two and stores the result. The shared buffer has one row per value of the
// kernel's other thread indices, so rows of threads that compute other
// outputs do not mix.
func (l *lowerer) crossThreadNest(i int) (tir.Stmt, error) {
	st := l.s.Stages[i]
	t := st.Tensor
	info := &l.stages[i]
	ann := st.Iters[l.crossThreadIter(i)].Ann
	first := len(st.Iters)
	for k, it := range st.Iters {
		if it.Kind == Reduce {
			first = k
			break
		}
	}
	attached := l.attachedAt(i)
	red := &tir.Buffer{Name: t.Name + ".red", DType: t.DType(), Shape: []int{1}, Scope: tir.Local}
	zero := []tir.Expr{tir.Const(0)}
	acc := &tir.Load{Buf: red, Indices: zero}
	value := l.rewriteLoads(tir.Substitute(info.body, l.rootSub(i)))
	var update tir.Stmt = &tir.Store{Buf: red, Indices: zero, Value: t.Reducer.Combine(acc, value)}
	update = guardWith(update, info.guards, false)
	reduce, err := l.wrapLoops(i, first, len(st.Iters), update, attached, false)
	if err != nil {
		return nil, err
	}

	k := l.gpu.kernel[i]
	var shape []int
	var idx []tir.Expr
	pos := -1
	for _, a := range []Annotation{ThreadZ, ThreadY, ThreadX} {
		if d := k.tags[a]; d != nil {
			if a == ann {
				pos = len(idx)
			}
			shape = append(shape, d.ext)
			idx = append(idx, d.v)
		}
	}
	T := k.tags[ann]
	at := func(e tir.Expr) []tir.Expr {
		out := slices.Clone(idx)
		out[pos] = e
		return out
	}
	shared := &tir.Buffer{Name: t.Name + ".red_shared", DType: t.DType(), Shape: shape, Scope: tir.Shared}
	steps := []tir.Stmt{
		&tir.Store{Buf: red, Indices: zero, Value: t.Reducer.IdentityOf(t.DType())},
		reduce,
		&tir.Store{Buf: shared, Indices: at(T.v), Value: acc},
	}
	p := 1
	for p < T.ext {
		p *= 2
	}
	for s := p / 2; s >= 2; s /= 2 {
		other := tir.AddE(T.v, tir.Const(int64(s)))
		cond := tir.AndE(tir.Cmp(tir.LT, T.v, tir.Const(int64(s))), tir.Cmp(tir.LT, other, tir.Const(int64(T.ext))))
		sum := t.Reducer.Combine(&tir.Load{Buf: shared, Indices: at(T.v)}, &tir.Load{Buf: shared, Indices: at(other)})
		steps = append(steps, &tir.IfThenElse{Cond: cond, Then: &tir.Store{Buf: shared, Indices: at(T.v), Value: sum}})
	}
	// The last step (thread 0 adding element 1) is the store itself.
	var result tir.Expr = &tir.Load{Buf: shared, Indices: at(tir.Const(0))}
	if p >= 2 {
		result = t.Reducer.Combine(result, &tir.Load{Buf: shared, Indices: at(tir.Const(1))})
	}
	spatialIdx, err := l.storeIndices(i)
	if err != nil {
		return nil, err
	}
	var final tir.Stmt = &tir.Store{Buf: info.storage, Indices: spatialIdx, Value: result}
	steps = append(steps, guardWith(final, append(l.predicates(i, ann), info.guards...), true))
	var body tir.Stmt = &tir.Allocate{Buf: shared, Body: &tir.Allocate{Buf: red, Body: tir.SeqOf(steps...)}}
	return l.wrapLoops(i, 0, first, body, attached, false)
}
