package costmodel

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
	"github.com/tessera-ml/tessera/tir"
)

// rawRows returns the features of f before the log2(1+x) scaling.
// noMachine is the Hardware of a program compiled for no processor the
// machine model knows (a GPU's): no vector registers, the model's cache
// line.
var noMachine = Hardware{CacheLine: machine.Machine{}.CacheLine()}

func rawRows(f *tir.PrimFunc) [][NumFeatures]float64 {
	x := &extractor{hw: noMachine}
	if !x.prepare(f) {
		return nil
	}
	out := make([][NumFeatures]float64, len(x.stmts))
	for i := range x.stmts {
		x.features(i, &out[i])
	}
	return out
}

func feature(name string) int {
	i := slices.Index(FeatureNames, name)
	if i < 0 {
		panic("no feature " + name)
	}
	return i
}

func buf(name string, shape ...int) *tir.Buffer {
	return &tir.Buffer{Name: name, DType: tir.Float32, Shape: shape}
}

func load(b *tir.Buffer, idx ...tir.Expr) tir.Expr { return &tir.Load{Buf: b, Indices: idx} }

func loop(v *tir.Var, ext int, kind tir.ForKind, body tir.Stmt) tir.Stmt {
	return &tir.For{Var: v, Extent: ext, Kind: kind, Body: body}
}

// fmaNest is for i in 0..4 (ki) { for j in 0..8 (kj) { C[i, j] = C[i, j] +
// A[i, j] * B[j] } }.
func fmaNest(ki, kj tir.ForKind) *tir.PrimFunc {
	a, b, c := buf("A", 4, 8), buf("B", 8), buf("C", 4, 8)
	i, j := tir.NewVar("i"), tir.NewVar("j")
	st := &tir.Store{Buf: c, Indices: []tir.Expr{i, j},
		Value: tir.AddE(load(c, i, j), tir.MulE(load(a, i, j), load(b, j)))}
	return &tir.PrimFunc{Name: "fma", Params: []*tir.Buffer{a, b, c},
		Body: loop(i, 4, ki, loop(j, 8, kj, st))}
}

func TestFeatureNames(t *testing.T) {
	if len(FeatureNames) != NumFeatures {
		t.Fatalf("%d names, want %d", len(FeatureNames), NumFeatures)
	}
	seen := map[string]bool{}
	for _, n := range FeatureNames {
		if seen[n] {
			t.Errorf("duplicate feature name %q", n)
		}
		seen[n] = true
	}
	// Spot checks of the layout against the documented groups.
	for name, want := range map[string]int{
		"float_mad": 0, "select_op": 15, "vec_num": 16, "parallel_pos_mixed": 48,
		"is_gpu": 49, "vthread_len": 56, "B0_acc_type_read": 57, "B4_stride": 146,
		"arith_intensity_curve_0": 147, "alloc_size": 157, "auto_unroll_max_step": 163,
		"vector_bytes": 164, "reg_pressure": 167,
	} {
		if got := feature(name); got != want {
			t.Errorf("%s at %d, want %d", name, got, want)
		}
	}
}

// TestComputationCounts checks the op counts of a 4×8 nest with one fused
// multiply-add store: 32 executions of one add, one mul.
func TestComputationCounts(t *testing.T) {
	rows := Extract(fmaNest(tir.Serial, tir.Serial), noMachine)
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	l := func(v float64) float32 { return float32(math.Log2(1 + v)) }
	for _, c := range []struct {
		name string
		want float32
	}{
		{"float_mad", l(32)},
		{"float_addsub", l(32)},
		{"float_mul", l(32)},
		{"float_divmod", 0},
		{"int_addsub", 0},
		{"select_op", 0},
		{"outer_prod", l(32)},
		{"num_loops", l(2)},
		{"auto_unroll_max_step", 0},
		{"vec_pos_none", 1},
		{"is_gpu", 0},
	} {
		if got := rows[0][feature(c.name)]; got != c.want {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestMachineFeatures checks the machine group on a register tile: for k
// (rolled) { for i in 0..rows (unrolled) { for j in 0..16 (vectorized) {
// acc[i, j] += A[i, k] * B[k, j] } } } with acc Local. Its tile is rows × 16
// floats: 16 rows are twice the register file of 16 256-bit registers and
// half that of 32 512-bit ones; the 16-lane loop spans two 256-bit vectors
// or one of 512.
func TestMachineFeatures(t *testing.T) {
	tile := func(rows int) *tir.PrimFunc {
		a, b := buf("A", rows, 64), buf("B", 64, 16)
		acc := &tir.Buffer{Name: "acc", DType: tir.Float32, Shape: []int{rows, 16}, Scope: tir.Local}
		k, i, j := tir.NewVar("k"), tir.NewVar("i"), tir.NewVar("j")
		st := &tir.Store{Buf: acc, Indices: []tir.Expr{i, j},
			Value: tir.AddE(load(acc, i, j), tir.MulE(load(a, i, k), load(b, k, j)))}
		body := loop(k, 64, tir.Serial, loop(i, rows, tir.Unrolled, loop(j, 16, tir.Vectorized, st)))
		return &tir.PrimFunc{Name: "tile", Params: []*tir.Buffer{a, b},
			Body: &tir.Allocate{Buf: acc, Body: body}}
	}
	avx2 := Hardware{VectorBytes: 32, VectorRegs: 16, CacheLine: noMachine.CacheLine}
	avx512 := Hardware{VectorBytes: 64, VectorRegs: 32, CacheLine: noMachine.CacheLine}
	for _, c := range []struct {
		rows              int
		hw                Hardware
		vecRegs, pressure float64
	}{
		{16, avx2, 2, 2},
		{16, avx512, 1, 0.5},
		{4, avx2, 2, 0.5},
		{4, noMachine, 0, 0},
	} {
		x := &extractor{hw: c.hw}
		if !x.prepare(tile(c.rows)) {
			t.Fatal("no store")
		}
		var row [NumFeatures]float64
		x.features(0, &row)
		got := row[fMachine : fMachine+4]
		want := []float64{float64(c.hw.VectorBytes), float64(c.hw.VectorRegs), c.vecRegs, c.pressure}
		if !slices.Equal(got, want) {
			t.Errorf("%d rows on %+v: vector_bytes, vector_regs, vec_regs, reg_pressure = %v, want %v", c.rows, c.hw, got, want)
		}
	}
	// A store in no unrolled or vectorized loop touches one element.
	x := &extractor{hw: avx2}
	x.prepare(fmaNest(tir.Serial, tir.Serial))
	var row [NumFeatures]float64
	x.features(0, &row)
	if got := row[feature("reg_pressure")]; got != 4.0/512 {
		t.Errorf("serial nest: reg_pressure = %v, want %v", got, 4.0/512)
	}
}

func TestOpKinds(t *testing.T) {
	a, c := buf("A", 16), buf("C", 16)
	i := tir.NewVar("i")
	// C[i] = select(i < 8 && i != 3, exp(A[floordiv(i*2, 4) + floormod(i, 2)]) / 2, max(A[i], 0))
	val := tir.SelectE(
		tir.AndE(tir.Cmp(tir.LT, i, tir.Const(8)), tir.Cmp(tir.NE, i, tir.Const(3))),
		tir.DivE(tir.CallE("exp", load(a, tir.AddE(tir.FloorDivE(tir.MulE(i, tir.Const(2)), tir.Const(4)), tir.FloorModE(i, tir.Const(2))))), tir.F32(2)),
		tir.MaxE(load(a, i), tir.F32(0)))
	f := &tir.PrimFunc{Params: []*tir.Buffer{a, c},
		Body: loop(i, 16, tir.Serial, &tir.Store{Buf: c, Indices: []tir.Expr{i}, Value: val})}
	r := rawRows(f)[0]
	for name, want := range map[string]float64{
		"float_divmod": 16, "float_math_func": 16, "float_cmp": 16, "float_other_func": 0,
		"int_cmp": 32, "bool_op": 16, "select_op": 16,
		"int_mul": 16, "int_divmod": 32, "int_addsub": 16, "int_mad": 0, "float_mad": 0,
	} {
		if got := r[feature(name)]; got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// TestAnnotations covers vectorize, parallel and unroll features, with
// the auto_unroll_max_step pragma deciding which serial loops unroll.
func TestAnnotations(t *testing.T) {
	r := rawRows(fmaNest(tir.Parallel, tir.Vectorized))[0]
	for name, want := range map[string]float64{
		"vec_num": 1, "vec_prod": 8, "vec_len": 8, "vec_pos_inner_spatial": 1, "vec_pos_none": 0,
		"parallel_num": 1, "parallel_prod": 4, "parallel_len": 4, "parallel_pos_outer_spatial": 1,
		"unroll_num": 0, "unroll_pos_none": 1,
	} {
		if got := r[feature(name)]; got != want {
			t.Errorf("parallel×vectorized: %s = %v, want %v", name, got, want)
		}
	}

	// A reduction: for i (spatial) { for k (reduce) { C[i] += A[i, k] } }
	// inside pragma auto_unroll_max_step=N. The k loop has 8 steps, the i
	// loop 32.
	nest := func(n int, ki tir.ForKind) *tir.PrimFunc {
		a, c := buf("A", 4, 8), buf("C", 4)
		i, k := tir.NewVar("i"), tir.NewVar("k")
		st := &tir.Store{Buf: c, Indices: []tir.Expr{i}, Value: tir.AddE(load(c, i), load(a, i, k))}
		var body tir.Stmt = loop(i, 4, ki, loop(k, 8, tir.Serial, st))
		if n > 0 {
			body = &tir.Pragma{Key: "auto_unroll_max_step", Value: n, Body: body}
		}
		return &tir.PrimFunc{Params: []*tir.Buffer{a, c}, Body: body}
	}
	for _, c := range []struct {
		n        int
		ki       tir.ForKind
		num, len float64
		pos      string
	}{
		{0, tir.Serial, 0, 0, "none"},
		{4, tir.Serial, 0, 0, "none"},               // 8 steps > 4
		{16, tir.Serial, 1, 8, "inner_reduce"},      // k unrolls, i (32 steps) does not
		{64, tir.Serial, 2, 8, "mixed"},             // both
		{0, tir.Unrolled, 1, 4, "inner_spatial"},    // explicit unroll
		{16, tir.Parallel, 1, 8, "inner_reduce"},    // a parallel loop never auto-unrolls
		{512, tir.Vectorized, 1, 8, "inner_reduce"}, // nor a vectorized one
	} {
		r := rawRows(nest(c.n, c.ki))[0]
		if got := r[feature("unroll_num")]; got != c.num {
			t.Errorf("pragma %d, i %v: unroll_num = %v, want %v", c.n, c.ki, got, c.num)
		}
		if got := r[feature("unroll_len")]; got != c.len {
			t.Errorf("pragma %d, i %v: unroll_len = %v, want %v", c.n, c.ki, got, c.len)
		}
		if got := r[feature("unroll_pos_"+c.pos)]; got != 1 {
			t.Errorf("pragma %d, i %v: unroll_pos_%s not set", c.n, c.ki, c.pos)
		}
		if got := r[feature("auto_unroll_max_step")]; got != float64(c.n) {
			t.Errorf("pragma %d: auto_unroll_max_step = %v", c.n, got)
		}
	}
}

func TestGPUFeatures(t *testing.T) {
	a, c := buf("A", 64), buf("C", 64)
	bx, tx := tir.NewVar("bx"), tir.NewVar("tx")
	idx := tir.AddE(tir.MulE(bx, tir.Const(16)), tx)
	st := &tir.Store{Buf: c, Indices: []tir.Expr{idx}, Value: load(a, idx)}
	f := &tir.PrimFunc{Params: []*tir.Buffer{a, c}, Body: &tir.For{Var: bx, Extent: 4, Kind: tir.ThreadBound, Thread: "blockIdx.x",
		Body: &tir.For{Var: tx, Extent: 16, Kind: tir.ThreadBound, Thread: "threadIdx.x", Body: st}}}
	r := rawRows(f)[0]
	for name, want := range map[string]float64{"is_gpu": 1, "blockIdx_x_len": 4, "threadIdx_x_len": 16, "threadIdx_y_len": 0, "vthread_len": 0} {
		if got := r[feature(name)]; got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if r := rawRows(fmaNest(tir.Serial, tir.Serial))[0]; r[feature("is_gpu")] != 0 || r[feature("blockIdx_x_len")] != 0 {
		t.Errorf("GPU features set on a CPU program")
	}
}

// bufferSlot returns the features of the slot holding the buffer whose
// bytes and access type match, by looking for the slot with the given
// stride and access type; tests use it on programs whose buffers differ.
type slot map[string]float64

func slots(r [NumFeatures]float64) []slot {
	names := FeatureNames[fBuffers : fBuffers+bufLen]
	var out []slot
	for k := range maxBufs {
		s := slot{}
		for j, n := range names {
			s[n[3:]] = r[fBuffers+k*bufLen+j] // strip "B0_"
		}
		out = append(out, s)
	}
	return out
}

// TestGEMMBufferFeatures checks the access features of the naive GEMM
// update C[i, j] += A[i, k] * B[k, j] (i 0..M, j 0..N, k 0..K innermost).
func TestGEMMBufferFeatures(t *testing.T) {
	const M, N, K = 16, 32, 8
	a, b, c := buf("A", M, K), buf("B", K, N), buf("C", M, N)
	i, j, k := tir.NewVar("i"), tir.NewVar("j"), tir.NewVar("k")
	upd := &tir.Store{Buf: c, Indices: []tir.Expr{i, j},
		Value: tir.AddE(load(c, i, j), tir.MulE(load(a, i, k), load(b, k, j)))}
	f := &tir.PrimFunc{Params: []*tir.Buffer{a, b, c},
		Body: loop(i, M, tir.Serial, loop(j, N, tir.Serial, loop(k, K, tir.Serial, upd)))}
	r := rawRows(f)[0]
	trip := float64(M * N * K)
	s := slots(r)
	// Sorted by lines: B (stride N: a line per access), A (stride 1), C
	// (moves with j only), then empty slots.
	want := []slot{
		{"acc_type_read": 1, "stride": N, "bytes": 4 * trip, "unique_bytes": 4 * K * N,
			"lines": trip, "reuse_type_loop": 1, "reuse_ct": M, "reuse_dis_iter": N * K,
			"reuse_dis_bytes": 4 * (K + K*N + N)},
		{"acc_type_read": 1, "stride": 1, "bytes": 4 * trip, "unique_bytes": 4 * M * K,
			"lines": trip / 16, "unique_lines": M * K * 4 / 64, "reuse_type_loop": 1, "reuse_ct": N, "reuse_dis_iter": K,
			"reuse_dis_bytes": 4 * (K + K + 1)},
		{"acc_type_rw": 1, "stride": 0, "bytes": 8 * trip, "unique_bytes": 4 * M * N,
			"lines": M * N / 16, "reuse_type_loop": 1, "reuse_ct": K, "reuse_dis_iter": 1,
			"reuse_dis_bytes": 16, "bytes_d_reuse_ct": 8 * trip / K},
	}
	for n, w := range want {
		for name, v := range w {
			if got := s[n][name]; math.Abs(got-v) > 1e-9*math.Abs(v) {
				t.Errorf("slot %d: %s = %v, want %v", n, name, got, v)
			}
		}
	}
	for n := len(want); n < maxBufs; n++ {
		for name, v := range s[n] {
			if v != 0 {
				t.Errorf("empty slot %d: %s = %v", n, name, v)
			}
		}
	}
	// The arithmetic intensity curve ends at the whole nest: 2 flops per
	// execution over the bytes of A, B and C.
	if got, want := r[fArith+arithSamples-1], 2*trip/(4*(M*K+K*N+M*N)); math.Abs(got-want) > 1e-9 {
		t.Errorf("last arithmetic intensity sample = %v, want %v", got, want)
	}
	for k := 1; k < arithSamples; k++ {
		if r[fArith+k] < r[fArith+k-1] {
			t.Errorf("arithmetic intensity curve falls at sample %d: %v", k, r[fArith:fArith+arithSamples])
		}
	}
}

// TestSerialReuseAndAlloc: a local buffer written by one statement and read
// by the next inside the same loop has serial reuse; its allocation
// features count how often the Allocate runs.
func TestSerialReuseAndAlloc(t *testing.T) {
	a, c := buf("A", 8, 4), buf("C", 8, 4)
	l := &tir.Buffer{Name: "L", DType: tir.Float32, Shape: []int{4}, Scope: tir.Local}
	i, j, j2 := tir.NewVar("i"), tir.NewVar("j"), tir.NewVar("j2")
	fill := loop(j, 4, tir.Serial, &tir.Store{Buf: l, Indices: []tir.Expr{j}, Value: load(a, i, j)})
	use := loop(j2, 4, tir.Serial, &tir.Store{Buf: c, Indices: []tir.Expr{i, j2}, Value: tir.MulE(load(l, j2), tir.F32(2))})
	f := &tir.PrimFunc{Params: []*tir.Buffer{a, c},
		Body: loop(i, 8, tir.Serial, &tir.Allocate{Buf: l, Body: tir.SeqOf(fill, use)})}
	rows := rawRows(f)
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for name, want := range map[string]float64{
		"alloc_size": 16, "alloc_outer_prod": 8, "alloc_prod": 128, "alloc_inner_prod": 4,
		"outer_prod": 32, "num_loops": 2,
	} {
		if got := rows[0][feature(name)]; got != want {
			t.Errorf("fill: %s = %v, want %v", name, got, want)
		}
	}
	if got := rows[1][feature("alloc_size")]; got != 0 {
		t.Errorf("use stores to a parameter: alloc_size = %v", got)
	}
	// In the fill statement, L is written at the same addresses in every
	// iteration of i: loop reuse, 8 times, 4 iterations apart.
	if l0 := slotWith(rows[0], "acc_type_write"); l0 == nil || l0["reuse_type_loop"] != 1 || l0["reuse_ct"] != 8 || l0["reuse_dis_iter"] != 4 {
		t.Errorf("L in fill: %v, want loop reuse, count 8, distance 4 iterations", l0)
	}

	// With L[i, j] instead, i moves the accesses; under i two statements
	// touch L: serial reuse, one reuse, 4 iterations apart.
	l2 := &tir.Buffer{Name: "L2", DType: tir.Float32, Shape: []int{8, 4}, Scope: tir.Local}
	fill = loop(j, 4, tir.Serial, &tir.Store{Buf: l2, Indices: []tir.Expr{i, j}, Value: load(a, i, j)})
	use = loop(j2, 4, tir.Serial, &tir.Store{Buf: c, Indices: []tir.Expr{i, j2}, Value: tir.MulE(load(l2, i, j2), tir.F32(2))})
	f = &tir.PrimFunc{Params: []*tir.Buffer{a, c},
		Body: &tir.Allocate{Buf: l2, Body: loop(i, 8, tir.Serial, tir.SeqOf(fill, use))}}
	rows = rawRows(f)
	if l0 := slotWith(rows[0], "acc_type_write"); l0 == nil || l0["reuse_type_serial"] != 1 || l0["reuse_ct"] != 1 || l0["reuse_dis_iter"] != 4 {
		t.Errorf("L2 in fill: %v, want serial reuse, count 1, distance 4 iterations", l0)
	}
	if got := rows[0][feature("alloc_outer_prod")]; got != 1 {
		t.Errorf("root allocation: alloc_outer_prod = %v", got)
	}
}

// slotWith returns the first buffer slot with the named feature set.
func slotWith(r [NumFeatures]float64, name string) slot {
	for _, s := range slots(r) {
		if s[name] != 0 {
			return s
		}
	}
	return nil
}

// TestFusedIndexStride: a fused loop f over an 8×11 buffer, indexed with
// floordiv(f, 11) and floormod(f, 11), moves by one element per step.
func TestFusedIndexStride(t *testing.T) {
	a, c := buf("A", 8, 11), buf("C", 8, 11)
	f := tir.NewVar("f")
	idx := []tir.Expr{tir.FloorDivE(f, tir.Const(11)), tir.FloorModE(f, tir.Const(11))}
	fn := &tir.PrimFunc{Params: []*tir.Buffer{a, c},
		Body: loop(f, 88, tir.Serial, &tir.Store{Buf: c, Indices: idx, Value: load(a, idx...)})}
	r := rawRows(fn)[0]
	for _, s := range slots(r)[:2] {
		if s["stride"] != 1 || s["unique_bytes"] != 88*4 || s["lines"] != 88*4/64.0 || s["reuse_type_none"] != 1 {
			t.Errorf("fused access: %v", s)
		}
	}
}

// TestAccessAnalysisOracle checks the access analysis of many random
// lowered programs against two oracles: tir.LinearIn for the strides of
// affine indices, and brute-force enumeration for the touched elements
// (the analysis counts the bounding box: an upper bound always, exact when
// each index dimension is affine with coefficient ±1 in at most one varying
// loop variable).
func TestAccessAnalysisOracle(t *testing.T) {
	dags := tetest.DAGs()
	names := []string{"matmul", "conv", "conv_strided", "max_pool", "softmax", "batch_matmul"}
	checkedStride, checkedTouch, exact := 0, 0, 0
	for n, name := range names {
		d := dags[name]
		rng := rand.New(rand.NewPCG(11, uint64(n)))
		s0 := schedule.NewState(d)
		for range 40 {
			_, f := schedtest.RandomLowerable(rng, s0, 10)
			x := new(extractor)
			if !x.prepare(f) {
				continue
			}
			for si := range x.stmts {
				st := &x.stmts[si]
				stack := x.stacks[st.stackOff : st.stackOff+st.depth]
				for ai := st.accOff; ai < st.accOff+st.accN; ai++ {
					acc := &x.accs[ai]
					b := x.bufs[acc.buf]
					for dpt, id := range stack {
						v := x.loops[id].v
						want, affine := int64(0), true
						for k, e := range acc.idx {
							coef, _, ok := tir.LinearIn(e, v)
							if !ok {
								affine = false
								break
							}
							want += coef * b.strides[k]
						}
						if !affine {
							continue
						}
						checkedStride++
						if got := x.ints[acc.strideOff+int32(dpt)]; got != want {
							t.Fatalf("%s: stride of %v in %s%v = %d, LinearIn says %d\n%v", name, v, b.b.Name, acc.idx, got, want, f)
						}
					}
					for L := range stack {
						got := x.ints[acc.touchOff+int32(L)]
						want, ok, one := bruteTouched(x, stack[L:], acc)
						if !ok {
							continue
						}
						checkedTouch++
						if got < want {
							t.Fatalf("%s: touched %s%v under %v = %d < %d (brute force)\n%v", name, b.b.Name, acc.idx, x.loops[stack[L]].v, got, want, f)
						}
						if one {
							exact++
							if got != want {
								t.Fatalf("%s: touched %s%v under %v = %d, brute force %d\n%v", name, b.b.Name, acc.idx, x.loops[stack[L]].v, got, want, f)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("strides checked: %d, touched counts checked: %d (%d exact)", checkedStride, checkedTouch, exact)
	if checkedStride < 1000 || exact < 500 {
		t.Errorf("too few checks")
	}
}

// bruteTouched counts the distinct elements acc reaches while the given
// loops run (outer loops at 0). ok is false when the space is too large or
// an index is not plain integer arithmetic. one reports whether every
// dimension is affine with coefficient ±1 in at most one of the loops, free
// of Select, and stays within the buffer.
func bruteTouched(x *extractor, loops []int32, acc *accInfo) (n int64, ok, one bool) {
	total := int64(1)
	for _, id := range loops {
		total *= x.loops[id].ext
	}
	if total > 20000 || total == 0 {
		return 0, false, false
	}
	one = true
	for _, e := range acc.idx {
		varying := 0
		for _, id := range loops {
			v := x.loops[id].v
			if tir.UsesVar(e, func(u *tir.Var) bool { return u == v }) {
				varying++
				if c, _, ok := tir.LinearIn(e, v); !ok || (c != 1 && c != -1) {
					one = false // not affine, or strided: the box is larger
				}
			}
		}
		if varying > 1 {
			one = false
		}
	}
	env := map[*tir.Var]int64{}
	seen := map[string]bool{}
	key := make([]byte, 0, 64)
	var rec func(k int) bool
	rec = func(k int) bool {
		if k == len(loops) {
			key = key[:0]
			shape := x.bufs[acc.buf].b.Shape
			for d, e := range acc.idx {
				v, ok := evalInt(e, env)
				if !ok {
					return false
				}
				if v < 0 || v >= int64(shape[d]) {
					one = false // clipped by the buffer: only a bound
					return true // out of bounds: a guard skips it
				}
				for s := 0; s < 64; s += 8 {
					key = append(key, byte(v>>s))
				}
			}
			seen[string(key)] = true
			return true
		}
		l := x.loops[loops[k]]
		for i := range l.ext {
			env[l.v] = i
			if !rec(k + 1) {
				return false
			}
		}
		return true
	}
	if !rec(0) {
		return 0, false, false
	}
	return int64(len(seen)), true, one
}

// evalInt evaluates an integer index; variables missing from env are 0.
func evalInt(e tir.Expr, env map[*tir.Var]int64) (int64, bool) {
	switch e := e.(type) {
	case *tir.IntImm:
		return e.V, true
	case *tir.Var:
		return env[e], true
	case *tir.Binary:
		a, ok1 := evalInt(e.A, env)
		b, ok2 := evalInt(e.B, env)
		if !ok1 || !ok2 {
			return 0, false
		}
		switch e.Op {
		case tir.Add:
			return a + b, true
		case tir.Sub:
			return a - b, true
		case tir.Mul:
			return a * b, true
		case tir.FloorDiv, tir.FloorMod:
			if b == 0 {
				return 0, false
			}
			q := a / b
			if a%b != 0 && (a < 0) != (b < 0) {
				q--
			}
			if e.Op == tir.FloorDiv {
				return q, true
			}
			return a - q*b, true
		case tir.Min:
			return min(a, b), true
		case tir.Max:
			return max(a, b), true
		}
	}
	return 0, false
}

// TestExtractRealistic checks structural properties on random schedules of
// every example DAG: one row per store, finite non-negative values, one-hot
// groups with exactly one bit, and the same rows from ExtractAll.
func TestExtractRealistic(t *testing.T) {
	dags := tetest.DAGs()
	names := make([]string, 0, len(dags))
	for n := range dags {
		names = append(names, n)
	}
	slices.Sort(names)
	var fs []*tir.PrimFunc
	for n, name := range names {
		rng := rand.New(rand.NewPCG(5, uint64(n)))
		s0 := schedule.NewState(dags[name])
		for range 5 {
			_, f := schedtest.RandomLowerable(rng, s0, 10)
			fs = append(fs, f)
		}
	}
	all := ExtractAll(fs, noMachine, 2)
	for i, f := range fs {
		stores := 0
		tir.WalkStmt(f.Body, func(s tir.Stmt) bool {
			if _, ok := s.(*tir.Store); ok {
				stores++
			}
			return true
		})
		rows := Extract(f, noMachine)
		if len(rows) != stores {
			t.Fatalf("%d rows for %d stores", len(rows), stores)
		}
		for r, row := range rows {
			if !slices.Equal(row, all[i][r]) {
				t.Fatalf("ExtractAll differs from Extract")
			}
			for k, v := range row {
				if !(v >= 0) || math.IsInf(float64(v), 0) {
					t.Fatalf("feature %s = %v\n%v", FeatureNames[k], v, f)
				}
			}
			for _, g := range []int{fVec, fUnroll, fParallel} {
				ones := 0
				for p := range numPos {
					ones += int(row[g+annPos+p])
				}
				if ones != 1 {
					t.Fatalf("position one-hot of group %s has %d bits", FeatureNames[g], ones)
				}
			}
		}
	}
}

// expertGEMM lowers a tiled GEMM: a local accumulator tile, SSRSRS tiling,
// fused parallel outer loops, vectorized inner loops, auto-unroll.
func expertGEMM(tb testing.TB, n int) *tir.PrimFunc {
	a := te.Placeholder("A", n, n)
	b := te.Placeholder("B", n, n)
	c := te.Reduce("C", []int{n, n}, te.Sum, []int{n}, func(i, r []tir.Expr) tir.Expr {
		return tir.MulE(a.At(i[0], r[0]), b.At(r[0], i[1]))
	})
	d, err := te.NewDAG(c)
	if err != nil {
		tb.Fatal(err)
	}
	const cl, cc = 2, 3
	s := schedule.NewState(d)
	for _, st := range []schedule.Step{
		&schedule.CacheWrite{Stage: 2, Scope: tir.Local},
		&schedule.Split{Stage: cl, Iter: 0, Lengths: []int{4, 4}},
		&schedule.Split{Stage: cl, Iter: 3, Lengths: []int{2, 16}},
		&schedule.Split{Stage: cl, Iter: 6, Lengths: []int{8}},
		&schedule.Reorder{Stage: cl, Order: []int{0, 3, 6, 1, 4, 7, 2, 5}},
		&schedule.FollowSplit{Stage: cc, Iter: 0, SrcStep: 1, NParts: 2},
		&schedule.FollowSplit{Stage: cc, Iter: 2, SrcStep: 2, NParts: 2},
		&schedule.Reorder{Stage: cc, Order: []int{0, 2, 1, 3}},
		&schedule.ComputeAt{Stage: cl, TargetStage: cc, TargetIter: 1},
		&schedule.Fuse{Stage: cc, Iters: []int{0, 1}},
		&schedule.Annotate{Stage: cc, Iter: 0, Ann: schedule.Parallel},
		&schedule.Annotate{Stage: cc, Iter: 2, Ann: schedule.Vectorize},
		&schedule.Annotate{Stage: cl, Iter: 7, Ann: schedule.Vectorize},
		&schedule.Pragma{Stage: cl, Iter: 0, Key: schedule.PragmaAutoUnroll, Value: 64},
	} {
		var err error
		if s, err = s.Apply(st); err != nil {
			tb.Fatalf("%v: %v", st, err)
		}
	}
	f, err := schedule.Lower(s, "gemm")
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

func TestExpertGEMMFeatures(t *testing.T) {
	f := expertGEMM(t, 64)
	rows := rawRows(f)
	// Stores: C.local init, C.local update, C copy.
	if len(rows) != 3 {
		t.Fatalf("%d rows:\n%v", len(rows), f)
	}
	upd := rows[1]
	if upd[feature("float_mul")] != 64*64*64 || upd[feature("vec_len")] != 16 || upd[feature("parallel_num")] != 1 {
		t.Errorf("update: float_mul %v vec_len %v parallel_num %v\n%v", upd[feature("float_mul")], upd[feature("vec_len")], upd[feature("parallel_num")], f)
	}
	if upd[feature("alloc_size")] == 0 {
		t.Errorf("update stores to the local tile, alloc_size = 0")
	}
}

func BenchmarkExtractGEMM(b *testing.B) {
	f := expertGEMM(b, 256)
	b.ReportAllocs()
	for b.Loop() {
		Extract(f, noMachine)
	}
}

// BenchmarkExtractRandom extracts random schedules of a conv and a matmul,
// the mix a search round sees.
func BenchmarkExtractRandom(b *testing.B) {
	dags := tetest.DAGs()
	var fs []*tir.PrimFunc
	for n, name := range []string{"conv", "matmul", "conv_bias_relu", "softmax"} {
		rng := rand.New(rand.NewPCG(3, uint64(n)))
		s0 := schedule.NewState(dags[name])
		for range 64 {
			_, f := schedtest.RandomLowerable(rng, s0, 10)
			fs = append(fs, f)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		Extract(fs[i%len(fs)], noMachine)
		i++
	}
}
