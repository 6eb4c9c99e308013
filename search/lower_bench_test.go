package search

import (
	"math/rand/v2"
	"testing"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/te"
)

// BenchmarkLowerFeatures times lowering and feature extraction of 512
// sampled GEMM 512³ states: the inner cost of every search generation.
func BenchmarkLowerFeatures(b *testing.B) {
	a := te.Placeholder("A", 512, 512)
	bb := te.Placeholder("B", 512, 512)
	c, _ := te.MatMul("C", a, bb)
	d, _ := te.NewDAG(c)
	opts := DefaultOptions(testTarget())
	opts.Population = 512
	model := &randomModel{rng: rand.New(rand.NewPCG(1, 1))}
	p, _ := NewPolicy("k", schedule.NewState(d), opts, model, nil)
	pop := p.initPopulation()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, c := range pop {
			p.lowerFeatures(c.State)
		}
	}
}
