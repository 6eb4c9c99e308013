package build

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"tessera/measure"
	"tessera/records"
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

// WriteProfile writes the mean time of every step of the built model (a
// kernel call; steps from Model.Profile) next to the time its task's
// record was measured at (alone, with warm caches), the sum over the
// steps, and the rest of the mean of the runs (copies, the executor, the
// clock), whose times are runs.
func (m *Manifest) WriteProfile(w io.Writer, steps, runs []float64) {
	mean := 0.0
	for _, t := range runs {
		mean += t / float64(len(runs))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\ttask\tms\trecord ms\tratio\tshare\t ops")
	sum := 0.0
	for _, t := range steps {
		sum += t
	}
	for i, st := range m.Steps {
		rec, ratio := "-", "-"
		if st.Task >= 0 && st.Task < len(m.Tasks) && m.Tasks[st.Task].Record != nil {
			c := m.Tasks[st.Task].Record.Cost
			rec = fmt.Sprintf("%.4f", c*1e3)
			if c > 0 {
				ratio = fmt.Sprintf("%.2f", steps[i]/c)
			}
		}
		share := 0.0
		if sum > 0 {
			share = 100 * steps[i] / sum
		}
		fmt.Fprintf(tw, "%d\t%d\t%.4f\t%s\t%s\t%.1f%%\t %s\n", i, st.Task, steps[i]*1e3, rec, ratio, share, st.Ops)
	}
	tw.Flush()
	fmt.Fprintf(w, "steps sum ms = %.3f\n", sum*1e3)
	fmt.Fprintf(w, "outside steps ms = %.3f (mean run %.3f)\n", (mean-sum)*1e3, mean*1e3)
}

// WriteBench times the model as tune bench does (Bench, or Profile with
// profile) and writes the fastest and the median run, "min ms = X" and
// "median ms = Y", after the table of the steps with profile
// (WriteProfile).
func (m *Model) WriteBench(ctx context.Context, w io.Writer, warmup, repeat int, profile bool, opts RunOptions) error {
	var times, steps []float64
	var err error
	if profile {
		times, steps, err = m.Profile(ctx, warmup, repeat, opts)
	} else {
		times, err = m.Bench(ctx, warmup, repeat, opts)
	}
	if err != nil {
		return err
	}
	if profile {
		// A step of a model built over a batch runs once per sample: its
		// time per sample is what its record measured.
		runs := times
		if at, _ := m.benchAt(opts); at.batch > 1 {
			fmt.Fprintf(w, "per sample (batch %s=%d):\n", m.Manifest.Batch.Name, at.batch)
			runs = make([]float64, len(times))
			for i, t := range times {
				runs[i] = t / float64(at.batch)
			}
			for i := range steps {
				steps[i] /= float64(at.batch)
			}
		}
		m.Manifest.WriteProfile(w, steps, runs)
	}
	r := measure.Result{Costs: times}
	_, err = fmt.Fprintf(w, "min ms = %.3f\nmedian ms = %.3f\n", r.Min()*1e3, r.Median()*1e3)
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
