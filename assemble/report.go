package assemble

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/tsrt"
)

// Reports of a build for people: the task table and totals tune build
// prints, and which other targets have records of the tasks that got
// default schedules. (The report of tune bench is the runtime's:
// tsrt.BenchReport.)

// WriteReport writes the task table of the build m into dir (each task's
// ops, layout, weight, share of the FLOPs and schedule), the records'
// coverage, the memory plan, and that the build took took.
func WriteReport(w io.Writer, m *tsrt.Manifest, dir string, took time.Duration) {
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

// WriteOtherTargets writes a hint for every target but the build m's own
// on which tasks built with default schedules have records
// (OtherTargets).
func WriteOtherTargets(w io.Writer, m *tsrt.Manifest, store *records.Store) error {
	others, untuned, err := OtherTargets(m, store)
	for _, t := range slices.Sorted(maps.Keys(others)) {
		fmt.Fprintf(w, "hint: %d of the %d tasks built with default schedules have records for target %q (another --threads?)\n", others[t], untuned, t)
	}
	return err
}

// OtherTargets returns, for every target but the build m's own, how many
// of the tasks built with default schedules have a valid record on it in
// store (most often records measured with another thread count), and how
// many tasks got default schedules.
func OtherTargets(m *tsrt.Manifest, store *records.Store) (map[string]int, int, error) {
	var untuned []string
	for _, t := range m.Tasks {
		if t.Schedule == tsrt.FromDefault {
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
