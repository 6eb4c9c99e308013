package schedule_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
	"github.com/tessera-ml/tessera/tir"
)

// sharedGEMM is a GPU matmul: blocks of 4×4 outputs, one thread each
// (threadIdx.y, threadIdx.x), the reduction in tiles of 4 read through
// shared copies of A and B fetched cooperatively by 16 threads along
// threadIdx.x. Stages after the caches: A 0, A.shared 1, B 2, B.shared 3,
// C 4, D 5.
func sharedGEMM(n, m, k int) (*te.DAG, []schedule.Step) {
	const as, bs, c = 1, 3, 4
	steps := []schedule.Step{
		&schedule.CacheRead{Stage: 0, Scope: tir.Shared, Readers: []int{2}},
		&schedule.CacheRead{Stage: 2, Scope: tir.Shared, Readers: []int{3}},
		&schedule.Split{Stage: c, Iter: 0, Lengths: []int{4}},            // i.0 i.1 j k
		&schedule.Split{Stage: c, Iter: 2, Lengths: []int{4}},            // i.0 i.1 j.0 j.1 k
		&schedule.Split{Stage: c, Iter: 4, Lengths: []int{4}},            // ... k.0 k.1
		&schedule.Reorder{Stage: c, Order: []int{0, 2, 1, 3, 4, 5}},      // i.0 j.0 i.1 j.1 k.0 k.1
		&schedule.Annotate{Stage: c, Iter: 0, Ann: schedule.BlockY},      // i.0
		&schedule.Annotate{Stage: c, Iter: 1, Ann: schedule.BlockX},      // j.0
		&schedule.Annotate{Stage: c, Iter: 2, Ann: schedule.ThreadY},     // i.1
		&schedule.Annotate{Stage: c, Iter: 3, Ann: schedule.ThreadX},     // j.1
		&schedule.ComputeAt{Stage: as, TargetStage: c, TargetIter: 4},    // at k.0
		&schedule.ComputeAt{Stage: bs, TargetStage: c, TargetIter: 4},    //
		&schedule.Fuse{Stage: as, Iters: []int{0, 1}},                    // the 4×4 tile as one loop
		&schedule.Split{Stage: as, Iter: 0, Lengths: []int{16}},          //
		&schedule.Annotate{Stage: as, Iter: 1, Ann: schedule.ThreadX},    // 16 threads fetch
		&schedule.Fuse{Stage: bs, Iters: []int{0, 1}},                    //
		&schedule.Split{Stage: bs, Iter: 0, Lengths: []int{16}},          //
		&schedule.Annotate{Stage: bs, Iter: 1, Ann: schedule.ThreadX},    //
		&schedule.Fuse{Stage: c + 1, Iters: []int{0, 1}},                 // D: one kernel, fused
		&schedule.Split{Stage: c + 1, Iter: 0, Lengths: []int{32}},       //
		&schedule.Annotate{Stage: c + 1, Iter: 0, Ann: schedule.BlockX},  //
		&schedule.Annotate{Stage: c + 1, Iter: 1, Ann: schedule.ThreadX}, //
		&schedule.Pragma{Stage: c, Iter: 0, Key: schedule.PragmaAutoUnroll, Value: 16},
	}
	return matmulRelu(n, m, k), steps
}

func lowerGPU(t *testing.T, d *te.DAG, steps []schedule.Step) (*schedule.State, *tir.PrimFunc) {
	t.Helper()
	s, err := schedule.Replay(schedule.NewState(d), steps)
	if err != nil {
		t.Fatal(err)
	}
	f, err := schedule.LowerGPU(s, "kernel")
	if err != nil {
		t.Fatalf("%v\nstate:\n%v", err, s)
	}
	return s, f
}

func countBarriers(s tir.Stmt) int {
	n := 0
	tir.WalkStmt(s, func(s tir.Stmt) bool {
		if _, ok := s.(*tir.Barrier); ok {
			n++
		}
		return true
	})
	return n
}

// dropBarrier returns f without its k-th barrier (in walk order).
func dropBarrier(f *tir.PrimFunc, k int) *tir.PrimFunc {
	n := 0
	body := tir.MutateStmt(f.Body, tir.StmtFuncs{Stmt: func(s tir.Stmt) tir.Stmt {
		if _, ok := s.(*tir.Barrier); ok {
			n++
			if n-1 == k {
				return &tir.Seq{}
			}
		}
		return s
	}})
	return &tir.PrimFunc{Name: f.Name, Params: f.Params, Body: body}
}

// TestLowerGPUSharedGEMM: a tiled GPU matmul with shared-memory caches
// lowers to two kernels that compute the right numbers without a race;
// taking out either barrier of the tile loop (the one after the fetch:
// read after write; the one before the next fetch: write after read) is
// caught as a race.
func TestLowerGPUSharedGEMM(t *testing.T) {
	d, steps := sharedGEMM(8, 12, 12)
	_, f := lowerGPU(t, d, steps)
	ks, temps, err := tir.Kernels(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 2 || len(temps) != 1 || ks[0].Grid != [3]int{3, 2, 1} || ks[0].Block != [3]int{16, 4, 1} {
		t.Fatalf("kernels: %d, grid %v block %v, temps %v\n%v", len(ks), ks[0].Grid, ks[0].Block, temps, f)
	}
	if err := schedtest.CheckGPU(d, f, 1); err != nil {
		t.Fatalf("%v\n%v", err, f)
	}
	if n := countBarriers(f.Body); n != 2 {
		t.Fatalf("%d barriers, want 2 (after the fetch, before the next one)\n%v", n, f)
	}
	for k := range 2 {
		err := schedtest.CheckGPU(d, dropBarrier(f, k), 1)
		if !tir.IsRace(err) {
			t.Errorf("without barrier %d: %v, want a race", k, err)
		}
	}
}

// TestLowerGPUCrossThreadReduction: a row sum whose reduction is split
// across 8 threads, and a fused softmax-like chain of two reductions.
func TestLowerGPUCrossThreadReduction(t *testing.T) {
	a := te.Placeholder("A", 5, 37)
	r := te.Reduce("R", []int{5}, te.Sum, []int{37}, func(i, k []tir.Expr) tir.Expr { return a.At(i[0], k[0]) })
	d, err := te.NewDAG(r)
	if err != nil {
		t.Fatal(err)
	}
	steps := []schedule.Step{
		&schedule.Split{Stage: 1, Iter: 1, Lengths: []int{8}}, // i k.0 k.1
		&schedule.Annotate{Stage: 1, Iter: 0, Ann: schedule.BlockX},
		&schedule.Annotate{Stage: 1, Iter: 2, Ann: schedule.ThreadX},
	}
	_, f := lowerGPU(t, d, steps)
	if err := schedtest.CheckGPU(d, f, 2); err != nil {
		t.Fatalf("%v\n%v", err, f)
	}
	if countBarriers(f.Body) == 0 || !strings.Contains(f.String(), "R.red_shared") {
		t.Fatalf("no all-reduce:\n%v", f)
	}
	for k := range countBarriers(f.Body) {
		if err := schedtest.CheckGPU(d, dropBarrier(f, k), 2); !tir.IsRace(err) {
			t.Errorf("without barrier %d of the all-reduce: %v, want a race", k, err)
		}
	}
	// Reduce-bound threads with more threads in the kernel (threadIdx.y
	// on the rows): rows must not mix.
	steps2 := []schedule.Step{
		&schedule.Split{Stage: 1, Iter: 0, Lengths: []int{2}}, // i.0 i.1 k
		&schedule.Split{Stage: 1, Iter: 2, Lengths: []int{6}}, // i.0 i.1 k.0 k.1
		&schedule.Annotate{Stage: 1, Iter: 0, Ann: schedule.BlockX},
		&schedule.Annotate{Stage: 1, Iter: 1, Ann: schedule.ThreadY},
		&schedule.Annotate{Stage: 1, Iter: 3, Ann: schedule.ThreadX},
	}
	_, f = lowerGPU(t, d, steps2)
	if err := schedtest.CheckGPU(d, f, 3); err != nil {
		t.Fatalf("%v\n%v", err, f)
	}
}

// TestLowerGPURejects: bindings a GPU cannot run are errors.
func TestLowerGPURejects(t *testing.T) {
	d := matmulRelu(4, 4, 4)
	for _, c := range []struct {
		steps []schedule.Step
		want  string
	}{
		{[]schedule.Step{&schedule.Annotate{Stage: 2, Iter: 0, Ann: schedule.ThreadX}, &schedule.Annotate{Stage: 2, Iter: 1, Ann: schedule.ThreadX}}, "twice"},
		{[]schedule.Step{&schedule.ComputeAt{Stage: 2, TargetStage: 3, TargetIter: 0}, &schedule.Annotate{Stage: 2, Iter: 1, Ann: schedule.ThreadX}}, "only kernels"},
		{[]schedule.Step{&schedule.CacheWrite{Stage: 2, Scope: tir.Local}}, "computed at the root"},
		{[]schedule.Step{&schedule.Annotate{Stage: 2, Iter: 2, Ann: schedule.ThreadX}, &schedule.Reorder{Stage: 2, Order: []int{2, 0, 1}}}, "comes after a reduce"},
	} {
		s, err := schedule.Replay(schedule.NewState(d), c.steps)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := schedule.LowerGPU(s, "k"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error about %q", c.steps, err, c.want)
		}
	}
}

// TestRandomGPUSchedulesAllOps runs random legal GPU schedules of every
// op of the library through the thread-emulating interpreter.
func TestRandomGPUSchedulesAllOps(t *testing.T) {
	const perOp = 30
	dags := tetest.DAGs()
	names := make([]string, 0, len(dags))
	for name := range dags {
		names = append(names, name)
	}
	slices.Sort(names)
	var total, wrong, races, bound, shared, synced atomic.Int64
	t.Run("ops", func(t *testing.T) {
		for _, name := range names {
			d := dags[name]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				rng := rand.New(rand.NewPCG(17, uint64(len(name))))
				s0 := schedule.NewState(d)
				for i := 0; i < perOp; i++ {
					s, f := schedtest.RandomGPULowerable(rng, s0, 10)
					total.Add(1)
					str := f.String()
					if strings.Contains(str, "threadIdx") {
						bound.Add(1)
					}
					if strings.Contains(str, " shared\n") {
						shared.Add(1)
					}
					if countBarriers(f.Body) > 0 {
						synced.Add(1)
					}
					if err := schedtest.CheckGPU(d, f, uint64(i)); err != nil {
						if tir.IsRace(err) {
							races.Add(1)
						} else {
							wrong.Add(1)
						}
						t.Errorf("%v\nsteps: %v\nstate:\n%v\nlowered:\n%v", err, s.Steps, s, f)
						return
					}
				}
			})
		}
	})
	t.Logf("schedtest: %d GPU schedules, %d wrong, %d races (%d bind threads, %d use shared memory, %d have barriers)",
		total.Load(), wrong.Load(), races.Load(), bound.Load(), shared.Load(), synced.Load())
	if bound.Load() < total.Load()/4 || shared.Load() < total.Load()/20 {
		t.Errorf("the generator rarely reaches GPU schedules: %d of %d bind threads, %d use shared memory", bound.Load(), total.Load(), shared.Load())
	}
}

// TestLowerGPURefusesIndexComputedLater is TestLowerRefusesIndexComputedLater
// for the GPU: a cache of a gathered tensor computed inside its reader's
// loops, apart from the index it needs, read the index outside its scope
// (and an uninitialized local copy of it); the codegen's strict mode found
// a random GPU schedule of gather lowered so. LowerGPU refuses it, as
// Lower does.
func TestLowerGPURefusesIndexComputedLater(t *testing.T) {
	d := tetest.DAGs()["gather"] // X, I, I_index, gather
	steps := []schedule.Step{
		&schedule.Fuse{Stage: 3, Iters: []int{0, 1}},
		&schedule.Fuse{Stage: 3, Iters: []int{0, 1}},
		&schedule.Annotate{Stage: 3, Iter: 0, Ann: schedule.ThreadX},
		&schedule.CacheRead{Stage: 0, Scope: tir.Local, Readers: []int{3}}, // X, X.local, I, I_index, gather
		&schedule.ComputeAt{Stage: 3, TargetStage: 4, TargetIter: 0},
		&schedule.ComputeAt{Stage: 1, TargetStage: 4, TargetIter: 0},
	}
	s, err := schedule.Replay(schedule.NewState(d), steps)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := schedule.LowerGPU(s, "k"); err == nil || !strings.Contains(err.Error(), "I_index") {
		t.Fatalf("lowered without the error naming I_index: %v\n%v", err, f)
	}
}
