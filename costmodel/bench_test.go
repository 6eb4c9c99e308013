package costmodel

import (
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te/tetest"
	"github.com/tessera-ml/tessera/tir"
)

var (
	bigOnce sync.Once
	bigData *Dataset
)

// realisticDataset extracts features of n random schedules of several
// example DAGs (one task each) with a synthetic cost: a fixed function of
// the features plus noise, so that training has something to learn.
func realisticDataset(n int) *Dataset {
	dags := tetest.DAGs()
	names := []string{"matmul", "conv", "conv_bias_relu", "softmax", "batch_matmul", "max_pool", "layernorm", "conv_strided"}
	slices.Sort(names)
	d := &Dataset{}
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range n {
		name := names[i%len(names)]
		s0 := schedule.NewState(dags[name])
		_, f := schedtest.RandomLowerable(rng, s0, 10)
		rows := Extract(f, noMachine)
		cost := 1.0
		for _, r := range rows {
			cost += float64(r[fFloatMul]) + 0.5*float64(r[fBuffers+bLines]) - 0.3*float64(r[fVec+annLen]) + 0.1*float64(r[fOuter+2])
		}
		cost *= 1 + 0.1*rng.Float64()
		d.Add(name, rows, cost)
	}
	return d
}

func BenchmarkTrain20k(b *testing.B) {
	bigOnce.Do(func() { bigData = realisticDataset(20000) })
	b.Logf("%d programs, %d rows", bigData.Len(), bigData.NumRows())
	for _, obj := range []Objective{PackSum, PairwiseRank} {
		b.Run(obj.String(), func(b *testing.B) {
			for b.Loop() {
				cpu0 := cpuTime()
				m, err := Train(bigData, Params{Objective: obj})
				if err != nil {
					b.Fatal(err)
				}
				b.Logf("%v: %d rounds, %d trees, %d used features, best metric %.4f, wall %v, CPU %v",
					obj, m.Info.Rounds, m.Info.Trees, m.Info.UsedFeats, m.Info.BestMetric, m.Info.Duration, cpuTime()-cpu0)
			}
		})
	}
}

// BenchmarkHistogram builds the root histogram of the 20k-program dataset.
func BenchmarkHistogram(b *testing.B) {
	bigOnce.Do(func() { bigData = realisticDataset(20000) })
	d := bigData
	m := newBinMapper(d.flat, d.nf, 64)
	nu := len(m.used)
	bins := make([]uint8, d.NumRows()*nu)
	m.binRows(d.flat, 0, d.NumRows(), bins)
	rows := make([]int32, d.NumRows())
	for i := range rows {
		rows[i] = int32(i)
	}
	for _, w := range []int{1, 2} {
		b.Run(string(rune('0'+w))+"workers", func(b *testing.B) {
			g := newGrower(growParams{workers: w}, m, bins, rows)
			g.gh = make([]gradPair, len(rows))
			h := make([]histBin, m.totalBins)
			for b.Loop() {
				g.build(h, rows, histBin{})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(rows)*nu), "ns/update")
		})
	}
}

// BenchmarkSearchRound times the cost model's share of one search round:
// features of 2048 × 4 lowered candidates and their batched prediction by
// a model trained on 4000 programs.
func BenchmarkSearchRound(b *testing.B) {
	train := realisticDataset(4000)
	m, err := Train(train, Params{})
	if err != nil {
		b.Fatal(err)
	}
	dags := tetest.DAGs()
	var fs []*tir.PrimFunc
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range 2048 * 4 {
		name := []string{"conv", "matmul"}[i%2]
		_, f := schedtest.RandomLowerable(rng, schedule.NewState(dags[name]), 10)
		fs = append(fs, f)
	}
	b.Logf("model: %d trees", m.NumTrees())
	for b.Loop() {
		progs := ExtractAll(fs, noMachine, 0)
		m.Predict(progs)
	}
}

func BenchmarkPredict(b *testing.B) {
	bigOnce.Do(func() { bigData = realisticDataset(20000) })
	m, err := Train(bigData, Params{MaxRounds: 200, EarlyStopping: -1})
	if err != nil {
		b.Fatal(err)
	}
	progs := bigData.Programs()[:8192]
	rows := 0
	for _, p := range progs {
		rows += len(p)
	}
	b.Logf("%d trees, %d programs, %d rows", m.NumTrees(), len(progs), rows)
	for b.Loop() {
		m.Predict(progs)
	}
}

// BenchmarkPredictGo is BenchmarkPredict through the in-Go walker, for
// comparison with leaves.
func BenchmarkPredictGo(b *testing.B) {
	bigOnce.Do(func() { bigData = realisticDataset(20000) })
	m, err := Train(bigData, Params{MaxRounds: 200, EarlyStopping: -1})
	if err != nil {
		b.Fatal(err)
	}
	progs := bigData.Programs()[:8192]
	for b.Loop() {
		m.PredictGo(progs)
	}
}

// cpuTime returns the process's user + system CPU time: on a shared
// machine it says what a run costs when wall time does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
