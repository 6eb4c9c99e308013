package costmodel

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
)

func TestXGBoostCompare(t *testing.T) {
	rowsPer := func(r *rand.Rand) int { return 1 + r.IntN(3) }
	train := synthetic(11, 600, 12, 3, rowsPer, sumOfTwo)
	test := synthetic(12, 300, 12, 3, rowsPer, sumOfTwo)
	m, err := Train(train, Params{})
	if err != nil {
		t.Fatal(err)
	}
	ours := PairwiseAccuracy(m.Predict(test.Programs()), test.Labels(), test.TaskIDs())
	for _, obj := range []string{"reg:squarederror", "rank:pairwise"} {
		s, info, err := XGBoostPredict(context.Background(), train, test, XGBoostOptions{Objective: obj, MaxRounds: 100, RoundStep: 20})
		if errors.Is(err, ErrNoXGBoost) {
			t.Fatalf("%v: scripts/deps.sh installs Debian's xgboost", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		acc := PairwiseAccuracy(s, test.Labels(), test.TaskIDs())
		t.Logf("%s: held-out pairwise %.4f with %d trees (validation %.4f, train %v); ours %.4f", obj, acc, info.Trees, info.ValidAcc, info.TrainTime, ours)
		if acc < 0.9 {
			t.Errorf("%s: xgboost pairwise accuracy %.4f on an easy problem: the data is written wrong", obj, acc)
		}
	}
	if acc, err := XGBoostPairwise(train, test); err != nil || acc < 0.9 {
		t.Errorf("XGBoostPairwise = %v, %v", acc, err)
	}
}
