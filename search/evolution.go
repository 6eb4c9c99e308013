// Package search finds fast schedules: evolutionary search for one task,
// guided by a cost model and corrected by measurements (evolution.go), and
// later the task scheduler and tuning loop that tie sketch, costmodel,
// measure and records together.
//
// One round of Policy.Round, as in Ansor:
//
//	population  the best measured states (a share) + fresh samples of the sketches
//	evolve      Generations times: score by the model, roulette-select parents,
//	            mutate (or cross over), drop duplicates and invalid states
//	pick        the top predicted states never measured, plus an ε share of random ones
//	measure     lower → C → build → run (the Measurer)
//	learn       every result goes to the model, which retrains
package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
)

// Options are the knobs of the evolutionary search; DefaultOptions gives
// Ansor's.
type Options struct {
	Population      int     // states per generation
	Generations     int     // generations per round
	MutationProb    float64 // chance a selected parent is mutated (else crossed over)
	CrossoverProb   float64 // chance a child comes from crossover rather than mutation
	Epsilon         float64 // share of each batch measured at random
	MeasurePerRound int     // states measured per round
	BestShare       float64 // share of the initial population taken from the best measured states
	MinFresh        int     // fresh samples in every initial population, at least
	Seed            uint64
	// MeasureDefault puts the task's default schedule (sketch.Default, what
	// a build uses for a task without records) into its first batch, so
	// that the best record is never slower than the build's fallback.
	MeasureDefault bool
	// SlowCutoff, when positive, times a candidate whose first call lasts
	// longer than SlowCutoff × the task's best cost (and at least
	// minCutoff) with one more call instead of the full protocol: it
	// cannot be the best, and the model only needs to learn it is slow.
	SlowCutoff float64
	// Target gives the sketch rules and annotation, the mutations and the
	// lowering whose programs the cost model scores.
	Target *backend.Target
}

// DefaultOptions returns Ansor's defaults on target t, with crossover added.
func DefaultOptions(t *backend.Target) Options {
	return Options{
		Population:      2048,
		Generations:     4,
		MutationProb:    0.85,
		CrossoverProb:   0.1,
		Epsilon:         0.05,
		MeasurePerRound: 64,
		BestShare:       0.2,
		MinFresh:        50,
		Seed:            1,
		MeasureDefault:  true,
		SlowCutoff:      5,
		Target:          t,
	}
}

// CostModel scores candidate programs (higher is better) from their
// features, and learns from measurements. See costmodel for the GBDT one.
type CostModel interface {
	// Predict returns one score per program; a program is the feature rows
	// of its stores.
	Predict(programs [][][]float32) []float64
	// Update adds measured programs of a task (cost in seconds; +Inf for a
	// failed candidate) and retrains.
	Update(task string, programs [][][]float32, costs []float64) error
}

// Candidate is a state with what the search knows of it.
type Candidate struct {
	State    *schedule.State
	Key      string
	Features [][]float32
	Score    float64 // predicted
}

// Measured is a measured candidate.
type Measured struct {
	State  *schedule.State
	Result measure.Result
}

// Policy searches schedules for one task. It is not safe for concurrent use.
type Policy struct {
	Task     string // the task's workload key
	Opts     Options
	Model    CostModel
	Measurer Measurer

	sketches []*schedule.State
	first    []Candidate // measured before anything the search proposes
	seeded   []Candidate // states of other workloads replayed on this task (Seed)
	// defaultKey is the key of the task's default schedule
	// (sketch.Default), "" where it has none.
	defaultKey string
	rng        *rand.Rand
	measured   map[string]bool
	history    []Measured
	feats      map[string][][]float32 // features by state key, for the states seen lately
	times      Times
}

// Times is where a policy's rounds spent their wall time.
type Times struct {
	Search  time.Duration // Propose: sampling, evolution, the model's predictions
	Measure time.Duration // the Measurer: lower, compile, run
	Learn   time.Duration // features of the measured states and the model's retraining
}

// Add returns the sum of t and u.
func (t Times) Add(u Times) Times {
	return Times{t.Search + u.Search, t.Measure + u.Measure, t.Learn + u.Learn}
}

// Times returns the time the policy's rounds spent so far.
func (p *Policy) Times() Times { return p.times }

// Measurer measures states; *measure.Measurer is one, the remote
// measurer of measure/remote another. Every failure of a candidate is its
// Result; the error is for a batch that could not be measured at all (no
// worker, a lost connection, ctx ended), which is never recorded as any
// candidate's failure.
type Measurer interface {
	Measure(ctx context.Context, inputs []measure.Input) ([]measure.Result, error)
}

// ErrMeasure wraps the error of a batch the Measurer could not measure:
// Tune stops with it, and nothing of the batch is recorded.
var ErrMeasure = errors.New("search: the batch could not be measured")

// NewPolicy generates the sketches of the task's DAG (its initial state s0).
func NewPolicy(task string, s0 *schedule.State, opts Options, model CostModel, m Measurer) (*Policy, error) {
	if opts.Target == nil {
		return nil, errors.New("search: Options.Target is nil")
	}
	sk, err := sketch.Generate(s0, opts.Target.Sketch)
	if err != nil {
		return nil, err
	}
	if len(sk) == 0 {
		return nil, fmt.Errorf("search: task %s has no sketch", task)
	}
	p := &Policy{
		Task: task, Opts: opts, Model: model, Measurer: m,
		sketches: sk,
		rng:      rand.New(rand.NewPCG(opts.Seed, 0x5ea4c4)),
		measured: map[string]bool{},
		feats:    map[string][][]float32{},
	}
	if st, _, err := sketch.Default(s0, opts.Target.Sketch); err == nil {
		p.defaultKey = sketch.Key(st)
		if opts.MeasureDefault {
			p.first = append(p.first, Candidate{State: st, Key: p.defaultKey})
		}
	}
	return p, nil
}

// OnDefault reports whether the task's best measured schedule is its
// default one (sketch.Default, what a build without its records runs):
// the search has found nothing faster yet.
func (p *Policy) OnDefault() bool {
	best, _ := p.Best()
	return best != nil && p.defaultKey != "" && sketch.Key(best) == p.defaultKey
}

// Seed adds states to the task's initial populations: schedules of other
// workloads replayed on this task (transfer). They are scored and evolved
// like the population's own; a seed already measured is skipped.
func (p *Policy) Seed(states []*schedule.State) {
	for _, s := range states {
		if s != nil {
			p.seeded = append(p.seeded, Candidate{State: s, Key: sketch.Key(s)})
		}
	}
}

// Sketches returns the task's sketches.
func (p *Policy) Sketches() []*schedule.State { return p.sketches }

// History returns every measured candidate, in order.
func (p *Policy) History() []Measured { return p.history }

// AddMeasured tells the policy about states measured elsewhere (earlier
// runs): they are never measured again and seed the population.
func (p *Policy) AddMeasured(ms []Measured) {
	for _, m := range ms {
		p.measured[sketch.Key(m.State)] = true
		p.history = append(p.history, m)
	}
}

// Best returns the fastest measured state and its median cost, or nil.
func (p *Policy) Best() (*schedule.State, float64) {
	var best *schedule.State
	cost := math.Inf(1)
	for _, m := range p.history {
		if m.Result.Kind == measure.None {
			if c := m.Result.Median(); c < cost {
				best, cost = m.State, c
			}
		}
	}
	return best, cost
}

// Round runs one round: evolve, measure up to n states (0 means
// Opts.MeasurePerRound), update the model. It returns what it measured.
func (p *Policy) Round(ctx context.Context, n int) ([]Measured, error) {
	if n <= 0 {
		n = p.Opts.MeasurePerRound
	}
	start := time.Now()
	picks, err := p.Propose(n)
	p.times.Search += time.Since(start)
	if err != nil {
		return nil, err
	}
	return p.MeasureAndLearn(ctx, picks)
}

// ErrExhausted is returned by Propose (and Round) when the search finds no
// state it has not measured yet: a small task whose sketches give fewer
// distinct schedules than the budget, all of them measured.
var ErrExhausted = errors.New("search: every distinct schedule found has been measured")

// proposeAttempts is how many times Propose searches afresh before it
// reports ErrExhausted: evolution from a handful of states can miss the
// few neighbours left by chance.
const proposeAttempts = 3

// Propose returns up to n never-measured states to measure: the best by
// the model after evolution, and an ε share of fresh random samples. It
// returns ErrExhausted when proposeAttempts searches in a row find none.
func (p *Policy) Propose(n int) ([]Candidate, error) {
	for range proposeAttempts {
		picks, err := p.propose(n)
		if err != nil || len(picks) > 0 {
			return picks, err
		}
	}
	return nil, fmt.Errorf("%w (%d measured)", ErrExhausted, len(p.measured))
}

func (p *Policy) propose(n int) ([]Candidate, error) {
	pop := p.initPopulation()
	if len(pop) == 0 {
		return nil, errors.New("search: no valid state could be sampled")
	}
	top := newTopK(n)
	p.score(pop)
	for _, c := range pop {
		top.offer(c, p.measured)
	}
	for g := 0; g < p.Opts.Generations; g++ {
		pop = p.evolve(pop)
		p.score(pop)
		for _, c := range pop {
			top.offer(c, p.measured)
		}
	}
	nRandom := int(math.Round(p.Opts.Epsilon * float64(n)))
	var picks []Candidate
	seen := map[string]bool{}
	for _, c := range p.first {
		if !p.measured[c.Key] && len(picks) < n-nRandom {
			seen[c.Key] = true
			picks = append(picks, c)
		}
	}
	for _, c := range top.sorted() {
		if len(picks) >= n-nRandom {
			break
		}
		if !seen[c.Key] {
			seen[c.Key] = true
			picks = append(picks, c)
		}
	}
	for tries := 0; len(picks) < n && tries < 20*n; tries++ {
		c, ok := p.sample()
		if !ok || seen[c.Key] || p.measured[c.Key] {
			continue
		}
		seen[c.Key] = true
		picks = append(picks, c)
	}
	return picks, nil
}

// RandomRound measures n fresh random samples of the sketches, never
// measured before: random search, the baseline the model must beat.
func (p *Policy) RandomRound(ctx context.Context, n int) ([]Measured, error) {
	var picks []Candidate
	seen := map[string]bool{}
	for tries := 0; len(picks) < n && tries < 50*n; tries++ {
		c, ok := p.sample()
		if !ok || seen[c.Key] || p.measured[c.Key] {
			continue
		}
		if c.Features = p.lowerFeatures(c.State); c.Features == nil {
			continue
		}
		seen[c.Key] = true
		picks = append(picks, c)
	}
	if len(picks) == 0 {
		return nil, errors.New("search: no valid state could be sampled")
	}
	return p.MeasureAndLearn(ctx, picks)
}

// minCutoff is the least slow-candidate cutoff: below it, first calls are
// dominated by page faults and cold caches, and the full protocol is cheap.
const minCutoff = time.Millisecond

// MeasureAndLearn measures the candidates, records them, and updates the
// model with the results.
func (p *Policy) MeasureAndLearn(ctx context.Context, cands []Candidate) ([]Measured, error) {
	var cutoff time.Duration
	if _, best := p.Best(); p.Opts.SlowCutoff > 0 && !math.IsInf(best, 1) {
		cutoff = max(time.Duration(p.Opts.SlowCutoff*best*float64(time.Second)), minCutoff)
	}
	inputs := make([]measure.Input, len(cands))
	for i, c := range cands {
		inputs[i] = measure.Input{State: c.State, Cutoff: cutoff}
	}
	start := time.Now()
	results, err := p.Measurer.Measure(ctx, inputs)
	learnStart := time.Now()
	p.times.Measure += learnStart.Sub(start)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMeasure, err)
	}
	if len(results) != len(inputs) {
		return nil, fmt.Errorf("%w: %d results for %d candidates", ErrMeasure, len(results), len(inputs))
	}
	defer func() { p.times.Learn += time.Since(learnStart) }()
	out := make([]Measured, len(cands))
	programs := make([][][]float32, len(cands))
	costs := make([]float64, len(cands))
	for i, c := range cands {
		out[i] = Measured{State: c.State, Result: results[i]}
		p.measured[c.Key] = true
		programs[i] = p.features(c)
		costs[i] = results[i].Cost()
	}
	if ctx.Err() != nil {
		// Results of a canceled batch are not trustworthy measurements.
		return nil, ctx.Err()
	}
	p.history = append(p.history, out...)
	if err := p.Model.Update(p.Task, programs, costs); err != nil {
		return out, fmt.Errorf("search: update cost model: %w", err)
	}
	return out, nil
}

// initPopulation takes the best measured states (a share of the
// population) and fills the rest with fresh samples.
func (p *Policy) initPopulation() []Candidate {
	size := p.Opts.Population
	var pop []Candidate
	seen := map[string]bool{}
	best := append([]Measured(nil), p.history...)
	sort.SliceStable(best, func(i, j int) bool { return best[i].Result.Median() < best[j].Result.Median() })
	nBest := min(int(p.Opts.BestShare*float64(size)), size-p.Opts.MinFresh)
	for _, m := range best {
		if len(pop) >= nBest || m.Result.Kind != measure.None {
			break
		}
		c := Candidate{State: m.State, Key: sketch.Key(m.State)}
		if !seen[c.Key] {
			seen[c.Key] = true
			pop = append(pop, c)
		}
	}
	for _, c := range p.seeded {
		if len(pop) >= size/2 { // the rest of the population stays fresh
			break
		}
		if !seen[c.Key] && !p.measured[c.Key] {
			seen[c.Key] = true
			pop = append(pop, c)
		}
	}
	// A batch that brings no new state means the sketches give few
	// distinct states: drawing more would find the same ones again.
	for tries := 0; len(pop) < size && tries < 4*size; {
		batch := size - len(pop)
		tries += batch
		fresh := 0
		for _, c := range p.samples(batch) {
			if c.State != nil && !seen[c.Key] && len(pop) < size {
				seen[c.Key] = true
				pop = append(pop, c)
				fresh++
			}
		}
		if fresh == 0 {
			break
		}
	}
	return pop
}

// samples draws n random states in parallel; a failed draw is a Candidate
// with a nil State. Each draw has its own generator seeded from p.rng in
// order, so the result does not depend on how the work is scheduled.
func (p *Policy) samples(n int) []Candidate {
	seeds := p.seeds(n)
	out := make([]Candidate, n)
	parallel(n, func(i int) {
		rng := rand.New(rand.NewPCG(seeds[i], uint64(i)))
		sk := p.sketches[rng.IntN(len(p.sketches))]
		if s, err := sketch.Sample(rng, sk, p.Opts.Target.Sketch); err == nil {
			out[i] = Candidate{State: s, Key: sketch.Key(s)}
		}
	})
	return out
}

// seeds draws n seeds from p.rng, one per parallel job.
func (p *Policy) seeds(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = p.rng.Uint64()
	}
	return out
}

// parallel runs f(0) … f(n-1) on every CPU.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	work := make(chan int)
	for range min(n, runtime.NumCPU()) {
		wg.Go(func() {
			for i := range work {
				f(i)
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}

// sample draws a random complete state from a random sketch.
func (p *Policy) sample() (Candidate, bool) {
	sk := p.sketches[p.rng.IntN(len(p.sketches))]
	s, err := sketch.Sample(p.rng, sk, p.Opts.Target.Sketch)
	if err != nil {
		return Candidate{}, false
	}
	return Candidate{State: s, Key: sketch.Key(s)}, true
}

// evolve makes the next generation: parents drawn by roulette on the
// predicted score, each child a mutation (or a crossover of two parents);
// duplicates and states that do not lower are dropped.
func (p *Policy) evolve(pop []Candidate) []Candidate {
	weights := make([]float64, len(pop))
	total := 0.0
	minScore := math.Inf(1)
	for _, c := range pop {
		minScore = math.Min(minScore, c.Score)
	}
	for i, c := range pop {
		weights[i] = c.Score - minScore + 1e-9
		total += weights[i]
	}
	pick := func() Candidate {
		x := p.rng.Float64() * total
		for i, w := range weights {
			if x < w {
				return pop[i]
			}
			x -= w
		}
		return pop[len(pop)-1]
	}
	// Parents and the kind of each child are drawn in order from p.rng;
	// the children are then made in parallel, each with a generator of its
	// own, and kept in order: the result does not depend on scheduling.
	type job struct {
		parent, other Candidate
		op            float64
		seed          uint64
	}
	// A population smaller than Opts.Population (a task with few distinct
	// states) grows back to it, so that its neighbourhood is explored; a
	// batch of children that brings no new state ends the growing.
	size := max(len(pop), p.Opts.Population)
	next := make([]Candidate, 0, size)
	seen := map[string]bool{}
	for tries := 0; len(next) < size && tries < 3*size; {
		jobs := make([]job, size-len(next))
		tries += len(jobs)
		for i := range jobs {
			jobs[i] = job{parent: pick(), op: p.rng.Float64(), seed: p.rng.Uint64()}
			if jobs[i].op < p.Opts.CrossoverProb {
				jobs[i].other = pick()
			}
		}
		children := make([]Candidate, len(jobs))
		parallel(len(jobs), func(i int) {
			j := jobs[i]
			rng := rand.New(rand.NewPCG(j.seed, uint64(i)))
			var child *schedule.State
			var err error
			switch {
			case j.op < p.Opts.CrossoverProb:
				child, err = sketch.Crossover(rng, j.parent.State, j.other.State)
			case j.op < p.Opts.CrossoverProb+p.Opts.MutationProb:
				child, err = sketch.Mutate(rng, j.parent.State, p.Opts.Target.Mutations, p.Opts.Target.Sketch)
			default:
				child = j.parent.State
			}
			if err != nil || child == nil {
				return
			}
			children[i] = Candidate{State: child, Key: sketch.Key(child)}
			if children[i].Key == j.parent.Key {
				children[i] = j.parent
			}
		})
		fresh := 0
		for _, c := range children {
			if c.State == nil || seen[c.Key] {
				continue
			}
			seen[c.Key] = true
			next = append(next, c)
			fresh++
		}
		if fresh == 0 {
			break
		}
	}
	return next
}

// score predicts every candidate's score, extracting the features of the
// new ones in parallel. Candidates that fail to lower get -Inf.
func (p *Policy) score(pop []Candidate) {
	feats := make([][][]float32, len(pop))
	var todo []int
	for i := range pop {
		if f, ok := p.feats[pop[i].Key]; ok {
			feats[i] = f
		} else {
			todo = append(todo, i)
		}
	}
	parallel(len(todo), func(k int) {
		i := todo[k]
		feats[i] = p.lowerFeatures(pop[i].State)
	})
	fresh := map[string][][]float32{}
	for i := range pop {
		pop[i].Features = feats[i]
		fresh[pop[i].Key] = feats[i]
	}
	p.feats = fresh // keep the features of the current generation only
	scores := p.Model.Predict(feats)
	for i := range pop {
		pop[i].Score = scores[i]
		if feats[i] == nil {
			pop[i].Score = math.Inf(-1)
		}
	}
}

func (p *Policy) features(c Candidate) [][]float32 {
	if c.Features != nil {
		return c.Features
	}
	return p.lowerFeatures(c.State)
}

// lowerFeatures lowers a state for the target and extracts its program
// features; nil when it does not lower.
func (p *Policy) lowerFeatures(s *schedule.State) [][]float32 {
	rows, err := p.Opts.Target.Features(s)
	if err != nil {
		return nil
	}
	return rows
}

// topK keeps the k best-scored candidates never measured, by key.
type topK struct {
	k    int
	byID map[string]Candidate
}

func newTopK(k int) *topK { return &topK{k: k, byID: map[string]Candidate{}} }

func (t *topK) offer(c Candidate, measured map[string]bool) {
	if measured[c.Key] || math.IsInf(c.Score, -1) {
		return
	}
	if old, ok := t.byID[c.Key]; ok && old.Score >= c.Score {
		return
	}
	t.byID[c.Key] = c
	if len(t.byID) > 4*t.k {
		t.prune()
	}
}

func (t *topK) prune() {
	s := t.sorted()
	t.byID = map[string]Candidate{}
	for _, c := range s[:min(t.k, len(s))] {
		t.byID[c.Key] = c
	}
}

func (t *topK) sorted() []Candidate {
	out := make([]Candidate, 0, len(t.byID))
	for _, c := range t.byID {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Key < out[j].Key
	})
	if len(out) > t.k {
		out = out[:t.k]
	}
	return out
}
