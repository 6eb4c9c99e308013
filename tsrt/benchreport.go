package tsrt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"text/tabwriter"

	"github.com/tessera-ml/tessera/internal/chrometrace"
)

// The report of tune bench: the timed runs of a built model and,
// profiled, every step of its executor against the record its kernel was
// compiled from (the manifest's Tasks), as text (BenchReport.Write), JSON
// (its fields) or a Chrome trace (WriteTrace).

// BenchReport is what tune bench measures of a built model: its timed
// runs and, profiled, every step. Times are in milliseconds; the JSON
// names are stable (tune bench --json).
type BenchReport struct {
	Model   string `json:"model"` // the model file's base name (Manifest.Model)
	Dir     string `json:"dir"`
	Target  string `json:"target"`
	Threads int    `json:"threads"`
	Warmup  int    `json:"warmup"`
	// Batch is the batch the runs ran at: 1 for a model without a
	// dynamic batch (BatchName is the batch's name, N, of one with);
	// Dim the value of the dimension given at run time (0 for a model
	// without one).
	Batch     int       `json:"batch"`
	BatchName string    `json:"batch_name,omitempty"`
	Dim       int       `json:"dim,omitempty"`
	MinMs     float64   `json:"min_ms"`
	MedianMs  float64   `json:"median_ms"`
	MeanMs    float64   `json:"mean_ms"`
	RunsMs    []float64 `json:"runs_ms"` // every timed run, in order
	// Profile is the time of every step, with --profile.
	Profile *StepsProfile `json:"profile,omitempty"`
}

// StepsProfile is the mean time of every step of the executor (a kernel
// call, Manifest.Steps) next to the time its task's record was measured
// at (alone, as tuning measured it).
type StepsProfile struct {
	// PerSample says that the times are per sample: of a model built over
	// a dynamic batch run at a batch above 1, whose steps run once per
	// sample (a record measures one sample).
	PerSample bool       `json:"per_sample"`
	Steps     []StepTime `json:"steps"` // in the order the executor runs them
	StepsMs   float64    `json:"steps_ms"`
	// OutsideMs is the mean run less the steps: copies, the executor, the
	// clock.
	OutsideMs float64 `json:"outside_ms"`
	MeanRunMs float64 `json:"mean_run_ms"`
}

// StepTime is one step's mean time in the model.
type StepTime struct {
	Step  int     `json:"step"`
	Group int     `json:"group"`
	Task  int     `json:"task"`
	Ops   string  `json:"ops"`
	Ms    float64 `json:"ms"`
	// RecordMs is the time of the record the task's kernel was compiled
	// from (Manifest.Tasks[i].Record.Cost); nil for a default schedule.
	RecordMs *float64 `json:"record_ms"`
	// Ratio is Ms over RecordMs: above 1, the step is slower in the model
	// than its record (cold caches, other threads' traffic); nil without a
	// record.
	Ratio *float64 `json:"ratio"`
	Share float64  `json:"share"` // percent of the steps' sum
}

// Profile returns the profile of the steps of the built model: steps[i]
// is the mean seconds of Steps[i] (Model.Profile), runs the seconds of
// the timed runs.
func (m *Manifest) Profile(steps, runs []float64) *StepsProfile {
	p := &StepsProfile{}
	for _, t := range runs {
		p.MeanRunMs += t * 1e3 / float64(len(runs))
	}
	for _, t := range steps {
		p.StepsMs += t * 1e3
	}
	p.OutsideMs = p.MeanRunMs - p.StepsMs
	for i, st := range m.Steps {
		s := StepTime{Step: i, Group: st.Group, Task: st.Task, Ops: st.Ops, Ms: steps[i] * 1e3}
		if st.Task >= 0 && st.Task < len(m.Tasks) && m.Tasks[st.Task].Record != nil {
			c := m.Tasks[st.Task].Record.Cost * 1e3
			s.RecordMs = &c
			if c > 0 {
				r := s.Ms / c
				s.Ratio = &r
			}
		}
		if p.StepsMs > 0 {
			s.Share = 100 * s.Ms / p.StepsMs
		}
		p.Steps = append(p.Steps, s)
	}
	return p
}

// Write writes the table of the steps (step, task, ms, record ms, ratio,
// share, ops), the sum over the steps, and the rest of the mean run.
func (p *StepsProfile) Write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\ttask\tms\trecord ms\tratio\tshare\t ops")
	for _, s := range p.Steps {
		rec, ratio := "-", "-"
		if s.RecordMs != nil {
			rec = fmt.Sprintf("%.4f", *s.RecordMs)
		}
		if s.Ratio != nil {
			ratio = fmt.Sprintf("%.2f", *s.Ratio)
		}
		fmt.Fprintf(tw, "%d\t%d\t%.4f\t%s\t%s\t%.1f%%\t %s\n", s.Step, s.Task, s.Ms, rec, ratio, s.Share, s.Ops)
	}
	tw.Flush()
	fmt.Fprintf(w, "steps sum ms = %.3f\n", p.StepsMs)
	fmt.Fprintf(w, "outside steps ms = %.3f (mean run %.3f)\n", p.OutsideMs, p.MeanRunMs)
}

// BenchReport times the model as tune bench does (Bench, or Profile with
// profile) and returns the report.
func (m *Model) BenchReport(ctx context.Context, warmup, repeat int, profile bool, opts RunOptions) (*BenchReport, error) {
	var times, steps []float64
	var err error
	if profile {
		times, steps, err = m.Profile(ctx, warmup, repeat, opts)
	} else {
		times, err = m.Bench(ctx, warmup, repeat, opts)
	}
	if err != nil {
		return nil, err
	}
	at, err := m.benchAt(opts)
	if err != nil {
		return nil, err
	}
	r := &BenchReport{Model: m.manifest.Model, Dir: m.dir, Target: m.manifest.Target, Threads: opts.Threads, Warmup: warmup, Batch: at.batch, Dim: at.dim}
	if r.Threads <= 0 {
		r.Threads = runtime.NumCPU()
	}
	if b := m.manifest.Batch; b != nil {
		r.BatchName = b.Name
	}
	r.MinMs, r.MedianMs = slices.Min(times)*1e3, median(times)*1e3
	for _, t := range times {
		r.RunsMs = append(r.RunsMs, t*1e3)
		r.MeanMs += t * 1e3 / float64(len(times))
	}
	if profile {
		// A step of a model built over a batch runs once per sample: its
		// time per sample is what its record measured.
		runs := times
		if at.batch > 1 {
			runs = make([]float64, len(times))
			for i, t := range times {
				runs[i] = t / float64(at.batch)
			}
			for i := range steps {
				steps[i] /= float64(at.batch)
			}
		}
		r.Profile = m.manifest.Profile(steps, runs)
		r.Profile.PerSample = at.batch > 1
	}
	return r, nil
}

// Write writes the report as tune bench prints it: with a profile, its
// table (StepsProfile.Write, after "per sample (batch N=n):" for a run
// at a batch); then the fastest and the median run, "min ms = X" and
// "median ms = Y".
func (r *BenchReport) Write(w io.Writer) error {
	if r.Profile != nil {
		if r.Profile.PerSample {
			fmt.Fprintf(w, "per sample (batch %s=%d):\n", r.BatchName, r.Batch)
		}
		r.Profile.Write(w)
	}
	_, err := fmt.Fprintf(w, "min ms = %.3f\nmedian ms = %.3f\n", r.MinMs, r.MedianMs)
	return err
}

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

// median returns the median of xs (the mean of the middle two of an even
// count), as measure.Result.Median does.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
