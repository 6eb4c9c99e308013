package xgboost_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/bench/internal/xgboost"
	"github.com/tessera-ml/tessera/costmodel"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// TestRealisticMatmul is the end-to-end check of the cost model
// (costmodel.Train) on real measurements, against XGBoost: random schedules of a small matmul are compiled and timed,
// the model trains on 80% of them and ranks the other 20%, next to XGBoost
// trained on the same features and labels. It takes minutes (a compiler and
// a quiet machine are needed), so it runs only with TESSERA_REALISTIC=1;
// TESSERA_REALISTIC_N sets the number of schedules (default 300). Timings
// are cached by program text in the temporary directory, so a rerun only
// retrains. Kernels run on one thread: on a machine shared with other
// work, OpenMP's spinning threads make two-thread timings far noisier than
// the differences between schedules.
func TestRealisticMatmul(t *testing.T) {
	if os.Getenv("TESSERA_REALISTIC") == "" {
		t.Skip("set TESSERA_REALISTIC=1 to measure random matmul schedules")
	}
	d := realisticMatmul(t)
	best, worst, failed := math.Inf(1), 0.0, 0
	for i := range d.Len() {
		if c := d.Cost(i); !math.IsInf(c, 1) {
			best, worst = min(best, c), max(worst, c)
		} else {
			failed++
		}
	}
	t.Logf("%d programs (%d failed), %d rows; costs %.3g … %.3g ms", d.Len(), failed, d.NumRows(), best*1e3, worst*1e3)

	// 80/20 split, several seeds for a steadier figure.
	type score struct{ all, far float64 }
	sums := map[string]score{}
	const splits = 5
	add := func(name string, s []float64, test *costmodel.Dataset) string {
		all := costmodel.PairwiseAccuracy(s, test.Labels(), test.TaskIDs())
		far := farPairs(s, test, 2)
		sums[name] = score{sums[name].all + all/splits, sums[name].far + far/splits}
		return fmt.Sprintf(" %s %.3f (2×: %.3f)", name, all, far)
	}
	hasXGB := true
	for seed := range uint64(splits) {
		perm := rand.New(rand.NewPCG(seed, 80)).Perm(d.Len())
		cut := d.Len() * 8 / 10
		train, test := d.Subset(perm[:cut]), d.Subset(perm[cut:])
		line := fmt.Sprintf("split %d:", seed)
		for _, obj := range []costmodel.Objective{costmodel.PackSum, costmodel.PairwiseRank} {
			m, err := costmodel.Train(train, costmodel.Params{Objective: obj, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			line += add("ours/"+obj.String(), m.Predict(test.Programs()), test)
			line += fmt.Sprintf(" [%d trees, %v]", m.NumTrees(), m.Info.Duration.Round(time.Millisecond))
		}
		for _, obj := range []string{"reg:squarederror", "rank:pairwise"} {
			if !hasXGB {
				break
			}
			s, info, err := xgboost.Predict(context.Background(), train, test, xgboost.Options{Objective: obj, Seed: seed})
			if errors.Is(err, xgboost.ErrNotInstalled) {
				hasXGB = false
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			line += add("xgb/"+obj, s, test)
			line += fmt.Sprintf(" [%d trees, %v]", info.Trees, info.TrainTime.Round(time.Millisecond))
		}
		t.Log(line)
	}
	for _, name := range []string{"ours/pack-sum", "ours/pairwise-rank", "xgb/reg:squarederror", "xgb/rank:pairwise"} {
		if s, ok := sums[name]; ok {
			t.Logf("mean held-out pairwise accuracy %-22s %.4f (pairs 2× apart: %.4f)", name, s.all, s.far)
		}
	}
	for name, s := range sums {
		if s.all < 0.55 {
			t.Errorf("%s: held-out pairwise accuracy %.4f, hardly better than chance", name, s.all)
		}
	}
	if hasXGB && sums["ours/pack-sum"].all < sums["xgb/reg:squarederror"].all-0.03 {
		t.Errorf("ours (pack-sum) %.4f trails xgboost %.4f by more than 0.03", sums["ours/pack-sum"].all, sums["xgb/reg:squarederror"].all)
	}
}

// farPairs is the pairwise accuracy over the pairs whose costs differ by
// more than the given ratio: the pairs measurement noise cannot flip.
func farPairs(scores []float64, d *costmodel.Dataset, ratio float64) float64 {
	right, total := 0.0, 0.0
	for i := range d.Len() {
		for j := i + 1; j < d.Len(); j++ {
			ci, cj := d.Cost(i), d.Cost(j)
			if math.IsInf(ci, 1) || math.IsInf(cj, 1) || max(ci, cj) < ratio*min(ci, cj) {
				continue
			}
			total++
			switch {
			case scores[i] == scores[j]:
				right += 0.5
			case (scores[i] > scores[j]) == (ci < cj):
				right++
			}
		}
	}
	return right / total
}

// realisticMatmul returns the measured random matmul schedules (see
// TestRealisticMatmul), measuring those missing from the cache.
func realisticMatmul(t *testing.T) *costmodel.Dataset {
	d, _ := realisticMatmulFuncs(t)
	return d
}

// realisticMatmulFuncs is realisticMatmul with the lowered programs.
func realisticMatmulFuncs(t *testing.T) (*costmodel.Dataset, []*tir.PrimFunc) {
	n := 300
	if s := os.Getenv("TESSERA_REALISTIC_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	const size = 128
	a := te.Placeholder("A", size, size)
	b := te.Placeholder("B", size, size)
	c, err := te.MatMul("C", a, b)
	if err != nil {
		t.Fatal(err)
	}
	dag, err := te.NewDAG(c)
	if err != nil {
		t.Fatal(err)
	}

	// Distinct random programs.
	rng := rand.New(rand.NewPCG(2026, 4))
	s0 := schedule.NewState(dag)
	var states []*schedule.State
	var funcs []*tir.PrimFunc
	var keys []string
	seen := map[string]bool{}
	for tries := 0; len(states) < n && tries < 20*n; tries++ {
		s, f := schedtest.RandomLowerable(rng, s0, 12)
		sum := sha256.Sum256([]byte(f.String()))
		key := hex.EncodeToString(sum[:8])
		if seen[key] {
			continue
		}
		seen[key] = true
		states, funcs, keys = append(states, s), append(funcs, f), append(keys, key)
	}

	cachePath := filepath.Join(os.TempDir(), fmt.Sprintf("tessera-costmodel-matmul%d-1thread.json", size))
	cache := map[string]float64{}
	if data, err := os.ReadFile(cachePath); err == nil {
		json.Unmarshal(data, &cache)
	}
	var todo []int
	for i, k := range keys {
		if _, ok := cache[k]; !ok {
			todo = append(todo, i)
		}
	}
	t.Logf("%d distinct schedules, %d to measure", len(states), len(todo))
	if len(todo) > 0 {
		bld := &measure.Builder{CacheDir: filepath.Join(os.TempDir(), "tessera-costmodel-build")}
		m := backend.CPU(backend.CPUConfig{Threads: 1, Builder: bld,
			Run: measure.RunOptions{Repeat: 3, MinRepeatMs: 20, Timeout: 20 * time.Second}}).Measurer(false)
		defer m.Runner.Close()
		const batch = 32
		for lo := 0; lo < len(todo); lo += batch {
			idx := todo[lo:min(lo+batch, len(todo))]
			in := make([]measure.Input, len(idx))
			for k, i := range idx {
				in[k] = measure.Input{State: states[i]}
			}
			res, err := m.Measure(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			for k, r := range res {
				cost := -1.0 // failed (JSON has no +Inf)
				if r.Kind == measure.None {
					cost = r.Median()
				}
				cache[keys[idx[k]]] = cost
			}
			data, err := json.Marshal(cache)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cachePath, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if os.Getenv("TESSERA_REALISTIC_NOISE") != "" {
		measurementNoise(t, states, keys, cache)
	}

	// Dataset: features of every program, one task.
	t0 := time.Now()
	rows := costmodel.ExtractAll(funcs, costmodel.Hardware{CacheLine: machine.Machine{}.CacheLine()}, 0)
	extract := time.Since(t0)
	t.Logf("features of %d programs in %v (%.0f programs/s)", len(funcs), extract, float64(len(funcs))/extract.Seconds())
	d := &costmodel.Dataset{}
	for i, f := range rows {
		c := cache[keys[i]]
		if !(c > 0) {
			c = math.Inf(1)
		}
		d.Add("matmul", f, c)
	}
	return d, funcs
}

// measurementNoise re-measures the first 64 programs in fresh processes and
// reports how often the two measurements order a pair the same way: the
// pairwise accuracy a perfect model could reach on this machine.
func measurementNoise(t *testing.T, states []*schedule.State, keys []string, cache map[string]float64) {
	n := min(64, len(states))
	bld := &measure.Builder{CacheDir: filepath.Join(os.TempDir(), "tessera-costmodel-build")}
	m := backend.CPU(backend.CPUConfig{Threads: 1, Builder: bld,
		Run: measure.RunOptions{Repeat: 3, MinRepeatMs: 20, Timeout: 20 * time.Second}}).Measurer(false)
	defer m.Runner.Close()
	in := make([]measure.Input, n)
	for i := range in {
		in[i] = measure.Input{State: states[i]}
	}
	var first, second []float64
	res, err := m.Measure(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		c := cache[keys[i]]
		if r.Kind != measure.None || !(c > 0) {
			continue
		}
		first, second = append(first, 1/c), append(second, 1/r.Median())
	}
	t.Logf("measurement noise: %d programs measured twice order %.4f of pairs alike",
		len(first), costmodel.PairwiseAccuracy(second, first, make([]int, len(first))))
}
