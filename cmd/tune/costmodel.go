package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"tessera/costmodel"
	"tessera/records"
	"tessera/target"
	"tessera/te"
)

// runCostModel is `tune costmodel train|eval`.
func runCostModel(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "train" && args[0] != "eval") {
		fmt.Fprintln(stderr, "usage: tune costmodel train --db FILE... --model M.onnx... -o model.txt\n       tune costmodel eval --db FILE... --model M.onnx... model.txt")
		return errUsage
	}
	verb, args := args[0], args[1:]
	fs := flag.NewFlagSet("tune costmodel "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var df datasetFlags
	df.register(fs)
	out := fs.String("o", "", "write the model to `FILE` (LightGBM text; train)")
	objective := fs.String("objective", "pack-sum", "training objective: pack-sum (Ansor's) or pairwise (RankNet's; train)")
	seed := fs.Uint64("seed", 1, "random seed of the validation split and pair sampling (train)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: tune costmodel train [flags] -o model.txt
       tune costmodel eval [flags] model.txt

train fits a cost model to every successful record of the --db files;
eval reports a model's ranking quality on held-out records as TenSet does:
pairwise accuracy and top-1/top-5 (average peak) scores per task, averaged
weighted by the task's records. A task is a (workload, target): programs are
only compared with programs of the same task measured on the same target.

Records keep workload keys, not DAGs: --model names the ONNX models whose
tasks the records measured (records of other workloads are left out and
counted).

`)
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if verb == "train" {
		if len(pos) > 0 || *out == "" {
			fmt.Fprintln(stderr, "usage: tune costmodel train [flags] -o model.txt (models go with --model; run 'tune costmodel train -h')")
			return errUsage
		}
		params := costmodel.DefaultParams()
		switch *objective {
		case "pack-sum":
		case "pairwise", "pairwise-rank":
			params.Objective = costmodel.PairwiseRank
		default:
			return fmt.Errorf("--objective %q: pack-sum or pairwise", *objective)
		}
		params.Seed = *seed
		return trainCostModel(df, params, *out, stdout)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: tune costmodel eval [flags] model.txt (run 'tune costmodel eval -h')")
		return errUsage
	}
	return evalCostModel(df, pos[0], stdout)
}

func trainCostModel(df datasetFlags, params costmodel.Params, out string, stdout io.Writer) error {
	data, rep, err := df.load()
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, rep)
	m, err := costmodel.Train(data, params)
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	err = m.Save(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	info := m.Info
	valid := "no validation split (fewer than 500 programs): stopped on the training set"
	if info.Valid {
		valid = "stopped on a held-out fifth"
	}
	fmt.Fprintf(stdout, "trained a %s model: %d trees of %d rounds on %d programs (%d feature rows), %s, in %v\nwrote %s\n",
		info.Objective, info.Trees, info.Rounds, info.Programs, info.Rows, valid, info.Duration.Round(1e6), out)
	return nil
}

func evalCostModel(df datasetFlags, path string, stdout io.Writer) error {
	m, err := loadCostModel(path)
	if err != nil {
		return err
	}
	data, rep, err := df.load()
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, rep)
	r := costmodel.EvaluateTenSet(data, m.Predict(data.Programs()))
	fmt.Fprintf(stdout, "model %s: %d trees, %s\n", path, m.NumTrees(), m.Objective())
	fmt.Fprintf(stdout, "pairwise accuracy = %.4f\ntop-1 score = %.4f\ntop-5 score = %.4f\n", r.Pairwise, r.Top1, r.Top5)
	fmt.Fprintf(stdout, "(%d tasks, %d records)\n", r.Tasks, r.Programs)
	return nil
}

// loadCostModel reads a LightGBM-text cost model and checks that it reads
// the features Tessera extracts.
func loadCostModel(path string) (*costmodel.Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := costmodel.Load(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if m.NumFeatures() != costmodel.NumFeatures {
		return nil, fmt.Errorf("%s: a model of %d features; Tessera extracts %d", path, m.NumFeatures(), costmodel.NumFeatures)
	}
	return m, nil
}

// datasetFlags say which records make a dataset.
type datasetFlags struct {
	dbs, models listFlag
	target      string
	mf          modelFlags
}

func (d *datasetFlags) register(fs *flag.FlagSet) {
	d.mf.register(fs)
	fs.Var(&d.dbs, "db", "records database `FILE` (repeatable; default tuning.db)")
	fs.Var(&d.models, "model", "ONNX model `FILE` whose tasks the records measured (repeatable; --input and --no-pass apply to each)")
	fs.StringVar(&d.target, "target", "", "only the records of this target: its key, or a part of it that names one target (default: all)")
}

// datasetReport says what a dataset was made of and what was left out.
type datasetReport struct {
	dbs                    []string
	records, tasks, target int // programs in the dataset, (workload, target) tasks, targets
	failed                 int // records of failed measurements
	otherTarget            int // records of other targets than --target
	unknown, unknownKeys   int // records (and workloads) that no --model has
	stale                  int // records whose steps no longer replay or lower
}

func (r datasetReport) String() string {
	s := fmt.Sprintf("%d successful records of %d tasks on %d target(s) from %s", r.records, r.tasks, r.target, strings.Join(r.dbs, ", "))
	var left []string
	if r.failed > 0 {
		left = append(left, fmt.Sprintf("%d failed measurements", r.failed))
	}
	if r.otherTarget > 0 {
		left = append(left, fmt.Sprintf("%d records of other targets", r.otherTarget))
	}
	if r.unknown > 0 {
		left = append(left, fmt.Sprintf("%d records of %d workloads that no --model has", r.unknown, r.unknownKeys))
	}
	if r.stale > 0 {
		left = append(left, fmt.Sprintf("%d records whose steps no longer apply", r.stale))
	}
	for i, l := range left {
		if i == 0 {
			s += "; left out: "
		} else {
			s += ", "
		}
		s += l
	}
	return s
}

// load reads the records of the databases, replays the successful ones of
// the models' tasks, and extracts their features into a dataset whose
// tasks are (workload, target) pairs, in the order of the records.
func (d *datasetFlags) load() (*costmodel.Dataset, datasetReport, error) {
	rep := datasetReport{dbs: d.dbs}
	if len(rep.dbs) == 0 {
		rep.dbs = []string{"tuning.db"}
	}
	if len(d.models) == 0 {
		return nil, rep, errors.New("name the models whose tasks the records measured with --model (records keep workload keys, not the DAGs)")
	}
	dags := map[string]*te.DAG{}
	for _, path := range d.models {
		tasks, err := modelTasks(path, d.mf)
		if err != nil {
			return nil, rep, err
		}
		for _, t := range tasks {
			dags[t.Key] = t.DAG
		}
	}
	var recs []records.Record
	targets := map[string]bool{}
	for _, path := range rep.dbs {
		store, err := openExisting(path)
		if err != nil {
			return nil, rep, err
		}
		err = store.ForEach(func(r records.Record) error {
			recs = append(recs, r)
			targets[r.Target] = true
			return nil
		})
		store.Close()
		if err != nil {
			return nil, rep, err
		}
	}
	if len(recs) == 0 {
		return nil, rep, fmt.Errorf("no records in %s", strings.Join(rep.dbs, ", "))
	}
	target := ""
	if d.target != "" {
		var err error
		if target, err = matchTarget(slices.Sorted(maps.Keys(targets)), d.target, strings.Join(rep.dbs, ", ")); err != nil {
			return nil, rep, err
		}
	}
	unknown := map[string]bool{}
	var use []records.Record
	for _, r := range recs {
		switch {
		case target != "" && r.Target != target:
			rep.otherTarget++
		case r.Error != records.ErrorNone:
			rep.failed++
		case dags[r.WorkloadKey] == nil:
			rep.unknown++
			unknown[r.WorkloadKey] = true
		default:
			use = append(use, r)
		}
	}
	rep.unknownKeys = len(unknown)
	rows := extractRecords(use, dags)
	data := &costmodel.Dataset{}
	usedTargets := map[string]bool{}
	for i, r := range use {
		if rows[i] == nil {
			rep.stale++
			continue
		}
		data.Add(r.WorkloadKey+" @ "+r.Target, rows[i], r.Cost())
		usedTargets[r.Target] = true
	}
	rep.records, rep.target = data.Len(), len(usedTargets)
	for _, id := range data.TaskIDs() {
		rep.tasks = max(rep.tasks, id+1)
	}
	if data.Len() == 0 {
		return nil, rep, fmt.Errorf("no successful record of the models' tasks (%s)", rep)
	}
	return data, rep, nil
}

// extractRecords replays each record on its task's DAG, lowers it for the
// target it was measured on and extracts its features; a record whose
// steps no longer apply or lower, or of an unknown target, gets nil.
func extractRecords(recs []records.Record, dags map[string]*te.DAG) [][][]float32 {
	out := make([][][]float32, len(recs))
	for i, r := range records.Replay(recs, dags, target.FeaturesOf) {
		out[i] = r.Features
	}
	return out
}
