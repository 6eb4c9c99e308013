package assemble

import (
	"errors"
	"fmt"
	"io"

	"github.com/tessera-ml/tessera/internal/chrometrace"
)

// WriteTrace writes the profile of the report as a Chrome trace (package
// chrometrace: Perfetto and chrome://tracing open it): one slice per
// step of the executor, laid end to end in the order it runs them on one
// track, each as long as the step's mean time; its args are the step's
// task, group and ops, its time, the time of the task's record
// (record_ms; absent for a default schedule), their ratio and its share
// of the steps. The trace's metadata (otherData) holds the run's figures.
func (r *BenchReport) WriteTrace(w io.Writer) error {
	p := r.Profile
	if p == nil {
		return errors.New("a trace needs the profile of the steps (--profile)")
	}
	const pid, tid = 1, 1
	what := "mean time of each step"
	if p.PerSample {
		what += fmt.Sprintf(" per sample (batch %s=%d)", r.BatchName, r.Batch)
	}
	tr := chrometrace.Trace{
		DisplayTimeUnit: "ms",
		Events: []chrometrace.Event{
			chrometrace.ProcessName(pid, fmt.Sprintf("tune bench %s (%s)", r.Dir, r.Model)),
			chrometrace.ThreadName(pid, tid, fmt.Sprintf("executor steps: %s over %d runs, %d threads", what, len(r.RunsMs), r.Threads)),
		},
		OtherData: map[string]any{
			"model": r.Model, "dir": r.Dir, "target": r.Target, "threads": r.Threads, "batch": r.Batch,
			"runs": len(r.RunsMs), "min_ms": r.MinMs, "median_ms": r.MedianMs, "mean_run_ms": p.MeanRunMs,
			"steps_ms": p.StepsMs, "outside_ms": p.OutsideMs, "per_sample": p.PerSample,
		},
	}
	// Start times add up whole nanoseconds, so that each slice starts
	// exactly where the one before it ends.
	var ns int64
	for _, s := range p.Steps {
		dur := int64(s.Ms*1e6 + 0.5)
		args := map[string]any{"step": s.Step, "task": s.Task, "group": s.Group, "ops": s.Ops, "ms": s.Ms, "share": s.Share}
		if s.RecordMs != nil {
			args["record_ms"] = *s.RecordMs
		}
		if s.Ratio != nil {
			args["ratio"] = *s.Ratio
		}
		ev := chrometrace.Complete(fmt.Sprintf("step %d: %s", s.Step, s.Ops), pid, tid, float64(ns)/1e3, float64(dur)/1e3, args)
		ev.Cat = "step"
		tr.Events = append(tr.Events, ev)
		ns += dur
	}
	return tr.Write(w)
}
