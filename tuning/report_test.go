package tuning

import (
	"math"
	"testing"

	"github.com/tessera-ml/tessera/search"
)

// TestBudgetLine: how the trials fell on the tasks and the share of the
// estimate still on default schedules (weight × best over the objective),
// leaving out a task a faster rival beats, and no share while the
// estimate is incomplete.
func TestBudgetLine(t *testing.T) {
	a, b, c := &search.Task{Key: "a", Weight: 2}, &search.Task{Key: "b", Weight: 1}, &search.Task{Key: "c", Weight: 1}
	rival := &search.Task{Key: "r", Weight: 1}
	slow := &search.Task{Key: "s", Weight: 1, Rivals: []*search.Task{rival}} // another algorithm of rival's group
	for _, tc := range []struct {
		name string
		sum  search.Summary
		want string
	}{
		{"none", search.Summary{}, ""},
		{"two of three on default", search.Summary{Objective: 0.010, Complete: true, Tasks: []search.TaskSummary{
			{Task: a, Trials: 4, Best: 0.002, OnDefault: true}, // 2 × 2 ms of 10: 40%
			{Task: b, Trials: 60, Prior: 4, Best: 0.005},       // improved
			{Task: c, Trials: 8, Best: 0.001, OnDefault: true}, // 10%
		}}, "trials per task: least 4, median 8, most 64; on their default schedule: 2 of 3 tasks, 50.0% of the estimated latency"},
		{"a beaten task has no share", search.Summary{Objective: 0.010, Complete: true, Tasks: []search.TaskSummary{
			{Task: slow, Trials: 4, Best: 0.003, OnDefault: true},
			{Task: rival, Trials: 4, Best: 0.001},
		}}, "trials per task: least 4, median 4, most 4; on their default schedule: 1 of 2 tasks, 0.0% of the estimated latency"},
		{"incomplete", search.Summary{Objective: 0.004, Tasks: []search.TaskSummary{
			{Task: a, Trials: 4, Best: 0.002, OnDefault: true},
			{Task: b, Trials: 0, Best: math.Inf(1)},
		}}, "trials per task: least 0, median 4, most 4; on their default schedule: 1 of 2 tasks"},
	} {
		bests := map[*search.Task]float64{}
		for _, ts := range tc.sum.Tasks {
			bests[ts.Task] = ts.Best
		}
		if got := budgetLine(tc.sum, bests); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
