package codegen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/tir"
)

// GPU kernels.
//
// GPU prints functions lowered by schedule.LowerGPU as CUDA C or OpenCL C,
// with the C printer's statements and expressions (integers are 32-bit: no
// buffer of a GPU kernel reaches 2^31 elements), its unrolling and its
// scalarized local buffers. Each launch of a function (tir.Kernels) is one
// kernel NAME_kI whose parameters are the global buffers it touches; its
// launch chain becomes the block and thread indices, its shared buffers are
// declared at the top of the kernel (OpenCL wants them there), a vthread
// loop is unrolled like an unrolled loop, and a barrier is __syncthreads()
// or barrier(CLK_LOCAL_MEM_FENCE). A vectorized loop of 2 or 4 lanes loads
// and stores float2/float4 where the access is contiguous and provably
// aligned to the vector, and computes lane by lane in between (GPUs are
// scalar per thread; the vector memory access is the gain).
//
// The source has no #include: the CUDA dialect compiles with NVRTC, which
// knows the CUDA built-ins, and with clang in CUDA mode without the CUDA
// headers (-nocudainc), where the prelude spells them with clang's NVPTX
// built-ins and declares libdevice's math functions.

// Dialect is the language GPU kernels are printed in.
type Dialect uint8

const (
	CUDA Dialect = iota
	OpenCL
)

func (d Dialect) String() string {
	if d == OpenCL {
		return "opencl"
	}
	return "cuda"
}

// GPUSource is a module of GPU kernels.
type GPUSource struct {
	Code  string
	Funcs []GPUFunc // one per function, in order
}

// GPUFunc says how to run one lowered function: its kernels, launched in
// order, and the device temporaries between them.
type GPUFunc struct {
	Name     string
	Launches []Launch // Args index the function's parameters, then Temps
	Temps    []int    // sizes in elements
}

// gpuDialect is what a GPU kernel's printing needs to know of its dialect.
type gpuDialect struct {
	d     Dialect
	calls map[string]string
}

// maxGPUInt bounds the integers of a GPU kernel (they are 32-bit).
const maxGPUInt = 1<<31 - 1

// GPU prints the kernels of fs (each lowered by schedule.LowerGPU; their
// names distinct C identifiers) as one source in dialect d.
func GPU(fs []*tir.PrimFunc, d Dialect) (*GPUSource, error) {
	g := &gpuDialect{d: d, calls: map[string]string{}}
	for fn, mf := range tir.MathFuncs {
		g.calls[fn] = mf.C
		if d == OpenCL && !strings.HasPrefix(mf.C, "tsr_") {
			g.calls[fn] = fn // OpenCL's math built-ins are overloaded
		}
	}
	m := &module{lanes: GPUVectorLanes, used: map[int]bool{}}
	out := &GPUSource{}
	var b strings.Builder
	b.WriteString(gpuPrelude(d))
	seen := map[string]bool{}
	for _, f := range fs {
		if f == nil {
			return nil, fmt.Errorf("codegen: nil PrimFunc")
		}
		if err := checkKernelName(f.Name); err != nil {
			return nil, err
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("codegen: two functions named %q in one module", f.Name)
		}
		seen[f.Name] = true
		gf, code, err := m.gpuFunc(f, g)
		if err != nil {
			return nil, fmt.Errorf("codegen: %s: %w", f.Name, err)
		}
		out.Funcs = append(out.Funcs, gf)
		b.WriteString(code)
	}
	out.Code = b.String()
	return out, nil
}

// gpuFunc prints the kernels of one function.
func (m *module) gpuFunc(f *tir.PrimFunc, g *gpuDialect) (GPUFunc, string, error) {
	gf := GPUFunc{Name: f.Name}
	ks, temps, err := tir.Kernels(f)
	if err != nil {
		return gf, "", err
	}
	bufs := append(append([]*tir.Buffer(nil), f.Params...), temps...)
	index := map[*tir.Buffer]int{}
	for i, p := range bufs {
		if p == nil || p.Scope != tir.Global {
			return gf, "", fmt.Errorf("buffer %d is not a global buffer", i)
		}
		if p.Size() > maxGPUInt {
			return gf, "", fmt.Errorf("buffer %s has %d elements, more than a 32-bit index reaches", p.Name, p.Size())
		}
		index[p] = i
	}
	for _, t := range temps {
		gf.Temps = append(gf.Temps, t.Size())
	}
	var b strings.Builder
	for i, k := range ks {
		name := fmt.Sprintf("%s_k%d", f.Name, i)
		used := usedGlobals(k.Body, index)
		var params []*tir.Buffer
		var args []int
		for _, p := range bufs {
			if used[p] {
				params = append(params, p)
				args = append(args, index[p])
			}
		}
		code, err := m.gpuKernel(name, k, params, g)
		if err != nil {
			return gf, "", fmt.Errorf("kernel %d: %w", i, err)
		}
		b.WriteString("\n")
		b.WriteString(code)
		gf.Launches = append(gf.Launches, Launch{Name: name, Grid: k.Grid, Block: k.Block, Args: args})
	}
	return gf, b.String(), nil
}

// usedGlobals returns the global buffers of index that s reads or writes.
func usedGlobals(s tir.Stmt, index map[*tir.Buffer]int) map[*tir.Buffer]bool {
	used := map[*tir.Buffer]bool{}
	tir.WalkStmt(s, func(s tir.Stmt) bool {
		if st, ok := s.(*tir.Store); ok {
			if _, ok := index[st.Buf]; ok {
				used[st.Buf] = true
			}
		}
		return true
	})
	tir.WalkStmtExprs(s, func(e tir.Expr) {
		tir.WalkExpr(e, func(x tir.Expr) bool {
			if l, ok := x.(*tir.Load); ok {
				if _, ok := index[l.Buf]; ok {
					used[l.Buf] = true
				}
			}
			return true
		})
	})
	return used
}

// gpuKernel prints one launch as a kernel named name taking params.
func (m *module) gpuKernel(name string, kern tir.Kernel, params []*tir.Buffer, g *gpuDialect) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	if err := checkGPUInts(kern.Body); err != nil {
		return "", err
	}
	k := &kernel{m: m, vars: map[*tir.Var]string{}, bufs: map[*tir.Buffer]*bufBind{}, dom: domain{}, gpu: g}
	k.openScope()
	written := map[*tir.Buffer]bool{}
	tir.WalkStmt(kern.Body, func(s tir.Stmt) bool {
		if st, ok := s.(*tir.Store); ok {
			written[st.Buf] = true
		}
		return true
	})
	var decls []string
	for _, p := range params {
		if !p.DType.IsFloat() && !p.DType.IntElem() {
			return "", fmt.Errorf("param %s is %v: GPU kernels take float32, bfloat16 and integer element buffers", p.Name, p.DType)
		}
		et, err := elemType(p.DType)
		if err != nil {
			return "", err
		}
		pn := k.declare(p.Name)
		k.bufs[p] = &bufBind{buf: p, name: pn}
		cnst := "const "
		if written[p] {
			cnst = ""
		}
		if g.d == OpenCL {
			decls = append(decls, fmt.Sprintf("__global %s%s *restrict %s", cnst, et, pn))
		} else {
			decls = append(decls, fmt.Sprintf("%s%s *__restrict__ %s", cnst, et, pn))
		}
	}
	if len(decls) == 0 {
		decls = []string{"void"}
	}
	k.indent = 1
	for d, v := range kern.BlockVars {
		if v != nil {
			k.bindIndex(v, fmt.Sprintf("TSR_BLOCK_%c", 'X'+d), kern.Grid[d])
		}
	}
	for d, v := range kern.ThreadVars {
		if v != nil {
			k.bindIndex(v, fmt.Sprintf("TSR_THREAD_%c", 'X'+d), kern.Block[d])
		}
	}
	// Shared buffers live for the whole kernel: declared first.
	var shared []*tir.Buffer
	tir.WalkStmt(kern.Body, func(s tir.Stmt) bool {
		if a, ok := s.(*tir.Allocate); ok && a.Buf.Scope == tir.Shared {
			shared = append(shared, a.Buf)
		}
		return true
	})
	for _, sb := range shared {
		if k.bufs[sb] != nil {
			return "", fmt.Errorf("shared buffer %s is allocated twice", sb.Name)
		}
		if !sb.DType.IsFloat() && !sb.DType.IntElem() {
			return "", fmt.Errorf("shared buffer %s is %v", sb.Name, sb.DType)
		}
		et, err := elemType(sb.DType)
		if err != nil {
			return "", err
		}
		sn := k.declare(sb.Name)
		k.bufs[sb] = &bufBind{buf: sb, name: sn}
		k.line("TSR_SHARED %s %s[%d] __attribute__((aligned(16)));", et, sn, max(sb.Size(), 1))
	}
	body, err := runPasses(kern.Body, true, GPUVectorLanes, nil, nil)
	if err != nil {
		return "", err
	}
	if err := k.stmt(body); err != nil {
		return "", err
	}
	threads := kern.Block[0] * kern.Block[1] * kern.Block[2]
	var b strings.Builder
	if g.d == OpenCL {
		fmt.Fprintf(&b, "__kernel __attribute__((reqd_work_group_size(%d, %d, %d))) void %s(%s) {\n",
			kern.Block[0], kern.Block[1], kern.Block[2], name, strings.Join(decls, ", "))
	} else {
		fmt.Fprintf(&b, "TSR_KERNEL TSR_LAUNCH_BOUNDS(%d) void %s(%s) {\n", threads, name, strings.Join(decls, ", "))
	}
	b.WriteString(k.b.String())
	b.WriteString("}\n")
	return b.String(), nil
}

// bindIndex declares the variable of a block or thread index.
func (k *kernel) bindIndex(v *tir.Var, macro string, ext int) {
	n := k.declare(v.Name)
	k.line("const int %s = %s;", n, macro)
	k.vars[v] = n
	k.dom[v] = tir.Interval{Lo: 0, Hi: int64(ext) - 1}
}

// checkGPUInts rejects integer constants a 32-bit index cannot hold (an
// integer element constant, tir.IntOf, holds its type's values).
func checkGPUInts(s tir.Stmt) error {
	var bad error
	tir.WalkStmtExprs(s, func(e tir.Expr) {
		tir.WalkExpr(e, func(x tir.Expr) bool {
			if c, ok := x.(*tir.Cast); ok && c.To.IntElem() {
				if v, ok := tir.IsConst(c.X); ok {
					if lo, hi := c.To.Range(); (v < lo || v > hi) && bad == nil {
						bad = fmt.Errorf("integer %d is not a %v", v, c.To)
					}
					return false
				}
			}
			if c, ok := x.(*tir.IntImm); ok && (c.V > maxGPUInt || c.V < -maxGPUInt) && bad == nil {
				bad = fmt.Errorf("integer %d does not fit a 32-bit index", c.V)
			}
			return bad == nil
		})
	})
	return bad
}

// unrollVthreads marks the vthread loops of a kernel body unrolled: a
// virtual thread loop unrolls like an unrolled loop (TVM's virtual thread
// injection interleaves its iterations the same way).
func unrollVthreads(s tir.Stmt) tir.Stmt {
	return tir.MutateStmt(s, tir.StmtFuncs{Stmt: func(st tir.Stmt) tir.Stmt {
		if f, ok := st.(*tir.For); ok && f.Kind == tir.ThreadBound && f.Thread == "vthread" {
			return &tir.For{Var: f.Var, Extent: f.Extent, Kind: tir.Unrolled, Body: f.Body}
		}
		return st
	}})
}

// GPUVectorLanes is the float32 lanes of the widest vector access the GPU
// dialects spell: a float4, in CUDA and OpenCL alike. The GPU pipeline
// cuts longer vector loops into pieces of it, the printer loads and stores
// float2 up to it (gpuVector), and a GPU target hands it to the sketch
// rules as schedule.GPULimits.VectorLanes.
const GPUVectorLanes = 4

// gpuVector reports whether a vectorized loop of l lanes is printed as
// vector loads and stores: a float2 up to a float GPUVectorLanes.
func gpuVector(l int) bool { return l >= 2 && l <= GPUVectorLanes && isPow2(l) }

// traceGPU is Trace for a GPU function: every kernel body goes through the
// GPU pipeline, and after sees the function with each kernel's body after
// the pass.
func traceGPU(f *tir.PrimFunc, after func(pass string, g *tir.PrimFunc) error) error {
	ks, _, err := tir.Kernels(f)
	if err != nil {
		return err
	}
	byPass := map[string][]tir.Stmt{}
	for _, k := range ks {
		if _, err := runPasses(k.Body, true, GPUVectorLanes, nil, func(pass string, s tir.Stmt) error {
			byPass[pass] = append(byPass[pass], s)
			return nil
		}); err != nil {
			return err
		}
	}
	for _, pass := range PassNames(true) {
		bodies := byPass[pass]
		g := *f
		g.Body = replaceKernelBodies(f.Body, &bodies)
		if err := after(pass, &g); err != nil {
			return err
		}
	}
	return nil
}

// replaceKernelBodies returns host code s with the body of each kernel, in
// order, replaced by the next of bodies (the host structure of
// tir.Kernels: Seq and Allocate of Global buffers around launches).
func replaceKernelBodies(s tir.Stmt, bodies *[]tir.Stmt) tir.Stmt {
	switch n := s.(type) {
	case nil:
		return nil
	case *tir.Seq:
		out := make([]tir.Stmt, len(n.Stmts))
		for i, c := range n.Stmts {
			out[i] = replaceKernelBodies(c, bodies)
		}
		return &tir.Seq{Stmts: out}
	case *tir.Allocate:
		if n.Buf.Scope == tir.Global {
			return &tir.Allocate{Buf: n.Buf, Body: replaceKernelBodies(n.Body, bodies)}
		}
	}
	// A launch: its pragmas and block and thread loops, then the body.
	var chain func(s tir.Stmt) tir.Stmt
	chain = func(s tir.Stmt) tir.Stmt {
		switch n := s.(type) {
		case *tir.Pragma:
			return &tir.Pragma{Key: n.Key, Value: n.Value, Body: chain(n.Body)}
		case *tir.For:
			if _, _, ok := tir.ThreadTag(n.Thread); ok && n.Kind == tir.ThreadBound {
				return &tir.For{Var: n.Var, Extent: n.Extent, Kind: n.Kind, Thread: n.Thread, Body: chain(n.Body)}
			}
		}
		b := (*bodies)[0]
		*bodies = (*bodies)[1:]
		return b
	}
	return chain(s)
}

// gpuLoop prints a loop of a GPU kernel.
func (k *kernel) gpuLoop(f *tir.For) error {
	switch f.Kind {
	case tir.Vectorized:
		return k.gpuVectorLoop(f)
	case tir.Unrolled:
		// Left by the unroll pass only when too large to unroll in the source.
		if k.gpu.d == CUDA {
			k.line("#pragma unroll")
		}
	case tir.ThreadBound:
		return fmt.Errorf("loop %s bound to %s inside a kernel body", f.Var.Name, f.Thread)
	case tir.Serial, tir.Parallel:
	default:
		return fmt.Errorf("unknown loop kind %v", f.Kind)
	}
	return k.serialLoop(f)
}

// gpuAllocate handles a non-local allocation inside a kernel: shared
// buffers were declared at its top.
func (k *kernel) gpuAllocate(a *tir.Allocate) error {
	if a.Buf.Scope == tir.Shared && k.bufs[a.Buf] != nil {
		return k.stmt(a.Body)
	}
	return fmt.Errorf("%v buffer %s allocated inside a kernel", a.Buf.Scope, a.Buf.Name)
}

// gpuVectorLoop prints a vectorized loop: the vector plan of the C
// printer (straight-line stores whose lanes are independent), each store
// computed lane by lane, its contiguous aligned loads and its store made
// as one float2/float4 access. Anything else is a scalar loop.
func (k *kernel) gpuVectorLoop(f *tir.For) error {
	plan, why, _ := k.planVector(f, k.dom)
	if plan == nil || !gpuVector(plan.L) || plan.masked() {
		switch {
		case plan != nil && plan.masked():
			why = "lane-dependent if"
		case plan != nil:
			why = fmt.Sprintf("%d lanes", plan.L)
		}
		k.line("/* %s: scalar loop, %s */", sanitize(f.Var.Name), comment(why))
		return k.serialLoop(f)
	}
	saved := k.dom
	k.dom = plan.dom
	defer func() { k.dom = saved }()
	return k.walkItems(plan, plan.items, nil, func(p *vplan, st *tir.Store, _ tir.Expr) error { return k.gpuVStore(p, st) })
}

// laneNames are the fields of the widest vector, a float4.
var laneNames = [GPUVectorLanes]string{"x", "y", "z", "w"}

// readsAny reports whether e reads one of the vector loads' placeholders.
func readsAny(e tir.Expr, vls []vload) bool {
	found := false
	tir.WalkExpr(e, func(x tir.Expr) bool {
		if v, ok := x.(*tir.Var); ok {
			for _, vl := range vls {
				found = found || vl.ph == v
			}
		}
		return !found
	})
	return found
}

// vectorAt returns the start of a float2/float4 access at flat index flat
// of bb in lane variable p.v, when it is contiguous and aligned to the
// vector; ok false otherwise.
func (k *kernel) vectorAt(p *vplan, bb *bufBind, flat tir.Expr) (rest tir.Expr, ok bool) {
	if bb.scal != nil || bb.buf.DType != tir.Float32 {
		return nil, false
	}
	coef, rest, ok := tir.LinearIn(flat, p.v)
	if !ok || coef != 1 {
		return nil, false
	}
	rest = tir.Simplify(rest, k.dom)
	G, c := modInfo(rest)
	L := int64(p.L)
	if G%L != 0 || ((c%L)+L)%L != 0 {
		return nil, false
	}
	return rest, true
}

// vecPtr is a pointer to the vector of bb at index rest.
func (k *kernel) vecPtr(p *vplan, bb *bufBind, rest tir.Expr, cnst bool) (string, error) {
	r, err := k.expr(rest)
	if err != nil {
		return "", err
	}
	c := ""
	if cnst {
		c = "const "
	}
	if k.gpu.d == OpenCL {
		space := map[tir.Scope]string{tir.Global: "__global", tir.Shared: "__local", tir.Local: "__private"}[bb.buf.Scope]
		return fmt.Sprintf("(%s%s float%d *)(&%s[%s])", c, space, p.L, bb.name, trimParens(r)), nil
	}
	return fmt.Sprintf("(%stsr_float%d *)(&%s[%s])", c, p.L, bb.name, trimParens(r)), nil
}

// vload is a vector load of gpuVStore: its placeholder in the stored
// value, and the name of the vector it reads into.
type vload struct {
	ph   *tir.Var
	name string
}

func (k *kernel) gpuVStore(p *vplan, st *tir.Store) error {
	bb, err := k.lookupBuf(st.Buf)
	if err != nil {
		return err
	}
	// Loads that are contiguous, aligned and in bounds for every lane are
	// read as one vector first; each lane then reads its component.
	var vloads []vload
	value := tir.MutateExpr(st.Value, func(e tir.Expr) tir.Expr {
		ld, ok := e.(*tir.Load)
		if !ok || err != nil || !inBounds(ld, k.dom) {
			return e
		}
		lb, lerr := k.lookupBuf(ld.Buf)
		if lerr != nil {
			err = lerr
			return e
		}
		flat, ferr := p.flat(ld.Buf, ld.Indices)
		if ferr != nil {
			err = ferr
			return e
		}
		// An index that reads a vector load's lane (a gather through
		// loaded values: U[int(I[i])]) varies per lane however it looks.
		if readsAny(flat, vloads) {
			return e
		}
		rest, ok := k.vectorAt(p, lb, flat)
		if !ok {
			return e
		}
		ptr, perr := k.vecPtr(p, lb, rest, true)
		if perr != nil {
			err = perr
			return e
		}
		name := k.declare(fmt.Sprintf("vec%d", len(vloads)))
		t := fmt.Sprintf("tsr_float%d", p.L)
		if k.gpu.d == OpenCL {
			t = fmt.Sprintf("float%d", p.L)
		}
		k.line("const %s %s = *%s;", t, name, ptr)
		ph := &tir.Var{Name: name, T: tir.Float32}
		vloads = append(vloads, vload{ph, name})
		return ph
	})
	if err != nil {
		return err
	}
	lanes := make([]string, p.L)
	for l := range lanes {
		for _, vl := range vloads {
			k.vars[vl.ph] = vl.name + "." + laneNames[l]
		}
		s, err := k.expr(tir.Substitute(value, map[*tir.Var]tir.Expr{p.v: tir.Const(int64(l))}))
		if err != nil {
			return err
		}
		lanes[l] = trimParens(s)
	}
	for _, vl := range vloads {
		delete(k.vars, vl.ph)
	}
	flat, err := p.flat(st.Buf, st.Indices)
	if err != nil {
		return err
	}
	if rest, ok := k.vectorAt(p, bb, flat); ok {
		ptr, err := k.vecPtr(p, bb, rest, false)
		if err != nil {
			return err
		}
		make := fmt.Sprintf("tsr_make_float%d(%s)", p.L, strings.Join(lanes, ", "))
		if k.gpu.d == OpenCL {
			make = fmt.Sprintf("(float%d)(%s)", p.L, strings.Join(lanes, ", "))
		}
		k.line("*%s = %s;", ptr, make)
		return nil
	}
	for l := range lanes {
		idx := tir.Simplify(tir.Substitute(flat, map[*tir.Var]tir.Expr{p.v: tir.Const(int64(l))}), k.dom)
		ref, err := k.elemAt(bb, idx)
		if err != nil {
			return err
		}
		k.line("%s = %s;", ref, lanes[l])
	}
	return nil
}

// reservedGPU are names a GPU kernel must not declare besides the C ones:
// the dialects' keywords, built-in variables, types and functions.
var reservedGPU = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`threadIdx blockIdx blockDim gridDim warpSize
		global local constant private kernel generic read_only write_only read_write
		__global __local __constant __private __kernel half uchar ushort uint ulong
		float2 float3 float4 float8 float16 int2 int4 barrier get_group_id get_local_id
		exp log sqrt tanh erf fabs pow floor ceil vload4 vstore4 vload2 vstore2 select
		new delete this template typename namespace class public operator`) {
		m[w] = true
	}
	return m
}()

// gpuPrelude is the start of a GPU source: the dialect's spelling of
// kernels, shared memory, barriers and indices, and the helpers.
func gpuPrelude(d Dialect) string {
	var b strings.Builder
	if d == OpenCL {
		b.WriteString(`/* Generated by tessera/codegen: OpenCL C. */
#define TSR_DEVICE static inline
#define TSR_SHARED __local
#define TSR_SYNC() barrier(CLK_LOCAL_MEM_FENCE)
#define TSR_BLOCK_X ((int)get_group_id(0))
#define TSR_BLOCK_Y ((int)get_group_id(1))
#define TSR_BLOCK_Z ((int)get_group_id(2))
#define TSR_THREAD_X ((int)get_local_id(0))
#define TSR_THREAD_Y ((int)get_local_id(1))
#define TSR_THREAD_Z ((int)get_local_id(2))
TSR_DEVICE float tsr_sigmoidf(float x) { return 1.0f / (1.0f + exp(-x)); }
TSR_DEVICE float tsr_nan0f(float x) { return x == x ? x : 0.0f; }
TSR_DEVICE uint tsr_f2u(float x) { return as_uint(x); }
TSR_DEVICE float tsr_u2f(uint u) { return as_float(u); }
`)
		b.WriteString(roundHalfGPU(d))
	} else {
		b.WriteString(`/* Generated by tessera/codegen: CUDA C, without #include (NVRTC, or clang -nocudainc). */
#if defined(__CUDACC_RTC__)
#define TSR_KERNEL extern "C" __global__
#define TSR_LAUNCH_BOUNDS(n) __launch_bounds__(n)
#define TSR_DEVICE static __device__ __forceinline__
#define TSR_SHARED __shared__
#define TSR_SYNC() __syncthreads()
#define TSR_BLOCK_X ((int)blockIdx.x)
#define TSR_BLOCK_Y ((int)blockIdx.y)
#define TSR_BLOCK_Z ((int)blockIdx.z)
#define TSR_THREAD_X ((int)threadIdx.x)
#define TSR_THREAD_Y ((int)threadIdx.y)
#define TSR_THREAD_Z ((int)threadIdx.z)
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#else
#define TSR_KERNEL extern "C" __attribute__((global))
#define TSR_LAUNCH_BOUNDS(n) __attribute__((launch_bounds(n)))
#define TSR_DEVICE static __attribute__((device)) inline
#define TSR_SHARED __attribute__((shared))
#define TSR_SYNC() __syncthreads()
#define TSR_BLOCK_X ((int)__nvvm_read_ptx_sreg_ctaid_x())
#define TSR_BLOCK_Y ((int)__nvvm_read_ptx_sreg_ctaid_y())
#define TSR_BLOCK_Z ((int)__nvvm_read_ptx_sreg_ctaid_z())
#define TSR_THREAD_X ((int)__nvvm_read_ptx_sreg_tid_x())
#define TSR_THREAD_Y ((int)__nvvm_read_ptx_sreg_tid_y())
#define TSR_THREAD_Z ((int)__nvvm_read_ptx_sreg_tid_z())
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
`)
		// libdevice's math functions, which NVRTC knows by their CUDA names.
		var fns []string
		for _, mf := range tir.MathFuncs {
			if !strings.HasPrefix(mf.C, "tsr_") {
				params := strings.Repeat(", float", mf.Arity)[2:]
				fns = append(fns, fmt.Sprintf("extern \"C\" __attribute__((device)) float __nv_%s(%s);\n#define %s __nv_%s\n", mf.C, params, mf.C, mf.C))
			}
		}
		slices.Sort(fns)
		for _, fn := range fns {
			b.WriteString(fn)
		}
		b.WriteString("#endif\n")
		b.WriteString(`typedef struct __attribute__((aligned(16))) { float x, y, z, w; } tsr_float4;
typedef struct __attribute__((aligned(8))) { float x, y; } tsr_float2;
TSR_DEVICE tsr_float4 tsr_make_float4(float x, float y, float z, float w) { tsr_float4 v = {x, y, z, w}; return v; }
TSR_DEVICE tsr_float2 tsr_make_float2(float x, float y) { tsr_float2 v = {x, y}; return v; }
TSR_DEVICE float tsr_sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
TSR_DEVICE float tsr_nan0f(float x) { return x == x ? x : 0.0f; }
TSR_DEVICE unsigned int tsr_f2u(float x) { union { float f; unsigned int u; } v; v.f = x; return v.u; }
TSR_DEVICE float tsr_u2f(unsigned int u) { union { float f; unsigned int u; } v; v.u = u; return v.f; }
`)
		b.WriteString(roundHalfGPU(d))
	}
	// The integer element types, by the names of C's <stdint.h>, which
	// neither dialect includes.
	b.WriteString(`typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef int int32_t;
typedef unsigned short uint16_t;
`)
	// bfloat16 (tir.BFloat16) as its bits, as the CPU's prelude has it.
	b.WriteString(`TSR_DEVICE uint16_t tsr_f2bf(float x) {
  unsigned int u = tsr_f2u(x);
  return (uint16_t)(x != x ? (u | 0x00400000u) >> 16 : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
TSR_DEVICE float tsr_bf2f(uint16_t b) { return tsr_u2f((unsigned int)b << 16); }
`)
	b.WriteString(`TSR_DEVICE int tsr_floordiv(int a, int b) {
  int q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
TSR_DEVICE int tsr_floormod(int a, int b) {
  int r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
TSR_DEVICE int tsr_mini(int a, int b) { return a < b ? a : b; }
TSR_DEVICE int tsr_maxi(int a, int b) { return a > b ? a : b; }
TSR_DEVICE float tsr_minf(float a, float b) { return a < b ? a : b; }
TSR_DEVICE float tsr_maxf(float a, float b) { return a > b ? a : b; }
`)
	return b.String()
}
