package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"tessera/costmodel"
	"tessera/internal/cli"
	"tessera/partition"
	"tessera/records/dataset"
	"tessera/tuning"
)

// costModelUsage is the help of the command, before its flags.
const costModelUsage = `usage: tune costmodel train [flags] -o model.txt
       tune costmodel eval [flags] model.txt

train fits a cost model to every successful record of the --db files;
eval reports a model's ranking quality on held-out records as TenSet does:
pairwise accuracy and top-1/top-5 (average peak) scores per task, averaged
weighted by the task's records. A task is a (workload, target): programs are
only compared with programs of the same task measured on the same target.

Records keep workload keys, not DAGs: --model names the ONNX models whose
tasks the records measured (records of other workloads are left out and
counted).

`

// costModelFlags are the flags of `tune costmodel train|eval`.
type costModelFlags struct {
	dbs, models cli.List
	target      string
	mf          modelFlags
	out         string
	objective   string
	seed        uint64
}

func (c *costModelFlags) Register(fs *flag.FlagSet) {
	c.mf.Register(fs)
	fs.Var(&c.dbs, "db", "records database `FILE` (repeatable; default tuning.db)")
	fs.Var(&c.models, "model", "ONNX model `FILE` whose tasks the records measured (repeatable; --input and --no-pass apply to each)")
	fs.StringVar(&c.target, "target", "", "only the records of this target: its key, or a part of it that names one target (default: all)")
	fs.StringVar(&c.out, "o", "", "write the model to `FILE` (LightGBM text; train)")
	fs.StringVar(&c.objective, "objective", "pack-sum", "training objective: pack-sum (Ansor's) or pairwise (RankNet's; train)")
	fs.Uint64Var(&c.seed, "seed", 1, "random seed of the validation split and pair sampling (train)")
	cli.SetUsage(fs, costModelUsage)
}

// runCostModel is `tune costmodel train|eval|pretrain`.
func runCostModel(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "pretrain" {
		return runPretrain(args[1:], stdout, stderr)
	}
	if len(args) == 0 || (args[0] != "train" && args[0] != "eval") {
		return cli.Usagef(stderr, "usage: tune costmodel train --db FILE... --model M.onnx... -o model.txt\n       tune costmodel eval --db FILE... --model M.onnx... model.txt\n       tune costmodel pretrain --db FILE... [-o model.txt]")
	}
	verb, args := args[0], args[1:]
	var cf costModelFlags
	pos, err := cli.Parse(cli.NewFlagSet("tune costmodel "+verb, stderr, &cf), args)
	if err != nil {
		return err
	}
	if verb == "eval" {
		if len(pos) != 1 {
			return cli.Usagef(stderr, "usage: tune costmodel eval [flags] model.txt (run 'tune costmodel eval -h')")
		}
		return evalCostModel(cf, pos[0], stdout)
	}
	if len(pos) > 0 || cf.out == "" {
		return cli.Usagef(stderr, "usage: tune costmodel train [flags] -o model.txt (models go with --model; run 'tune costmodel train -h')")
	}
	params := costmodel.DefaultParams()
	if params.Objective, err = costmodel.ParseObjective(cf.objective); err != nil {
		return fmt.Errorf("--%w", err) // --objective "x": ...
	}
	params.Seed = cf.seed
	return trainCostModel(cf, params, stdout)
}

func trainCostModel(cf costModelFlags, params costmodel.Params, stdout io.Writer) error {
	data, err := cf.load(stdout)
	if err != nil {
		return err
	}
	m, err := costmodel.Train(data, params)
	if err != nil {
		return err
	}
	if err := cli.WriteOutput(cf.out, m.Save); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "trained %s\nwrote %s\n", m.Info, cf.out)
	return nil
}

func evalCostModel(cf costModelFlags, path string, stdout io.Writer) error {
	m, err := costmodel.LoadFile(path)
	if err != nil {
		return err
	}
	data, err := cf.load(stdout)
	if err != nil {
		return err
	}
	r := costmodel.EvaluateTenSet(data, m.Predict(data.Programs()))
	fmt.Fprintf(stdout, "model %s: %d trees, %s\n", path, m.NumTrees(), m.Objective())
	fmt.Fprintf(stdout, "pairwise accuracy = %.4f\ntop-1 score = %.4f\ntop-5 score = %.4f\n", r.Pairwise, r.Top1, r.Top5)
	fmt.Fprintf(stdout, "(%d tasks, %d records)\n", r.Tasks, r.Programs)
	return nil
}

// load makes the dataset of the flags' records (package dataset), the
// tasks of the --model files giving the DAGs, and prints what it holds.
func (c *costModelFlags) load(stdout io.Writer) (*costmodel.Dataset, error) {
	if len(c.models) == 0 {
		return nil, errors.New("name the models whose tasks the records measured with --model (records keep workload keys, not the DAGs)")
	}
	dags, err := tuning.TaskDAGs(c.models, c.mf.loadOptions(), partition.Options{Winograd: c.mf.winograd})
	if err != nil {
		return nil, err
	}
	opts := dataset.Options{DBs: c.dbs, Target: c.target, DAGs: dags}
	if len(opts.DBs) == 0 {
		opts.DBs = []string{"tuning.db"}
	}
	data, rep, err := dataset.Load(opts)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(stdout, rep)
	return data, nil
}
