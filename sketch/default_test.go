package sketch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
	"github.com/tessera-ml/tessera/tir"
)

// TestDefault: every example DAG gets a default schedule that lowers,
// computes what the reference evaluator computes, and is the same every
// time; a matmul's gets the 16-lane register tile.
func TestDefault(t *testing.T) {
	dags := tetest.DAGs()
	for _, name := range sortedNames(dags) {
		d := dags[name]
		st, rule, err := Default(schedule.NewState(d), testOptions())
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		f, err := schedule.Lower(st, "default")
		if err != nil {
			t.Errorf("%s: %s: %v", name, rule, err)
			continue
		}
		if err := schedtest.Check(d, f, 3); err != nil {
			t.Errorf("%s: %s: %v\n%v", name, rule, err, st)
		}
		again, _, _ := Default(schedule.NewState(d), testOptions())
		if Key(again) != Key(st) {
			t.Errorf("%s: two default schedules differ:\n%v\n%v", name, st, again)
		}
	}
	d := matmul64(t)
	st, _, err := Default(schedule.NewState(d), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if s := st.String(); !strings.Contains(s, "vectorize(16)") {
		t.Errorf("the default matmul schedule has no 16-lane vector loop:\n%s", s)
	}
}

// TestRegisterTile: the default register tile fits each level's register
// file: its accumulators (rows × vectors), the vectors of the next load and
// a broadcast at most the registers; AVX-512 keeps the 16 × 16 tile
// measured best there.
func TestRegisterTile(t *testing.T) {
	for _, c := range []struct {
		level             string
		vecLanes, rows    int
		lanes, vectorRegs int
	}{
		{"x86-64-v4", 16, 16, 16, 32},
		{"x86-64-v3", 16, 6, 8, 16},
		{"x86-64-v2", 8, 6, 4, 16},
		{"armv8-a", 4, 16, 4, 32},
	} {
		o := testOptionsFor(c.level)
		if o.Lanes != c.lanes || o.VectorRegs != c.vectorRegs || o.MaxVectorLanes != c.vecLanes {
			t.Errorf("%s: options lanes %d regs %d max lanes %d", c.level, o.Lanes, o.VectorRegs, o.MaxVectorLanes)
		}
		vl, rows := RegisterTile(o.Lanes, o.VectorRegs)
		if vl != c.vecLanes || rows != c.rows {
			t.Errorf("%s: register tile %d lanes × %d rows, want %d × %d", c.level, vl, rows, c.vecLanes, c.rows)
		}
		vecs := vl / o.Lanes
		if acc := rows * vecs; acc+vecs+1 > o.VectorRegs {
			t.Errorf("%s: %d accumulators + %d loads + 1 broadcast > %d registers", c.level, acc, vecs, o.VectorRegs)
		}
		// The default matmul schedule has the tile's vector loop, and lowers.
		d := matmul64(t)
		st, _, err := Default(schedule.NewState(d), o)
		if err != nil {
			t.Fatal(err)
		}
		if s := st.String(); !strings.Contains(s, fmt.Sprintf("vectorize(%d)", c.vecLanes)) {
			t.Errorf("%s: the default matmul schedule has no %d-lane vector loop:\n%s", c.level, c.vecLanes, s)
		}
		f, err := schedule.Lower(st, "default")
		if err != nil {
			t.Fatal(err)
		}
		if err := schedtest.Check(d, f, 3); err != nil {
			t.Errorf("%s: %v", c.level, err)
		}
	}
}

// matmul64 is the DAG of a 64×64×64 matrix multiplication.
func matmul64(t *testing.T) *te.DAG {
	t.Helper()
	return matmulDAG(t, 64, 64, 64)
}

// TestRowLength: the register tile's rows divide the axis where a divisor
// of at least half the tile exists, else cover it with the least padding.
func TestRowLength(t *testing.T) {
	for _, c := range []struct{ ext, rows, want int }{
		{56, 16, 14}, {28, 16, 14}, {7, 16, 7}, {14, 16, 14}, {112, 16, 16},
		{17, 16, 9}, {149, 16, 15}, {71, 16, 12}, {35, 16, 12}, {17, 6, 6}, {147, 16, 15},
	} {
		if got := rowLength(c.ext, c.rows); got != c.want {
			t.Errorf("rowLength(%d, %d) = %d, want %d", c.ext, c.rows, got, c.want)
		}
	}
}

// TestDefaultPrimeRows: a channels-last convolution to 17×17 (Inception
// v3's) gets a register tile of several rows, the last tile guarded, and
// computes what the reference evaluator computes.
func TestDefaultPrimeRows(t *testing.T) {
	x := te.Placeholder("x", 1, 35, 35, 8)
	w := te.Constant("w", 16, 8, 3, 3)
	conv, err := te.ConvNHWC("conv", x, w, nil, te.ConvAttrs{Strides: []int{2, 2}})
	if err != nil {
		t.Fatal(err)
	}
	d, st, rule := defaultOf(t, conv)
	rows := false
	for _, step := range st.Steps {
		if sp, ok := step.(*schedule.Split); ok && sp.Lengths[len(sp.Lengths)-1] == 9 {
			rows = true
		}
	}
	if !rows {
		t.Errorf("%s: no 9-row tile of the 17 output columns:\n%v", rule, st)
	}
	checkLowered(t, d, st, rule, 3)
}

// defaultOf returns the DAG of out and its default schedule, and how that
// was made.
func defaultOf(t *testing.T, out *te.Tensor) (*te.DAG, *schedule.State, string) {
	t.Helper()
	d, err := te.NewDAG(out)
	if err != nil {
		t.Fatal(err)
	}
	st, rule, err := Default(schedule.NewState(d), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	return d, st, rule
}

// checkLowered lowers st and checks it against the reference evaluator
// on random inputs drawn from seed.
func checkLowered(t *testing.T, d *te.DAG, st *schedule.State, rule string, seed uint64) {
	t.Helper()
	f, err := schedule.Lower(st, "default")
	if err != nil {
		t.Fatal(err)
	}
	if err := schedtest.Check(d, f, seed); err != nil {
		t.Errorf("%s: %v\n%v", rule, err, st)
	}
}

// TestDefaultStreamsWeights: a matmul of few rows by a weight larger than
// the core's L2 (Options.L2) gets its row tiles inside the weight's column
// tiles (the row split's lengths cover all 60 rows, level 0 is 1), so each
// panel of the weight is read once; a weight that fits, or just fills the
// L2, keeps the row tiles outside. The new order computes what the
// reference evaluator computes.
func TestDefaultStreamsWeights(t *testing.T) {
	l2Cols := testOptions().L2 / (512 * 4) // the columns of a 512-row weight that fills the L2
	for _, c := range []struct {
		cols   int
		inside bool
	}{
		{l2Cols * 5 / 4, true},
		{l2Cols + 16, true},
		{l2Cols, false},      // fills the L2
		{l2Cols - 16, false}, // just under
	} {
		a, b := te.Placeholder("A", 60, 512), te.Constant("B", 512, c.cols)
		mm, err := te.MatMul("C", a, b)
		if err != nil {
			t.Fatal(err)
		}
		d, st, rule := defaultOf(t, mm)
		inside := false
		for _, step := range st.Steps {
			if sp, ok := step.(*schedule.Split); ok {
				n := 1
				for _, l := range sp.Lengths {
					n *= l
				}
				inside = inside || n == 60
			}
		}
		if inside != c.inside {
			t.Errorf("60 × 512 by 512 × %d: row tiles inside the column tiles %v, want %v (%s):\n%v", c.cols, inside, c.inside, rule, st)
		}
		if c.inside {
			checkLowered(t, d, st, rule, 1)
		}
	}
}

// TestWidenForFewRows: the vector tile a register tile gets when its row
// axis leaves accumulators unused (the budget is rowTile × vecs of the
// machine's tile), a power of two of lanes dividing the axis, at most
// maxWideVectors vectors.
func TestWidenForFewRows(t *testing.T) {
	for _, c := range []struct {
		ext, tile, lanes, vecs, rows, rowTile, want int
	}{
		{768, 16, 8, 2, 1, 6, 64},   // AVX2, a GRU step's 1 × 256 by 256 × 768: 8 vectors
		{768, 16, 16, 1, 1, 8, 128}, // AVX-512: 8 vectors of 16
		{96, 16, 8, 2, 1, 6, 32},    // the largest power of two of lanes dividing 96
		{32, 16, 8, 2, 3, 6, 32},    // 3 rows: 12/3 = 4 vectors
		{768, 16, 8, 2, 4, 6, 16},   // 4 rows use the tile: unchanged
		{24, 24, 8, 3, 1, 6, 24},    // not a power of two (a whole-vectors tile): unchanged
		{768, 16, 2, 8, 1, 6, 16},   // fewer lanes than minLanes: unchanged
	} {
		if got := widenForFewRows(c.ext, c.tile, c.lanes, c.vecs, c.rows, c.rowTile); got != c.want {
			t.Errorf("%+v: %d", c, got)
		}
	}
}

// TestDefaultMatrixVector: a matrix-vector product's default schedule has
// one row of maxWideVectors vectors, vectorized as one loop, and computes
// what the reference evaluator computes; a pooling window and a matmul of
// many rows keep their tiles (TestDefault).
func TestDefaultMatrixVector(t *testing.T) {
	opts := testOptions()
	mm, err := te.MatMul("C", te.Placeholder("A", 1, 256), te.Constant("B", 256, 768))
	if err != nil {
		t.Fatal(err)
	}
	d, st, rule := defaultOf(t, mm)
	out := st.Stages[len(st.Stages)-1]
	vec := false
	for _, s := range st.Stages {
		for _, it := range s.Iters {
			vec = vec || it.Ann == schedule.Vectorize && it.Extent == maxWideVectors*opts.Lanes
		}
	}
	if !vec {
		t.Errorf("no loop of %d lanes vectorized (%s):\n%v\n%v", maxWideVectors*opts.Lanes, rule, out, st)
	}
	checkLowered(t, d, st, rule, 3)
}

// TestDefaultChannelsLastPool: a global average pool of a channels-last
// map with few channels is factored (its output is too small for the
// cores), and the partial sums' loop over the chunks of pixels is the
// outermost, so each chunk is read once for every channel (with the
// channels outermost, each channel walked the whole map at the stride of
// a pixel). A pool of an NCHW map, which reads along the pixels, keeps
// the channels outermost. Both compute what the reference evaluator does.
func TestDefaultChannelsLastPool(t *testing.T) {
	for _, c := range []struct {
		name         string
		pool         func() (*te.Tensor, error)
		factorsFirst bool
	}{
		{"nhwc", func() (*te.Tensor, error) { return te.GlobalAveragePoolNHWC("gap", te.Placeholder("X", 1, 30, 24, 16)) }, true},
		{"nchw", func() (*te.Tensor, error) { return te.GlobalAveragePool("gap", te.Placeholder("X", 1, 16, 30, 24)) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := c.pool()
			if err != nil {
				t.Fatal(err)
			}
			d, st, rule := defaultOf(t, out)
			var rf *schedule.Stage
			for _, s := range st.Stages {
				if strings.HasSuffix(s.Tensor.Name, ".rf") {
					rf = s
				}
			}
			if rf == nil {
				t.Fatalf("no partial reduction (%s):\n%v", rule, st)
			}
			// The factor axis is the partial sums' last spatial axis.
			factor := rf.Tensor.Axis[len(rf.Tensor.Axis)-1].Var.Name
			if first := strings.HasPrefix(rf.Iters[0].Name, factor); first != c.factorsFirst {
				t.Errorf("outermost loop of %s is %s (factor %s): factor first %v, want %v\n%v", rf.Tensor.Name, rf.Iters[0].Name, factor, first, c.factorsFirst, st)
			}
			checkLowered(t, d, st, rule, 5)
		})
	}
}

// TestDefaultEmbeddingMatmul: a matmul that reads a constant table through
// a Gather (an embedding at token ids) gets its tiled default schedule, not
// the naive loop nest: the table is not repacked (readsAtData), since no
// layout follows loops at data-dependent rows, and rewrite_layout refused
// every sample with it (an LSTM language model's input projection: 63 →
// 10 ms for the model).
func TestDefaultEmbeddingMatmul(t *testing.T) {
	d := tetest.DAGs()["embedding_matmul"]
	st, rule, err := Default(schedule.NewState(d), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(rule, "naive") {
		t.Errorf("default schedule: %s\n%v", rule, st)
	}
}

// TestDefaultTailTile: at 16 lanes, a 1×1 convolution's output channels
// that only 8 lanes divide (200 = 12.5 × 16) get whole vectors and a
// guarded last tile: 16 lanes for float32, two vectors of int32 dot
// products (208 pads least with 16: one vector); an axis cut into fewer
// than minTailTiles tiles (72 channels: 5), a grouped convolution (groups
// of 8 channels: a vector must stay within one) and a matrix-vector
// product (one row: minTailRows; 1000 = 62.5 × 16) keep vectors that
// divide the axis. Each
// lowers to what the reference evaluator computes.
func TestDefaultTailTile(t *testing.T) {
	for _, c := range []struct {
		name       string
		out, group int
		integer    bool
		gemv       bool
		lanes      int // the vectorized loop's extent; 0: any that divides out
	}{
		{"float 200", 200, 1, false, false, 16},
		{"int8 200", 200, 1, true, false, 16},
		{"int8 408", 408, 1, true, false, 32},
		{"float 72", 72, 1, false, false, 8},
		{"int8 grouped 200", 200, 25, true, false, 8},
		{"float matrix-vector 1000", 1000, 1, false, true, 0},
	} {
		in := 8 * c.group
		var acc *te.Tensor
		var err error
		switch {
		case c.gemv:
			// ResNet-18's classifier.
			acc, err = te.Gemm("acc", te.Placeholder("A", 1, 512), te.Constant("B", c.out, 512), te.Constant("C", c.out), te.GemmAttrs{Alpha: 1, Beta: 1, TransB: true})
		case c.integer:
			x := te.TypedPlaceholder("X", tir.Uint8, 1, 5, 5, in)
			w := te.TypedPlaceholder("W", tir.Int8, c.out, in/c.group, 1, 1)
			w.Const = true
			acc, err = te.IntConv("acc", x, w, 0, te.ConvAttrs{Group: c.group}, te.IntConvOptions{NHWC: true, Dot: 4})
		default:
			xf := te.Placeholder("Xf", 1, 5, 5, in)
			wf := te.Constant("Wf", c.out, in/c.group, 1, 1)
			acc, err = te.ConvNHWC("acc", xf, wf, nil, te.ConvAttrs{Group: c.group})
		}
		if err != nil {
			t.Fatal(err)
		}
		d, st, rule := defaultOf(t, acc)
		lanes := 0
		for _, s := range st.Stages {
			for _, it := range s.Iters {
				if it.Ann == schedule.Vectorize && strings.HasPrefix(s.Tensor.Name, "acc") {
					lanes = max(lanes, it.Extent)
				}
			}
		}
		if c.lanes != 0 && lanes != c.lanes || c.lanes == 0 && (lanes == 0 || c.out%lanes != 0) {
			t.Errorf("%s: %d lanes vectorized, want %d (0: a divisor of %d) (%s):\n%v", c.name, lanes, c.lanes, c.out, rule, st)
		}
		checkLowered(t, d, st, rule, 3)
	}
}

// TestDefaultBF16Tile: a float32 product of bfloat16 operands (a bf16
// build's pairs, vdpbf16ps) takes the integer dots' register tile, two
// vectors wide, not the float one of a single vector (whose broadcast an
// FMA reads from memory), and computes what the reference evaluator does.
func TestDefaultBF16Tile(t *testing.T) {
	opts := testOptions()
	a := te.Placeholder("A", 32, 64)
	ab := te.Compute("A_bf16", a.Shape, func(i []tir.Expr) tir.Expr { return &tir.Cast{To: tir.BFloat16, X: a.At(i...)} })
	af := te.Compute("A_f32", a.Shape, func(i []tir.Expr) tir.Expr { return &tir.Cast{To: tir.Float32, X: ab.At(i...)} })
	w := te.TypedPlaceholder("W", tir.BFloat16, 64, 8*opts.Lanes)
	w.Const = true
	wf := te.Compute("W_f32", w.Shape, func(i []tir.Expr) tir.Expr { return &tir.Cast{To: tir.Float32, X: w.At(i...)} })
	mm, err := te.MatMulDot("C", af, wf, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !bf16Contraction(mm) {
		t.Fatal("the product of bfloat16 operands is not a bf16 contraction")
	}
	d, st, rule := defaultOf(t, mm)
	widths := map[int]bool{}
	for _, s := range st.Stages {
		if s.Tensor.Name != mm.Name+".local" { // the product's register tile
			continue
		}
		for _, it := range s.Iters {
			if it.Ann == schedule.Vectorize {
				widths[it.Extent] = true
			}
		}
	}
	if !widths[intDotVectors*opts.Lanes] {
		t.Errorf("product vectorized over %v lanes, want %d (%s):\n%v", widths, intDotVectors*opts.Lanes, rule, st)
	}
	checkLowered(t, d, st, rule, 5)
}
