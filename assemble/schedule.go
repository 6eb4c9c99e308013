package assemble

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/tir"
	"github.com/tessera-ml/tessera/tsrt"
)

// Schedules: task → the kernel it runs.
//
//	task ──Ranked(key, target)──▶ records, fastest first ──Replay──▶ state ──Lower──▶ kernel
//	     │                        (the first that replays and lowers)
//	     └─ no record, or none that replays and lowers ──▶ defaultSchedule
//
// One kernel per task, not per group: the groups of a task print alike
// (that is what makes them one task), so the kernel lowered from the
// task's DAG computes every group when it is given the group's buffers —
// placeholder i of the task's DAG is the group's Inputs[i], output i its
// Outputs[i] (partition.Group). ResNet-50 compiles 27 kernels instead of 56.

// kernel is the compiled schedule of one task.
type kernel struct {
	task   *partition.Task
	f      *tir.PrimFunc
	report tsrt.TaskReport
	// On the CPU: the kernel's C as Target.Generate prints it for
	// measurement (named measure.KernelName), and the bytes of workspace
	// it takes after its parameters.
	code      string
	workspace int
	// family holds the kernels of a model built over a dimension given at
	// run time (f is the one at its largest value); code is then unused.
	// variants are the ways its kernels take their parameters, f's first:
	// one per packing of the constants they read (a class's kernel takes
	// them as variants[classVariant[class]] does).
	family       *codegen.Family
	variants     []*tir.PrimFunc
	classVariant []int
}

// RecordSource gives the valid records of a workload on a target, fastest
// first; a *records.Store is one.
type RecordSource interface {
	Ranked(workload, target string) ([]records.Record, error)
}

// OpenRecords opens the records database db that a build of model reads:
// a missing one is a mistake (the model was not tuned into it); an
// existing one is only read (records.OpenReadOnly).
func OpenRecords(db, model string) (*records.Store, error) {
	if _, err := os.Stat(db); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("records database %s does not exist: tune the model first (tune --db %s %s), or build with default schedules (--no-records)", db, db, model)
	}
	return records.OpenReadOnly(db)
}

// usable is the fastest record of a task that replays on its DAG and
// lowers for the target, with its kernel named name; skipped says why the
// faster ones were passed over. ok is false when no record is usable.
func usable(recs RecordSource, tg *backend.Target, t *partition.Task, name string) (rec records.Record, f *tir.PrimFunc, skipped []string, ok bool, err error) {
	rs, err := recs.Ranked(t.Key, tg.Key())
	if err != nil {
		return records.Record{}, nil, nil, false, err
	}
	for _, r := range rs {
		f, err := lowerRecord(tg, t, r, name)
		if err == nil {
			return r, f, skipped, true, nil
		}
		skipped = append(skipped, err.Error())
	}
	return records.Record{}, nil, skipped, false, nil
}

// chooseAlgorithms keeps, for every group with alternative algorithms
// (partition.Group.Alternatives), the one whose task has the fastest
// record on the target; where none of a group's definitions has a record,
// on the CPU the one of the fewest FLOPs, else the direct definition.
// Measured with default schedules (go run ./bench/conv -cpu LEVEL, a
// ResNet 3×3 convolution, one thread, Zen 5), Winograd F(4×4, 3×3) ran
// 2.4× (x86-64-v2), 2.8× (-v3) and 3.3× (-v4) the direct convolution's
// speed: an untuned build takes it at every level.
func chooseAlgorithms(plan *partition.Plan, recs RecordSource, tg *backend.Target) (*partition.Plan, error) {
	var firstErr error
	chosen := plan.ChooseOr(func(t *partition.Task) (float64, bool) {
		if recs == nil || firstErr != nil {
			return 0, false
		}
		rec, _, _, ok, err := usable(recs, tg, t, "choice")
		if err != nil {
			firstErr = err
			return 0, false
		}
		if !ok || math.IsInf(rec.Cost(), 1) {
			return 0, false
		}
		return rec.Cost(), true
	}, tg.Name == "cpu")
	if firstErr != nil {
		return nil, fmt.Errorf("build: choosing algorithms: %w", firstErr)
	}
	return chosen, nil
}

// kernelName is the C name of task i's kernel.
func kernelName(i int) string { return fmt.Sprintf("tessera_kernel%d", i) }

// scheduleTasks lowers every task of plan with its best record on target,
// or with the default schedule; warn receives one line per task without a
// usable record.
func scheduleTasks(plan *partition.Plan, recs RecordSource, tg *backend.Target, warn func(format string, args ...any)) ([]kernel, error) {
	out := make([]kernel, len(plan.Tasks))
	for i, t := range plan.Tasks {
		if err := checkGroups(t); err != nil {
			return nil, err
		}
		k := kernel{task: t, report: tsrt.TaskReport{
			Index: i, Key: t.Key, Ops: t.Ops(), Layout: t.Layout(), Weight: t.Weight, FLOPs: t.FLOPs, Kernel: kernelName(i),
		}}
		why := "no record for this target"
		if recs != nil {
			rec, f, skipped, ok, err := usable(recs, tg, t, k.report.Kernel)
			if err != nil {
				return nil, err
			}
			switch {
			case ok:
				k.f = f
				k.report.Schedule = tsrt.FromRecord
				k.report.Record = &tsrt.RecordUsed{Steps: rec.Steps, Cost: rec.Cost(), At: rec.At.UTC().Format(time.RFC3339Nano), Tool: rec.Tool}
				if len(skipped) > 0 {
					warn("task %d (%s, %s): %d faster records do not apply (first: %s); using the next", i, t.Ops(), records.ShortKey(t.Key), len(skipped), skipped[0])
				}
			case len(skipped) == 1:
				why = "its best record does not apply: " + skipped[0]
			case len(skipped) > 1:
				why = fmt.Sprintf("none of its %d records applies (first: %s)", len(skipped), skipped[0])
			}
		} else {
			why = "no records database"
		}
		if k.f == nil {
			st, f, rule, err := defaultSchedule(tg, t, k.report.Kernel)
			if err != nil {
				return nil, fmt.Errorf("build: task %d (%s): %w", i, t.Ops(), err)
			}
			k.f = f
			steps, err := schedule.MarshalSteps(st.Steps)
			if err != nil {
				return nil, err
			}
			k.report.Schedule = tsrt.FromDefault
			k.report.Default = &tsrt.DefaultUsed{Why: why, Rule: rule, Steps: steps}
			warn("task %d (%s, %s): %s; using the default schedule", i, t.Ops(), records.ShortKey(t.Key), why)
		}
		for a, p := range k.f.Params {
			if p.Packed != nil {
				k.report.Packed = append(k.report.Packed, fmt.Sprintf("input %d: %v", a, p.Packed))
			}
		}
		out[i] = k
	}
	return out, nil
}

// checkGroups checks what sharing one kernel relies on: every group of the
// task has the task's workload key and buffers of the task's sizes.
func checkGroups(t *partition.Task) error {
	for _, grp := range t.Groups {
		d := grp.DAG
		ok := grp.Key == t.Key && len(d.Inputs) == len(t.DAG.Inputs) && len(d.Outputs) == len(t.DAG.Outputs) &&
			len(grp.Inputs) == len(d.Inputs) && len(grp.Outputs) == len(d.Outputs)
		for i := 0; ok && i < len(d.Inputs); i++ {
			ok = d.Inputs[i].Size() == t.DAG.Inputs[i].Size()
		}
		for i := 0; ok && i < len(d.Outputs); i++ {
			ok = d.Outputs[i].Size() == t.DAG.Outputs[i].Size()
		}
		if !ok {
			return fmt.Errorf("build: group %d (%s) does not match its task %s", grp.ID, grp.Ops(), records.ShortKey(t.Key))
		}
	}
	return nil
}

// lowerRecord replays a record's steps on the task's DAG and lowers them
// for the target.
func lowerRecord(tg *backend.Target, t *partition.Task, rec records.Record, name string) (*tir.PrimFunc, error) {
	st, err := rec.State(schedule.NewState(t.DAG))
	if err != nil {
		return nil, err
	}
	return tg.Lower(st, name)
}

// defaultSchedule returns the default state of a task on the target
// (sketch.Default), its kernel named name, and a description of how it
// was made.
func defaultSchedule(tg *backend.Target, t *partition.Task, name string) (*schedule.State, *tir.PrimFunc, string, error) {
	st, rule, err := sketch.Default(schedule.NewState(t.DAG), tg.Sketch)
	if err != nil {
		return nil, nil, "", err
	}
	f, err := tg.Lower(st, name)
	if err != nil {
		return nil, nil, "", fmt.Errorf("the default schedule does not lower: %w", err)
	}
	return st, f, rule, nil
}
