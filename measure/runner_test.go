package measure

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var addArgs = []Arg{{Name: "a", Size: 1000}, {Name: "b", Size: 1000}, {Name: "c", Size: 1000, Output: true}}

// addWant is the reference of the add kernel.
func addWant(ins [][]float32) []float32 {
	c := make([]float32, len(ins[0]))
	for i := range c {
		c[i] = ins[0][i] + ins[1][i]
	}
	return c
}

// The acceptance batch: a crash, a hang and a compiler error next to a good
// kernel. Each bad one gets its kind and a message, the good one is timed and
// correct, and this process carries on.
func TestBatchSurvivesFailures(t *testing.T) {
	ctx := context.Background()
	srcs := []Source{{Code: segvSrc}, {Code: hangSrc}, {Code: brokenSrc}, {Code: addSrc}}
	entries := []string{"segv", "hang", "broken", "add"}
	built := testBuilder().Build(ctx, srcs)

	if built[2].Kind != CompileError || !strings.Contains(built[2].Msg, "undefined_variable") {
		t.Errorf("broken: %+v", built[2])
	}
	a := make([]float32, 1000)
	b := make([]float32, 1000)
	for i := range a {
		a[i], b[i] = float32(i), 0.5*float32(i)
	}
	var jobs []Job
	for i, bl := range built {
		if bl.Kind != None {
			continue
		}
		jobs = append(jobs, Job{Lib: bl.Path, Entry: entries[i], Args: addArgs, Inputs: [][]float32{a, b}})
	}
	if len(jobs) != 3 {
		t.Fatalf("%d of 4 sources built, want 3: %+v", len(jobs), built)
	}

	r := testRunner(t, RunOptions{Timeout: time.Second, MinRepeatMs: 5, Check: true})
	start := time.Now()
	res := r.Run(ctx, jobs)
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("batch took %v", el)
	}

	segv, hang, good := res[0], res[1], res[2]
	if segv.Kind != RuntimeError || !strings.Contains(segv.Msg, "SIGSEGV") || segv.Costs != nil {
		t.Errorf("segv: %+v", segv)
	}
	if hang.Kind != RunTimeout || !strings.Contains(hang.Msg, "killed after 1s") || hang.Costs != nil {
		t.Errorf("hang: %+v", hang)
	}
	if hang.RunTime < time.Second || hang.RunTime > 3*time.Second {
		t.Errorf("hang ran %v with a 1s timeout", hang.RunTime)
	}
	if good.Kind != None || good.Msg != "" {
		t.Fatalf("good: %+v", good)
	}
	if len(good.Costs) != 3 || slices.Min(good.Costs) <= 0 || good.Median() > 1e-3 {
		t.Errorf("good costs %v", good.Costs)
	}
	if len(good.Outputs) != 1 {
		t.Fatalf("good: %d outputs", len(good.Outputs))
	}
	if ok, msg := Compare(good.Outputs[0], addWant([][]float32{a, b}), 0, 0); !ok {
		t.Errorf("good outputs: %s", msg)
	}
}

func TestRunFailures(t *testing.T) {
	misc := mustBuild(t, miscSrc)
	one := []Arg{{Name: "x", Size: 1, Output: true}}
	tests := []struct {
		name string
		job  Job
		kind ErrorKind
		msg  []string
	}{
		{"non-zero return", Job{Lib: misc, Entry: "fail7", Args: one}, RuntimeError,
			[]string{"exit status 3", "kernel returned 7"}},
		{"abort", Job{Lib: misc, Entry: "aborts", Args: one}, RuntimeError, []string{"SIGABRT"}},
		{"missing symbol", Job{Lib: misc, Entry: "nosuch", Args: one}, RuntimeError, []string{"dlsym nosuch"}},
		{"missing library", Job{Lib: "/nonexistent/lib.so", Entry: "add", Args: one}, RuntimeError,
			[]string{"dlopen", "/nonexistent/lib.so"}},
		{"no entry", Job{Lib: misc, Args: one}, RuntimeError, []string{"invalid job"}},
		{"negative size", Job{Lib: misc, Entry: "noisy", Args: []Arg{{Size: -1}}}, RuntimeError,
			[]string{"invalid job", "negative size"}},
		{"too few inputs", Job{Lib: misc, Entry: "noisy", Args: addArgs, Inputs: [][]float32{make([]float32, 1000)}},
			RuntimeError, []string{"invalid job"}},
		{"wrong input size", Job{Lib: misc, Entry: "noisy", Args: addArgs, Inputs: [][]float32{{1}, {2}}},
			RuntimeError, []string{"invalid job", "1 input values, want 1000"}},
		{"kernel prints", Job{Lib: misc, Entry: "noisy", Args: one}, None, nil},
	}
	r := testRunner(t, RunOptions{Timeout: 5 * time.Second, Repeat: 2, MinRepeatMs: -1, Check: true})
	jobs := make([]Job, len(tests))
	for i, tt := range tests {
		jobs[i] = tt.job
	}
	res := r.Run(context.Background(), jobs) // one batch: each failure leaves the next job unharmed
	for i, tt := range tests {
		got := res[i]
		if got.Kind != tt.kind {
			t.Errorf("%s: kind %v, want %v (msg %q)", tt.name, got.Kind, tt.kind, got.Msg)
			continue
		}
		for _, s := range tt.msg {
			if !strings.Contains(got.Msg, s) {
				t.Errorf("%s: msg %q lacks %q", tt.name, got.Msg, s)
			}
		}
	}
	if noisy := res[len(res)-1]; len(noisy.Costs) != 2 || noisy.Outputs[0][0] != 42 {
		t.Errorf("noisy kernel: %+v", noisy)
	}
}

// The checked outputs come from one call on zeroed outputs, even though the
// timed calls keep accumulating into the same buffer.
func TestOutputsFromFirstCall(t *testing.T) {
	lib := mustBuild(t, miscSrc)
	args := []Arg{{Name: "in", Size: 64}, {Name: "out", Size: 64, Output: true}}
	r := testRunner(t, RunOptions{Number: 10, MinRepeatMs: -1, Check: true})
	res := r.Run(context.Background(), []Job{{Lib: lib, Entry: "accumulate", Args: args, Seed: 5}})[0]
	if res.Kind != None {
		t.Fatalf("%+v", res)
	}
	if ok, msg := Compare(res.Outputs[0], RandomInputs(args, 5)[0], 0, 0); !ok {
		t.Error(msg)
	}
}

func TestRandomInputs(t *testing.T) {
	x := RandomInputs(addArgs, 1)
	if len(x) != 2 || len(x[0]) != 1000 || len(x[1]) != 1000 {
		t.Fatalf("shapes: %d inputs", len(x))
	}
	if ok, _ := Compare(x[0], RandomInputs(addArgs, 1)[0], 0, 0); !ok {
		t.Error("same seed, different data")
	}
	if ok, _ := Compare(x[0], RandomInputs(addArgs, 2)[0], 0, 0); ok {
		t.Error("different seeds, same data")
	}
	if ok, _ := Compare(x[0], x[1], 0, 0); ok {
		t.Error("two args got the same data")
	}
	for _, v := range x[0] {
		if v < -1 || v >= 1 {
			t.Fatalf("value %v outside [-1, 1)", v)
		}
	}

	// The runner feeds exactly this data to a job without Inputs.
	lib := mustBuild(t, addSrc)
	r := testRunner(t, RunOptions{MinRepeatMs: -1, Repeat: 1, Check: true})
	jobs := []Job{{Lib: lib, Entry: "add", Args: addArgs, Seed: 1}, {Lib: lib, Entry: "add", Args: addArgs, Seed: 2}}
	for i, res := range r.Run(context.Background(), jobs) {
		if res.Kind != None {
			t.Fatalf("job %d: %+v", i, res)
		}
		if ok, msg := Compare(res.Outputs[0], addWant(RandomInputs(addArgs, jobs[i].Seed)), 0, 0); !ok {
			t.Errorf("job %d: %s", i, msg)
		}
	}
}

// TestTimingProtocol checks the harness's protocol (warm-up, growth of
// number to min_repeat_ms, repetitions, budget, cutoff) by counting the
// kernel's calls and reading the times the harness reports. No assertion
// depends on how fast the machine is: the kernel spins at least 1 ms, which
// bounds times from below only, and every case holds whatever the load.
func TestTimingProtocol(t *testing.T) {
	lib := mustBuild(t, spinSrc)
	const ms = 1e-3
	tests := []struct {
		name   string
		opts   RunOptions
		cutoff time.Duration
		slow   bool // the 1 ms warm-up is past the cutoff
		number int  // exact calls per repetition; 0: grown, checked by the protocol
		costs  int  // exact repetitions; 0: Repeat, or as the budget allows
		grows  bool // number may grow: calls beyond warm-up and repetitions are growth
	}{
		{"grows to min_repeat_ms", RunOptions{Number: 1, Repeat: 3, MinRepeatMs: 20}, 0, false, 0, 0, true},
		{"no growth", RunOptions{Number: 4, Repeat: 2, MinRepeatMs: -1}, 0, false, 4, 2, false},
		// The warm-up call already lasts min_repeat_ms: one call a repetition.
		{"slow kernel", RunOptions{Number: 3, Repeat: 2, MinRepeatMs: 1}, 0, false, 1, 2, false},
		// Repetitions stop once the timed calls have run 2 (5) ms: at most 2 (5).
		{"budget", RunOptions{Number: 1, Repeat: 10, MinRepeatMs: 1, BudgetMs: 2}, 0, false, 1, 0, false},
		{"budget 5", RunOptions{Number: 1, Repeat: 10, MinRepeatMs: 1, BudgetMs: 5}, 0, false, 1, 0, false},
		// Weights flushed before every timed call: one call a repetition,
		// no growth.
		{"flush", RunOptions{Number: 3, Repeat: 3, MinRepeatMs: 20, FlushCache: true}, 0, false, 1, 3, false},
		// The first call is past the cutoff: one more call, and done.
		{"past the cutoff", RunOptions{Number: 3, Repeat: 3, MinRepeatMs: 20}, 100 * time.Microsecond, true, 1, 1, false},
		// Under the cutoff, the whole protocol. A warm-up longer than the
		// cutoff would be past the timeout too, so this case cannot go slow.
		{"under the cutoff", RunOptions{Number: 1, Repeat: 3, MinRepeatMs: 20, Timeout: 10 * time.Second},
			10 * time.Second, false, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := filepath.Join(t.TempDir(), "calls")
			t.Setenv(callsEnv, calls)
			r := testRunner(t, tt.opts)
			// A weight (evicted under FlushCache), an input and an output
			// the kernel ignores.
			args := []Arg{{Name: "w", Size: 1 << 16, Weight: true}, {Name: "x", Size: 100}, {Name: "y", Size: 10, Output: true}}
			res := r.Run(context.Background(), []Job{{Lib: lib, Entry: "spin", Cutoff: tt.cutoff, Args: args}})[0]
			if res.Kind != None {
				t.Fatalf("%+v", res)
			}
			opts := r.Opts.withDefaults()
			n, reps := res.Number, len(res.Costs)
			if n < 1 || reps < 1 {
				t.Fatalf("number %d, %d costs", n, reps)
			}
			if tt.number > 0 && n != tt.number {
				t.Errorf("number %d, want %d", n, tt.number)
			}
			if tt.costs > 0 && reps != tt.costs {
				t.Errorf("%d costs, want %d", reps, tt.costs)
			}
			if reps > opts.Repeat {
				t.Errorf("%d costs, more than Repeat %d", reps, opts.Repeat)
			}
			for _, c := range res.Costs {
				if c < 1*ms { // the kernel spins at least 1 ms
					t.Errorf("cost %.3g s for a kernel of at least 1 ms", c)
				}
			}

			// Every call: one warm-up, the growth repetitions, then reps × n.
			st, err := os.Stat(calls)
			if err != nil {
				t.Fatalf("the kernel counted no call: %v", err)
			}
			growth := int(st.Size()) - 1 - reps*n
			switch {
			case growth < 0:
				t.Errorf("%d calls, fewer than a warm-up and %d repetitions of %d", st.Size(), reps, n)
			case !tt.grows && growth != 0:
				t.Errorf("%d calls, want a warm-up and %d repetitions of %d", st.Size(), reps, n)
			case growth > 0 && n == 1:
				t.Errorf("%d growth calls, yet number is 1", growth)
			case n > opts.Number && growth == 0:
				t.Errorf("number grew from %d to %d without a growth repetition", opts.Number, n)
			}

			// The first repetition is the one that reached min_repeat_ms
			// (with the cache flushed, every repetition is one call).
			if !tt.slow && !opts.FlushCache && opts.MinRepeatMs > 0 {
				if first := res.Costs[0] * float64(n); first < float64(opts.MinRepeatMs)*ms {
					t.Errorf("first repetition %.3g s, shorter than %d ms", first, opts.MinRepeatMs)
				}
			}
			// No repetition starts once the budget is spent, and the only
			// reason to stop short of Repeat is the budget (or the cutoff).
			budget := float64(opts.BudgetMs) * ms
			spent := 0.0
			for i, c := range res.Costs {
				if i > 0 && budget > 0 && spent >= budget*(1+1e-6) {
					t.Errorf("repetition %d started after %.4g s of timed calls, budget %d ms", i, spent, opts.BudgetMs)
				}
				spent += c * float64(n)
			}
			if !tt.slow && reps < opts.Repeat && !(budget > 0 && spent >= budget*(1-1e-6)) {
				t.Errorf("%d of %d repetitions after %.4g s of timed calls, budget %d ms", reps, opts.Repeat, spent, opts.BudgetMs)
			}
			if res.RunTime.Seconds() < spent {
				t.Errorf("child ran %v, less than its %.3g s of timed calls", res.RunTime, spent)
			}
		})
	}
}

func TestThreads(t *testing.T) {
	lib := mustBuild(t, threadsSrc)
	args := []Arg{{Name: "out", Size: 2, Output: true}}
	for _, n := range []int{1, 2, 3} {
		r := testRunner(t, RunOptions{Threads: n, Repeat: 1, MinRepeatMs: -1, Check: true})
		res := r.Run(context.Background(), []Job{{Lib: lib, Entry: "threads", Args: args}})[0]
		if res.Kind != None {
			t.Fatalf("threads %d: %+v", n, res)
		}
		if got := res.Outputs[0]; got[0] != float32(n) || got[1] != float32(n) {
			t.Errorf("Threads %d: omp_get_max_threads %v, parallel region of %v", n, got[0], got[1])
		}
	}
}

func TestRunCanceled(t *testing.T) {
	hang := mustBuild(t, hangSrc)
	add := mustBuild(t, addSrc)
	r := testRunner(t, RunOptions{Timeout: 10 * time.Second, MinRepeatMs: -1})
	// Build the harness first so that the deadline hits the hanging child.
	if res := r.Run(context.Background(), []Job{{Lib: add, Entry: "add", Args: addArgs}})[0]; res.Kind != None {
		t.Fatalf("warm-up: %+v", res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := r.Run(ctx, []Job{{Lib: hang, Entry: "hang", Args: addArgs}, {Lib: add, Entry: "add", Args: addArgs}})
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("canceled run returned after %v", el)
	}
	for i, got := range res {
		if got.Kind != RuntimeError || !strings.HasPrefix(got.Msg, "canceled") {
			t.Errorf("job %d: %+v", i, got)
		}
	}
}

func TestParseHarness(t *testing.T) {
	tests := []struct {
		name   string
		out    string
		costs  []float64
		number int
		bad    bool
	}{
		{"plain", "\ntessera number 8\ntessera cost 1e-3\ntessera cost 2e-3\ntessera done\n", []float64{1e-3, 2e-3}, 8, false},
		{"kernel noise", "hello\ntessera cost 9\n\ntessera number 2\ntessera cost 1\ntessera cost 1\ntessera done\n", []float64{1, 1}, 2, false},
		{"no done", "tessera number 2\ntessera cost 1\ntessera cost 1\n", nil, 0, true},
		{"budget spent", "tessera number 1\ntessera cost 1\ntessera done\n", []float64{1}, 1, false},
		{"none", "tessera number 2\ntessera done\n", nil, 0, true},
		{"too many", "tessera number 2\ntessera cost 1\ntessera cost 1\ntessera cost 1\ntessera done\n", nil, 0, true},
		{"nan", "tessera number 2\ntessera cost NaN\ntessera cost 1\ntessera done\n", nil, 0, true},
		{"empty", "", nil, 0, true},
	}
	for _, tt := range tests {
		costs, number, err := parseHarness(tt.out, 2)
		if (err != nil) != tt.bad || number != tt.number || !slices.Equal(costs, tt.costs) {
			t.Errorf("%s: %v %d %v", tt.name, costs, number, err)
		}
	}
}
