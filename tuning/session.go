// Package tuning owns a tuning session: the tasks of a model tuned on one
// target against a records store. A session resumes from what the store
// holds (the states earlier runs measured are never measured again, and
// they train the cost model), starts the cost model from a pretrained one,
// seeds new tasks with the best schedules of similar workloads, runs the
// task scheduler and search of package search, and commits every measured
// batch to the store before the next round. Progress and measurements
// reach the caller through callbacks.
//
// It is what `tune`, `tune worker`'s tests and bench/tuning run; in TVM's
// terms it is the TaskScheduler with PreloadMeasuredStates, RecordToFile
// as a measure callback and the TaskSchedulerCallbacks.
package tuning

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/tessera-ml/tessera/costmodel"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/search"
)

// Options configure a session. DefaultOptions gives what `tune` uses.
type Options struct {
	// TuneOptions are the search's, with two differences: Trials counts
	// the measurements earlier runs made of the tasks on the target too
	// (Run gives the search what is left), and the session's own Seeds,
	// those of Transfer, replace any given. A WarmUp of 0 gives PerRound,
	// Ansor's warm-up.
	search.TuneOptions
	// Pretrained is the cost model the session starts from (nil: cold,
	// random predictions until the run's own records train one).
	Pretrained *costmodel.Model
	// Transfer is how many of the best states of each of the most similar
	// measured workloads seed a task that has no records (0: none).
	Transfer int
	// CostModel configures the trainer of the session's model.
	CostModel costmodel.Params
	// Version is written into every record.
	Version string
	// Measured callbacks get every measured batch after the store has
	// committed it.
	Measured []search.Log
	// Dim is the dimension given at run time the tasks are tuned over
	// (tune --range), nil if none: up to a quarter of Trials then go to
	// probing the tuning points' best schedules (RunRange), Run's search
	// taking the rest.
	Dim *partition.DimPlan
}

// DefaultOptions returns the session `tune` runs with the search options
// so (their target set): a warm-up of a few measurements per task,
// rivals decided at a 1.5× lead, and transfer from the 8 best states of
// the most similar workloads.
func DefaultOptions(so search.Options) Options {
	return Options{
		TuneOptions: search.TuneOptions{
			Trials:    1000,
			PerRound:  so.MeasurePerRound,
			Search:    so,
			Scheduler: search.DefaultSchedulerOptions(),
			WarmUp:    DefaultWarmUp,
			RivalLead: 1.5,
		},
		Transfer:  8,
		CostModel: costmodel.DefaultParams(),
		Version:   "tessera-dev",
	}
}

// DefaultWarmUp is the size of a task's first batch: its default schedule
// and the cost model's best predictions.
const DefaultWarmUp = 4

// Session is one tuning session of tasks on a target.
type Session struct {
	Tasks  []*partition.Task
	Target string // the target key the records are measured on
	Store  *records.Store
	Model  *search.GBDTModel
	// Prior holds, per task key, the states earlier runs measured.
	Prior map[string][]search.Measured
	// Done is the measurements the store holds of the tasks on the target;
	// Retry the build timeouts among them that will be measured again.
	Done, Retry int
	// Seeds are the states transferred from other workloads, per task key.
	Seeds map[string][]*schedule.State

	opts     Options
	measurer search.Measurer
	owned    bool // the store is Open's, closed by Close
	probes   int  // the trials set aside for probing opts.Dim
}

// New opens a session: it records the tasks in the store, replays the
// store's records of them on target (PreloadMeasuredStates), trains the
// cost model from them or starts from opts.Pretrained, and finds the
// transfer seeds of the tasks without records. Over opts.Dim, it sets the
// probes' share of the trials aside.
func New(store *records.Store, tasks []*partition.Task, target string, m search.Measurer, opts Options) (*Session, error) {
	if p := opts.Pretrained; p != nil && p.NumFeatures() != costmodel.NumFeatures {
		return nil, fmt.Errorf("the pretrained cost model takes %d features; Tessera extracts %d", p.NumFeatures(), costmodel.NumFeatures)
	}
	s := &Session{Tasks: tasks, Target: target, Store: store, opts: opts, measurer: m}
	if opts.Dim != nil {
		// The probes' measurements are trials too: a quarter at most.
		s.probes = min(ProbeBudget(opts.Dim), opts.Trials/4)
		s.opts.Trials -= s.probes
	}
	for _, t := range tasks {
		if err := store.PutTask(TaskInfo(t)); err != nil {
			return nil, err
		}
	}
	s.Model = search.NewGBDTModel(opts.CostModel)
	var err error
	if s.Prior, s.Done, s.Retry, err = Preload(store, tasks, target, s.Model.Data); err != nil {
		return nil, err
	}
	s.Model.Base = opts.Pretrained
	if err := s.Model.Retrain(); err != nil {
		return nil, fmt.Errorf("cost model: %w", err)
	}
	if opts.Transfer > 0 {
		if s.Seeds, err = Transfer(store, tasks, s.Prior, target, opts.Transfer); err != nil {
			return nil, fmt.Errorf("transfer: %w", err)
		}
	}
	return s, nil
}

// Open opens the records database at db (records.Open) and a session on
// it (New); the session's Close closes the database.
func Open(db string, tasks []*partition.Task, target string, m search.Measurer, opts Options) (*Session, error) {
	store, err := records.Open(db)
	if err != nil {
		return nil, err
	}
	s, err := New(store, tasks, target, m, opts)
	if err != nil {
		store.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// Close closes the records database where Open opened it.
func (s *Session) Close() error {
	if s.owned {
		return s.Store.Close()
	}
	return nil
}

// TaskInfo is the task as the records store keeps it.
func TaskInfo(t *partition.Task) records.TaskInfo {
	codec, _ := t.DAG.MarshalJSON() // without it, imports of the task are not checked
	return records.TaskInfo{Key: t.Key, DAG: t.DAG.CanonicalString(), FLOPs: t.FLOPs, Weight: t.Weight, Codec: codec}
}

// searchTasks returns the tasks as package search tunes them, in the same
// order, each rival among them.
func searchTasks(tasks []*partition.Task) []*search.Task {
	out := make([]*search.Task, len(tasks))
	index := make(map[*partition.Task]*search.Task, len(tasks))
	for i, t := range tasks {
		out[i] = &search.Task{Key: t.Key, DAG: t.DAG, Weight: t.Weight, Group: t.Ops()}
		index[t] = out[i]
	}
	for i, t := range tasks {
		for _, r := range t.Rivals {
			if sr, ok := index[r]; ok {
				out[i].Rivals = append(out[i].Rivals, sr)
			}
		}
	}
	return out
}

// ToGo returns the measurements this run will make: the budget less what
// earlier runs measured.
func (s *Session) ToGo() int { return max(s.opts.Trials-s.Done, 0) }

// Limit sets the budget to n measurements more than the store holds: ToGo
// returns n.
func (s *Session) Limit(n int) { s.opts.Trials = s.Done + max(n, 0) }

// Run tunes until the budget is spent, every task is set aside, or ctx
// ends. Every batch is in the store before the next round starts; the
// trained cost model is saved in the store at the end. The summary's
// Prior counts the measurements of earlier runs. Over Options.Dim it is
// the search alone, on the trials less the probes' share: RunRange runs
// the search and the probes.
func (s *Session) Run(ctx context.Context) (search.Summary, error) {
	o := s.opts
	opts := o.TuneOptions
	opts.Trials, opts.Seeds = s.ToGo(), s.Seeds
	log := &callbacks{store: &StoreLog{Store: s.Store, Target: s.Target, Version: o.Version}, more: o.Measured}
	sum, err := search.Tune(ctx, searchTasks(s.Tasks), s.Prior, s.Model, s.measurer, log, opts)
	sum.Prior = s.Done // measurements, where Tune counts the schedules it was given
	if serr := s.saveModel(); serr != nil && err == nil {
		err = serr
	}
	return sum, err
}

// saveModel keeps the run's trained model in the store (the next run
// retrains from the records anyway; the file serves `tune costmodel`).
func (s *Session) saveModel() error {
	m := s.Model.Trained()
	if m == nil {
		return nil
	}
	var buf bytes.Buffer
	if err := m.Save(&buf); err != nil {
		return nil // a model leaves cannot write is not worth failing the run
	}
	return s.Store.SaveModel(s.Target, buf.Bytes())
}

// StoreLog is the records store as a measure callback: it commits every
// measured batch as records of the target (TVM's RecordToFile).
type StoreLog struct {
	Store   *records.Store
	Target  string
	Version string
}

// Commit adds the batch's records to the store in one transaction.
func (l *StoreLog) Commit(t *search.Task, batch []search.Measured) error {
	return l.add(t.Key, batch)
}

// add adds the batch's records of the workload to the store in one
// transaction.
func (l *StoreLog) add(workload string, batch []search.Measured) error {
	recs := make([]records.Record, 0, len(batch))
	for _, m := range batch {
		r, err := records.New(workload, l.Target, m.State.Steps, m.Result, l.Version)
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	return l.Store.Add(recs)
}

// callbacks commits to the store first, then tells the others.
type callbacks struct {
	store *StoreLog
	more  []search.Log
}

func (c *callbacks) Commit(t *search.Task, batch []search.Measured) error {
	if err := c.store.Commit(t, batch); err != nil {
		return err
	}
	var errs []error
	for _, l := range c.more {
		errs = append(errs, l.Commit(t, batch))
	}
	return errors.Join(errs...)
}
