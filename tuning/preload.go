package tuning

import (
	"fmt"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/costmodel"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/search"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te"
)

// Preload replays the store's records of the tasks on the target key: the
// states they measured (never measured again) and, into data, their
// features for the cost model. A schedule recorded several times counts
// once, by its best record. A schedule whose only records are fewer than
// MaxBuildTimeouts build timeouts is left out, so that it can be measured
// again: a compiler killed at its deadline most often means a loaded
// machine (two runs sharing the cores), not a schedule that cannot be
// compiled; retry says how many were left out.
//
// done is the number of measurements the records hold, the part of the
// budget earlier runs spent: every record that replays, but a record
// identical to another (same schedule, outcome, costs and time: an import
// of the database's own export) once.
func Preload(store *records.Store, tasks []*partition.Task, key string, data *costmodel.Dataset) (prior map[string][]search.Measured, done, retry int, err error) {
	prior = map[string][]search.Measured{}
	for _, t := range tasks {
		recs, err := store.Records(t.Key, key)
		if err != nil {
			return nil, 0, 0, err
		}
		ms, n, r := preloadTask(t, recs, data)
		prior[t.Key] = ms
		done += n
		retry += r
	}
	return prior, done, retry, nil
}

// MaxBuildTimeouts is how many build timeouts of one schedule, in
// different runs, make a session take it as one that does not compile in
// time.
const MaxBuildTimeouts = 2

// preloadTask replays one task's records (see Preload).
func preloadTask(t *partition.Task, recs []records.Record, data *costmodel.Dataset) (ms []search.Measured, done, retry int) {
	type entry struct {
		r        records.Replayed
		timeouts int
	}
	var order []string
	by := map[string]*entry{}
	counted := map[string]bool{}
	for _, r := range records.Replay(recs, map[string]*te.DAG{t.Key: t.DAG}, backend.FeaturesOf) {
		if r.State == nil {
			continue // steps that no longer decode or apply to this DAG
		}
		k := sketch.Key(r.State)
		if id := fmt.Sprint(k, r.Record.Error, r.Record.Costs, r.Record.At.UnixNano()); !counted[id] {
			counted[id] = true
			done++
		}
		e := by[k]
		switch {
		case e == nil:
			e = &entry{r: r}
			by[k] = e
			order = append(order, k)
		case r.Result.Kind == measure.None && (e.r.Result.Kind != measure.None || r.Result.Cost() < e.r.Result.Cost()):
			e.r = r
		}
		if r.Result.Kind == measure.BuildTimeout {
			e.timeouts++
		}
	}
	for _, k := range order {
		e := by[k]
		if e.r.Result.Kind == measure.BuildTimeout && e.timeouts < MaxBuildTimeouts {
			retry++
			continue
		}
		ms = append(ms, search.Measured{State: e.r.State, Result: e.r.Result})
		if e.r.Features != nil {
			data.Add(t.Key, e.r.Features, e.r.Result.Cost())
		}
	}
	return ms, done, retry
}
