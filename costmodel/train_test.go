package costmodel

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// synthetic returns programs of nf random features in [0, 1) with
// rowsPer(rng) rows each, whose throughput is the sum over rows of
// contrib(row); cost = 1 / throughput. Programs are spread over tasks.
func synthetic(seed uint64, n, nf, tasks int, rowsPer func(*rand.Rand) int, contrib func([]float32) float64) *Dataset {
	rng := rand.New(rand.NewPCG(seed, 1))
	d := &Dataset{}
	for i := range n {
		k := rowsPer(rng)
		rows := make([][]float32, k)
		tp := 0.0
		for r := range rows {
			rows[r] = make([]float32, nf)
			for f := range rows[r] {
				rows[r][f] = float32(rng.Float64())
			}
			tp += contrib(rows[r])
		}
		d.Add(string(rune('a'+i%tasks)), rows, 1/tp)
	}
	return d
}

func one(*rand.Rand) int { return 1 }

func sumOfTwo(r []float32) float64 { return float64(r[0]) + float64(r[3]) + 0.05 }

// heldOut trains on the first dataset and evaluates on the second.
func heldOut(t *testing.T, train, test *Dataset, p Params) (*Model, Metrics) {
	t.Helper()
	m, err := Train(train, p)
	if err != nil {
		t.Fatal(err)
	}
	return m, Evaluate(test, m.Predict(test.Programs()), 8)
}

func TestTrainLearnsSum(t *testing.T) {
	train := synthetic(1, 2000, 8, 4, one, sumOfTwo)
	test := synthetic(2, 500, 8, 4, one, sumOfTwo)
	for _, obj := range []Objective{PackSum, PairwiseRank} {
		m, met := heldOut(t, train, test, Params{Objective: obj})
		t.Logf("%v: held-out pairwise %.4f, top-8 score %.4f, recall %.3f; %d trees of %d rounds in %v",
			obj, met.Pairwise, met.TopKScore, met.TopKRecall, m.Info.Trees, m.Info.Rounds, m.Info.Duration)
		if met.Pairwise < 0.95 {
			t.Errorf("%v: held-out pairwise accuracy %.4f < 0.95", obj, met.Pairwise)
		}
	}
}

// TestPackSum: a program's throughput is the sum of its rows'
// contributions, with 1–5 rows per program; only the per-program sum is
// observed. The model's row outputs must add up to the label.
func TestPackSum(t *testing.T) {
	rowsPer := func(r *rand.Rand) int { return 1 + r.IntN(5) }
	contrib := func(r []float32) float64 {
		if r[1] > 0.5 {
			return 2 * float64(r[0])
		}
		return 0.2 * float64(r[2])
	}
	train := synthetic(3, 3000, 6, 1, rowsPer, contrib)
	test := synthetic(4, 600, 6, 1, rowsPer, contrib)
	m, met := heldOut(t, train, test, Params{Objective: PackSum})
	// The model predicts y = best / cost: check the fit of the sums.
	y := test.Labels()
	pred := m.Predict(test.Programs())
	var ss, st, mean float64
	for _, v := range y {
		mean += v / float64(len(y))
	}
	for i := range y {
		ss += (pred[i] - y[i]) * (pred[i] - y[i])
		st += (y[i] - mean) * (y[i] - mean)
	}
	r2 := 1 - ss/st
	t.Logf("pack-sum: held-out R² %.3f, pairwise %.4f, %d trees", r2, met.Pairwise, m.Info.Trees)
	if r2 < 0.8 || met.Pairwise < 0.9 {
		t.Errorf("pack-sum fit: R² %.3f (want ≥ 0.8), pairwise %.4f (want ≥ 0.9)", r2, met.Pairwise)
	}

	// The same data summed per program into one row loses the structure:
	// the pack-sum model must do better than a model on summed rows.
	flat := func(d *Dataset) *Dataset {
		out := &Dataset{}
		for i := range d.Len() {
			sum := make([]float32, d.NumFeatures())
			for _, r := range d.Program(i) {
				for f, v := range r {
					sum[f] += v
				}
			}
			out.Add(d.Task(i), [][]float32{sum}, d.Cost(i))
		}
		return out
	}
	_, metFlat := heldOut(t, flat(train), flat(test), Params{Objective: PackSum})
	t.Logf("summed rows: held-out pairwise %.4f", metFlat.Pairwise)
	if metFlat.Pairwise >= met.Pairwise {
		t.Errorf("summing rows did as well as pack-sum (%.4f ≥ %.4f): the objective does not use the row structure", metFlat.Pairwise, met.Pairwise)
	}
}

// TestPackSumGradient checks the objective's gradients against the
// definition on a tiny dataset.
func TestPackSumGradient(t *testing.T) {
	d := &Dataset{}
	d.Add("t", [][]float32{{1}, {2}}, 1) // y = 1
	d.Add("t", [][]float32{{3}}, 2)      // y = 0.5
	d.Add("t", nil, math.Inf(1))         // failed, no rows: y = 0
	y := d.Labels()
	if y[0] != 1 || y[1] != 0.5 || y[2] != 0 {
		t.Fatalf("labels %v", y)
	}
	o := newObjective(Params{Objective: PackSum}.withDefaults(), d, y, d.TaskIDs(), []int{0, 1, 2}, nil)
	gh := make([]gradPair, d.NumRows())
	o.gradients([]float64{0.25, 1, 7}, gh, 0)
	want := []gradPair{{2 * 1 * (0.25 - 1), 2}, {2 * 1 * (0.25 - 1), 2}, {2 * 0.5 * (1 - 0.5), 1}}
	for i := range want {
		if gh[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, gh[i], want[i])
		}
	}
}

// TestLeavesRoundTrip: a saved model loads in leaves, and leaves, the Go
// walker and a reloaded model all predict the same on random inputs,
// including values outside the training range.
func TestLeavesRoundTrip(t *testing.T) {
	train := synthetic(5, 1500, NumFeatures, 3, func(r *rand.Rand) int { return 1 + r.IntN(3) }, sumOfTwo)
	m, err := Train(train, Params{MaxRounds: 60})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := m.Save(&buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, want := range []string{"tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\nmax_feature_idx=" + strconv.Itoa(NumFeatures-1) + "\nobjective=regression\nfeature_names=float_mad ",
		"\ntree_sizes=", "\n\nTree=0\nnum_leaves=", "\nis_linear=0\nshrinkage=0.2\n", "end of trees\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("saved model lacks %q", want)
		}
	}
	m2, err := Load(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	var buf2 bytes.Buffer
	if err := m2.Save(&buf2); err != nil {
		t.Fatal(err)
	}
	// Everything but the training parameters survives the round trip.
	if i := firstDiff(buf2.String(), text); i < strings.Index(text, "parameters:") {
		t.Errorf("reloaded model saves differently at byte %d", i)
	}

	rng := rand.New(rand.NewPCG(9, 9))
	progs := make([][][]float32, 300)
	for i := range progs {
		progs[i] = make([][]float32, 1+rng.IntN(4))
		for r := range progs[i] {
			row := make([]float32, NumFeatures)
			for f := range row {
				row[f] = float32(rng.Float64()*1.4 - 0.2)
			}
			progs[i][r] = row
		}
	}
	progs = append(progs, nil) // a program without rows
	viaLeaves := m.Predict(progs)
	viaGo := m.PredictGo(progs)
	reloaded := m2.Predict(progs)
	reloadedGo := m2.PredictGo(progs)
	distinct := map[float64]bool{}
	for i := range progs {
		if math.Abs(viaLeaves[i]-viaGo[i]) > 1e-6 || math.Abs(reloaded[i]-viaGo[i]) > 1e-6 || reloadedGo[i] != viaGo[i] {
			t.Fatalf("program %d: leaves %v, Go walker %v, reloaded %v / %v", i, viaLeaves[i], viaGo[i], reloaded[i], reloadedGo[i])
		}
		distinct[viaGo[i]] = true
	}
	if len(distinct) < 100 {
		t.Errorf("only %d distinct predictions: the check is vacuous", len(distinct))
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestDeterminism: the same data, params and seed give the same model
// text, whatever the number of workers; another seed gives another model.
// The dataset is large enough for chunked histogram builds.
func TestDeterminism(t *testing.T) {
	d := synthetic(6, 6000, 20, 2, func(r *rand.Rand) int { return 1 + r.IntN(3) }, sumOfTwo)
	if d.NumRows() <= buildChunk {
		t.Fatalf("dataset of %d rows does not exercise chunked histograms", d.NumRows())
	}
	save := func(p Params) string {
		m, err := Train(d, p)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		m.Save(&b)
		return b.String()
	}
	for _, obj := range []Objective{PackSum, PairwiseRank} {
		a := save(Params{Objective: obj, Seed: 1, MaxRounds: 30, Workers: 1})
		b := save(Params{Objective: obj, Seed: 1, MaxRounds: 30, Workers: 2})
		c := save(Params{Objective: obj, Seed: 1, MaxRounds: 30, Workers: 2})
		if a != b || b != c {
			t.Errorf("%v: same seed, different models (first difference at byte %d)", obj, firstDiff(a, b))
		}
		if e := save(Params{Objective: obj, Seed: 2, MaxRounds: 30}); e == a {
			t.Errorf("%v: seeds 1 and 2 gave the same model", obj)
		}
	}
}

func TestEarlyStopping(t *testing.T) {
	// Labels are noise: the validation metric stops improving quickly.
	rng := rand.New(rand.NewPCG(7, 7))
	d := &Dataset{}
	for range 800 {
		row := []float32{float32(rng.Float64()), float32(rng.Float64())}
		d.Add("t", [][]float32{row}, 0.5+rng.Float64())
	}
	m, err := Train(d, Params{EarlyStopping: 10, MaxRounds: 500})
	if err != nil {
		t.Fatal(err)
	}
	if m.Info.Rounds >= 500 || m.Info.Trees > m.Info.Rounds || m.Info.Rounds-m.Info.Trees != 10 || !m.Info.Valid {
		t.Errorf("rounds %d, trees kept %d, validation %v: want a stop 10 rounds after the best", m.Info.Rounds, m.Info.Trees, m.Info.Valid)
	}
	if len(m.Info.ValidCurves) != m.Info.Rounds || m.Info.ValidCurves[m.Info.Trees-1] != m.Info.BestMetric {
		t.Errorf("validation curve does not match the kept round")
	}
}

func TestTrainEdgeCases(t *testing.T) {
	if _, err := Train(&Dataset{}, Params{}); err == nil {
		t.Errorf("empty dataset trained")
	}
	// Constant features: one constant tree, still loadable by leaves.
	d := &Dataset{}
	for i := range 10 {
		d.Add("t", [][]float32{{1, 2}}, float64(i+1))
	}
	m, err := Train(d, Params{})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Predict([][][]float32{{{1, 2}}}); len(got) != 1 || got[0] != m.PredictGo([][][]float32{{{1, 2}}})[0] {
		t.Errorf("constant model: %v", got)
	}
	// Every measurement failed: zero weights, zero predictions.
	d = &Dataset{}
	for i := range 60 {
		d.Add("t", [][]float32{{float32(i), 1}}, math.Inf(1))
	}
	m, err = Train(d, Params{MaxRounds: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range m.Predict(d.Programs()) {
		if v != 0 {
			t.Fatalf("all-failed dataset predicts %v", v)
		}
	}
}

func TestLoadRejects(t *testing.T) {
	for name, text := range map[string]string{
		"empty":       "",
		"not a model": "hello\n",
		"no trees":    "tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nmax_feature_idx=1\ntree_sizes=\n\nend of trees\n",
		"bad child": "tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nmax_feature_idx=1\ntree_sizes=1\n\n" +
			"Tree=0\nnum_leaves=2\nnum_cat=0\nsplit_feature=0\nthreshold=0.5\ndecision_type=2\nleft_child=-1\nright_child=5\nleaf_value=1 2\n\nend of trees\n",
		"bad feature": "tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nmax_feature_idx=1\ntree_sizes=1\n\n" +
			"Tree=0\nnum_leaves=2\nnum_cat=0\nsplit_feature=7\nthreshold=0.5\ndecision_type=2\nleft_child=-1\nright_child=-2\nleaf_value=1 2\n\nend of trees\n",
	} {
		if _, err := Load(strings.NewReader(text)); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}

func TestRandomModel(t *testing.T) {
	progs := make([][][]float32, 50)
	a := NewRandomModel(3).Predict(progs)
	b := NewRandomModel(3).Predict(progs)
	c := NewRandomModel(4).Predict(progs)
	for i := range a {
		if a[i] != b[i] || a[i] < 0 || a[i] >= 1 {
			t.Fatalf("random model not deterministic or out of [0, 1)")
		}
	}
	if a[0] == c[0] && a[1] == c[1] {
		t.Errorf("seeds 3 and 4 agree")
	}
	d := synthetic(8, MinTrainPrograms-1, 4, 1, one, sumOfTwo)
	p, err := TrainOrRandom(d, Params{})
	if _, ok := p.(*RandomModel); !ok || err != nil {
		t.Errorf("%d programs: got %T, %v; want a RandomModel", d.Len(), p, err)
	}
	d = synthetic(8, MinTrainPrograms, 4, 1, one, sumOfTwo)
	p, err = TrainOrRandom(d, Params{MaxRounds: 5})
	if _, ok := p.(*Model); !ok || err != nil {
		t.Errorf("%d programs: got %T, %v; want a Model", d.Len(), p, err)
	}
}

// TestTrainFrom: a model pretrained on one task family helps where a few
// programs of a new task alone do not, the combined model starts with the
// base's trees, and a base of another feature count is refused.
func TestTrainFrom(t *testing.T) {
	// The new data's cost depends on features 0 and 3 as the base's did,
	// plus a shift the base never saw (feature 5).
	shifted := func(r []float32) float64 { return sumOfTwo(r) + 0.3*float64(r[5]) }
	base, err := Train(synthetic(1, 2000, 8, 4, one, sumOfTwo), Params{})
	if err != nil {
		t.Fatal(err)
	}
	few := synthetic(3, 120, 8, 1, one, shifted)
	test := synthetic(4, 500, 8, 1, one, shifted)
	cold, err := Train(few, Params{})
	if err != nil {
		t.Fatal(err)
	}
	warm, err := TrainFrom(base, few, Params{})
	if err != nil {
		t.Fatal(err)
	}
	pc := Evaluate(test, cold.Predict(test.Programs()), 8).Pairwise
	pw := Evaluate(test, warm.Predict(test.Programs()), 8).Pairwise
	t.Logf("held-out pairwise accuracy: cold %.4f, from the base %.4f (%d + %d trees)", pc, pw, len(base.trees), warm.Info.Trees)
	if pw <= pc {
		t.Errorf("boosting from the base: pairwise %.4f, not above cold's %.4f", pw, pc)
	}
	if len(warm.trees) != len(base.trees)+warm.Info.Trees {
		t.Errorf("%d trees, want the base's %d and %d new", len(warm.trees), len(base.trees), warm.Info.Trees)
	}
	for i, tr := range base.trees {
		if warm.trees[i] != tr {
			t.Fatalf("tree %d is not the base's", i)
		}
	}
	if _, err := TrainFrom(base, synthetic(5, 200, 6, 1, one, sumOfTwo), Params{}); err == nil {
		t.Error("a base of 8 features boosted on data of 6: no error")
	}
}
