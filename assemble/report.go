package assemble

import (
	"context"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/records"
)

// Reports of a build for people: the task table and totals tune build
// prints, the step table of tune bench --profile, and which other targets
// have records of the tasks that got default schedules.

// WriteReport writes the task table of the build into dir (each task's
// ops, layout, weight, share of the FLOPs and schedule), the records'
// coverage, the memory plan, and that the build took took.
func (m *Manifest) WriteReport(w io.Writer, dir string, took time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "task\tkey\tops\tlayout\tweight\tshare\tschedule")
	for _, t := range m.Tasks {
		sched := "default"
		switch f := t.Family; {
		case f != nil:
			sched = fmt.Sprintf("%d kernels over %d values, %d from records", f.Classes, f.Values, f.FromRecords)
		case t.Record != nil:
			sched = fmt.Sprintf("record, %.4f ms", t.Record.Cost*1e3)
		}
		share := 0.0
		if m.Coverage.FLOPs > 0 {
			share = 100 * float64(t.Weight) * t.FLOPs / m.Coverage.FLOPs
		}
		layout := t.Layout
		if layout == "" {
			layout = "-"
		}
		if len(t.Packed) > 0 {
			layout += ", packed weights"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%.1f%%\t%s\n", t.Index, records.ShortKey(t.Key), t.Ops, layout, t.Weight, share, sched)
	}
	tw.Flush()
	fmt.Fprintf(w, "built %s into %s in %.1fs (target %s)\n", m.Model, dir, took.Seconds(), m.Target)
	fmt.Fprintf(w, "tuned tasks = %d/%d\n", m.Coverage.TunedTasks, m.Coverage.Tasks)
	fmt.Fprintf(w, "tuned FLOPs = %.1f%%\n", m.Coverage.TunedShare())
	fmt.Fprintf(w, "arena peak bytes = %d\n", m.Memory.ArenaBytes)
	fmt.Fprintf(w, "sum of intermediates bytes = %d\n", m.Memory.IntermediatesBytes)
	fmt.Fprintf(w, "largest live set bytes = %d (%d intermediate tensors)\n", m.Memory.LiveMaxBytes, m.Memory.Intermediates)
	fmt.Fprintf(w, "weights bytes = %d (%d tensors)\n", m.Weights.Bytes, m.Weights.Tensors)
}

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
	r := &BenchReport{Model: m.Manifest.Model, Dir: m.Dir, Target: m.Manifest.Target, Threads: opts.Threads, Warmup: warmup, Batch: at.batch, Dim: at.dim}
	if r.Threads <= 0 {
		r.Threads = runtime.NumCPU()
	}
	if b := m.Manifest.Batch; b != nil {
		r.BatchName = b.Name
	}
	res := measure.Result{Costs: times}
	r.MinMs, r.MedianMs = res.Min()*1e3, res.Median()*1e3
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
		r.Profile = m.Manifest.Profile(steps, runs)
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

// WriteOtherTargets writes a hint for every target but the build's own
// on which tasks built with default schedules have records
// (OtherTargets).
func (m *Manifest) WriteOtherTargets(w io.Writer, store *records.Store) error {
	others, untuned, err := m.OtherTargets(store)
	for _, t := range slices.Sorted(maps.Keys(others)) {
		fmt.Fprintf(w, "hint: %d of the %d tasks built with default schedules have records for target %q (another --threads?)\n", others[t], untuned, t)
	}
	return err
}

// OtherTargets returns, for every target but the build's own, how many
// of the tasks built with default schedules have a valid record on it in
// store (most often records measured with another thread count), and how
// many tasks got default schedules.
func (m *Manifest) OtherTargets(store *records.Store) (map[string]int, int, error) {
	var untuned []string
	for _, t := range m.Tasks {
		if t.Schedule == FromDefault {
			untuned = append(untuned, t.Key)
		}
	}
	if len(untuned) == 0 {
		return nil, 0, nil
	}
	targets, err := store.Targets(untuned)
	if err != nil {
		return nil, 0, err
	}
	out := map[string]int{}
	for t, stats := range targets {
		for _, st := range stats {
			if st.Records > st.Errors && t != m.Target {
				out[t]++
			}
		}
	}
	return out, len(untuned), nil
}
