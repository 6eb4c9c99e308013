package tuning

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tessera-ml/tessera/search"
)

// ProbeError is returned by RunRange when probing failed for another
// reason than ctx's end: the search's records are in the store, and a run
// of the same session probes again.
type ProbeError struct{ Err error }

func (e *ProbeError) Error() string { return e.Err.Error() }
func (e *ProbeError) Unwrap() error { return e.Err }

// Resumable returns err, an error of RunRange on the records database
// db, with what a run of the same command does next where it goes on
// from there: a failed probe (*ProbeError; its error, unwrapped) probes
// again, and a batch that could not be measured (search.ErrMeasure)
// resumes after the batches committed before it. It returns nil for any
// other error, and for nil.
func Resumable(err error, db string) error {
	var perr *ProbeError
	if errors.As(err, &perr) {
		return fmt.Errorf("%w\nthe tuning's records are in %s; run the same command to probe again", perr.Err, db)
	}
	if errors.Is(err, search.ErrMeasure) {
		return fmt.Errorf("%w\nevery batch measured before is in %s; run the same command to resume", err, db)
	}
	return nil
}

// RunRange runs the session (Run) and, where it tunes over a dimension
// given at run time (Options.Dim), spends the rest of the trials:
//
//	search  Run: the tasks at the tuning points, on the trials less the
//	        probes' share (a quarter at most, set aside by New)
//	probe   Probe: the points' best schedules at the probe points, on what
//	        the trials leave after every measurement of the range (a
//	        resumed run's probes of new bests too), the share at most
//	search  a second session on the store: the trials the probes left
//	        (schedules measured there already, or that do not replay there)
//
// searched, if set, is called when the first search ends (tune finishes
// its progress bar there: the second search reports no progress); the
// probe and the second search say what they did on w. RunRange returns
// the session that ran last, whose WriteEnd reports the run, and the
// summary of both searches (the second's, counting the first's trials,
// time and earlier runs). It stops where an error stops a search, or ctx
// ends (ctx's error, everything measured committed); a probe that fails
// otherwise is a *ProbeError.
func (s *Session) RunRange(ctx context.Context, w io.Writer, searched func()) (*Session, search.Summary, error) {
	sum, err := s.Run(ctx)
	if searched != nil {
		searched()
	}
	dp := s.opts.Dim
	if err != nil || dp == nil || s.probes == 0 {
		return s, sum, err
	}
	// Every measurement of the range counts, the probes' of earlier runs
	// too; the trials are the search's and the probes' together.
	spent, err := RangeMeasured(s.Store, dp, s.Target)
	if err != nil {
		return s, sum, err
	}
	trials := s.opts.Trials + s.probes
	if limit := min(s.probes, trials-spent); limit > 0 {
		ps, err := Probe(ctx, s.Store, dp, s.Target, s.measurer, s.opts.Version, limit)
		if err != nil && !cancelled(ctx, err) {
			return s, sum, &ProbeError{Err: err}
		}
		fmt.Fprintf(w, "probed the tuning points' best schedules at %s=%v: %d measured (%d failed)\n", dp.Symbol.Name, ps.Values, ps.Measured, ps.Failed)
		if err != nil {
			return s, sum, err
		}
		spent += ps.Measured
	}
	left := trials - spent
	if left <= 0 {
		return s, sum, nil
	}
	o := s.opts
	o.Progress, o.Dim = nil, nil // the first search's report has ended; its probes are done
	s2, err := New(s.Store, s.Tasks, s.Target, s.measurer, o)
	if err != nil {
		return s, sum, err
	}
	s2.Limit(left)
	fmt.Fprintf(w, "searching %d more trials, left by the probes\n", left)
	sum2, err := s2.Run(ctx)
	return s2, merge(sum, sum2), err
}

// cancelled reports whether err is ctx's end.
func cancelled(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, context.Canceled)
}

// merge returns the summary of two searches of one run: the second's
// tasks, objective and exhausted tasks (the most of either), the trials
// and time of both, the earlier runs' measurements the first found.
func merge(first, second search.Summary) search.Summary {
	second.Trials += first.Trials
	second.Prior = first.Prior
	second.Times = second.Times.Add(first.Times)
	second.Exhausted = max(second.Exhausted, first.Exhausted)
	return second
}
