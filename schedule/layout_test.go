package schedule_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// TestRewriteLayoutGEMM packs the weight of the expert GEMM schedule: B is
// read by C.local, whose loops that move B's indices are, outer to inner,
// j.0 (fused into the parallel loop), k.0, j.1 (the follow-split tile of
// the consumer), k.1 and j.2 (vectorized). The packed B has those five
// dimensions, and the kernel still computes C.
func TestRewriteLayoutGEMM(t *testing.T) {
	a := te.Placeholder("A", 24, 20)
	b := te.Constant("B", 20, 32)
	c := te.Reduce("C", []int{24, 32}, te.Sum, []int{20}, func(i, r []tir.Expr) tir.Expr {
		return tir.MulE(a.At(i[0], r[0]), b.At(r[0], i[1]))
	})
	d, _ := te.NewDAG(c)
	steps := append(gemmSteps(2, 3, 2, 8, 4), &schedule.RewriteLayout{Stage: 1})
	s := apply(t, schedule.NewState(d), steps...)
	check(t, s)
	f, err := schedule.Lower(s, "gemm")
	if err != nil {
		t.Fatal(err)
	}
	p := f.Params[1]
	if p.Packed == nil {
		t.Fatalf("B is not packed:\n%v", f)
	}
	// j = j.0*16 + j.1*8 + j.2 (32 = 2·2·8), k = k.0*4 + k.1 (20 = 5·4).
	if got, want := p.Packed.String(), "[a1:2*16 a0:5*4 a1:2*8 a0:4*1 a1:8*1]"; got != want {
		t.Errorf("packing %s, want %s\n%v", got, want, f)
	}
	if got := p.Shape; len(got) != 5 || p.Size() != 20*32 {
		t.Errorf("packed shape %v", got)
	}
	if !strings.Contains(s.String(), "B: packed") {
		t.Errorf("state preview does not show the packing:\n%v", s)
	}
}

// TestRewriteLayoutConv packs a convolution kernel read by a tiled,
// fused, parallel and vectorized loop nest, and checks the result.
func TestRewriteLayoutConv(t *testing.T) {
	d := conv3x3(4, 6, 8, 8)
	s0 := schedule.NewState(d)
	conv, k := stageNamed(s0, "conv"), stageNamed(s0, "K")
	s := apply(t, s0,
		&schedule.Split{Stage: conv, Iter: 1, Lengths: []int{2, 2}}, // n f.0 f.1 f.2 h w c r s
		&schedule.Split{Stage: conv, Iter: 6, Lengths: []int{2}},    // ... c.0 c.1 r s
		&schedule.Reorder{Stage: conv, Order: []int{0, 1, 4, 2, 6, 8, 9, 5, 7, 3}},
		&schedule.Fuse{Stage: conv, Iters: []int{0, 1, 2}}, // n·f.0·h
		&schedule.Annotate{Stage: conv, Iter: 0, Ann: schedule.Parallel},
		&schedule.Annotate{Stage: conv, Iter: 7, Ann: schedule.Vectorize},
		&schedule.RewriteLayout{Stage: k},
	)
	check(t, s)
	f, _ := schedule.Lower(s, "conv")
	if f.Params[1].Packed == nil || f.Params[1].Size() != 8*4*9 {
		t.Fatalf("K is not packed as expected: %v\n%v", f.Params[1].Packed, f)
	}
}

// TestRewriteLayoutGroups packs a weight read at four constant offsets
// along k (a body that sums a group of four adjacent products, as
// te.IntConvOptions.Dot writes a convolution): the group becomes the
// innermost dimension, after the vectorized j, so each lane's four weights
// lie together; the kernel still computes C.
func TestRewriteLayoutGroups(t *testing.T) {
	a := te.Placeholder("A", 6, 16)
	b := te.Constant("B", 16, 8)
	c := te.Reduce("C", []int{6, 8}, te.Sum, []int{4}, func(i, r []tir.Expr) tir.Expr {
		var sum tir.Expr
		for g := range 4 {
			k := tir.AddE(tir.MulE(r[0], tir.Const(4)), tir.Const(int64(g)))
			p := tir.MulE(a.At(i[0], k), b.At(k, i[1]))
			if sum == nil {
				sum = p
			} else {
				sum = tir.AddE(sum, p)
			}
		}
		return sum
	})
	d, _ := te.NewDAG(c)
	s0 := schedule.NewState(d)
	cs := stageNamed(s0, "C")
	s := apply(t, s0,
		&schedule.Reorder{Stage: cs, Order: []int{0, 2, 1}}, // i k j
		&schedule.Annotate{Stage: cs, Iter: 2, Ann: schedule.Vectorize},
		&schedule.RewriteLayout{Stage: stageNamed(s0, "B")},
	)
	check(t, s)
	f, err := schedule.Lower(s, "groups")
	if err != nil {
		t.Fatal(err)
	}
	// k = 4·r + g: r (4, stride 4 along axis 0) outside j (8), g (4,
	// stride 1 along axis 0) innermost.
	if got, want := f.Params[1].Packed.String(), "[a0:4*4 a1:8*1 a0:4*1]"; got != want {
		t.Errorf("packing %s, want %s\n%v", got, want, f)
	}
}

// TestRewriteLayoutErrors: the step applies only to constants, once.
func TestRewriteLayoutErrors(t *testing.T) {
	d := conv3x3(2, 5, 5, 2)
	s0 := schedule.NewState(d)
	for _, c := range []struct {
		steps []schedule.Step
		want  string
	}{
		{[]schedule.Step{&schedule.RewriteLayout{Stage: stageNamed(s0, "X")}}, "not a constant"},
		{[]schedule.Step{&schedule.RewriteLayout{Stage: stageNamed(s0, "conv")}}, "is a computation"},
		{[]schedule.Step{&schedule.RewriteLayout{Stage: 99}}, "out of range"},
		{[]schedule.Step{&schedule.RewriteLayout{Stage: stageNamed(s0, "K")}, &schedule.RewriteLayout{Stage: stageNamed(s0, "K")}}, "already"},
	} {
		_, err := schedule.Replay(s0, c.steps)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one saying %q", c.steps, err, c.want)
		}
	}
}

// TestRewriteLayoutRandom lowers random schedules that end by packing every
// constant: most must lower, and every one that does must compute what the
// reference computes.
func TestRewriteLayoutRandom(t *testing.T) {
	for name, d := range map[string]*te.DAG{"matmul_relu": matmulRelu(6, 16, 12), "conv3x3": conv3x3(4, 6, 6, 8)} {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			s0 := schedule.NewState(d)
			packed := 0
			for i := 0; i < 150; i++ {
				s := schedtest.RandomState(rng, s0, 10)
				for j, st := range s.Stages {
					if st.IsPlaceholder() && st.Tensor.Const && !st.Packed {
						s, _ = s.Apply(&schedule.RewriteLayout{Stage: j})
					}
				}
				f, err := schedule.Lower(s, "k")
				if err != nil {
					continue
				}
				for _, p := range f.Params {
					if p.Packed != nil {
						packed++
					}
				}
				if err := runAndCompare(d, f, uint64(i)); err != nil {
					t.Fatalf("%v\nsteps: %v\nstate:\n%v\nlowered:\n%v", err, s.Steps, s, f)
				}
			}
			t.Logf("%d of 150 random schedules lowered with a packed constant", packed)
			if packed < 50 {
				t.Errorf("only %d of 150 random schedules lowered with a packed constant", packed)
			}
		})
	}
}

// TestRewriteLayoutSameLoopNames: the reader of a repacked weight is
// computed inside a consumer whose loops have the same names as its own
// (i1.0 of both); the packing must tell them apart (it merged them once,
// found by FuzzSteps).
func TestRewriteLayoutSameLoopNames(t *testing.T) {
	d := matmulRelu(5, 6, 4)
	steps := []schedule.Step{
		&schedule.RewriteLayout{Stage: 1},
		&schedule.CacheRead{Stage: 2, Scope: tir.Local, Readers: []int{3}},
		&schedule.Split{Stage: 3, Iter: 0, Lengths: []int{5}},
		&schedule.Split{Stage: 3, Iter: 2, Lengths: []int{3}},
		&schedule.Split{Stage: 4, Iter: 1, Lengths: []int{1}},
		&schedule.Fuse{Stage: 3, Iters: []int{0, 1}},
		&schedule.Split{Stage: 3, Iter: 2, Lengths: []int{1, 3}},
		&schedule.Split{Stage: 2, Iter: 1, Lengths: []int{2}},
		&schedule.ComputeAt{Stage: 2, TargetStage: 3, TargetIter: 2},
	}
	s, err := schedule.Replay(schedule.NewState(d), steps)
	if err != nil {
		t.Fatal(err)
	}
	f, err := schedule.Lower(s, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := runAndCompare(d, f, 1); err != nil {
		t.Fatalf("%v\n%v", err, f)
	}
}
