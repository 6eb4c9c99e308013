package costmodel

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"strconv"
	"sync"

	"github.com/tessera-ml/tessera/tir"
)

// Feature extraction: one row of NumFeatures values per Store statement of a
// lowered program, following the groups of Ansor's per-store features. Every
// value is scaled by log2(1+x) as the last step (one-hot entries become 0 or
// 1). The vector layout is fixed by the constants below and named by
// FeatureNames; a model trained on one layout is meaningless on another.
//
// Terms used in the definitions:
//
//   - the loop stack of a store: its enclosing For loops, outermost first
//     (l_0 … l_{D-1}, D = the number of loops, e_i the extent of l_i);
//   - its trip count: e_0 × … × e_{D-1}, how often the store runs (guards
//     are ignored);
//   - an access: the store's write, or one Load anywhere in its value, its
//     indices or the conditions of the enclosing IfThenElse guards;
//   - the touched elements of a buffer under loop l_i: for every access to
//     the buffer inside l_i's body (from any statement), the size of the
//     box of elements it can reach while l_i and the loops inside it run
//     and the loops outside stay fixed, the largest over those accesses;
//     per index dimension the box spans the width of the index's range plus
//     one, capped by the dimension (widths come from the affine form of the
//     index: |coefficient| × (extent-1) summed over the varying loops;
//     floordiv(x, c) has width ⌈w/c⌉, floormod(x, c) min(w, c-1), min, max
//     and select the widest operand, anything else the whole dimension);
//   - the stride of an access for loop l: how many elements the flattened
//     (row-major) address moves when l's variable steps by one, away from
//     floordiv/floormod boundaries (floordiv(x, c) moves by stride(x)/c,
//     floormod(x, c) by stride(x) mod c).

// NumFeatures is the length of one feature row.
const NumFeatures = 168

// Group 1, computation (57). The first 16 are operation counts of one
// execution of the store (its value, its indices, the indices of its loads
// and the conditions of its enclosing guards) times the trip count:
//
//	float_mad        float Add/Sub with a float Mul operand (each such pair
//	                 also counts in float_addsub and float_mul)
//	float_addsub     float Add, Sub
//	float_mul        float Mul
//	float_divmod     float Div
//	float_cmp        float Min, Max and comparisons of floats
//	float_math_func  calls of tir.MathFuncs
//	float_other_func other calls
//	int_*            the same for integer operations (FloorDiv, FloorMod
//	                 count as int_divmod); int_math_func and int_other_func
//	                 are always 0 (tir has no integer calls) and kept for the
//	                 layout
//	bool_op          And, Or, Not, and comparisons of booleans
//	select_op        Select
//
// Then for each of vectorize, unroll and parallel, 11 features:
//
//	*_num   the number of enclosing loops of the kind
//	*_prod  the product of their extents
//	*_len   the extent of the innermost one
//	*_pos_* a one-hot position: none (no such loop), inner/middle/outer
//	        spatial or inner/middle/outer reduce, or mixed. A loop is spatial
//	        when its variable appears in the store's indices, reduce
//	        otherwise; it is inner when no enclosing loop of the same class is
//	        inside it, else outer when none is outside it, else middle. When
//	        the loops of the kind disagree, the position is mixed.
//
// A loop counts as unrolled when its kind is Unrolled, or when it is Serial
// inside Pragma{auto_unroll_max_step, N} and its step count (extent × the
// step count of its body, a store being one step, a vectorized loop one
// step) is at most N: the loops the code generator unrolls.
//
// Last, the GPU features: is_gpu (1 when the function binds any loop to a
// thread index) and the extents of the enclosing loops bound to blockIdx.x/y/z,
// threadIdx.x/y/z and vthread (their product when several): zero on CPU.
const (
	fFloatMad = iota
	fFloatAddSub
	fFloatMul
	fFloatDivMod
	fFloatCmp
	fFloatMath
	fFloatOther
	fIntMad
	fIntAddSub
	fIntMul
	fIntDivMod
	fIntCmp
	fIntMath
	fIntOther
	fBoolOp
	fSelectOp
	numOpCounts // 16

	fVec      = numOpCounts               // vec_num, vec_prod, vec_len, vec_pos_*
	fUnroll   = fVec + annFeatures        // unroll_*
	fParallel = fUnroll + annFeatures     // parallel_*
	fGPU      = fParallel + annFeatures   // is_gpu, then the 7 extents
	fBuffers  = fGPU + 8                  // 5 × bufFeatures
	fArith    = fBuffers + maxBufs*bufLen // 10 curve samples
	fAlloc    = fArith + arithSamples     // alloc_size, alloc_prod, alloc_outer_prod, alloc_inner_prod
	fOuter    = fAlloc + 4                // outer_prod, num_loops, auto_unroll_max_step
	fMachine  = fOuter + 3                // vector_bytes, vector_regs, vec_regs, reg_pressure
	fEnd      = fMachine + 4
)

// The 11 features of one annotation kind, relative to its group start.
const (
	annNum  = 0
	annProd = 1
	annLen  = 2
	annPos  = 3 // + one of the pos* values
	// annFeatures is the size of one annotation group.
	annFeatures = annPos + numPos
)

// Annotation positions (the one-hot order).
const (
	posNone = iota
	posInnerSpatial
	posMiddleSpatial
	posOuterSpatial
	posInnerReduce
	posMiddleReduce
	posOuterReduce
	posMixed
	numPos
)

// Group 2, memory (90): the buffers the store accesses, ordered by lines
// then bytes (both decreasing; first access first on ties), the first 5,
// 18 features each (zeros for missing buffers):
//
//	acc_type_read/write/rw  one-hot: only read, only written, both
//	bytes                   element bytes × trip count × number of accesses
//	                        to the buffer in the statement
//	unique_bytes            element bytes × touched elements under l_0
//	                        (one element when D = 0)
//	lines                   cache lines moved, assuming no reuse beyond the
//	                        innermost loop l_i with a non-zero stride s:
//	                        max(1, trip / (e_{i+1}×…×e_{D-1}) ×
//	                        min(1, s × element bytes / 64)); 1 when no loop
//	                        moves the access
//	unique_lines            max(1, unique_bytes / min(64, c)), c the bytes of
//	                        the contiguous run of the region under l_0 (the
//	                        innermost dimension's reach, times the next
//	                        dimension's while the inner ones are whole)
//	reuse_type_loop/serial/none  one-hot, found walking the stack inward
//	                        out: the first loop l_i whose variable appears in
//	                        none of the statement's accesses to the buffer is
//	                        loop reuse (the data is read again every
//	                        iteration); failing that, the first loop under
//	                        which more than one statement accesses the buffer
//	                        is serial reuse; else no reuse
//	reuse_dis_iter          loop reuse: e_{i+1}×…×e_{D-1}; serial: the same
//	reuse_dis_bytes         loop reuse: the bytes touched (all buffers) under
//	                        l_{i+1}, or the statement's bytes per execution
//	                        when l_i is innermost; serial: the bytes touched
//	                        under l_i divided by e_i
//	reuse_ct                loop reuse: e_i; serial: statements - 1
//	*_d_reuse_ct            bytes, unique_bytes, lines, unique_lines divided
//	                        by reuse_ct (by 1 when there is no reuse)
//	stride                  the stride for the innermost loop l_{D-1} (the
//	                        smallest non-zero one over the accesses)
const (
	bAccRead = iota
	bAccWrite
	bAccRW
	bBytes
	bUniqueBytes
	bLines
	bUniqueLines
	bReuseLoop
	bReuseSerial
	bReuseNone
	bReuseDisIter
	bReuseDisBytes
	bReuseCt
	bBytesDReuse
	bUniqueBytesDReuse
	bLinesDReuse
	bUniqueLinesDReuse
	bStride
	bufLen // 18

	maxBufs = 5
)

// Group 3, the arithmetic intensity curve (10): with c_i = float operations
// per execution × e_i×…×e_{D-1} and m_i = the bytes touched (all buffers)
// under l_i, the points (log2 c_i, c_i/m_i) for i = D-1 … 0 form a curve
// rising in x; it is sampled at x = log2(c_0) × k/10, k = 1…10, by linear
// interpolation (from (0, 0) before the first point). Zero when the store
// does no float operation or has no loops.
const arithSamples = 10

// Group 4, allocation (4), when the stored buffer is declared by an
// Allocate (zero for parameters):
//
//	alloc_size        buffer bytes
//	alloc_prod        alloc_size × alloc_outer_prod
//	alloc_outer_prod  the product of the extents of the loops around the
//	                  Allocate (how often it is allocated)
//	alloc_inner_prod  trip count / alloc_outer_prod
//
// Group 5, outer (3): outer_prod (the trip count), num_loops (D) and
// auto_unroll_max_step (the value of the innermost enclosing pragma, 0 when
// none).

// Group 6, the machine (4): what the same program costs depends on the
// processor it runs on, so the features say which (zero where the
// Hardware is unknown, as on a GPU):
//
//	vector_bytes  the width of one vector register (Hardware.VectorBytes)
//	vector_regs   the number of vector registers (Hardware.VectorRegs)
//	vec_regs      the registers one value of the innermost vectorized loop
//	              spans: vec_len × element bytes / vector_bytes (a 16-lane
//	              float loop is two registers of 256 bits)
//	reg_pressure  the register tile against the register file: the bytes
//	              of Local buffers that the straight-line code around the
//	              store touches (under the outermost of the unrolled and
//	              vectorized loops inside the innermost rolled loop; one
//	              element of the stored buffer when there is none), over
//	              vector_regs × vector_bytes. Above 1 the compiler spills.

// Hardware is what the features know of the processor a program is
// compiled for (backend fills it from the machine model). Zero vector
// fields are none (a GPU, or unknown): the machine features are zero.
type Hardware struct {
	VectorBytes int // width of one vector register
	VectorRegs  int // number of vector registers
	// CacheLine is the size in bytes of a data cache line
	// (machine.Machine.CacheLine), the unit of the lines and
	// unique_lines features. It must be set, on a GPU too.
	CacheLine int
}

// FeatureNames names every feature, parallel to the rows Extract returns.
var FeatureNames = featureNames()

func featureNames() []string {
	names := make([]string, 0, NumFeatures)
	names = append(names,
		"float_mad", "float_addsub", "float_mul", "float_divmod", "float_cmp",
		"float_math_func", "float_other_func",
		"int_mad", "int_addsub", "int_mul", "int_divmod", "int_cmp",
		"int_math_func", "int_other_func", "bool_op", "select_op")
	pos := []string{"none", "inner_spatial", "middle_spatial", "outer_spatial",
		"inner_reduce", "middle_reduce", "outer_reduce", "mixed"}
	for _, ann := range []string{"vec", "unroll", "parallel"} {
		names = append(names, ann+"_num", ann+"_prod", ann+"_len")
		for _, p := range pos {
			names = append(names, ann+"_pos_"+p)
		}
	}
	names = append(names, "is_gpu", "blockIdx_x_len", "blockIdx_y_len", "blockIdx_z_len",
		"threadIdx_x_len", "threadIdx_y_len", "threadIdx_z_len", "vthread_len")
	buf := []string{"acc_type_read", "acc_type_write", "acc_type_rw", "bytes",
		"unique_bytes", "lines", "unique_lines", "reuse_type_loop", "reuse_type_serial",
		"reuse_type_none", "reuse_dis_iter", "reuse_dis_bytes", "reuse_ct",
		"bytes_d_reuse_ct", "unique_bytes_d_reuse_ct", "lines_d_reuse_ct",
		"unique_lines_d_reuse_ct", "stride"}
	for k := range maxBufs {
		for _, b := range buf {
			names = append(names, "B"+strconv.Itoa(k)+"_"+b)
		}
	}
	for k := range arithSamples {
		names = append(names, "arith_intensity_curve_"+strconv.Itoa(k))
	}
	names = append(names, "alloc_size", "alloc_prod", "alloc_outer_prod", "alloc_inner_prod",
		"outer_prod", "num_loops", "auto_unroll_max_step",
		"vector_bytes", "vector_regs", "vec_regs", "reg_pressure")
	if len(names) != NumFeatures || fEnd != NumFeatures {
		panic("costmodel: feature layout out of sync with FeatureNames")
	}
	return names
}

// Extract returns one feature row per Store statement of f, compiled for
// hw, in program order. The rows share one backing array. Extract is safe
// for concurrent use.
//
// Precondition: hw.CacheLine > 0; Extract panics otherwise, since lines
// of no bytes would corrupt the features silently.
func Extract(f *tir.PrimFunc, hw Hardware) [][]float32 {
	if hw.CacheLine <= 0 {
		panic(fmt.Sprintf("costmodel: Extract: Hardware.CacheLine is %d (machine.Machine.CacheLine gives it)", hw.CacheLine))
	}
	x := extractorPool.Get().(*extractor)
	x.hw = hw
	rows := x.run(f)
	extractorPool.Put(x)
	return rows
}

// ExtractAll extracts the rows of every function, with up to workers
// goroutines (0: GOMAXPROCS). A nil function gets no rows.
func ExtractAll(fs []*tir.PrimFunc, hw Hardware, workers int) [][][]float32 {
	out := make([][][]float32, len(fs))
	parallelFor(len(fs), workers, func(i int) {
		if fs[i] != nil {
			out[i] = Extract(fs[i], hw)
		}
	})
	return out
}

// parallelFor runs body(i) for i in [0, n) on up to workers goroutines.
func parallelFor(n, workers int, body func(i int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			body(i)
		}
		return
	}
	var wg sync.WaitGroup
	const chunk = 16
	var mu sync.Mutex
	next := 0
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				lo := next
				next += chunk
				mu.Unlock()
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+chunk, n); i++ {
					body(i)
				}
			}
		}()
	}
	wg.Wait()
}

var extractorPool = sync.Pool{New: func() any { return new(extractor) }}

// loopInfo is one For loop of the function.
type loopInfo struct {
	v        *tir.Var
	ext      int64
	kind     tir.ForKind
	thread   string
	parent   int32 // enclosing loop, -1 at the root
	auto     int   // auto_unroll_max_step in effect, 0 when none
	steps    int64 // step count of the loop (see the unroll rule)
	unrolled bool
}

// stmtInfo is one Store.
type stmtInfo struct {
	store    *tir.Store
	stackOff int32 // its loop stack in extractor.stacks
	depth    int32
	accOff   int32 // its accesses in extractor.accs
	accN     int32
	auto     int
	counts   [numOpCounts]float64 // per execution
}

// accInfo is one access of a statement.
type accInfo struct {
	buf   int32
	write bool
	idx   []tir.Expr
	// Filled by analyze:
	touchOff  int32  // touched elements under l_L, L = 0…depth-1, in extractor.ints
	strideOff int32  // flattened stride per loop depth, in extractor.ints
	regionOff int32  // per-dimension reach under l_0, in extractor.ints
	mask      uint64 // bit d: the variable of l_d appears in an index
}

// bufInfo is one buffer of the function.
type bufInfo struct {
	b         *tir.Buffer
	elemBytes int64
	allocated bool
	allocLoop int32 // the loop enclosing its Allocate, -1 at the root
	strides   []int64
}

// tableEntry is what the loops know of a buffer: the touched elements under
// the loop and how many statements inside it access the buffer.
type tableEntry struct {
	touched int64
	stmts   int32
	last    int32 // 1 + the last statement counted
}

// extractor holds the scratch state of one extraction; it is reused through
// extractorPool so that the hot path allocates only the result.
type extractor struct {
	loops  []loopInfo
	stack  []int32 // current loop stack while walking
	guards []tir.Expr
	stmts  []stmtInfo
	stacks []int32
	accs   []accInfo
	bufs   []bufInfo
	isGPU  bool
	hw     Hardware

	ints      []int64 // per-access results
	vec       []int64 // width/stride vectors while evaluating one index
	table     []tableEntry
	loopBytes []float64
	bf        []bufFeat
	strideBuf []int64
}

func (x *extractor) reset() {
	x.loops = x.loops[:0]
	x.stack = x.stack[:0]
	x.guards = x.guards[:0]
	x.stmts = x.stmts[:0]
	x.stacks = x.stacks[:0]
	x.accs = x.accs[:0]
	for i := range x.bufs {
		x.bufs[i] = bufInfo{}
	}
	x.bufs = x.bufs[:0]
	x.isGPU = false
	x.ints = x.ints[:0]
}

// prepare walks f and analyzes its accesses; it reports whether f has a
// store.
func (x *extractor) prepare(f *tir.PrimFunc) bool {
	x.reset()
	for _, p := range f.Params {
		x.bufID(p)
	}
	x.walk(f.Body, 0)
	if len(x.stmts) == 0 {
		x.reset()
		return false
	}
	x.analyze()
	return true
}

func (x *extractor) run(f *tir.PrimFunc) [][]float32 {
	if !x.prepare(f) {
		return nil
	}
	flat := make([]float32, len(x.stmts)*NumFeatures)
	rows := make([][]float32, len(x.stmts))
	var row [NumFeatures]float64
	for i := range x.stmts {
		x.features(i, &row)
		out := flat[i*NumFeatures : (i+1)*NumFeatures : (i+1)*NumFeatures]
		for k, v := range row {
			out[k] = float32(math.Log2(1 + v))
		}
		rows[i] = out
	}
	x.reset() // drop references to f
	return rows
}

// bufID returns the index of b in x.bufs, adding it.
func (x *extractor) bufID(b *tir.Buffer) int32 {
	for i := range x.bufs {
		if x.bufs[i].b == b {
			return int32(i)
		}
	}
	eb := int64(4)
	switch b.DType {
	case tir.Int:
		eb = 8
	case tir.Bool:
		eb = 1
	}
	st := make([]int64, len(b.Shape))
	acc := int64(1)
	for k := len(b.Shape) - 1; k >= 0; k-- {
		st[k] = acc
		acc *= int64(b.Shape[k])
	}
	x.bufs = append(x.bufs, bufInfo{b: b, elemBytes: eb, allocLoop: -1, strides: st})
	return int32(len(x.bufs) - 1)
}

// walk visits s with the given auto-unroll step in effect and returns its
// step count.
func (x *extractor) walk(s tir.Stmt, auto int) int64 {
	switch s := s.(type) {
	case nil:
		return 0
	case *tir.For:
		id := int32(len(x.loops))
		parent := int32(-1)
		if n := len(x.stack); n > 0 {
			parent = x.stack[n-1]
		}
		if s.Kind == tir.ThreadBound {
			x.isGPU = true
		}
		x.loops = append(x.loops, loopInfo{v: s.Var, ext: int64(max(s.Extent, 0)), kind: s.Kind,
			thread: s.Thread, parent: parent, auto: auto})
		x.stack = append(x.stack, id)
		body := x.walk(s.Body, auto)
		x.stack = x.stack[:len(x.stack)-1]
		steps := satMul(int64(max(s.Extent, 0)), body)
		if s.Kind == tir.Vectorized {
			steps = 1
		}
		l := &x.loops[id]
		l.steps = steps
		l.unrolled = s.Kind == tir.Unrolled || (s.Kind == tir.Serial && auto > 0 && steps <= int64(auto))
		return steps
	case *tir.Store:
		x.addStmt(s, auto)
		return 1
	case *tir.Allocate:
		id := x.bufID(s.Buf)
		x.bufs[id].allocated = true
		if n := len(x.stack); n > 0 {
			x.bufs[id].allocLoop = x.stack[n-1]
		}
		return x.walk(s.Body, auto)
	case *tir.IfThenElse:
		x.guards = append(x.guards, s.Cond)
		n := x.walk(s.Then, auto)
		x.guards = x.guards[:len(x.guards)-1]
		if s.Else != nil {
			x.guards = append(x.guards, tir.NotE(s.Cond))
			n = satAdd(n, x.walk(s.Else, auto))
			x.guards = x.guards[:len(x.guards)-1]
		}
		return n
	case *tir.Seq:
		var n int64
		for _, c := range s.Stmts {
			n = satAdd(n, x.walk(c, auto))
		}
		return n
	case *tir.Let:
		return x.walk(s.Body, auto)
	case *tir.Pragma:
		if s.Key == "auto_unroll_max_step" {
			auto = s.Value
		}
		return x.walk(s.Body, auto)
	}
	return 0
}

// addStmt records a store with its loop stack, op counts and accesses.
func (x *extractor) addStmt(s *tir.Store, auto int) {
	si := int32(len(x.stmts))
	x.stmts = append(x.stmts, stmtInfo{
		store:    s,
		stackOff: int32(len(x.stacks)),
		depth:    int32(len(x.stack)),
		accOff:   int32(len(x.accs)),
		auto:     auto,
	})
	x.stacks = append(x.stacks, x.stack...)
	st := &x.stmts[si]
	x.accs = append(x.accs, accInfo{buf: x.bufID(s.Buf), write: true, idx: s.Indices})
	for _, e := range s.Indices {
		x.count(e, st)
	}
	x.count(s.Value, st)
	for _, g := range x.guards {
		x.count(g, st)
	}
	st.accN = int32(len(x.accs)) - st.accOff
}

// count adds the operations of e to st's counts and records its loads.
func (x *extractor) count(e tir.Expr, st *stmtInfo) {
	switch e := e.(type) {
	case *tir.Binary:
		isInt := e.A.Type() == tir.Int
		var k int
		switch e.Op {
		case tir.Add, tir.Sub:
			k = fFloatAddSub
			if isMul(e.A) || isMul(e.B) {
				if isInt {
					st.counts[fIntMad]++
				} else {
					st.counts[fFloatMad]++
				}
			}
		case tir.Mul:
			k = fFloatMul
		case tir.Div, tir.FloorDiv, tir.FloorMod:
			k = fFloatDivMod
		default: // Min, Max
			k = fFloatCmp
		}
		if isInt {
			k += fIntMad - fFloatMad
		}
		st.counts[k]++
		x.count(e.A, st)
		x.count(e.B, st)
	case *tir.Compare:
		switch e.A.Type() {
		case tir.Int:
			st.counts[fIntCmp]++
		case tir.Bool:
			st.counts[fBoolOp]++
		default:
			st.counts[fFloatCmp]++
		}
		x.count(e.A, st)
		x.count(e.B, st)
	case *tir.And:
		st.counts[fBoolOp]++
		x.count(e.A, st)
		x.count(e.B, st)
	case *tir.Or:
		st.counts[fBoolOp]++
		x.count(e.A, st)
		x.count(e.B, st)
	case *tir.Not:
		st.counts[fBoolOp]++
		x.count(e.A, st)
	case *tir.Select:
		st.counts[fSelectOp]++
		x.count(e.Cond, st)
		x.count(e.T, st)
		x.count(e.F, st)
	case *tir.Cast:
		x.count(e.X, st)
	case *tir.Call:
		if _, ok := tir.MathFuncs[e.Fn]; ok {
			st.counts[fFloatMath]++
		} else {
			st.counts[fFloatOther]++
		}
		for _, a := range e.Args {
			x.count(a, st)
		}
	case *tir.Load:
		x.accs = append(x.accs, accInfo{buf: x.bufID(e.Buf), idx: e.Indices})
		for _, i := range e.Indices {
			x.count(i, st)
		}
	}
}

func isMul(e tir.Expr) bool {
	b, ok := e.(*tir.Binary)
	return ok && b.Op == tir.Mul
}

// analyze computes every access's touched elements, strides and variable
// mask, then the loop × buffer table and the bytes touched under each loop.
func (x *extractor) analyze() {
	for si := range x.stmts {
		st := &x.stmts[si]
		stack := x.stacks[st.stackOff : st.stackOff+st.depth]
		for a := st.accOff; a < st.accOff+st.accN; a++ {
			x.analyzeAccess(&x.accs[a], stack)
		}
	}
	nb := len(x.bufs)
	need := len(x.loops) * nb
	if cap(x.table) < need {
		x.table = make([]tableEntry, need)
	}
	x.table = x.table[:need]
	clear(x.table)
	for si := range x.stmts {
		st := &x.stmts[si]
		stack := x.stacks[st.stackOff : st.stackOff+st.depth]
		for a := st.accOff; a < st.accOff+st.accN; a++ {
			acc := &x.accs[a]
			touch := x.ints[acc.touchOff : acc.touchOff+st.depth]
			for L, loop := range stack {
				e := &x.table[int(loop)*nb+int(acc.buf)]
				e.touched = max(e.touched, touch[L])
				if e.last != int32(si)+1 {
					e.stmts++
					e.last = int32(si) + 1
				}
			}
		}
	}
	if cap(x.loopBytes) < len(x.loops) {
		x.loopBytes = make([]float64, len(x.loops))
	}
	x.loopBytes = x.loopBytes[:len(x.loops)]
	for l := range x.loops {
		var s float64
		for b := range nb {
			s += float64(x.table[l*nb+b].touched) * float64(x.bufs[b].elemBytes)
		}
		x.loopBytes[l] = s
	}
}

// wide stands for "the whole dimension" in index widths.
const wide = int64(1) << 40

// analyzeAccess fills acc's touched elements per level, flattened strides
// per loop and variable mask.
func (x *extractor) analyzeAccess(acc *accInfo, stack []int32) {
	D := len(stack)
	b := &x.bufs[acc.buf]
	shape := b.b.Shape
	acc.touchOff = int32(len(x.ints))
	for range D {
		x.ints = append(x.ints, 1)
	}
	acc.strideOff = int32(len(x.ints))
	for range D {
		x.ints = append(x.ints, 0)
	}
	acc.regionOff = int32(len(x.ints))
	for range len(acc.idx) {
		x.ints = append(x.ints, 1)
	}
	touch := x.ints[acc.touchOff : acc.touchOff+int32(D)]
	stride := x.ints[acc.strideOff : acc.strideOff+int32(D)]
	region := x.ints[acc.regionOff : acc.regionOff+int32(len(acc.idx))]
	acc.mask = 0
	for k, e := range acc.idx {
		x.vec = x.vec[:0]
		off, mask := x.eval(e, stack)
		acc.mask |= mask
		n := int64(1)
		if k < len(shape) {
			n = int64(max(shape[k], 1))
		}
		w := x.vec[off : off+D]
		s := x.vec[off+D : off+2*D]
		for L := range D {
			touch[L] = satMul(touch[L], min(w[L]+1, n))
			if k < len(b.strides) {
				stride[L] += s[L] * b.strides[k]
			}
		}
		if D > 0 {
			region[k] = min(w[0]+1, n)
		}
	}
}

// eval computes, for index expression e over the loop stack, the widths of
// its range per level L (loops L… varying) and its step per loop variable,
// as a vector of 2D values in x.vec starting at the returned offset, and the
// mask of loop depths whose variables it mentions.
func (x *extractor) eval(e tir.Expr, stack []int32) (int, uint64) {
	D := len(stack)
	off := len(x.vec)
	for range 2 * D {
		x.vec = append(x.vec, 0)
	}
	switch e := e.(type) {
	case *tir.Var:
		for d := D - 1; d >= 0; d-- {
			l := &x.loops[stack[d]]
			if l.v == e {
				for L := 0; L <= d; L++ {
					x.vec[off+L] = l.ext - 1
				}
				x.vec[off+D+d] = 1
				return off, bit(d)
			}
		}
		return off, 0
	case *tir.IntImm:
		return off, 0
	case *tir.Binary:
		switch e.Op {
		case tir.Add, tir.Sub:
			a, ma := x.eval(e.A, stack)
			b, mb := x.eval(e.B, stack)
			sign := int64(1)
			if e.Op == tir.Sub {
				sign = -1
			}
			for i := range D {
				x.vec[off+i] = satAdd(x.vec[a+i], x.vec[b+i])
				x.vec[off+D+i] = x.vec[a+D+i] + sign*x.vec[b+D+i]
			}
			return off, ma | mb
		case tir.Mul:
			c, isC := tir.IsConst(e.B)
			other := e.A
			if !isC {
				c, isC = tir.IsConst(e.A)
				other = e.B
			}
			if isC {
				a, ma := x.eval(other, stack)
				ac := c
				if ac < 0 {
					ac = -ac
				}
				for i := range D {
					x.vec[off+i] = satMul(x.vec[a+i], ac)
					x.vec[off+D+i] = x.vec[a+D+i] * c
				}
				return off, ma
			}
		case tir.FloorDiv, tir.FloorMod:
			c, isC := tir.IsConst(e.B)
			if isC && c > 0 {
				a, ma := x.eval(e.A, stack)
				for i := range D {
					w, s := x.vec[a+i], x.vec[a+D+i]
					if e.Op == tir.FloorDiv {
						x.vec[off+i] = (w + c - 1) / c
						x.vec[off+D+i] = s / c
					} else {
						x.vec[off+i] = min(w, c-1)
						x.vec[off+D+i] = s % c
					}
				}
				return off, ma
			}
		case tir.Min, tir.Max:
			a, ma := x.eval(e.A, stack)
			b, mb := x.eval(e.B, stack)
			x.widest(off, a, b, D)
			return off, ma | mb
		}
	case *tir.Select:
		_, mc := x.eval(e.Cond, stack)
		a, ma := x.eval(e.T, stack)
		b, mb := x.eval(e.F, stack)
		x.widest(off, a, b, D)
		return off, ma | mb | mc
	}
	// Anything else: the whole dimension at every level that varies a
	// variable it mentions; no regular step.
	m := x.mentions(e, stack)
	if m != 0 {
		deepest := 63 - bits.LeadingZeros64(m)
		for L := 0; L <= deepest && L < D; L++ {
			x.vec[off+L] = wide
		}
	}
	return off, m
}

// widest writes into off the larger width of a and b per level, and the
// step of a (of b where a does not move).
func (x *extractor) widest(off, a, b, D int) {
	for i := range D {
		x.vec[off+i] = max(x.vec[a+i], x.vec[b+i])
		s := x.vec[a+D+i]
		if s == 0 {
			s = x.vec[b+D+i]
		}
		x.vec[off+D+i] = s
	}
}

// mentions returns the mask of loop depths whose variables e mentions.
func (x *extractor) mentions(e tir.Expr, stack []int32) uint64 {
	var m uint64
	tir.WalkExpr(e, func(n tir.Expr) bool {
		if v, ok := n.(*tir.Var); ok {
			for d := len(stack) - 1; d >= 0; d-- {
				if x.loops[stack[d]].v == v {
					m |= bit(d)
					break
				}
			}
		}
		return true
	})
	return m
}

// bit returns the mask bit of loop depth d; depths past 63 share the top
// bit (so they always read as mentioned).
func bit(d int) uint64 {
	if d > 63 {
		d = 63
	}
	return 1 << uint(d)
}

func hasBit(m uint64, d int) bool {
	if d >= 63 {
		return m>>63 != 0 || d > 63
	}
	return m&(1<<uint(d)) != 0
}

// bufFeat gathers one buffer's features for one statement.
type bufFeat struct {
	buf         int32
	read, write bool
	refs        int
	first       int // order of first access, for stable ties
	v           [bufLen]float64
}

// features writes the features of statement si into row.
func (x *extractor) features(si int, row *[NumFeatures]float64) {
	*row = [NumFeatures]float64{}
	st := &x.stmts[si]
	D := int(st.depth)
	stack := x.stacks[st.stackOff : st.stackOff+st.depth]
	accs := x.accs[st.accOff : st.accOff+st.accN]
	nb := len(x.bufs)

	trip := 1.0
	for _, l := range stack {
		trip *= float64(x.loops[l].ext)
	}
	for k := range numOpCounts {
		row[k] = st.counts[k] * trip
	}

	// Annotations. Spatial loops: those whose variable the store's indices
	// mention (the write access is always first).
	spatial := accs[0].mask
	x.annotation(row[fVec:fVec+annFeatures], stack, spatial, func(l *loopInfo) bool { return l.kind == tir.Vectorized })
	x.annotation(row[fUnroll:fUnroll+annFeatures], stack, spatial, func(l *loopInfo) bool { return l.unrolled })
	x.annotation(row[fParallel:fParallel+annFeatures], stack, spatial, func(l *loopInfo) bool { return l.kind == tir.Parallel })
	if x.isGPU {
		row[fGPU] = 1
		for _, id := range stack {
			l := &x.loops[id]
			if l.kind != tir.ThreadBound {
				continue
			}
			k := -1
			switch l.thread {
			case "blockIdx.x":
				k = 1
			case "blockIdx.y":
				k = 2
			case "blockIdx.z":
				k = 3
			case "threadIdx.x":
				k = 4
			case "threadIdx.y":
				k = 5
			case "threadIdx.z":
				k = 6
			case "vthread":
				k = 7
			}
			if k > 0 {
				if row[fGPU+k] == 0 {
					row[fGPU+k] = 1
				}
				row[fGPU+k] *= float64(l.ext)
			}
		}
	}

	// Buffers.
	bf := x.bf[:0]
	for ai := range accs {
		a := &accs[ai]
		j := -1
		for k := range bf {
			if bf[k].buf == a.buf {
				j = k
				break
			}
		}
		if j < 0 {
			bf = append(bf, bufFeat{buf: a.buf, first: len(bf)})
			j = len(bf) - 1
		}
		bf[j].refs++
		if a.write {
			bf[j].write = true
		} else {
			bf[j].read = true
		}
	}
	bytesPerExec := 0.0
	for k := range bf {
		bytesPerExec += float64(bf[k].refs) * float64(x.bufs[bf[k].buf].elemBytes)
	}
	for k := range bf {
		x.bufferFeatures(&bf[k], st, stack, accs, trip, bytesPerExec, nb)
	}
	// Order by lines, then bytes, decreasing; insertion sort keeps ties in
	// first-access order.
	for i := 1; i < len(bf); i++ {
		for j := i; j > 0 && less(&bf[j-1], &bf[j]); j-- {
			bf[j-1], bf[j] = bf[j], bf[j-1]
		}
	}
	for k := 0; k < len(bf) && k < maxBufs; k++ {
		copy(row[fBuffers+k*bufLen:fBuffers+(k+1)*bufLen], bf[k].v[:])
	}
	x.bf = bf

	// Arithmetic intensity curve.
	flops := 0.0
	for k := fFloatMad; k <= fFloatOther; k++ {
		if k != fFloatMad { // a mad is already an add and a mul
			flops += st.counts[k]
		}
	}
	if flops > 0 && D > 0 {
		x.arithCurve(row[fArith:fArith+arithSamples], stack, flops)
	}

	// Allocation.
	sb := &x.bufs[accs[0].buf]
	if sb.allocated {
		outer := 1.0
		for l := sb.allocLoop; l >= 0; l = x.loops[l].parent {
			outer *= float64(x.loops[l].ext)
		}
		size := float64(sb.b.Size()) * float64(sb.elemBytes)
		row[fAlloc] = size
		row[fAlloc+1] = size * outer
		row[fAlloc+2] = outer
		if outer > 0 {
			row[fAlloc+3] = trip / outer
		}
	}
	row[fOuter] = trip
	row[fOuter+1] = float64(D)
	row[fOuter+2] = float64(st.auto)

	x.machine(row[fMachine:fMachine+4], st, stack, accs)
}

// machine writes the machine features of a statement (group 6).
func (x *extractor) machine(out []float64, st *stmtInfo, stack []int32, accs []accInfo) {
	hw := x.hw
	if hw.VectorBytes <= 0 || hw.VectorRegs <= 0 {
		return
	}
	out[0], out[1] = float64(hw.VectorBytes), float64(hw.VectorRegs)
	elem := float64(x.bufs[accs[0].buf].elemBytes)
	for d := len(stack) - 1; d >= 0; d-- {
		if l := &x.loops[stack[d]]; l.kind == tir.Vectorized {
			out[2] = float64(l.ext) * elem / float64(hw.VectorBytes)
			break
		}
	}
	// The straight-line code: the loops inside the innermost rolled one.
	top := len(stack)
	for top > 0 {
		l := &x.loops[stack[top-1]]
		if !l.unrolled && l.kind != tir.Vectorized {
			break
		}
		top--
	}
	tile := elem
	if top < len(stack) {
		tile = 0
		nb := len(x.bufs)
		for b := range x.bufs {
			if x.bufs[b].b.Scope == tir.Local {
				tile += float64(x.table[int(stack[top])*nb+b].touched) * float64(x.bufs[b].elemBytes)
			}
		}
	}
	out[3] = tile / float64(hw.VectorRegs*hw.VectorBytes)
}

func less(a, b *bufFeat) bool {
	if a.v[bLines] != b.v[bLines] {
		return a.v[bLines] < b.v[bLines]
	}
	return a.v[bBytes] < b.v[bBytes]
}

// annotation fills one annotation group for the loops of the stack that
// match is.
func (x *extractor) annotation(out []float64, stack []int32, spatial uint64, is func(*loopInfo) bool) {
	num, prod, inner := 0, 1.0, 0.0
	pos := -1
	for d, id := range stack {
		l := &x.loops[id]
		if !is(l) {
			continue
		}
		num++
		prod *= float64(l.ext)
		inner = float64(l.ext)
		// Class and rank among the loops of the same class.
		sp := hasBit(spatial, d)
		innerMost, outerMost := true, true
		for d2 := range stack {
			if d2 == d || hasBit(spatial, d2) != sp {
				continue
			}
			if d2 > d {
				innerMost = false
			} else {
				outerMost = false
			}
		}
		p := posMiddleSpatial
		switch {
		case innerMost:
			p = posInnerSpatial
		case outerMost:
			p = posOuterSpatial
		}
		if !sp {
			p += posInnerReduce - posInnerSpatial
		}
		if pos == -1 {
			pos = p
		} else if pos != p {
			pos = posMixed
		}
	}
	if num == 0 {
		out[annPos+posNone] = 1
		return
	}
	out[annNum] = float64(num)
	out[annProd] = prod
	out[annLen] = inner
	out[annPos+pos] = 1
}

// bufferFeatures computes the 18 features of one buffer of a statement.
func (x *extractor) bufferFeatures(f *bufFeat, st *stmtInfo, stack []int32, accs []accInfo, trip, bytesPerExec float64, nb int) {
	D := len(stack)
	b := &x.bufs[f.buf]
	eb := float64(b.elemBytes)
	v := &f.v
	switch {
	case f.read && f.write:
		v[bAccRW] = 1
	case f.write:
		v[bAccWrite] = 1
	default:
		v[bAccRead] = 1
	}
	bytes := eb * trip * float64(f.refs)
	uniqueBytes := eb
	lines, uniqueLines := 1.0, 1.0
	var mask uint64
	var firstAcc *accInfo
	for ai := range accs {
		if accs[ai].buf == f.buf {
			mask |= accs[ai].mask
			if firstAcc == nil {
				firstAcc = &accs[ai]
			}
		}
	}
	stride := 0.0
	if D > 0 {
		uniqueBytes = eb * float64(x.table[int(stack[0])*nb+int(f.buf)].touched)
		// Smallest non-zero stride per depth, innermost moving loop.
		moving := -1
		var s int64
		for d := D - 1; d >= 0 && moving < 0; d-- {
			for ai := range accs {
				a := &accs[ai]
				if a.buf != f.buf {
					continue
				}
				sd := x.ints[a.strideOff+int32(d)]
				if sd < 0 {
					sd = -sd
				}
				if sd != 0 && (s == 0 || sd < s) {
					s = sd
				}
			}
			if s != 0 {
				moving = d
			}
		}
		if moving >= 0 {
			reduce := 1.0
			for d := moving + 1; d < D; d++ {
				reduce *= float64(x.loops[stack[d]].ext)
			}
			lines = max(1, trip/reduce*min(1, float64(s)*eb/float64(x.hw.CacheLine)))
			if moving == D-1 {
				stride = float64(s)
			}
		}
		// Contiguous run of the region under l_0 (largest reach per
		// dimension over the statement's accesses to the buffer).
		shape := b.b.Shape
		cont := eb
		for k := len(shape) - 1; k >= 0; k-- {
			r := int64(1)
			for ai := range accs {
				a := &accs[ai]
				if a.buf == f.buf && k < len(a.idx) {
					r = max(r, x.ints[a.regionOff+int32(k)])
				}
			}
			cont *= float64(r)
			if r < int64(shape[k]) {
				break
			}
		}
		uniqueLines = max(1, uniqueBytes/min(float64(x.hw.CacheLine), cont))
	}
	v[bBytes] = bytes
	v[bUniqueBytes] = uniqueBytes
	v[bLines] = lines
	v[bUniqueLines] = uniqueLines
	v[bStride] = stride

	// Reuse, walking the stack inward out.
	reuse := bReuseNone
	var disIter, disBytes, ct float64
	inner := 1.0 // e_{i+1} × … × e_{D-1}
	for i := D - 1; i >= 0; i-- {
		l := &x.loops[stack[i]]
		if !hasBit(mask, i) {
			reuse = bReuseLoop
			ct = float64(l.ext)
			disIter = inner
			if i == D-1 {
				disBytes = bytesPerExec
			} else {
				disBytes = x.loopBytes[stack[i+1]]
			}
			break
		}
		if n := x.table[int(stack[i])*nb+int(f.buf)].stmts; n > 1 {
			reuse = bReuseSerial
			ct = float64(n - 1)
			disIter = inner
			if l.ext > 0 {
				disBytes = x.loopBytes[stack[i]] / float64(l.ext)
			}
			break
		}
		inner *= float64(l.ext)
	}
	v[reuse] = 1
	v[bReuseDisIter] = disIter
	v[bReuseDisBytes] = disBytes
	v[bReuseCt] = ct
	div := max(ct, 1)
	v[bBytesDReuse] = bytes / div
	v[bUniqueBytesDReuse] = uniqueBytes / div
	v[bLinesDReuse] = lines / div
	v[bUniqueLinesDReuse] = uniqueLines / div
}

// arithCurve samples the arithmetic intensity curve of a statement.
func (x *extractor) arithCurve(out []float64, stack []int32, flops float64) {
	D := len(stack)
	// Points from the innermost loop outward: x rises.
	var px, py [64]float64
	n := min(D, len(px))
	c := flops
	for k := range n {
		l := stack[D-1-k]
		c *= float64(x.loops[l].ext)
		px[k] = math.Log2(max(c, 1))
		if m := x.loopBytes[l]; m > 0 {
			py[k] = c / m
		}
	}
	xmax := px[n-1]
	if xmax <= 0 {
		for k := range out {
			out[k] = py[n-1]
		}
		return
	}
	p := 0
	for k := range out {
		target := xmax * float64(k+1) / float64(len(out))
		for p < n-1 && px[p] < target-1e-9 {
			p++
		}
		x0, y0 := 0.0, 0.0
		if p > 0 {
			x0, y0 = px[p-1], py[p-1]
		}
		x1, y1 := px[p], py[p]
		if x1-x0 <= 1e-12 {
			out[k] = y1
			continue
		}
		t := (target - x0) / (x1 - x0)
		out[k] = y0 + t*(y1-y0)
	}
}

func satAdd(a, b int64) int64 {
	s := a + b
	if s < a || s < b || s > wide {
		return wide
	}
	return s
}

func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > wide/b {
		return wide
	}
	return a * b
}
