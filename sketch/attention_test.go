package sketch

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
	"github.com/tessera-ml/tessera/tir"
)

// attentionDAG is one window of attention as the exporter writes it: K
// given [heads, keys, size] and transposed for the scores matmul, 49 keys
// (a Swin window: no power of two divides it), more heads than queries.
func attentionDAG(t *testing.T) *te.DAG {
	t.Helper()
	q, k, v := te.Placeholder("Q", 12, 10, 16), te.Placeholder("K", 12, 49, 16), te.Placeholder("V", 12, 49, 16)
	kt, err := te.Transpose("kt", k, []int{0, 2, 1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := te.MatMul("scores", q, kt)
	if err != nil {
		t.Fatal(err)
	}
	p, err := te.Softmax("probs", s, -1)
	if err != nil {
		t.Fatal(err)
	}
	return dagOf(t)(te.MatMul("attention", p, v))
}

func stageNamed(t *testing.T, s *schedule.State, name string) *schedule.Stage {
	t.Helper()
	for _, st := range s.Stages {
		if st.Tensor.Name == name {
			return st
		}
	}
	t.Fatalf("no stage %s in\n%v", name, s)
	return nil
}

// TestKeepTranspose: the transposed K a matmul reads along its vector axis
// is kept as a stage of its own in the first sketch and inlined in
// another (inline_or_keep_transpose); the default schedule keeps it,
// vectorizes the scores over all 49 keys (3 × 16 lanes + 1), takes the
// register tile's rows of the second matmul from the queries (the axis
// its vector loads do not use) and computes what the reference does.
func TestKeepTranspose(t *testing.T) {
	d := attentionDAG(t)
	sketches, err := Generate(schedule.NewState(d), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	kept, inlined := 0, 0
	for n, sk := range sketches {
		if stageNamed(t, sk, "kt").Attach == schedule.Inlined {
			inlined++
		} else {
			kept++
			if n == 0 && inlined > 0 {
				t.Error("an inlining sketch comes before the first that keeps Kᵀ")
			}
		}
	}
	if kept == 0 || inlined == 0 || stageNamed(t, sketches[0], "kt").Attach == schedule.Inlined {
		t.Fatalf("%d sketches keep Kᵀ, %d inline it, the first inlines it: %v", kept, inlined, stageNamed(t, sketches[0], "kt").Attach == schedule.Inlined)
	}

	st, how, err := Default(schedule.NewState(d), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if stageNamed(t, st, "kt").Attach == schedule.Inlined {
		t.Errorf("the default inlines Kᵀ:\n%v", st)
	}
	scores := stageNamed(t, st, "scores.local")
	if last := scores.Iters[len(scores.Iters)-1]; last.Ann != schedule.Vectorize || last.Extent != 49 {
		t.Errorf("the scores' innermost loop is %s(%d), want 49 lanes vectorized:\n%v", last.Name, last.Extent, st)
	}
	att := stageNamed(t, st, "attention.local")
	rows := map[string]int{}
	for _, it := range att.Iters {
		rows[it.Name] = it.Extent
	}
	if rows["i0.3"] != 1 || rows["i1.3"] < 2 {
		t.Errorf("the second matmul's register tile has %d heads and %d queries as rows, want the queries:\n%v", rows["i0.3"], rows["i1.3"], st)
	}
	f, err := schedule.Lower(st, "default")
	if err != nil {
		t.Fatalf("%s: %v", how, err)
	}
	if err := schedtest.Check(d, f, 3); err != nil {
		t.Errorf("%s: %v\n%v", how, err, st)
	}
}

// TestMutateComputeLocationToRoot: Kᵀ attached under the scores' loops
// can be moved back to the root by the compute-location mutation (which
// otherwise only moves it between loops of the same consumer), and every
// child computes what the reference does.
func TestMutateComputeLocationToRoot(t *testing.T) {
	d := attentionDAG(t)
	opts := testOptions()
	sketches, err := Generate(schedule.NewState(d), opts)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	attached, rooted, moved := 0, 0, 0
	for k := 0; k < 400 && rooted == 0; k++ {
		parent, err := Sample(rng, sketches[0], opts)
		if err != nil {
			t.Fatal(err)
		}
		if stageNamed(t, parent, "kt").Attach != schedule.At {
			continue
		}
		attached++
		child, err := mutateComputeLocation(rng, parent, opts)
		if errors.Is(err, ErrNotApplicable) {
			continue
		}
		if err != nil {
			t.Fatalf("%v\n%v", err, parent)
		}
		checkChild(t, "compute_location", child)
		switch stageNamed(t, child, "kt").Attach {
		case schedule.Root:
			rooted++
		case schedule.At:
			moved++
		}
	}
	if rooted == 0 {
		t.Errorf("of %d samples with Kᵀ attached, mutation moved it to the root in none (%d within its consumer)", attached, moved)
	}
}

// TestKeepQuantizedOperand: the uint8 operand of an integer matmul that a
// transpose-and-reshape stage computes (qmatmul_heads) is kept as a stage
// of its own in the default schedule (inline_or_keep_quantized_operand),
// so that the matmul reads four adjacent bytes per group, and code
// generation emits the dot-product helper for it; another sketch inlines
// it; the default computes what the reference does.
func TestKeepQuantizedOperand(t *testing.T) {
	d := tetest.DAGs()["qmatmul_heads"]
	sketches, err := Generate(schedule.NewState(d), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	inlined := 0
	for _, sk := range sketches {
		if stageNamed(t, sk, "qmatmul_heads_xt").Attach == schedule.Inlined {
			inlined++
		}
	}
	if inlined == 0 || inlined == len(sketches) {
		t.Errorf("%d of %d sketches inline the operand, want some but not all", inlined, len(sketches))
	}
	st, how, err := Default(schedule.NewState(d), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if stageNamed(t, st, "qmatmul_heads_xt").Attach == schedule.Inlined {
		t.Errorf("the default inlines the quantized operand:\n%v", st)
	}
	f, err := schedule.Lower(st, "k")
	if err != nil {
		t.Fatalf("%s: %v", how, err)
	}
	if err := schedtest.Check(d, f, 3); err != nil {
		t.Errorf("%s: %v\n%v", how, err, st)
	}
	src, err := codegen.C(f, codegen.COptions{VectorBits: 256})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(src.Code[strings.Index(src.Code, "static int tsr_impl"):], "tsr_dot4s_v8u8(") {
		t.Errorf("the default kernel calls no tsr_dot4s_v8u8:\n%s", src.Code)
	}
}

// TestKeepShared: a softmax's input that takes many operations (q_softmax:
// quantized and dequantized scores plus a quantized mask, quantized and
// dequantized again) and that the row maximum and the exponentials both
// read is kept as a stage of its own in the default schedule
// (inline_or_keep_shared), computed once, where inlined it was computed
// by each; another sketch inlines it; the default does less work than the
// inlined form and computes what the reference does.
func TestKeepShared(t *testing.T) {
	d := tetest.DAGs()["q_softmax"]
	sketches, err := Generate(schedule.NewState(d), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	var inlinedSketch *schedule.State
	for _, sk := range sketches {
		if stageNamed(t, sk, "q_softmax_in").Attach == schedule.Inlined {
			inlinedSketch = sk
		}
	}
	if inlinedSketch == nil || stageNamed(t, sketches[0], "q_softmax_in").Attach == schedule.Inlined {
		t.Fatalf("of %d sketches the first inlines the shared input or none does", len(sketches))
	}
	st, how, err := Default(schedule.NewState(d), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if stageNamed(t, st, "q_softmax_in").Attach == schedule.Inlined {
		t.Errorf("the default inlines the shared input:\n%v", st)
	}
	f, err := schedule.Lower(st, "k")
	if err != nil {
		t.Fatalf("%s: %v", how, err)
	}
	if err := schedtest.Check(d, f, 5); err != nil {
		t.Errorf("%s: %v\n%v", how, err, st)
	}
	fi, err := schedule.Lower(inlinedSketch, "k")
	if err != nil {
		t.Fatal(err)
	}
	if kept, inlined := tir.Work(f), tir.Work(fi); kept >= inlined {
		t.Errorf("work kept %.0f, inlined %.0f: want less kept", kept, inlined)
	}
}
