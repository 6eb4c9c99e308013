// Package xgboost is the yardstick of the cost model's trainer: XGBoost
// (Debian package xgboost, its command-line tool) trained on the same
// programs and labels as costmodel.Train, for bench/search and the
// realistic comparison in its tests. Predict is the entry point; Pairwise
// is the figure bench/search prints.
package xgboost

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tessera-ml/tessera/costmodel"
)

// How Predict runs XGBoost:
//
//	train ──split (same seeded split as Train)──▶ fit / valid programs
//	each program ──sum of its rows──▶ one dense LibSVM line
//	    reg:squarederror: "y:w f0:v0 …" with weight w = y (Ansor's weighting)
//	    rank:pairwise:    "y qid:<task> f0:v0 …" (lines grouped by task)
//	xgboost train (num_round = MaxRounds)
//	xgboost pred on valid with ntree_limit = RoundStep, 2·RoundStep, …:
//	    keep the count with the best validation pairwise accuracy, stop
//	    after EarlyStopping rounds without improvement (Train's rule)
//	xgboost pred on test with the kept count ──▶ one score per test program
//
// The CLI has no custom objectives, so XGBoost cannot fit the pack-sum
// objective (a program's score as a sum over its stores); it sees each
// program as the sum of its rows instead. Every feature is written, zeros
// included, so that no value reads as missing.

// Options configure Predict. Zero fields take the defaults,
// which match Train's (Ansor's XGBoost settings).
type Options struct {
	Binary         string  // the CLI; default "xgboost"
	Objective      string  // "reg:squarederror" (default) or "rank:pairwise"
	MaxDepth       int     // default 10
	Eta            float64 // default 0.2
	Gamma          float64 // default 0.001
	MinChildWeight float64 // default 0
	Lambda         float64 // default 1
	TreeMethod     string  // default "hist" (histogram splits, like Train)
	MaxRounds      int     // default 500
	RoundStep      int     // granularity of the kept tree count; default 10
	EarlyStopping  int     // default 50
	ValidFraction  float64 // default 0.2, as Train (negative: none, keep MaxRounds)
	Seed           uint64
	Threads        int    // default GOMAXPROCS
	Dir            string // working directory; default a fresh temporary one, removed afterwards
}

func (o Options) withDefaults() Options {
	if o.Binary == "" {
		o.Binary = "xgboost"
	}
	if o.Objective == "" {
		o.Objective = "reg:squarederror"
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = 10
	}
	if o.Eta <= 0 {
		o.Eta = 0.2
	}
	if o.Gamma == 0 {
		o.Gamma = 0.001
	}
	if o.Lambda == 0 {
		o.Lambda = 1
	}
	if o.TreeMethod == "" {
		o.TreeMethod = "hist"
	}
	if o.MaxRounds <= 0 {
		o.MaxRounds = 500
	}
	if o.RoundStep <= 0 {
		o.RoundStep = 10
	}
	if o.EarlyStopping <= 0 {
		o.EarlyStopping = 50
	}
	if o.ValidFraction == 0 {
		o.ValidFraction = 0.2
	}
	if o.Threads <= 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	return o
}

// Info reports a Predict run.
type Info struct {
	Trees     int           // trees used for the test predictions
	ValidAcc  float64       // validation pairwise accuracy at that count (NaN without validation)
	TrainTime time.Duration // the xgboost training run
	Total     time.Duration
}

// ErrNotInstalled is returned when the xgboost binary is not installed.
var ErrNotInstalled = errors.New("xgboost: the CLI is not installed (Debian: apt-get install xgboost)")

// Predict trains XGBoost on train and returns its scores for the
// programs of test (higher is better), in test's order.
func Predict(ctx context.Context, train, test *costmodel.Dataset, opts Options) ([]float64, Info, error) {
	start := time.Now()
	o := opts.withDefaults()
	var info Info
	bin, err := exec.LookPath(o.Binary)
	if err != nil {
		return nil, info, ErrNotInstalled
	}
	if train.Len() == 0 || test.Len() == 0 {
		return nil, info, costmodel.ErrNoData
	}
	if train.NumFeatures() != test.NumFeatures() && test.NumRows() > 0 && train.NumRows() > 0 {
		return nil, info, fmt.Errorf("xgboost: train rows have %d features, test rows %d", train.NumFeatures(), test.NumFeatures())
	}
	dir := o.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "tessera-xgb-"); err != nil {
			return nil, info, err
		}
		defer os.RemoveAll(dir)
	}
	nf := max(train.NumFeatures(), test.NumFeatures())

	isValid, hasValid := costmodel.ValidationSplit(train.Len(), costmodel.Params{ValidFraction: o.ValidFraction, Seed: o.Seed})
	var fit, valid []int
	for i := range train.Len() {
		if isValid[i] {
			valid = append(valid, i)
		} else {
			fit = append(fit, i)
		}
	}
	rank := o.Objective == "rank:pairwise"
	y := train.Labels()
	if _, err := writeLibSVM(filepath.Join(dir, "fit.txt"), train, fit, y, nf, rank); err != nil {
		return nil, info, err
	}
	var validOrder []int
	if hasValid {
		if validOrder, err = writeLibSVM(filepath.Join(dir, "valid.txt"), train, valid, y, nf, rank); err != nil {
			return nil, info, err
		}
	}
	all := make([]int, test.Len())
	for i := range all {
		all[i] = i
	}
	testOrder, err := writeLibSVM(filepath.Join(dir, "test.txt"), test, all, test.Labels(), nf, rank)
	if err != nil {
		return nil, info, err
	}

	conf := fmt.Sprintf(`booster = gbtree
objective = %s
eta = %s
gamma = %s
max_depth = %d
min_child_weight = %s
lambda = %s
tree_method = %s
seed = %d
nthread = %d
num_round = %d
data = %s?format=libsvm
model_out = %s
`, o.Objective, ftoa(o.Eta), ftoa(o.Gamma), o.MaxDepth, ftoa(o.MinChildWeight), ftoa(o.Lambda), o.TreeMethod,
		o.Seed%(1<<31), o.Threads, o.MaxRounds, filepath.Join(dir, "fit.txt"), filepath.Join(dir, "model.bin"))
	confPath := filepath.Join(dir, "train.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, info, err
	}
	t0 := time.Now()
	if err := runXGB(ctx, bin, dir, confPath); err != nil {
		return nil, info, fmt.Errorf("xgboost train: %w", err)
	}
	info.TrainTime = time.Since(t0)

	predict := func(file string, order []int, trees int) ([]float64, error) {
		out := filepath.Join(dir, "pred.txt")
		args := []string{confPath, "task=pred", "model_in=" + filepath.Join(dir, "model.bin"),
			"test:data=" + filepath.Join(dir, file) + "?format=libsvm", "name_pred=" + out,
			"ntree_limit=" + strconv.Itoa(trees)}
		if err := runXGB(ctx, bin, dir, args...); err != nil {
			return nil, fmt.Errorf("xgboost pred: %w", err)
		}
		return readPredictions(out, order)
	}

	info.Trees, info.ValidAcc = o.MaxRounds, math.NaN()
	if hasValid {
		vy := make([]float64, len(valid))
		vg := make([]int, len(valid))
		groups := train.TaskIDs()
		for k, i := range valid {
			vy[k], vg[k] = y[i], groups[i]
		}
		best, bestTrees := math.Inf(-1), 0
		for trees := o.RoundStep; trees <= o.MaxRounds; trees += o.RoundStep {
			s, err := predict("valid.txt", validOrder, trees)
			if err != nil {
				return nil, info, err
			}
			if a := costmodel.PairwiseAccuracy(s, vy, vg); a > best {
				best, bestTrees = a, trees
			}
			if trees-bestTrees >= o.EarlyStopping {
				break
			}
		}
		info.Trees, info.ValidAcc = bestTrees, best
	}
	scores, err := predict("test.txt", testOrder, info.Trees)
	if err != nil {
		return nil, info, err
	}
	info.Total = time.Since(start)
	return scores, info, nil
}

// Pairwise trains XGBoost with the default options on train and returns
// its pairwise accuracy on test: costmodel.PairwiseAccuracy(scores,
// test.Labels(), test.TaskIDs()), failed measurements included as the
// worst programs.
func Pairwise(train, test *costmodel.Dataset) (float64, error) {
	s, _, err := Predict(context.Background(), train, test, Options{})
	if err != nil {
		return math.NaN(), err
	}
	return costmodel.PairwiseAccuracy(s, test.Labels(), test.TaskIDs()), nil
}

func runXGB(ctx context.Context, bin, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	// Idle OpenMP threads must sleep, not spin: on a busy machine spinning
	// makes training 40× slower.
	cmd.Env = append(os.Environ(), "OMP_WAIT_POLICY=passive")
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 2000 {
			msg = msg[len(msg)-2000:]
		}
		return fmt.Errorf("%v: %s", err, msg)
	}
	// The CLI reports some configuration errors on stdout with exit 0.
	if s := string(out); strings.Contains(s, "Use xgboost -h") {
		return fmt.Errorf("bad arguments: %s", strings.TrimSpace(s))
	}
	return nil
}

// writeLibSVM writes the given programs of d, each as the sum of its rows,
// and returns, for each written line, the position in progs of its
// program. Ranking files group lines by task (stable), as qid requires.
func writeLibSVM(path string, d *costmodel.Dataset, progs []int, y []float64, nf int, rank bool) ([]int, error) {
	order := make([]int, len(progs))
	for k := range order {
		order[k] = k
	}
	task := d.TaskIDs()
	if rank {
		slices.SortStableFunc(order, func(a, b int) int { return task[progs[a]] - task[progs[b]] })
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 1<<16)
	sum := make([]float64, nf)
	buf := make([]byte, 0, 32)
	for _, k := range order {
		p := progs[k]
		clear(sum)
		for _, row := range d.Program(p) {
			for k, v := range row {
				sum[k] += float64(v)
			}
		}
		w.WriteString(ftoa(y[p]))
		if rank {
			fmt.Fprintf(w, " qid:%d", task[p])
		} else {
			w.WriteString(":" + ftoa(y[p])) // weight y
		}
		for k, v := range sum {
			buf = buf[:0]
			buf = append(buf, ' ')
			buf = strconv.AppendInt(buf, int64(k), 10)
			buf = append(buf, ':')
			buf = strconv.AppendFloat(buf, v, 'g', 7, 64)
			w.Write(buf)
		}
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return nil, err
	}
	return order, f.Close()
}

// readPredictions reads one prediction per line and puts line k's value at
// position order[k].
func readPredictions(path string, order []int) ([]float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Fields(string(data))
	if len(lines) != len(order) {
		return nil, fmt.Errorf("xgboost wrote %d predictions for %d programs", len(lines), len(order))
	}
	out := make([]float64, len(order))
	for k, s := range lines {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("xgboost prediction %q: %v", s, err)
		}
		out[order[k]] = v
	}
	return out, nil
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
