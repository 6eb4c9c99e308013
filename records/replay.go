package records

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/te"
)

// State replays the record's steps on s0, the initial state of its task's
// DAG: the state the record measured.
func (r Record) State(s0 *schedule.State) (*schedule.State, error) {
	steps, err := r.DecodeSteps()
	if err != nil {
		return nil, err
	}
	st, err := schedule.Replay(s0, steps)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return st, nil
}

// Result returns the measurement the record holds.
func (r Record) Result() (measure.Result, error) {
	kind, err := measure.ParseErrorKind(r.Error)
	if err != nil {
		return measure.Result{}, err
	}
	return measure.Result{Costs: r.Costs, Kind: kind, Msg: r.Msg}, nil
}

// Replayed is a record turned back into what it measured.
type Replayed struct {
	Record Record
	// State is the measured state; nil when the record's workload is not
	// among the DAGs given, its steps no longer decode or apply, or its
	// error kind is unknown (Err says which).
	State  *schedule.State
	Result measure.Result
	Err    error
	// Features are the state's program features, lowered for the target
	// of the record; nil when it does not lower, when the target is
	// unknown, or when no features were asked for.
	Features [][]float32
}

// Featurizer returns how the target a target key names turns a state into
// program features (target.FeaturesOf), to read records without the
// device they were measured on.
type Featurizer func(targetKey string) (func(s *schedule.State) ([][]float32, error), error)

// Replay turns records back into states on their tasks' DAGs (dags by
// workload key), and with featuresOf also into program features, on all
// CPUs. One Replayed per record, in order. This is how a tuning run
// resumes (earlier records are never measured again and feed the cost
// model) and how a cost model is trained from records.
func Replay(recs []Record, dags map[string]*te.DAG, featuresOf Featurizer) []Replayed {
	initial := map[string]*schedule.State{}
	for key, dag := range dags {
		initial[key] = schedule.NewState(dag)
	}
	// One featurizer per target key, resolved before the workers start (nil
	// for a key featuresOf does not know: its records get no features).
	features := map[string]func(*schedule.State) ([][]float32, error){}
	if featuresOf != nil {
		for _, r := range recs {
			if _, ok := features[r.Target]; !ok {
				f, err := featuresOf(r.Target)
				if err != nil {
					f = nil
				}
				features[r.Target] = f
			}
		}
	}
	out := make([]Replayed, len(recs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(len(recs), 1)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(recs); i = int(next.Add(1) - 1) {
				out[i] = replayOne(recs[i], initial, features[recs[i].Target])
			}
		})
	}
	wg.Wait()
	return out
}

func replayOne(r Record, initial map[string]*schedule.State, features func(*schedule.State) ([][]float32, error)) Replayed {
	rep := Replayed{Record: r}
	s0 := initial[r.WorkloadKey]
	if s0 == nil {
		rep.Err = fmt.Errorf("workload %s: no DAG", r.WorkloadKey)
		return rep
	}
	res, err := r.Result()
	if err != nil {
		rep.Err = err
		return rep
	}
	st, err := r.State(s0)
	if err != nil {
		rep.Err = err
		return rep
	}
	rep.State, rep.Result = st, res
	if features != nil {
		rep.Features, _ = features(st)
	}
	return rep
}
