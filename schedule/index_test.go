package schedule_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// addChain is x + x + ... : n elementwise stages, each reading the one
// before and the input, the shape of a model's long fused chains.
func addChain(n int) *te.DAG {
	x := te.Placeholder("x", 1, 16)
	prev := x
	for i := range n {
		p := prev
		prev = te.Compute(fmt.Sprintf("a%d", i), []int{1, 16}, func(idx []tir.Expr) tir.Expr {
			return tir.AddE(p.At(idx...), x.At(idx...))
		})
	}
	d, err := te.NewDAG(prev)
	if err != nil {
		panic(err)
	}
	return d
}

// inlineAll returns the steps that inline every stage but the output.
func inlineAll(s0 *schedule.State) []schedule.Step {
	var steps []schedule.Step
	for i, st := range s0.Stages {
		if !st.IsPlaceholder() && !st.Output {
			steps = append(steps, &schedule.ComputeInline{Stage: i})
		}
	}
	return steps
}

// replayTime is the least of three replays of the inlining of an n-stage
// chain.
func replayTime(t *testing.T, n int) time.Duration {
	s0 := schedule.NewState(addChain(n))
	steps := inlineAll(s0)
	best := time.Duration(1 << 62)
	for range 3 {
		start := time.Now()
		if _, err := schedule.Replay(s0, steps); err != nil {
			t.Fatal(err)
		}
		best = min(best, time.Since(start))
	}
	return best
}

// TestReplayLongChain: replaying the inlining of a long chain is fast (a
// 2,000-op chain of Adds spent minutes in search), and gives the state
// applying the steps one by one gives.
func TestReplayLongChain(t *testing.T) {
	// 40 ms here when linear; 2 s when every inline step walked every
	// stage's body.
	if d := replayTime(t, 4000); d > 500*time.Millisecond {
		t.Errorf("replaying the inlining of a 4,000-stage chain took %v", d)
	}
	small := schedule.NewState(addChain(40))
	steps := inlineAll(small)
	one := small
	var err error
	for _, st := range steps {
		if one, err = one.Apply(st); err != nil {
			t.Fatal(err)
		}
	}
	all, err := schedule.Replay(small, steps)
	if err != nil {
		t.Fatal(err)
	}
	if one.String() != all.String() || len(all.Steps) != len(steps) || len(small.Steps) != 0 {
		t.Errorf("Replay and Apply disagree:\n%s\n%s", all, one)
	}
}

// TestIndexFollowsStages: Consumers and Producers are right after steps
// that insert stages or rewrite a reader's body, and a state's index is
// never that of the state it was derived from when they differ.
func TestIndexFollowsStages(t *testing.T) {
	s0 := schedule.NewState(matmulRelu(4, 4, 4))
	a := stageNamed(s0, "A")
	c := stageNamed(s0, "C")
	before := slices.Clone(s0.Consumers(a))
	if !slices.Contains(before, c) {
		t.Fatalf("C does not read A: consumers of A %v", before)
	}
	s1, err := s0.Apply(&schedule.CacheRead{Stage: a, Scope: tir.Local, Readers: []int{c}})
	if err != nil {
		t.Fatal(err)
	}
	cache := a + 1
	c1 := stageNamed(s1, "C")
	if got := s1.Consumers(a); !slices.Equal(got, []int{cache}) {
		t.Errorf("after cache_read, A is read by %v, want [%d] (the cache)", got, cache)
	}
	if got := s1.Consumers(cache); !slices.Equal(got, []int{c1}) {
		t.Errorf("the cache is read by %v, want [%d]", got, c1)
	}
	if got := s1.Producers(c1); slices.Contains(got, a) {
		t.Errorf("C still reads A directly: producers %v", got)
	}
	if got := s0.Consumers(a); !slices.Equal(got, before) {
		t.Errorf("the original state changed: consumers of A %v, were %v", got, before)
	}
}

// TestIndexOfRandomStates: on random step sequences (cache reads and
// writes, rfactor, inlining...), every state's Consumers and Producers are
// those its stages' bodies say.
func TestIndexOfRandomStates(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, s0 := range []*schedule.State{
		schedule.NewState(matmulRelu(5, 6, 4)),
		schedule.NewState(conv3x3(2, 5, 4, 2)),
	} {
		for range 200 {
			s := schedtest.RandomState(rng, s0, 12)
			byBuf := map[*tir.Buffer]int{}
			for i, st := range s.Stages {
				byBuf[st.Tensor.Buf] = i
			}
			cons := make([][]int, len(s.Stages))
			for j, st := range s.Stages {
				if st.IsPlaceholder() {
					continue
				}
				var prods []int
				tir.WalkExpr(st.Tensor.Body, func(e tir.Expr) bool {
					if l, ok := e.(*tir.Load); ok {
						if i, ok := byBuf[l.Buf]; ok && !slices.Contains(prods, i) {
							prods = append(prods, i)
						}
					}
					return true
				})
				if got := s.Producers(j); !slices.Equal(got, prods) {
					t.Fatalf("steps %v: producers of stage %d are %v, want %v", s.Steps, j, got, prods)
				}
				for _, i := range prods {
					cons[i] = append(cons[i], j)
				}
			}
			for i := range s.Stages {
				if got := s.Consumers(i); !slices.Equal(got, cons[i]) {
					t.Fatalf("steps %v: consumers of stage %d are %v, want %v", s.Steps, i, got, cons[i])
				}
			}
		}
	}
}
