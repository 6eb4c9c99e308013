package schedule

import (
	"fmt"

	"github.com/tessera-ml/tessera/tir"
)

// Lower turns a complete state into one kernel. The parameters are the
// DAG's inputs (in the order of DAG.Inputs) followed by its outputs (in the
// order of DAG.Outputs). It runs the CPU's lowering passes (lowerPasses).
func Lower(s *State, name string) (*tir.PrimFunc, error) {
	return lower(s, name, false, nil)
}

// The lowering passes, as a table: each works on the lowerer, and those
// from nest on on the function it builds.
//
//	inline       fold inlined stages into their consumers' bodies
//	bound        give every stage its loop variables and, for attached stages,
//	             the region its consumers need (bound.go)
//	pack         lay out every rewritten constant in the order its reader's
//	             loops walk it (layout.go)
//	launch-dims  (GPU) the grid and block of every kernel (gpu.go)
//	nest         build each stage's loop nest, nesting attached stages (a GPU
//	             kernel's: normalized to its launch, with barriers)
//	simplify     simplify every expression with the loop ranges in scope
//	check-scopes refuse a stage that reads a buffer where it is not computed
//
// The order is the table's: each pass reads what the one before it
// derived (the regions need the inlined bodies; the nests, the regions and
// packed layouts; the kernels' nests, their launch dimensions).
type lowerPass struct {
	name     string
	cpu, gpu bool
	run      func(l *lowerer) error
}

var lowerPasses = []lowerPass{
	{"inline", true, true, (*lowerer).inline},
	{"bound", true, true, (*lowerer).bound},
	{"pack", true, true, (*lowerer).packLayouts},
	{"launch-dims", false, true, func(l *lowerer) error { l.launchDims(); return nil }},
	{"nest", true, false, (*lowerer).buildNests},
	{"nest", false, true, (*lowerer).buildKernels},
	{"simplify", true, true, func(l *lowerer) error { l.f.Body = tir.SimplifyStmt(l.f.Body, nil); return nil }},
	{"check-scopes", true, true, (*lowerer).checkScopes},
}

// LowerPassNames returns the names of the lowering passes of the CPU (gpu
// false) or the GPU, in order.
func LowerPassNames(gpu bool) []string {
	var names []string
	for _, p := range lowerPasses {
		if gpu && p.gpu || !gpu && p.cpu {
			names = append(names, p.name)
		}
	}
	return names
}

// LowerTrace lowers s as Lower (gpu false) or LowerGPU does, calling after
// with the function after each pass that makes or changes it (nest,
// simplify, check-scopes): `tune inspect --dump` prints it.
func LowerTrace(s *State, name string, gpu bool, after func(pass string, f *tir.PrimFunc)) (*tir.PrimFunc, error) {
	return lower(s, name, gpu, after)
}

// lower runs the lowering passes of the CPU or the GPU on s.
func lower(s *State, name string, gpu bool, after func(pass string, f *tir.PrimFunc)) (*tir.PrimFunc, error) {
	if !s.Complete() {
		return nil, fmt.Errorf("lower: state has unfilled split lengths")
	}
	l := &lowerer{s: s, byBuf: s.stageByBuf(), name: name}
	what := "lower"
	if gpu {
		what = "lower for gpu"
		if err := checkGPU(s); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		l.gpu = &gpuLowering{kernel: map[int]*gpuKernel{}}
	}
	for _, p := range lowerPasses {
		if gpu && !p.gpu || !gpu && !p.cpu {
			continue
		}
		if err := p.run(l); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if after != nil && l.f != nil {
			after(p.name, l.f)
		}
	}
	return l.f, nil
}

// checkScopes refuses a function that reads a buffer outside its scope.
func (l *lowerer) checkScopes() error {
	if err := tir.CheckScopes(l.f); err != nil {
		return fmt.Errorf("a stage reads a buffer where it is not computed (a gather index attached apart from its reader): %w", err)
	}
	return nil
}

// lowerer holds what the passes derive about each stage.
type lowerer struct {
	s      *State
	name   string        // the function's
	f      *tir.PrimFunc // the function, from the nest pass on
	byBuf  map[*tir.Buffer]int
	stages []stageInfo
	packed map[*tir.Buffer]*tir.Buffer // rewritten constants: their packed parameter
	gpu    *gpuLowering                // set by LowerGPU
}

type loopVar struct {
	v   *tir.Var
	ext int
	ann Annotation // the iterator's annotation
}

type stageInfo struct {
	body    tir.Expr    // the body with inlined stages folded in, over the root axis vars
	rootMin []tir.Expr  // start of each spatial root axis's region (enclosing loop vars)
	rootExt []int       // extent of each root axis (spatial region, then reduce)
	dom     iterDomain  // extents of all iterators for rootExt
	leaf    []*tir.Var  // loop variable of each current iterator
	rootVal []tir.Expr  // value of each root axis in loop variables
	guards  []guard     // split overshoot guards and region domain guards
	outer   []loopVar   // loops enclosing this stage's nest
	storage *tir.Buffer // where the stage's values are stored
	local   bool        // storage is allocated at the attach point
}

// live reports whether stage i gets a loop nest of its own.
func (l *lowerer) live(i int) bool {
	st := l.s.Stages[i]
	return !st.IsPlaceholder() && st.Attach != Inlined
}

// inline folds inlined stages into the bodies of their consumers.
func (l *lowerer) inline() error {
	l.stages = make([]stageInfo, len(l.s.Stages))
	for i, st := range l.s.Stages {
		if st.IsPlaceholder() {
			continue
		}
		var err error
		l.stages[i].body = tir.MutateExpr(st.Tensor.Body, func(e tir.Expr) tir.Expr {
			ld, ok := e.(*tir.Load)
			if !ok {
				return e
			}
			j, ok := l.byBuf[ld.Buf]
			if !ok {
				err = fmt.Errorf("stage %s reads %s, which no stage computes", st.Tensor.Name, ld.Buf.Name)
				return e
			}
			p := l.s.Stages[j]
			if p.Attach != Inlined {
				return e
			}
			if j >= i {
				err = fmt.Errorf("stage %s reads inlined stage %s that comes after it", st.Tensor.Name, p.Tensor.Name)
				return e
			}
			sub := map[*tir.Var]tir.Expr{}
			for k, a := range p.Tensor.Axis {
				sub[a.Var] = ld.Indices[k]
			}
			return tir.Substitute(l.stages[j].body, sub)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// nests builds the loop nests of the root stages in stage order, inside
// the allocations of the intermediate tensors that live at the root.
// buildNests builds the function: every root stage's loop nest, the
// root stages that are no output allocated around them.
func (l *lowerer) buildNests() error {
	var stmts []tir.Stmt
	for i, st := range l.s.Stages {
		if !l.live(i) || st.Attach != Root {
			continue
		}
		n, err := l.nest(i)
		if err != nil {
			return err
		}
		stmts = append(stmts, n)
	}
	l.f = l.function(l.name, l.allocateRoots(tir.SeqOf(stmts...)))
	return nil
}

// allocateRoots allocates the root stages that are no output around body.
func (l *lowerer) allocateRoots(body tir.Stmt) tir.Stmt {
	for i := len(l.s.Stages) - 1; i >= 0; i-- {
		st := l.s.Stages[i]
		if l.live(i) && st.Attach == Root && !st.Output {
			body = &tir.Allocate{Buf: l.stages[i].storage, Body: body}
		}
	}
	return body
}

// nest builds the loops of stage i, with the stages attached at each of its
// iterators nested right inside that iterator's loop.
func (l *lowerer) nest(i int) (tir.Stmt, error) {
	if l.gpu != nil && l.crossThreadIter(i) >= 0 {
		return l.crossThreadNest(i)
	}
	st := l.s.Stages[i]
	info := &l.stages[i]
	attached := l.attachedAt(i)
	firstReduce := -1
	for k, it := range st.Iters {
		if it.Kind == Reduce {
			firstReduce = k
			break
		}
	}

	// Innermost statement: the store (or the reduction update).
	spatialIdx, err := l.storeIndices(i)
	if err != nil {
		return nil, err
	}
	value := l.rewriteLoads(tir.Substitute(info.body, l.rootSub(i)))
	if st.Tensor.Reducer != 0 {
		acc := &tir.Load{Buf: info.storage, Indices: spatialIdx}
		value = st.Tensor.Reducer.Combine(acc, value)
	}
	var inner tir.Stmt = &tir.Store{Buf: info.storage, Indices: spatialIdx, Value: value}
	inner = guardWith(inner, append(l.predicates(i, NoAnn), info.guards...), false)

	inner, err = l.wrapLoops(i, 0, len(st.Iters), inner, attached, true)
	if err != nil {
		return nil, err
	}
	if firstReduce == 0 {
		inner = tir.SeqOf(l.initNest(i, 0), inner)
	}
	return inner, nil
}

// attachedAt maps the identity of each iterator of stage i to the live
// stages attached at it.
func (l *lowerer) attachedAt(i int) map[int][]int {
	attached := map[int][]int{}
	for j, o := range l.s.Stages {
		if o.Attach == At && o.AttachStage == i && l.live(j) {
			attached[o.attachIter] = append(attached[o.attachIter], j)
		}
	}
	return attached
}

// wrapLoops wraps inner in the loops of stage i's iterators at positions
// [from, to), innermost first, with the stages attached at each iterator
// nested right inside its loop and, when init, the reduction's init nest
// right outside the first reduce loop (position firstReduce).
func (l *lowerer) wrapLoops(i, from, to int, inner tir.Stmt, attached map[int][]int, init bool) (tir.Stmt, error) {
	st := l.s.Stages[i]
	info := &l.stages[i]
	firstReduce := -1
	for k, it := range st.Iters {
		if it.Kind == Reduce {
			firstReduce = k
			break
		}
	}
	if from < 0 {
		from = 0
	}
	for k := to - 1; k >= from; k-- {
		it := st.Iters[k]
		var pre []tir.Stmt
		var allocs []*tir.Buffer
		for _, j := range attached[it.id] {
			n, err := l.nest(j)
			if err != nil {
				return nil, err
			}
			pre = append(pre, guardWith(n, l.outerGuards(i, k), false))
			allocs = append(allocs, l.stages[j].storage)
		}
		if init && k+1 == firstReduce {
			pre = append(pre, l.initNest(i, firstReduce))
		}
		body := inner // a loop, store or guard: SeqOf would return it as is
		if len(pre) > 0 {
			body = tir.SeqOf(append(pre, inner)...)
		}
		for a := len(allocs) - 1; a >= 0; a-- {
			body = &tir.Allocate{Buf: allocs[a], Body: body}
		}
		var loop tir.Stmt = &tir.For{Var: info.leaf[k], Extent: info.dom.ext[it.id], Kind: l.forKind(it.Ann), Thread: threadName(it.Ann), Body: body}
		if st.AutoUnroll > 0 && st.unrollIter == it.id {
			loop = &tir.Pragma{Key: PragmaAutoUnroll, Value: st.AutoUnroll, Body: loop}
		}
		inner = loop
	}
	return inner, nil
}

// outerGuards returns the guards of stage i's overshooting splits that
// only the loops at positions up to k decide: where one fails, no
// iteration inside position k stores anything, so a stage attached there
// computes nothing any store reads, and must not run. It may read out of
// bounds there: a cache read of an operand gathered at data-dependent
// rows (a ScatterElements' updates, at indices read at the consumer's own
// row, past the last one in an overshooting tile).
func (l *lowerer) outerGuards(i, k int) []guard {
	info := &l.stages[i]
	inner := map[*tir.Var]bool{}
	for _, v := range info.leaf[k+1:] {
		inner[v] = true
	}
	var gs []guard
	for _, g := range info.guards {
		if !tir.UsesVar(g.cond, func(v *tir.Var) bool { return inner[v] }) {
			gs = append(gs, g)
		}
	}
	return gs
}

// initNest stores the reducer's identity into every element that the
// reduction of stage i updates below position first (its first reduce
// loop): a nest over the spatial iterators inside that position.
func (l *lowerer) initNest(i, first int) tir.Stmt {
	st := l.s.Stages[i]
	info := &l.stages[i]
	sub := map[*tir.Var]tir.Expr{}
	var loops []loopVar
	var kinds []tir.ForKind
	var threads []string
	for k := first; k < len(st.Iters); k++ {
		it := st.Iters[k]
		if it.Kind != Spatial {
			continue
		}
		v := tir.NewVar(info.leaf[k].Name + ".init")
		sub[info.leaf[k]] = v
		loops = append(loops, loopVar{v, info.dom.ext[it.id], it.Ann})
		// The init keeps its loop's vectorize or unroll: the same lanes
		// are stored to, and an unrolled init of a vectorized stage would
		// be scalar code the size of the vector loop times its extent.
		kind := tir.Serial
		if it.Ann == Vectorize || it.Ann == Unroll {
			kind = forKind(it.Ann)
		}
		thread := ""
		if l.gpu != nil && isThreadTag(it.Ann) {
			// On a GPU the init runs on the threads its loop is bound
			// to, each on its own elements.
			kind, thread = tir.ThreadBound, it.Ann.String()
		}
		kinds = append(kinds, kind)
		threads = append(threads, thread)
	}
	idx, _ := l.storeIndices(i)
	for k, e := range idx {
		idx[k] = tir.Substitute(e, sub)
	}
	var g []guard
	for _, gd := range info.guards {
		if gd.kind == Spatial {
			g = append(g, guard{cond: tir.Substitute(gd.cond, sub), kind: Spatial})
		}
	}
	var s tir.Stmt = &tir.Store{Buf: info.storage, Indices: idx, Value: st.Tensor.Reducer.IdentityOf(st.Tensor.DType())}
	s = guardWith(s, append(l.predicates(i, NoAnn), g...), true)
	for k := len(loops) - 1; k >= 0; k-- {
		s = &tir.For{Var: loops[k].v, Extent: loops[k].ext, Kind: kinds[k], Thread: threads[k], Body: s}
	}
	return s
}

// guardWith wraps s in the conjunction of the guards (only the spatial
// ones when spatialOnly).
func guardWith(s tir.Stmt, gs []guard, spatialOnly bool) tir.Stmt {
	var cond tir.Expr
	for _, g := range gs {
		if spatialOnly && g.kind != Spatial {
			continue
		}
		if cond == nil {
			cond = g.cond
		} else {
			cond = tir.AndE(cond, g.cond)
		}
	}
	if cond == nil {
		return s
	}
	return &tir.IfThenElse{Cond: cond, Then: s}
}

// rootSub maps stage i's root axis variables to their values in loop
// variables.
func (l *lowerer) rootSub(i int) map[*tir.Var]tir.Expr {
	t := l.s.Stages[i].Tensor
	info := &l.stages[i]
	sub := map[*tir.Var]tir.Expr{}
	for k, a := range t.Axis {
		sub[a.Var] = info.rootVal[k]
	}
	for k, a := range t.ReduceAxis {
		sub[a.Var] = info.rootVal[len(t.Axis)+k]
	}
	return sub
}

// storeIndices returns the indices of stage i's store: the spatial root
// values, relative to the region start for locally stored stages.
func (l *lowerer) storeIndices(i int) ([]tir.Expr, error) {
	t := l.s.Stages[i].Tensor
	info := &l.stages[i]
	idx := make([]tir.Expr, len(t.Axis))
	for k := range t.Axis {
		idx[k] = info.rootVal[k]
		if info.local {
			idx[k] = tir.SubE(idx[k], info.rootMin[k])
		}
	}
	return idx, nil
}

// rewriteLoads redirects loads of locally stored stages to their storage,
// relative to the region start.
func (l *lowerer) rewriteLoads(e tir.Expr) tir.Expr {
	return tir.MutateExpr(e, func(x tir.Expr) tir.Expr {
		ld, ok := x.(*tir.Load)
		if !ok {
			return x
		}
		j, ok := l.byBuf[ld.Buf]
		if !ok || !l.stages[j].local {
			return x
		}
		p := &l.stages[j]
		idx := make([]tir.Expr, len(ld.Indices))
		for k, ix := range ld.Indices {
			idx[k] = tir.SubE(ix, p.rootMin[k])
		}
		return &tir.Load{Buf: p.storage, Indices: idx}
	})
}

// forKind is the kind of the loop of an iterator annotated a. On a GPU a
// parallel loop runs serially in its thread.
func (l *lowerer) forKind(a Annotation) tir.ForKind {
	if l.gpu != nil && a == Parallel {
		return tir.Serial
	}
	return forKind(a)
}

func forKind(a Annotation) tir.ForKind {
	switch a {
	case Parallel:
		return tir.Parallel
	case Vectorize:
		return tir.Vectorized
	case Unroll:
		return tir.Unrolled
	case NoAnn:
		return tir.Serial
	}
	return tir.ThreadBound
}

func threadName(a Annotation) string {
	if a >= VThread {
		return a.String()
	}
	return ""
}

// isThreadTag reports whether a binds a loop to a block or thread index.
func isThreadTag(a Annotation) bool { return a >= BlockX && a <= ThreadZ }
