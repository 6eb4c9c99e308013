package xgboost

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/tessera-ml/tessera/costmodel"
)

// synthetic makes n programs of one to three rows of nf random features
// over tasks tasks, each program's throughput the sum of its rows' two
// features 0 and 3: an easy problem for a ranking.
func synthetic(seed uint64, n, nf, tasks int) *costmodel.Dataset {
	rng := rand.New(rand.NewPCG(seed, 1))
	d := &costmodel.Dataset{}
	for i := range n {
		rows := make([][]float32, 1+rng.IntN(3))
		tp := 0.0
		for r := range rows {
			rows[r] = make([]float32, nf)
			for f := range rows[r] {
				rows[r][f] = float32(rng.Float64())
			}
			tp += float64(rows[r][0]) + float64(rows[r][3]) + 0.05
		}
		d.Add(string(rune('a'+i%tasks)), rows, 1/tp)
	}
	return d
}

func TestPredict(t *testing.T) {
	train := synthetic(11, 600, 12, 3)
	test := synthetic(12, 300, 12, 3)
	m, err := costmodel.Train(train, costmodel.Params{})
	if err != nil {
		t.Fatal(err)
	}
	ours := costmodel.PairwiseAccuracy(m.Predict(test.Programs()), test.Labels(), test.TaskIDs())
	for _, obj := range []string{"reg:squarederror", "rank:pairwise"} {
		s, info, err := Predict(context.Background(), train, test, Options{Objective: obj, MaxRounds: 100, RoundStep: 20})
		if errors.Is(err, ErrNotInstalled) {
			t.Fatalf("%v: scripts/deps.sh installs Debian's xgboost", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		acc := costmodel.PairwiseAccuracy(s, test.Labels(), test.TaskIDs())
		t.Logf("%s: held-out pairwise %.4f with %d trees (validation %.4f, train %v); ours %.4f", obj, acc, info.Trees, info.ValidAcc, info.TrainTime, ours)
		if acc < 0.9 {
			t.Errorf("%s: xgboost pairwise accuracy %.4f on an easy problem: the data is written wrong", obj, acc)
		}
	}
	if acc, err := Pairwise(train, test); err != nil || acc < 0.9 {
		t.Errorf("Pairwise = %v, %v", acc, err)
	}
}
