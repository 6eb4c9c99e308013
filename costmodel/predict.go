package costmodel

import (
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/dmitryikh/leaves"
)

// Predictor scores programs: one score per program, higher meaning faster.
// A program is its feature rows (Extract); a program without rows scores 0
// under a trained model.
type Predictor interface {
	Predict(programs [][][]float32) []float64
}

// Model is a trained (or loaded) ensemble of regression trees. Prediction
// goes through leaves; the trees themselves are kept to save the model and
// for the in-Go walker (PredictGo). A Model is safe for concurrent use.
type Model struct {
	nf        int
	names     []string
	infos     []string
	objective Objective
	trees     []*tree
	ens       *leaves.Ensemble

	// Info describes the training run (zero for a loaded model).
	Info TrainInfo
}

// NumFeatures returns the row length the model expects.
func (m *Model) NumFeatures() int { return m.nf }

// NumTrees returns the number of trees.
func (m *Model) NumTrees() int { return len(m.trees) }

// Objective returns the objective the model was trained with.
func (m *Model) Objective() Objective { return m.objective }

// predictChunk is the number of rows one goroutine converts to float64 and
// hands to leaves' PredictDense at a time.
const predictChunk = 512

var predictBufs = sync.Pool{New: func() any { return new([]float64) }}

// Predict returns one score per program: the sum of the model's outputs on
// its rows, computed by leaves' batched PredictDense on all CPUs.
//
// Precondition: every row has NumFeatures values.
func (m *Model) Predict(programs [][][]float32) []float64 {
	rowsOut := m.PredictRows(flattenPrograms(programs))
	out := make([]float64, len(programs))
	k := 0
	for i, p := range programs {
		s := 0.0
		for range p {
			s += rowsOut[k]
			k++
		}
		out[i] = s
	}
	return out
}

func flattenPrograms(programs [][][]float32) [][]float32 {
	n := 0
	for _, p := range programs {
		n += len(p)
	}
	rows := make([][]float32, 0, n)
	for _, p := range programs {
		rows = append(rows, p...)
	}
	return rows
}

// PredictRows returns the model's output for each row: chunks of rows are
// converted to a dense float64 matrix and predicted by leaves, one chunk
// per goroutine at a time, on GOMAXPROCS goroutines.
func (m *Model) PredictRows(rows [][]float32) []float64 {
	out := make([]float64, len(rows))
	nf := m.nf
	nchunks := (len(rows) + predictChunk - 1) / predictChunk
	parallelFor(nchunks, runtime.GOMAXPROCS(0), func(c int) {
		lo, hi := c*predictChunk, min((c+1)*predictChunk, len(rows))
		bp := predictBufs.Get().(*[]float64)
		if cap(*bp) < (hi-lo)*nf {
			*bp = make([]float64, predictChunk*nf)
		}
		v := (*bp)[:(hi-lo)*nf]
		for k, r := range rows[lo:hi] {
			dst := v[k*nf : (k+1)*nf]
			for j, x := range r[:nf] {
				dst[j] = float64(x)
			}
		}
		if err := m.ens.PredictDense(v, hi-lo, nf, out[lo:hi], 0, 1); err != nil {
			// Only a row-length mismatch can fail, which the precondition
			// excludes.
			panic("costmodel: leaves: " + err.Error())
		}
		predictBufs.Put(bp)
	})
	return out
}

// PredictGo is Predict computed by walking the trees in Go instead of
// through leaves; the two agree exactly (tests hold them to it).
func (m *Model) PredictGo(programs [][][]float32) []float64 {
	out := make([]float64, len(programs))
	for i, p := range programs {
		s := 0.0
		for _, r := range p {
			s += m.predictRow(r)
		}
		out[i] = s
	}
	return out
}

// predictRow sums the trees in order, as leaves does.
func (m *Model) predictRow(r []float32) float64 {
	s := 0.0
	for _, t := range m.trees {
		s += t.predict(r)
	}
	return s
}

// RandomModel predicts uniform random scores in [0, 1): Ansor's stand-in
// until enough measurements exist to train (see MinTrainPrograms). It is
// deterministic for a seed and safe for concurrent use.
type RandomModel struct {
	mu  sync.Mutex
	rng *rand.Rand
}

// NewRandomModel returns a random predictor with the given seed.
func NewRandomModel(seed uint64) *RandomModel {
	return &RandomModel{rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

// Predict returns one random score per program.
func (r *RandomModel) Predict(programs [][][]float32) []float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]float64, len(programs))
	for i := range out {
		out[i] = r.rng.Float64()
	}
	return out
}

// MinTrainPrograms is how many successful measurements Ansor waits for
// before it trains a model instead of predicting at random.
const MinTrainPrograms = 100

// TrainOrRandom trains a model when the dataset has at least
// MinTrainPrograms successful measurements, and returns a RandomModel
// seeded with params.Seed otherwise.
func TrainOrRandom(data *Dataset, params Params) (Predictor, error) {
	if data.Successes() < MinTrainPrograms {
		return NewRandomModel(params.Seed), nil
	}
	m, err := Train(data, params)
	if err != nil {
		return nil, err
	}
	return m, nil
}

var (
	_ Predictor = (*Model)(nil)
	_ Predictor = (*RandomModel)(nil)
)
