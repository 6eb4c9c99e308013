package tuning

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/measure/remote"
	"github.com/tessera-ml/tessera/search"
)

// Run says what Tune tunes, where, and how it reports: `tune`'s flags
// and the tasks they load.
type Run struct {
	// Options are the session's. Tune sets their Search to the target's
	// (search.DefaultOptions) with Seed and Population, the cost model's
	// seed to Seed, and Dim and Emphasis to the Tasks'.
	Options
	Seed       uint64
	Population int

	Tasks *TaskSet
	// Target is the target to tune for (backend.New, measured on this
	// host unless Remote says otherwise), its candidates timed with the
	// search's protocol (measure.SearchRunOptions) within Timeout each,
	// FlushCache evicting their weights from the caches before every
	// timed call (a remote worker times them alike).
	Target     backend.Config
	Timeout    time.Duration
	FlushCache bool
	// DB is the records database (Open); Model and DBName name the model
	// and the database in the first line of the report (WriteStart), as
	// a terminal may print them.
	DB, Model, DBName string
	// Remote names the NATS server whose workers measure (Measurer; its
	// URL "" for this machine), Verify checks every candidate's output
	// and MaxMemory bounds a candidate's tensors, in bytes. Measurer, if
	// set, measures instead, under the target's key (tests).
	Remote    remote.DialOptions
	Verify    bool
	MaxMemory int64
	Measurer  search.Measurer
	// CostModel names the cost model the session starts from
	// (StartingModel).
	CostModel string
	// Bar, if set, shows the progress of the search, finished when the
	// first search ends; else every round is a line on Log (LogProgress).
	Bar Bar
	Log io.Writer
}

// Check says what is wrong with r's options (Trials, PerRound, WarmUp,
// Transfer and the task scheduler's Strategy, Population and the
// target's Threads), naming tune's flags; nil where nothing is.
func (r Run) Check() error {
	if o := r.Options; o.Trials < 0 || o.PerRound <= 0 || r.Target.Threads <= 0 || r.Population <= 0 || o.WarmUp < 0 || o.Transfer < 0 {
		return errors.New("--trials, --per-round, --population and --threads must be positive (--warm-up and --transfer not negative)")
	}
	return search.CheckStrategy(r.Options.Scheduler.Strategy)
}

// Tune is one run of `tune`: it makes r's target, measures where r says
// (Measurer), starts from r's cost model, opens a session on r.DB (Open),
// runs it (RunRange) and writes its report on w: where it measures, the
// starting model, what it is about to do (WriteStart), the probes of a
// range, and how the run ended (WriteEnd). An error that a run of the
// same command resumes from says so (Resumable). stopped says that ctx
// ended the run, after every measured batch was committed and its end
// written; err is then ctx's.
func Tune(ctx context.Context, w io.Writer, r Run) (stopped bool, err error) {
	timing := &r.Remote.Timing // the timing protocol, of workers too
	*timing = measure.SearchRunOptions(r.Target.Threads)
	timing.Timeout, timing.FlushCache = r.Timeout, r.FlushCache
	tc := r.Target
	tc.Run, tc.Host, tc.Measures = *timing, &measure.Builder{}, true
	tg, err := backend.New(tc)
	if err != nil {
		return false, err
	}
	defer tg.Close()
	m, key := r.Measurer, tg.Key()
	if m == nil {
		if m, key, err = Measurer(ctx, tg, r.Remote, r.Verify, r.MaxMemory); err != nil {
			return false, err
		}
	}
	if rm, ok := m.(*remote.Measurer); ok {
		defer rm.Close()
		fmt.Fprintf(w, "measuring on the workers of target key %s through %s (run %s)\n", rm.Key(), r.Remote.URL, rm.Run())
	}
	opts := r.Options
	opts.Search = search.DefaultOptions(tg)
	opts.Search.Seed, opts.Search.Population, opts.CostModel.Seed = r.Seed, r.Population, r.Seed
	opts.Dim, opts.Emphasis = r.Tasks.Dim, r.Tasks.Emphasis
	var note string
	if opts.Pretrained, note, err = StartingModel(r.CostModel, tg); err != nil {
		return false, fmt.Errorf("--cost-model: %w", err)
	} else if note != "" {
		fmt.Fprintln(w, note)
	}
	start := time.Now()
	searched := func() {}
	if r.Bar == nil {
		opts.Progress = append(opts.Progress, LogProgress(r.Log, start))
	} else {
		opts.Progress = append(opts.Progress, BarProgress(r.Bar))
		searched = r.Bar.Finish
	}
	s, err := Open(r.DB, r.Tasks.Tasks, key, m, opts)
	if err != nil {
		return false, err
	}
	defer s.Close()
	s.WriteStart(w, r.Model, r.DBName, tg)
	last, sum, err := s.RunRange(ctx, w, searched)
	if rerr := Resumable(err, r.DB); rerr != nil {
		return false, rerr
	}
	stopped = cancelled(ctx, err)
	if err != nil && !stopped {
		return false, err
	}
	last.WriteEnd(w, sum, stopped, time.Since(start))
	return stopped, err
}
