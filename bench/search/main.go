// Command search measures the search for one task, side by side in one
// run, on GEMM 512³ and on a 3×3 conv (1×64×56×56 → 64, pad 1) fused with
// bias and relu:
//
//   - model-guided search (evolution + GBDT cost model) and random search
//     (fresh samples of the same sketches), the same number of trials each;
//   - how many trials the guided search needs to reach the best of all the
//     random trials;
//   - the best GEMM schedule re-measured against OpenBLAS in alternating
//     processes;
//   - the cost model's pairwise accuracy on held-out measurements, ours and
//     XGBoost's on the same features and data;
//   - the wall time of a search round (the median of three; population ×
//     generations, feature extraction and prediction included).
//
// Every figure is printed as "name = value" on a line of its own.
//
//	go run ./bench/search             # 1,000 trials per search
//	go run ./bench/search -trials 200 # a quicker look
//	go run ./bench/search -log DIR    # also every measurement, as it is made
//
// With -log, each search appends its measurements to DIR/NAME-random.jsonl
// or DIR/NAME-guided.jsonl as record lines (`tune records import` reads
// them), so a run stopped early keeps what it measured.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/bench/internal/benchutil"
	"github.com/tessera-ml/tessera/bench/internal/xgboost"
	"github.com/tessera-ml/tessera/costmodel"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/search"
	"github.com/tessera-ml/tessera/te"
)

func main() {
	trials := flag.Int("trials", 1000, "measurements per search")
	batch := flag.Int("batch", 64, "measurements per round")
	threads := flag.Int("threads", 1, "threads of every measured kernel")
	seed := flag.Uint64("seed", 1, "search seed")
	flag.StringVar(&logDir, "log", "", "directory to append every measurement to, as record lines")
	hdbs := flag.String("heldout-db", "", "comma-separated records `DBs` of models the pretrained cost model was not trained on: compare it with a cold model on them instead of searching")
	hmodels := flag.String("heldout-model", "", "comma-separated ONNX `models` whose tasks the -heldout-db records measured")
	seen := flag.Int("seen", 64, "with -heldout-db: records of each task the cold and boosted models train on (the rest are the test set)")
	pretrained := flag.String("pretrained", "", "with -heldout-db: the pretrained model `FILE` (default: the one shipped for this machine)")
	pdbs := flag.String("pretrain-db", "", "comma-separated records `DBs` to pretrain on (the generated models but MobileNetV2 and the BERT layer, the test data's layers): report the pretrained model against a cold one on held-out workloads of them instead of searching")
	flag.Parse()
	if *pdbs != "" {
		if err := heldOutTasks(splitList(*pdbs)); err != nil {
			benchutil.Fatal(err)
		}
		return
	}
	if *hdbs != "" {
		if err := heldOut(splitList(*hdbs), splitList(*hmodels), *seen, *pretrained); err != nil {
			benchutil.Fatal(err)
		}
		return
	}
	if err := run(*trials, *batch, *threads, *seed); err != nil {
		benchutil.Fatal(err)
	}
}

// logDir is where measurements are appended (-log); empty: nowhere.
var logDir string

// logBatch appends a measured batch of one search to its file in logDir.
func logBatch(wl workload, kind, target string, ms []search.Measured) error {
	if logDir == "" {
		return nil
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("-log: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(logDir, wl.name+"-"+kind+".jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, m := range ms {
		r, err := records.New(wl.dag.WorkloadKey(), target, m.State.Steps, m.Result, "bench/search")
		if err == nil {
			err = enc.Encode(r)
		}
		if err != nil {
			f.Close()
			return fmt.Errorf("log %s: %w", wl.name, err)
		}
	}
	return f.Close()
}

type workload struct {
	name string
	dag  *te.DAG
}

func workloads() ([]workload, error) {
	a := te.Placeholder("A", 512, 512)
	b := te.Placeholder("B", 512, 512)
	mm, err := te.MatMul("C", a, b)
	if err != nil {
		return nil, err
	}
	gemm, err := te.NewDAG(mm)
	if err != nil {
		return nil, err
	}
	x := te.Placeholder("X", 1, 64, 56, 56)
	w := te.Placeholder("W", 64, 64, 3, 3)
	bias := te.Placeholder("bias", 64)
	c, err := te.Conv("conv", x, w, bias, te.ConvAttrs{Pads: []int{1, 1, 1, 1}})
	if err != nil {
		return nil, err
	}
	r, err := te.Relu("relu", c)
	if err != nil {
		return nil, err
	}
	conv, err := te.NewDAG(r)
	if err != nil {
		return nil, err
	}
	return []workload{{"gemm512", gemm}, {"conv", conv}}, nil
}

// curve is the best cost after each trial.
type curve []float64

func (c curve) best() float64 {
	if len(c) == 0 {
		return math.Inf(1)
	}
	return c[len(c)-1]
}

// trialsTo returns the first trial (1-based) whose best reaches target, or
// -1.
func (c curve) trialsTo(target float64) int {
	for i, v := range c {
		if v <= target*(1+1e-9) {
			return i + 1
		}
	}
	return -1
}

func extend(c curve, ms []search.Measured) curve {
	best := c.best()
	for _, m := range ms {
		if m.Result.Kind == measure.None {
			best = math.Min(best, m.Result.Median())
		}
		c = append(c, best)
	}
	return c
}

// cpuTarget is the cpu target with threads per kernel.
func cpuTarget(threads int) *backend.Target { return backend.CPU(backend.CPUConfig{Threads: threads}) }

// result of both searches on one workload.
type result struct {
	guided, random curve
	guidedPolicy   *search.Policy
	model          *search.GBDTModel
	data           *costmodel.Dataset // every measurement of both searches
}

func searchBoth(ctx context.Context, wl workload, trials, batch, threads int, seed uint64) (*result, error) {
	tg := cpuTarget(threads)
	defer tg.Close()
	m := tg.Measurer(true)
	opts := search.DefaultOptions(tg)
	opts.Seed = seed
	// The guided search starts from nothing but the sketches, as the
	// random one does: no rule-made default schedule in its first batch.
	opts.MeasureDefault = false
	res := &result{data: &costmodel.Dataset{}}
	targetKey := tg.Key()
	key := wl.dag.WorkloadKey()

	// Random search: fresh samples, no model.
	rp, err := search.NewPolicy(key, schedule.NewState(wl.dag), opts, &frozen{costmodel.NewRandomModel(seed)}, m)
	if err != nil {
		return nil, err
	}
	for len(res.random) < trials {
		ms, err := rp.RandomRound(ctx, min(batch, trials-len(res.random)))
		if err != nil {
			return nil, err
		}
		if err := logBatch(wl, "random", targetKey, ms); err != nil {
			return nil, err
		}
		res.random = extend(res.random, ms)
		fmt.Fprintf(os.Stderr, "%s random: %d trials, best %.3f ms\n", wl.name, len(res.random), res.random.best()*1e3)
	}

	// Model-guided search.
	params := costmodel.DefaultParams()
	params.Seed = seed
	res.model = search.NewGBDTModel(params)
	gp, err := search.NewPolicy(key, schedule.NewState(wl.dag), opts, res.model, m)
	if err != nil {
		return nil, err
	}
	for len(res.guided) < trials {
		ms, err := gp.Round(ctx, min(batch, trials-len(res.guided)))
		if err != nil {
			return nil, err
		}
		if err := logBatch(wl, "guided", targetKey, ms); err != nil {
			return nil, err
		}
		res.guided = extend(res.guided, ms)
		fmt.Fprintf(os.Stderr, "%s guided: %d trials, best %.3f ms\n", wl.name, len(res.guided), res.guided.best()*1e3)
	}
	res.guidedPolicy = gp
	for _, p := range []*search.Policy{rp, gp} {
		for _, h := range p.History() {
			if rows, err := tg.Features(h.State); err == nil {
				res.data.Add(key, rows, h.Result.Cost())
			}
		}
	}
	return res, nil
}

// frozen is a cost model that never learns (random search).
type frozen struct{ costmodel.Predictor }

func (frozen) Update(string, [][][]float32, []float64) error { return nil }

func run(trials, batch, threads int, seed uint64) error {
	ctx := context.Background()
	wls, err := workloads()
	if err != nil {
		return err
	}
	all := &costmodel.Dataset{}
	for _, wl := range wls {
		res, err := searchBoth(ctx, wl, trials, batch, threads, seed)
		if err != nil {
			return fmt.Errorf("%s: %w", wl.name, err)
		}
		flops := wl.dag.FLOPs()
		fmt.Printf("%s random best GFLOP/s = %.2f\n", wl.name, flops/res.random.best()/1e9)
		fmt.Printf("%s guided best GFLOP/s = %.2f\n", wl.name, flops/res.guided.best()/1e9)
		fmt.Printf("%s trials-to-best-random = %d\n", wl.name, res.guided.trialsTo(res.random.best()))
		for i := 0; i < res.data.Len(); i++ {
			all.Add(res.data.Task(i), res.data.Program(i), res.data.Cost(i))
		}
		if wl.name != "gemm512" {
			continue
		}
		// The GEMM figures come as soon as its searches end, so that a
		// run stopped during the conv's keeps them. The best schedule
		// against OpenBLAS, re-measured in alternating fresh processes:
		best, _ := res.guidedPolicy.Best()
		ratio, err := versusOpenBLAS(ctx, wl.dag, best, threads)
		if err != nil {
			return err
		}
		fmt.Printf("gemm512 tessera/openblas = %.2f\n", ratio)
		// and a search round with the trained GEMM model.
		secs, err := roundSeconds(wl.dag, res.model, seed)
		if err != nil {
			return err
		}
		fmt.Printf("round seconds = %.2f\n", secs)
	}

	// Pairwise accuracy on held-out measurements.
	ours, xgb, err := pairwise(all, seed)
	if err != nil {
		return err
	}
	fmt.Printf("pairwise ours = %.3f\n", ours)
	if math.IsNaN(xgb) {
		fmt.Printf("pairwise xgboost = unavailable\n")
	} else {
		fmt.Printf("pairwise xgboost = %.3f\n", xgb)
	}
	return nil
}

func versusOpenBLAS(ctx context.Context, d *te.DAG, best *schedule.State, threads int) (float64, error) {
	prog, err := benchutil.Lower(best, backend.MustDefaultMachine())
	if err != nil {
		return 0, err
	}
	args := measure.Args(d)
	ks, err := benchutil.Build(ctx, &measure.Builder{}, []string{"tessera"}, []measure.Program{prog}, args)
	if err != nil {
		return 0, err
	}
	blasB := &measure.Builder{Flags: append(measure.DefaultFlags(), "-Wl,--no-as-needed", "-lopenblas")}
	blas, err := benchutil.Build(ctx, blasB, []string{"openblas"}, []measure.Program{{Code: benchutil.OpenBLASGEMM(512)}}, args)
	if err != nil {
		return 0, err
	}
	r := &measure.Runner{Opts: measure.RunOptions{Threads: threads, Repeat: 3, MinRepeatMs: 200}}
	defer r.Close()
	tm, err := benchutil.Alternate(ctx, r, append(ks, blas...), 7)
	if err != nil {
		return 0, err
	}
	_, med := benchutil.MinMedian(benchutil.Ratios(tm["openblas"], tm["tessera"]))
	return med, nil
}

// pairwise trains our model and XGBoost on a random 80% of the programs
// and returns both pairwise accuracies on the other 20%.
func pairwise(data *costmodel.Dataset, seed uint64) (ours, xgb float64, err error) {
	rng := rand.New(rand.NewPCG(seed, 80))
	perm := rng.Perm(data.Len())
	cut := data.Len() * 8 / 10
	train, test := data.Subset(perm[:cut]), data.Subset(perm[cut:])
	params := costmodel.DefaultParams()
	params.Seed = seed
	m, err := costmodel.Train(train, params)
	if err != nil {
		return 0, 0, err
	}
	ours = costmodel.PairwiseAccuracy(m.Predict(test.Programs()), test.Labels(), test.TaskIDs())
	xgb, err = xgboost.Pairwise(train, test)
	if err != nil {
		fmt.Fprintln(os.Stderr, "xgboost:", err)
		xgb = math.NaN()
	}
	return ours, xgb, nil
}

// roundSeconds returns the median wall time of three search rounds
// (Propose: population × generations, features and predictions).
func roundSeconds(d *te.DAG, model *search.GBDTModel, seed uint64) (float64, error) {
	opts := search.DefaultOptions(cpuTarget(0))
	opts.Seed = seed + 1
	p, err := search.NewPolicy(d.WorkloadKey(), schedule.NewState(d), opts, model, nil)
	if err != nil {
		return 0, err
	}
	var secs []float64
	for range 3 {
		start := time.Now()
		if _, err := p.Propose(opts.MeasurePerRound); err != nil {
			return 0, err
		}
		secs = append(secs, time.Since(start).Seconds())
	}
	slices.Sort(secs)
	return secs[1], nil
}
