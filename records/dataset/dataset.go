// Package dataset makes the datasets cost models learn from and are
// evaluated on out of records databases: Load replays every successful
// record of a known workload on its DAG, lowers it for the target it was
// measured on and extracts its features (Options.Features: the targets'
// backend.FeaturesOf) into a Sink (a costmodel.Dataset) whose tasks are
// (workload, target) pairs. Its Report says what was left out and why.
//
// The package knows records, not the targets that featurize them nor the
// learner that consumes the programs: both are handed to Load.
package dataset

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/te"
)

// Options say which records make a dataset.
type Options struct {
	DBs  []string           // records databases, opened read only
	DAGs map[string]*te.DAG // workload key → its DAG; records of other workloads are left out
	// Target keeps only the records of one target: its key, or a part
	// of it that names one (records.MatchTarget); "" keeps every target.
	Target string
	// Features turns a state into program features as the target a
	// records key names lowers it (backend.FeaturesOf). Without it every
	// record counts as stale.
	Features records.Featurizer
}

// Sink receives a dataset's programs, in order: one per record, its
// task ("workload @ target"), its feature rows and its measured cost in
// seconds. A *costmodel.Dataset is one.
type Sink interface {
	Add(task string, rows [][]float32, cost float64)
}

// Report says what a dataset was made of and what was left out.
type Report struct {
	DBs                     []string
	Records, Tasks, Targets int // programs in the dataset, (workload, target) tasks, targets
	Failed                  int // records of failed measurements
	OtherTarget             int // records of other targets than Options.Target
	Unknown, UnknownKeys    int // records (and workloads) without a DAG
	Stale                   int // records whose steps no longer replay or lower
}

func (r Report) String() string {
	s := fmt.Sprintf("%d successful records of %d tasks on %d target(s) from %s", r.Records, r.Tasks, r.Targets, strings.Join(r.DBs, ", "))
	var left []string
	if r.Failed > 0 {
		left = append(left, fmt.Sprintf("%d failed measurements", r.Failed))
	}
	if r.OtherTarget > 0 {
		left = append(left, fmt.Sprintf("%d records of other targets", r.OtherTarget))
	}
	if r.Unknown > 0 {
		left = append(left, fmt.Sprintf("%d records of %d workloads that no --model has", r.Unknown, r.UnknownKeys))
	}
	if r.Stale > 0 {
		left = append(left, fmt.Sprintf("%d records whose steps no longer apply", r.Stale))
	}
	if len(left) > 0 {
		s += "; left out: " + strings.Join(left, ", ")
	}
	return s
}

// Load reads the records of the databases, replays the successful ones of
// known workloads, and adds their features to into, in the order of the
// records. It is an error when no record makes a program.
func Load(opts Options, into Sink) (Report, error) {
	rep := Report{DBs: opts.DBs}
	recs, targets, err := readAll(opts.DBs)
	if err != nil {
		return rep, err
	}
	want := ""
	if opts.Target != "" {
		if want, err = records.MatchTarget(targets, opts.Target, strings.Join(opts.DBs, ", ")); err != nil {
			return rep, err
		}
	}
	unknown := map[string]bool{}
	var use []records.Record
	for _, r := range recs {
		switch {
		case want != "" && r.Target != want:
			rep.OtherTarget++
		case r.Error != records.ErrorNone:
			rep.Failed++
		case opts.DAGs[r.WorkloadKey] == nil:
			rep.Unknown++
			unknown[r.WorkloadKey] = true
		default:
			use = append(use, r)
		}
	}
	rep.UnknownKeys = len(unknown)
	extract(use, opts.DAGs, opts.Features, into, &rep)
	if rep.Records == 0 {
		return rep, fmt.Errorf("no successful record of the models' tasks (%s)", rep)
	}
	return rep, nil
}

// readAll returns every record of the databases and their target keys,
// sorted.
func readAll(dbs []string) ([]records.Record, []string, error) {
	var recs []records.Record
	targets := map[string]bool{}
	for _, path := range dbs {
		store, err := records.OpenReadOnly(path)
		if err != nil {
			return nil, nil, err
		}
		err = store.ForEach(func(r records.Record) error {
			recs = append(recs, r)
			targets[r.Target] = true
			return nil
		})
		store.Close()
		if err != nil {
			return nil, nil, err
		}
	}
	if len(recs) == 0 {
		return nil, nil, fmt.Errorf("no records in %s", strings.Join(dbs, ", "))
	}
	return recs, slices.Sorted(maps.Keys(targets)), nil
}

// extract replays each record on its task's DAG, lowers it for the target
// it was measured on and adds its features to into; a record whose steps
// no longer apply or lower, or of an unknown target, is counted stale.
func extract(recs []records.Record, dags map[string]*te.DAG, features records.Featurizer, into Sink, rep *Report) {
	tasks, targets := map[string]bool{}, map[string]bool{}
	for _, r := range records.Replay(recs, dags, features) {
		if r.Features == nil {
			rep.Stale++
			continue
		}
		task := r.Record.WorkloadKey + " @ " + r.Record.Target
		into.Add(task, r.Features, r.Record.Cost())
		rep.Records++
		tasks[task], targets[r.Record.Target] = true, true
	}
	rep.Tasks, rep.Targets = len(tasks), len(targets)
}
