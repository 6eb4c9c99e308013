package schedule_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
	"github.com/tessera-ml/tessera/tir"
)

// check lowers s, interprets the function and compares every output with
// the reference evaluator.
func check(t *testing.T, s *schedule.State) {
	t.Helper()
	f, err := schedule.Lower(s, "kernel")
	if err != nil {
		t.Fatalf("lower:\n%v\n%v", s, err)
	}
	if err := runAndCompare(s.DAG, f, 7); err != nil {
		t.Fatalf("%v\nsteps: %v\nstate:\n%v\nlowered:\n%v", err, s.Steps, s, f)
	}
}

func runAndCompare(d *te.DAG, f *tir.PrimFunc, seed uint64) error { return schedtest.Check(d, f, seed) }

func matmulRelu(n, m, k int) *te.DAG {
	a := te.Placeholder("A", n, k)
	b := te.Constant("B", k, m)
	c := te.Reduce("C", []int{n, m}, te.Sum, []int{k}, func(i, r []tir.Expr) tir.Expr {
		return tir.MulE(a.At(i[0], r[0]), b.At(r[0], i[1]))
	})
	d := te.Compute("D", []int{n, m}, func(i []tir.Expr) tir.Expr {
		return tir.MaxE(c.At(i...), tir.F32(0))
	})
	dag, err := te.NewDAG(d)
	if err != nil {
		panic(err)
	}
	return dag
}

// conv3x3 is a padded 3×3 convolution with an explicit pad stage.
func conv3x3(c, h, w, f int) *te.DAG {
	x := te.Placeholder("X", 1, c, h, w)
	k := te.Constant("K", f, c, 3, 3)
	pad := te.Compute("pad", []int{1, c, h + 2, w + 2}, func(i []tir.Expr) tir.Expr {
		in := tir.AndE(tir.AndE(tir.Cmp(tir.GE, i[2], tir.Const(1)), tir.Cmp(tir.LT, i[2], tir.Const(int64(h+1)))),
			tir.AndE(tir.Cmp(tir.GE, i[3], tir.Const(1)), tir.Cmp(tir.LT, i[3], tir.Const(int64(w+1)))))
		return tir.SelectE(in, x.At(i[0], i[1], tir.SubE(i[2], tir.Const(1)), tir.SubE(i[3], tir.Const(1))), tir.F32(0))
	})
	conv := te.Reduce("conv", []int{1, f, h, w}, te.Sum, []int{c, 3, 3}, func(i, r []tir.Expr) tir.Expr {
		return tir.MulE(pad.At(i[0], r[0], tir.AddE(i[2], r[1]), tir.AddE(i[3], r[2])), k.At(i[1], r[0], r[1], r[2]))
	})
	dag, err := te.NewDAG(conv)
	if err != nil {
		panic(err)
	}
	return dag
}

func stageNamed(s *schedule.State, name string) int {
	for i, st := range s.Stages {
		if st.Tensor.Name == name {
			return i
		}
	}
	panic("no stage " + name)
}

func apply(t *testing.T, s *schedule.State, steps ...schedule.Step) *schedule.State {
	t.Helper()
	s, err := schedule.Replay(s, steps)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLowerNaive(t *testing.T) {
	for _, d := range []*te.DAG{matmulRelu(5, 7, 3), conv3x3(3, 6, 5, 4)} {
		check(t, schedule.NewState(d))
	}
}

// gemmSteps is an expert GEMM schedule written only as steps: a local
// accumulator tile, SSRSRS tiling, the output copy tiled to follow, outer
// tiles fused and parallel, the inner spatial loop vectorized.
func gemmSteps(ti1, ti2, tj1, tj2, tk int) []schedule.Step {
	const cl, c = 2, 3 // after cache_write: A, B, C.local, C
	return []schedule.Step{
		&schedule.CacheWrite{Stage: 2, Scope: tir.Local},
		&schedule.Split{Stage: cl, Iter: 0, Lengths: []int{ti1, ti2}},      // i.0 i.1 i.2 j k
		&schedule.Split{Stage: cl, Iter: 3, Lengths: []int{tj1, tj2}},      // ... j.0 j.1 j.2 k
		&schedule.Split{Stage: cl, Iter: 6, Lengths: []int{tk}},            // ... k.0 k.1
		&schedule.Reorder{Stage: cl, Order: []int{0, 3, 6, 1, 4, 7, 2, 5}}, // i.0 j.0 k.0 i.1 j.1 k.1 i.2 j.2
		&schedule.FollowSplit{Stage: c, Iter: 0, SrcStep: 1, NParts: 2},
		&schedule.FollowSplit{Stage: c, Iter: 2, SrcStep: 2, NParts: 2},
		&schedule.Reorder{Stage: c, Order: []int{0, 2, 1, 3}}, // i.0 j.0 i.1 j.1
		&schedule.ComputeAt{Stage: cl, TargetStage: c, TargetIter: 1},
		&schedule.Fuse{Stage: c, Iters: []int{0, 1}},
		&schedule.Annotate{Stage: c, Iter: 0, Ann: schedule.Parallel},
		&schedule.Annotate{Stage: c, Iter: 2, Ann: schedule.Vectorize},
		&schedule.Annotate{Stage: cl, Iter: 7, Ann: schedule.Vectorize},
		&schedule.Pragma{Stage: cl, Iter: 0, Key: schedule.PragmaAutoUnroll, Value: 64},
	}
}

func TestLowerExpertGEMM(t *testing.T) {
	a := te.Placeholder("A", 24, 20)
	b := te.Placeholder("B", 20, 32)
	c := te.Reduce("C", []int{24, 32}, te.Sum, []int{20}, func(i, r []tir.Expr) tir.Expr {
		return tir.MulE(a.At(i[0], r[0]), b.At(r[0], i[1]))
	})
	d, _ := te.NewDAG(c)
	s := apply(t, schedule.NewState(d), gemmSteps(2, 3, 2, 8, 4)...)
	check(t, s)
	f, _ := schedule.Lower(s, "gemm")
	text := f.String()
	for _, want := range []string{"parallel", "vectorized", "alloc C.local[6 16] local"} {
		if !strings.Contains(text, want) {
			t.Errorf("lowered GEMM lacks %q:\n%s", want, text)
		}
	}
}

// TestLowerTileLargerThanRegion attaches a cache-write stage whose tile
// (8×4×2 rows) is larger than the region its consumer needs per iteration
// (8 rows). As in TVM, the split parts that exceed their parent's extent are
// cut to it (the 8 becomes 1), so the stage neither loops past its region
// nor needs a guard — the sampled GEMM schedule this comes from compiled to
// 447 KB of guarded, unrolled C before, 170 KB after.
func TestLowerTileLargerThanRegion(t *testing.T) {
	a := te.Placeholder("A", 64, 64)
	b := te.Placeholder("B", 64, 64)
	c := te.Reduce("C", []int{64, 64}, te.Sum, []int{64}, func(i, r []tir.Expr) tir.Expr {
		return tir.MulE(a.At(i[0], r[0]), b.At(r[0], i[1]))
	})
	d, _ := te.NewDAG(c)
	steps, err := schedule.UnmarshalSteps([]byte(`[["CW",2,"local"],["SP",2,2,[8]],["SP",2,1,[4,2,4]],
		["SP",2,0,[8,4,2]],["RE",2,[0,4,1,5,8,2,6,9,3,7]],["FSP",3,1,2,3],["FSP",3,0,3,3],
		["RE",3,[0,3,1,4,2,5]],["CA",2,3,3],["FU",3,[0,1,2]],["AN",3,0,"parallel"],
		["FU",2,[8,9]],["AN",2,8,"vectorize"],["AN",3,3,"vectorize"]]`))
	if err != nil {
		t.Fatal(err)
	}
	s := apply(t, schedule.NewState(d), steps...)
	check(t, s)
	f, _ := schedule.Lower(s, "gemm")
	text := f.String()
	if strings.Contains(text, "if ") {
		t.Errorf("a tile larger than its region is guarded instead of cut:\n%s", text)
	}
	if !strings.Contains(text, "alloc C.local[8 8] local") {
		t.Errorf("the cache holds more than the region of one iteration:\n%s", text)
	}
}

// TestLowerAttachedUnderOvershoot attaches a stage inside a split that
// overshoots its axis (5 rows as 2 × 4): where the consumer's guard on the
// outer loops fails, the attached stage must not run either. Here it is a
// cache of ScatterElements' updates, read at rows that the indices read
// at the consumer's own row give: past the last row it read the indices
// out of bounds (a random GPU schedule of TestStrictPasses found it).
func TestLowerAttachedUnderOvershoot(t *testing.T) {
	d := tetest.DAGs()["scatter_elements"]
	steps, err := schedule.UnmarshalSteps([]byte(`[["CHR",3,"local",[5]],["SP",6,0,[4]],["CA",4,6,2]]`))
	if err != nil {
		t.Fatal(err)
	}
	for _, gpu := range []bool{false, true} {
		s := apply(t, schedule.NewState(d), steps...)
		f, err := schedule.LowerTrace(s, "kernel", gpu, func(string, *tir.PrimFunc) {})
		if err != nil {
			t.Fatal(err)
		}
		run := schedtest.Check
		if gpu {
			run = schedtest.CheckGPU
		}
		if err := run(d, f, 7); err != nil {
			t.Errorf("gpu %v: %v\n%v", gpu, err, f)
		}
	}
}

// TestLowerHalo attaches the pad stage inside a conv tile: the producer must
// compute the tile plus its halo, and nothing outside the tensor.
func TestLowerHalo(t *testing.T) {
	d := conv3x3(2, 8, 8, 3)
	s0 := schedule.NewState(d)
	pad, conv := stageNamed(s0, "pad"), stageNamed(s0, "conv")
	s := apply(t, s0,
		&schedule.Split{Stage: conv, Iter: 2, Lengths: []int{4}}, // n f h.0 h.1 w rc rh rw
		&schedule.Split{Stage: conv, Iter: 4, Lengths: []int{4}}, // n f h.0 h.1 w.0 w.1 rc rh rw
		&schedule.Reorder{Stage: conv, Order: []int{0, 2, 4, 1, 3, 5, 6, 7, 8}},
		&schedule.ComputeAt{Stage: pad, TargetStage: conv, TargetIter: 2}, // at w.0
	)
	check(t, s)
	f, _ := schedule.Lower(s, "conv")
	if !strings.Contains(f.String(), "alloc pad[1 2 6 6]") {
		t.Errorf("pad region is not the 4×4 tile plus a 1-pixel halo:\n%s", f)
	}
}

func TestLowerRfactor(t *testing.T) {
	x := te.Placeholder("X", 3, 50)
	s := te.Reduce("S", []int{3}, te.Sum, []int{50}, func(i, r []tir.Expr) tir.Expr { return x.At(i[0], r[0]) })
	m := te.Reduce("M", []int{3}, te.MaxReduce, []int{50}, func(i, r []tir.Expr) tir.Expr { return x.At(i[0], r[0]) })
	for _, out := range []*te.Tensor{s, m} {
		d, _ := te.NewDAG(out)
		for _, lengths := range [][]int{{8}, {10}, {7}} { // 7 does not divide 50: guarded
			for _, it := range []int{1, 2} {
				st := apply(t, schedule.NewState(d),
					&schedule.Split{Stage: 1, Iter: 1, Lengths: lengths},
					&schedule.Rfactor{Stage: 1, Iter: it},
				)
				check(t, st)
			}
		}
	}
}

func TestLowerCacheRead(t *testing.T) {
	d := matmulRelu(6, 8, 5)
	// stages: A B C D → cache B for C: A B B.local C D
	s := apply(t, schedule.NewState(d),
		&schedule.CacheRead{Stage: 1, Scope: tir.Local, Readers: []int{2}},
		&schedule.Split{Stage: 3, Iter: 1, Lengths: []int{4}},
		&schedule.ComputeAt{Stage: 2, TargetStage: 3, TargetIter: 1},
	)
	check(t, s)
}

func TestInvalidStepsAreErrors(t *testing.T) {
	d := matmulRelu(4, 4, 4)
	s0 := schedule.NewState(d)
	for _, st := range []schedule.Step{
		&schedule.Split{Stage: 9, Iter: 0, Lengths: []int{2}},
		&schedule.Split{Stage: 2, Iter: 5, Lengths: []int{2}},
		&schedule.Split{Stage: 0, Iter: 0, Lengths: []int{2}},
		&schedule.Split{Stage: 2, Iter: 0, Lengths: []int{-1}},
		&schedule.Fuse{Stage: 2, Iters: []int{1, 2}},
		&schedule.Fuse{Stage: 2, Iters: []int{0, 2}},
		&schedule.Reorder{Stage: 2, Order: []int{0, 0, 1}},
		&schedule.ComputeAt{Stage: 3, TargetStage: 2, TargetIter: 0},
		&schedule.ComputeInline{Stage: 2},
		&schedule.ComputeInline{Stage: 3},
		&schedule.Annotate{Stage: 2, Iter: 2, Ann: schedule.Parallel},
		&schedule.Rfactor{Stage: 2, Iter: 0},
		&schedule.FollowSplit{Stage: 2, Iter: 0, SrcStep: 0, NParts: 2},
		&schedule.Pragma{Stage: 2, Iter: 0, Key: "nope", Value: 1},
	} {
		if _, err := s0.Apply(st); err == nil {
			t.Errorf("%v applied to the initial state", st)
		}
	}
}

// TestRandomSchedules lowers random legal step sequences on small DAGs and
// checks each against the reference evaluator.
func TestRandomSchedules(t *testing.T) {
	dags := map[string]*te.DAG{
		"matmul_relu": matmulRelu(6, 10, 7),
		"conv3x3":     conv3x3(2, 6, 7, 3),
	}
	for name, d := range dags {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			s0 := schedule.NewState(d)
			for i := 0; i < 200; i++ {
				s, f := schedtest.RandomLowerable(rng, s0, 10)
				if err := runAndCompare(d, f, uint64(i)); err != nil {
					t.Fatalf("%v\nsteps: %v\nstate:\n%v\nlowered:\n%v", err, s.Steps, s, f)
				}
			}
		})
	}
}

func TestCodecRoundTrip(t *testing.T) {
	steps := append(gemmSteps(2, 3, 2, 8, 4),
		&schedule.ComputeInline{Stage: 1},
		&schedule.ComputeRoot{Stage: 1},
		&schedule.CacheRead{Stage: 0, Scope: tir.Shared, Readers: []int{2, 3}},
		&schedule.Rfactor{Stage: 2, Iter: 1},
	)
	data, err := schedule.MarshalSteps(steps)
	if err != nil {
		t.Fatal(err)
	}
	back, err := schedule.UnmarshalSteps(data)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := schedule.MarshalSteps(back)
	if string(again) != string(data) {
		t.Fatalf("round trip changed the steps:\n%s\n%s", data, again)
	}
	for i := range steps {
		if steps[i].String() != back[i].String() {
			t.Errorf("step %d: %v became %v", i, steps[i], back[i])
		}
	}
	ffsp := []schedule.Step{
		&schedule.Split{Stage: 2, Iter: 0, Lengths: []int{2, 3}},
		&schedule.Split{Stage: 2, Iter: 3, Lengths: []int{2, 5}},
		&schedule.CacheRead{Stage: 0, Scope: tir.Shared, Readers: []int{2}},
		&schedule.Fuse{Stage: 1, Iters: []int{0, 1}},
		&schedule.FollowFusedSplit{Stage: 1, Iter: 0, SrcSteps: []int{0, 1}, Level: 1},
	}
	data, _ = schedule.MarshalSteps(ffsp)
	if back, err := schedule.UnmarshalSteps(data); err != nil || back[4].String() != ffsp[4].String() {
		t.Errorf("%s: %v, %v", data, back, err)
	}
	if s, err := schedule.Replay(schedule.NewState(matmulRelu(6, 10, 7)), ffsp); err != nil || s.Stages[1].Iters[1].Extent != 15 {
		t.Errorf("follow_fused_split by 3×5: %v\n%v", err, s)
	}
	ffsp[0] = &schedule.Split{Stage: 2, Iter: 0, Lengths: []int{1, 2}}
	ffsp[1] = &schedule.Split{Stage: 2, Iter: 3, Lengths: []int{5, 10}}
	if s, err := schedule.Replay(schedule.NewState(matmulRelu(2, 100, 7)), ffsp); err != nil || s.Stages[1].Iters[1].Extent != 14 {
		t.Errorf("follow_fused_split by 2×10 of 2×7 elements: %v\n%v", err, s)
	}
	for _, bad := range []string{`[["FFSP",1,0,3,1]]`, `[["SP",1]]`, `[["XX",1]]`, `[[]]`, `[["SP",1,0,[1.5]]]`, `{}`, `[["AN",1,0,"fast"]]`, `[["CW",1,"disk"]]`} {
		if _, err := schedule.UnmarshalSteps([]byte(bad)); err == nil {
			t.Errorf("%s decoded without error", bad)
		}
	}
}

// TestReplayIsDeterministic replays the steps of random states and checks
// that the same state comes back.
func TestReplayIsDeterministic(t *testing.T) {
	d := matmulRelu(6, 10, 7)
	rng := rand.New(rand.NewPCG(3, 4))
	s0 := schedule.NewState(d)
	for i := 0; i < 100; i++ {
		s := schedtest.RandomState(rng, s0, 12)
		data, _ := schedule.MarshalSteps(s.Steps)
		steps, err := schedule.UnmarshalSteps(data)
		if err != nil {
			t.Fatal(err)
		}
		r, err := schedule.Replay(s0, steps)
		if err != nil {
			t.Fatalf("replay of %v: %v", s.Steps, err)
		}
		if r.String() != s.String() {
			t.Fatalf("replay differs:\n%v\n%v", s, r)
		}
	}
}

// TestRandomSchedulesAllOps lowers the naive schedule and 60 random legal
// schedules of every op of the library (and the fused examples) and checks
// each against the reference evaluator through the tir interpreter.
func TestRandomSchedulesAllOps(t *testing.T) {
	for name, d := range tetest.DAGs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(11, uint64(len(name))))
			s0 := schedule.NewState(d)
			check(t, s0)
			distinct := map[string]bool{}
			for i := 0; i < 60; i++ {
				s, f := schedtest.RandomLowerable(rng, s0, 10)
				distinct[s.String()] = true
				if err := runAndCompare(d, f, uint64(i)); err != nil {
					t.Fatalf("%v\nsteps: %v\nstate:\n%v\nlowered:\n%v", err, s.Steps, s, f)
				}
			}
			if len(distinct) < 30 {
				t.Errorf("only %d distinct schedules out of 60", len(distinct))
			}
		})
	}
}

// TestLowerRefusesIndexComputedLater: a cache of a gathered tensor
// computed inside its reader's loops needs the gather's index, itself
// computed inside those loops; lowered, the cache read the index's
// global buffer, which no kernel has (the C compiler refused the kernel
// a random schedule of reverse_sequence made). Lower refuses such a state;
// with the cache at the root it lowers.
func TestLowerRefusesIndexComputedLater(t *testing.T) {
	d := tetest.DAGs()["reverse_sequence"] // X, L, L_index, reverse_sequence
	steps := []schedule.Step{
		&schedule.CacheRead{Stage: 0, Scope: tir.Local, Readers: []int{3}}, // X, X.local, L, L_index, reverse_sequence
		&schedule.ComputeAt{Stage: 3, TargetStage: 4, TargetIter: 2},
		&schedule.ComputeAt{Stage: 1, TargetStage: 4, TargetIter: 1},
	}
	for _, indexAt := range []int{0, 2} {
		steps[1] = &schedule.ComputeAt{Stage: 3, TargetStage: 4, TargetIter: indexAt}
		s, err := schedule.Replay(schedule.NewState(d), steps)
		if err != nil {
			t.Fatal(err)
		}
		if f, err := schedule.Lower(s, "k"); err == nil || !strings.Contains(err.Error(), "L_index") {
			t.Fatalf("index at loop %d: lowered without the error naming L_index: %v\n%v", indexAt, err, f)
		}
	}
	s, err := schedule.Replay(schedule.NewState(d), steps[:2])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := schedule.Lower(s, "k"); err != nil {
		t.Fatalf("cache at the root: %v", err)
	}
}
