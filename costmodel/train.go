package costmodel

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"
)

// Objective is what the trees are fit to.
type Objective uint8

const (
	// PackSum is Ansor's objective: a program's prediction is the sum of
	// its rows' outputs, and the loss is Σ_p w_p (Σ_rows f(x) - y_p)² with
	// w_p = y_p, so fast programs weigh most and failed ones (y = 0) not at
	// all. Every row of a program gets the program's gradient 2w(pred - y)
	// and hessian 2w.
	PackSum Objective = iota
	// PairwiseRank is RankNet's logistic loss log(1 + exp(-(s_i - s_j)))
	// on pairs of programs of the same task with y_i > y_j (s = the
	// program's summed prediction). Each round draws RankPairs partners per
	// program, uniformly within its task; a program's gradient and hessian
	// go to all its rows.
	PairwiseRank
)

// ParseObjective returns the objective named s: pack-sum, or pairwise
// (pairwise-rank).
func ParseObjective(s string) (Objective, error) {
	switch s {
	case "pack-sum":
		return PackSum, nil
	case "pairwise", "pairwise-rank":
		return PairwiseRank, nil
	}
	return 0, fmt.Errorf("objective %q: want pack-sum or pairwise", s)
}

func (o Objective) String() string {
	switch o {
	case PackSum:
		return "pack-sum"
	case PairwiseRank:
		return "pairwise-rank"
	}
	return fmt.Sprintf("objective(%d)", uint8(o))
}

// Metric is what early stopping watches on the validation programs.
type Metric uint8

const (
	// MetricPairwise is the pairwise ranking accuracy of the validation
	// programs (failed measurements left out); higher is better.
	MetricPairwise Metric = iota
	// MetricLoss is the objective's loss on the validation programs: the
	// weighted mean squared error for PackSum, the mean logistic loss over
	// all same-task pairs with different labels for PairwiseRank (capped at
	// 200 partners per program); lower is better.
	MetricLoss
)

// Params configures Train. A zero field takes its default (the defaults
// follow Ansor's XGBoost settings where Ansor has one); to ask for an
// actual zero, give a negative value where the field says so.
//
// One default departs from Ansor: trees stop at 31 leaves (LightGBM's
// default) within the depth limit. Uncapped depth-10 trees reached up to
// ~500 leaves on 20k programs, ranked held-out programs worse (validation
// pairwise accuracy 0.86 against 0.90 for pack-sum) and made prediction
// through leaves slower (their nodes no longer fit in cache).
type Params struct {
	Objective Objective
	Metric    Metric

	MaxDepth       int     // default 10
	MaxLeaves      int     // leaves per tree (grown best gain first); default 31, negative: 2^MaxDepth
	MinDataInLeaf  int     // rows on each side of a split; default 2
	MinChildWeight float64 // hessian on each side of a split; default 0 (also negative)
	Lambda         float64 // L2 regularization of leaf values; default 1, negative: 0
	Gamma          float64 // minimum split gain; default 0.001, negative: 0
	Eta            float64 // learning rate (shrinkage); default 0.2

	MaxRounds     int     // cap on boosting rounds; default 1000
	EarlyStopping int     // stop after this many rounds without improvement; default 50, negative: never
	ValidFraction float64 // programs held out for early stopping (from minValidPrograms = 500 programs); default 0.2, negative: none (watch the training set)
	MaxBin        int     // bins per feature, 2…256; default 64
	RankPairs     int     // partners per program per round for PairwiseRank; default 8

	Seed    uint64 // validation split and pair sampling
	Workers int    // goroutines for histograms and binning; default GOMAXPROCS
}

// DefaultParams returns the defaults spelled out.
func DefaultParams() Params { return Params{}.withDefaults() }

func (p Params) withDefaults() Params {
	if p.MaxDepth <= 0 {
		p.MaxDepth = 10
	}
	switch {
	case p.MaxLeaves == 0:
		p.MaxLeaves = 31
	case p.MaxLeaves < 0:
		p.MaxLeaves = 1 << min(p.MaxDepth, 20)
	}
	if p.MinDataInLeaf <= 0 {
		p.MinDataInLeaf = 2
	}
	p.MinChildWeight = max(p.MinChildWeight, 0)
	switch {
	case p.Lambda == 0:
		p.Lambda = 1
	case p.Lambda < 0:
		p.Lambda = 0
	}
	switch {
	case p.Gamma == 0:
		p.Gamma = 0.001
	case p.Gamma < 0:
		p.Gamma = 0
	}
	if p.Eta <= 0 {
		p.Eta = 0.2
	}
	if p.MaxRounds <= 0 {
		p.MaxRounds = 1000
	}
	if p.EarlyStopping == 0 {
		p.EarlyStopping = 50
	}
	if p.ValidFraction == 0 {
		p.ValidFraction = 0.2
	}
	if p.MaxBin <= 1 {
		p.MaxBin = 64
	}
	p.MaxBin = min(p.MaxBin, 256)
	if p.RankPairs <= 0 {
		p.RankPairs = 8
	}
	if p.Workers <= 0 {
		p.Workers = runtime.GOMAXPROCS(0)
	}
	return p
}

// Errors returned by Train.
var (
	// ErrNoData is returned when the dataset has no program with a row.
	ErrNoData = errors.New("costmodel: no training data")
)

// maxTotalBins bounds the bins over all features (see grower.ent).
const maxTotalBins = 1<<16 - 1

// minValidPrograms is the smallest dataset that gets a validation split;
// smaller ones watch the training set: on a few hundred measured programs a
// held-out fifth is too small to time the stop and too costly to lose (on
// 300 measured matmul schedules, holding it out cost 0.015 of held-out
// pairwise accuracy).
const minValidPrograms = 500

// minBoostValidPrograms is the same for boosting from a base model
// (TrainFrom).
const minBoostValidPrograms = 50

// TrainInfo reports how a model was trained.
type TrainInfo struct {
	Objective   Objective
	Rounds      int     // boosting rounds run
	Trees       int     // trees kept (the best round's)
	Valid       bool    // whether a validation split was held out
	BestMetric  float64 // the early-stopping metric at the best round
	Programs    int     // training programs (validation excluded)
	Rows        int     // training rows
	UsedFeats   int     // features with more than one bin
	Duration    time.Duration
	ValidCurves []float64 // the metric after every round
}

// String says in one line what was trained, on what, and how it stopped.
func (i TrainInfo) String() string {
	valid := "no validation split (fewer than 500 programs): stopped on the training set"
	if i.Valid {
		valid = "stopped on a held-out fifth"
	}
	return fmt.Sprintf("a %s model: %d trees of %d rounds on %d programs (%d feature rows), %s, in %v",
		i.Objective, i.Trees, i.Rounds, i.Programs, i.Rows, valid, i.Duration.Round(time.Millisecond))
}

// Train fits a model to the dataset. The result depends only on the data,
// the params and the seed (not on Workers or the machine).
func Train(data *Dataset, params Params) (*Model, error) {
	return TrainFrom(nil, data, params)
}

// TrainFrom boosts on top of base: the new trees learn what base (a
// pretrained model) gets wrong on data, starting from its predictions,
// and the returned model is base's trees followed by the new ones. A nil
// base is Train.
func TrainFrom(base *Model, data *Dataset, params Params) (*Model, error) {
	start := time.Now()
	p := params.withDefaults()
	if data == nil || data.NumRows() == 0 {
		return nil, ErrNoData
	}
	nf := data.NumFeatures()
	if base != nil && base.nf != nf {
		return nil, fmt.Errorf("costmodel: the base model takes %d features, the data has %d", base.nf, nf)
	}
	nprog := data.Len()
	y := data.Labels()
	groups := data.TaskIDs()

	// Validation split, by program.
	// Boosting from a base holds out a validation split from fewer
	// programs: the new trees must earn their place against the base
	// alone, or a few hundred programs of one model overfit it.
	least := minValidPrograms
	if base != nil {
		least = minBoostValidPrograms
	}
	isValid, hasValid := validationSplit(nprog, least, p.ValidFraction, p.Seed)
	rng := rand.New(rand.NewPCG(p.Seed, 0x7a1e))
	var trainProgs, validProgs []int
	for i := range nprog {
		if isValid[i] {
			validProgs = append(validProgs, i)
		} else {
			trainProgs = append(trainProgs, i)
		}
	}
	if !hasValid {
		validProgs = trainProgs
	}

	// Bins of every row. Histogram indices are 16-bit: at most 65535 bins
	// in all.
	if nf > maxTotalBins/2 {
		return nil, fmt.Errorf("costmodel: %d features: at most %d are supported", nf, maxTotalBins/2)
	}
	m := newBinMapper(data.flat, nf, min(p.MaxBin, maxTotalBins/nf))
	nrows := data.NumRows()
	nu := len(m.used)
	bins := make([]uint8, nrows*nu)
	const binChunk = 4096
	parallelFor((nrows+binChunk-1)/binChunk, p.Workers, func(c int) {
		lo, hi := c*binChunk, min((c+1)*binChunk, nrows)
		m.binRows(data.flat, lo, hi, bins[lo*nu:hi*nu])
	})

	var trainRows []int32
	for _, pi := range trainProgs {
		lo, hi := data.rowRange(pi)
		for r := lo; r < hi; r++ {
			trainRows = append(trainRows, int32(r))
		}
	}
	info := TrainInfo{Objective: p.Objective, Valid: hasValid, Programs: len(trainProgs), Rows: len(trainRows), UsedFeats: nu}
	model := &Model{nf: nf, names: featureNamesFor(nf), objective: p.Objective, infos: featureInfos(data.flat, nf)}
	var baseTrees []*tree
	if base != nil {
		baseTrees = base.trees
	}
	if nu == 0 || len(trainRows) == 0 {
		// Nothing to split on: one constant tree.
		model.trees = append(slices.Clip(baseTrees), constantTree(0))
		info.Trees = 1
		info.Duration = time.Since(start)
		model.Info = info
		return model, model.buildEnsemble()
	}

	g := newGrower(growParams{
		maxDepth: p.MaxDepth, maxLeaves: p.MaxLeaves, minData: p.MinDataInLeaf,
		minHess: p.MinChildWeight, lambda: p.Lambda, gamma: p.Gamma, eta: p.Eta, workers: p.Workers,
	}, m, bins, trainRows)
	g.gh = make([]gradPair, nrows)
	rowLeaf := make([]int32, nrows)
	F := make([]float64, nrows) // per-row prediction so far
	P := make([]float64, nprog) // per-program prediction so far
	if base != nil {
		rows := make([][]float32, nrows)
		for r := range rows {
			rows[r] = data.flat[r*nf : (r+1)*nf]
		}
		F = base.PredictRows(rows)
		for pi := range nprog {
			lo, hi := data.rowRange(pi)
			for r := lo; r < hi; r++ {
				P[pi] += F[r]
			}
		}
	}
	obj := newObjective(p, data, y, groups, trainProgs, rng)
	ev := newEvaluator(p, data, y, groups, validProgs)

	var trees []*tree
	best, bestRound := math.Inf(-1), -1
	if base != nil {
		// No new tree is a candidate too: base alone may rank best.
		best = ev.score(P)
	}
	for round := 0; round < p.MaxRounds; round++ {
		obj.gradients(P, g.gh, round)
		t := g.grow(rowLeaf)
		trees = append(trees, t)
		for _, r := range trainRows {
			F[r] += t.leafValue[rowLeaf[r]]
		}
		if hasValid {
			for _, pi := range validProgs {
				lo, hi := data.rowRange(pi)
				for r := lo; r < hi; r++ {
					F[r] += t.predictBinned(bins[r*nu : (r+1)*nu])
				}
			}
		}
		for pi := range nprog {
			lo, hi := data.rowRange(pi)
			s := 0.0
			for r := lo; r < hi; r++ {
				s += F[r]
			}
			P[pi] = s
		}
		score := ev.score(P) // higher is better
		info.ValidCurves = append(info.ValidCurves, ev.report(score))
		if score > best {
			best, bestRound = score, round
		}
		if p.EarlyStopping > 0 && round-bestRound >= p.EarlyStopping {
			break
		}
		if p.Objective == PackSum && len(t.feature) == 0 {
			break // no split: the gradients will not change, converged
		}
	}
	info.Rounds = len(trees)
	trees = trees[:bestRound+1]
	for _, t := range trees {
		t.usedIdx, t.splitBin = nil, nil
	}
	model.trees = append(slices.Clip(baseTrees), trees...)
	info.Trees = len(trees)
	info.BestMetric = ev.report(best)
	info.Duration = time.Since(start)
	model.Info = info
	return model, model.buildEnsemble()
}

// ValidationSplit marks the programs of a dataset of n that Train holds
// out for early stopping under params (their ValidFraction and Seed), so
// that another trainer measured against this one (bench/internal/xgboost)
// stops on the same programs. any is false where Train holds out none:
// fewer than 500 programs, or a negative ValidFraction.
func ValidationSplit(n int, params Params) (isValid []bool, any bool) {
	p := params.withDefaults()
	return validationSplit(n, minValidPrograms, p.ValidFraction, p.Seed)
}

// validationSplit marks the programs held out for early stopping: a
// seeded random fraction of them, or none when there are fewer than
// minValidPrograms (or frac <= 0).
func validationSplit(n, least int, frac float64, seed uint64) (isValid []bool, any bool) {
	isValid = make([]bool, n)
	if frac <= 0 || n < least {
		return isValid, false
	}
	perm := rand.New(rand.NewPCG(seed, 0x7e55e7a)).Perm(n)
	nv := int(math.Ceil(frac * float64(n)))
	for _, i := range perm[:min(nv, n-1)] {
		isValid[i] = true
	}
	return isValid, true
}

func constantTree(v float64) *tree {
	return &tree{leafValue: []float64{v}, leafWeight: []float64{0}, leafCount: []int64{0}, shrinkage: 1}
}

// featureNamesFor returns FeatureNames for rows of NumFeatures, else
// generic names.
func featureNamesFor(nf int) []string {
	if nf == NumFeatures {
		return FeatureNames
	}
	names := make([]string, nf)
	for i := range names {
		names[i] = fmt.Sprintf("f%d", i)
	}
	return names
}

// objective computes per-row gradients from per-program predictions.
type objective struct {
	p      Params
	data   *Dataset
	y      []float64
	progs  []int   // training programs
	byTask [][]int // training programs of each task (PairwiseRank)
	taskOf []int   // index into byTask of each training program
	gp, hp []float64
	rng    *rand.Rand
}

func newObjective(p Params, data *Dataset, y []float64, groups []int, progs []int, rng *rand.Rand) *objective {
	o := &objective{p: p, data: data, y: y, progs: progs, rng: rng,
		gp: make([]float64, data.Len()), hp: make([]float64, data.Len())}
	if p.Objective == PairwiseRank {
		pos := map[int]int{}
		o.taskOf = make([]int, len(progs))
		for k, pi := range progs {
			t, ok := pos[groups[pi]]
			if !ok {
				t = len(o.byTask)
				pos[groups[pi]] = t
				o.byTask = append(o.byTask, nil)
			}
			o.byTask[t] = append(o.byTask[t], pi)
			o.taskOf[k] = t
		}
	}
	return o
}

func (o *objective) gradients(P []float64, gh []gradPair, round int) {
	switch o.p.Objective {
	case PairwiseRank:
		for _, pi := range o.progs {
			o.gp[pi], o.hp[pi] = 0, 0
		}
		for k, i := range o.progs {
			peers := o.byTask[o.taskOf[k]]
			if len(peers) < 2 {
				continue
			}
			for range o.p.RankPairs {
				j := peers[o.rng.IntN(len(peers))]
				if o.y[i] == o.y[j] {
					continue
				}
				hi, lo := i, j
				if o.y[j] > o.y[i] {
					hi, lo = j, i
				}
				rho := 1 / (1 + math.Exp(P[hi]-P[lo])) // σ(-(s_hi - s_lo))
				o.gp[hi] -= rho
				o.gp[lo] += rho
				w := rho * (1 - rho)
				o.hp[hi] += w
				o.hp[lo] += w
			}
		}
	default: // PackSum
		for _, pi := range o.progs {
			w := o.y[pi]
			o.gp[pi] = 2 * w * (P[pi] - o.y[pi])
			o.hp[pi] = 2 * w
		}
	}
	for _, pi := range o.progs {
		lo, hi := o.data.rowRange(pi)
		for r := lo; r < hi; r++ {
			gh[r] = gradPair{o.gp[pi], o.hp[pi]}
		}
	}
}

// evaluator scores the validation programs (higher is better; report turns
// the score back into the metric's own sign).
type evaluator struct {
	p      Params
	y      []float64
	progs  []int
	s, l   []float64
	g      []int
	pairsI []int32 // MetricLoss with PairwiseRank: fixed pairs (better, worse)
	pairsJ []int32
}

func newEvaluator(p Params, data *Dataset, y []float64, groups []int, progs []int) *evaluator {
	e := &evaluator{p: p, y: y}
	for _, pi := range progs {
		if p.Metric == MetricPairwise && y[pi] <= 0 {
			continue
		}
		e.progs = append(e.progs, pi)
		e.l = append(e.l, y[pi])
		e.g = append(e.g, groups[pi])
	}
	e.s = make([]float64, len(e.progs))
	if p.Metric == MetricLoss && p.Objective == PairwiseRank {
		const maxPartners = 200
		for _, idx := range byGroup(e.g) {
			for a, i := range idx {
				for b := a + 1; b < len(idx) && b-a <= maxPartners; b++ {
					j := idx[b]
					switch {
					case e.l[i] > e.l[j]:
						e.pairsI, e.pairsJ = append(e.pairsI, int32(i)), append(e.pairsJ, int32(j))
					case e.l[j] > e.l[i]:
						e.pairsI, e.pairsJ = append(e.pairsI, int32(j)), append(e.pairsJ, int32(i))
					}
				}
			}
		}
	}
	return e
}

func (e *evaluator) score(P []float64) float64 {
	for k, pi := range e.progs {
		e.s[k] = P[pi]
	}
	if e.p.Metric == MetricPairwise {
		a := PairwiseAccuracy(e.s, e.l, e.g)
		if math.IsNaN(a) {
			return 0
		}
		return a
	}
	if e.p.Objective == PairwiseRank {
		loss := 0.0
		for k := range e.pairsI {
			loss += math.Log1p(math.Exp(-(e.s[e.pairsI[k]] - e.s[e.pairsJ[k]])))
		}
		return -loss / max(1, float64(len(e.pairsI)))
	}
	num, den := 0.0, 0.0
	for k := range e.s {
		d := e.s[k] - e.l[k]
		num += e.l[k] * d * d
		den += e.l[k]
	}
	if den == 0 {
		return 0
	}
	return -num / den
}

func (e *evaluator) report(score float64) float64 {
	if e.p.Metric == MetricLoss {
		return -score
	}
	return score
}

// featureInfos returns LightGBM's feature_infos entries: "[min:max]" of
// each feature over the rows, "none" for a feature with a single value.
func featureInfos(flat []float32, nf int) []string {
	lo := make([]float32, nf)
	hi := make([]float32, nf)
	for f := range nf {
		lo[f], hi[f] = float32(math.Inf(1)), float32(math.Inf(-1))
	}
	for r := 0; r+nf <= len(flat); r += nf {
		for f, v := range flat[r : r+nf] {
			lo[f] = min(lo[f], v)
			hi[f] = max(hi[f], v)
		}
	}
	out := make([]string, nf)
	for f := range nf {
		if !(lo[f] < hi[f]) {
			out[f] = "none"
			continue
		}
		out[f] = "[" + ftoa(float64(lo[f])) + ":" + ftoa(float64(hi[f])) + "]"
	}
	return out
}
