package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tessera-ml/tessera/costmodel"
	"github.com/tessera-ml/tessera/internal/cli"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/tuning"
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

// pretrainUsage is the help of `tune costmodel pretrain`, before its flags.
const pretrainUsage = `usage: tune costmodel pretrain --db FILE... [flags]

pretrain trains the cost model tune starts from (--cost-model pretrained)
on every successful record of the --db files that measures a task of the
generated models (--generated, read from --generated-dir, where
cmd/genmodels writes them), the test data's layers or the --model files, on
any target. Before it trains on all of them it holds out a share of the
workloads, trains on the rest and reports TenSet's metrics on them
(pretrained), next to a model trained on the first half of each held-out
task's own records (cold), both judged on the second half.

`

// costModelFlags are the flags of `tune costmodel VERB`: those every verb
// takes and its own.
type costModelFlags struct {
	verb                   string
	dbs, models            cli.List
	mf                     cli.Model
	target, out, objective string
	generated, testdata    string
	generatedDir           string
	holdOut                float64
	seed                   uint64
}

func (c *costModelFlags) Register(fs *flag.FlagSet) {
	fs.Var(&c.dbs, "db", "records database `FILE` (repeatable; default tuning.db)")
	fs.Uint64Var(&c.seed, "seed", 1, "random seed of the validation split (and pair sampling)")
	if c.verb == "pretrain" {
		fs.Var(&c.models, "model", "another ONNX model `FILE` whose tasks the records measured (repeatable)")
		fs.StringVar(&c.generated, "generated", strings.Join(tuning.PretrainGenerated, ","), "the generated models (cmd/genmodels) whose records it learns from; a model left out is held out (MobileNetV2 and the BERT layer are, by default)")
		fs.StringVar(&c.generatedDir, "generated-dir", "models", "`DIR` of the generated models, NAME.onnx each (go run ./cmd/genmodels -o DIR NAME...)")
		fs.StringVar(&c.testdata, "testdata", tuning.TestDataDir, "`DIR` of the test data's PyTorch-converted models (Debian's libonnx-testdata), whose layers' records it learns from")
		fs.Float64Var(&c.holdOut, "hold-out", 0.2, "share of the workloads held out to report how the model ranks programs of workloads it did not see")
		fs.StringVar(&c.out, "o", "tuning/pretrained/cpu-amd64.txt", "write the model to `FILE` (LightGBM text): the default is the model tune ships, embedded when tune is built")
		cli.SetUsage(fs, pretrainUsage)
		return
	}
	c.mf.Register(fs)
	fs.Var(&c.models, "model", "ONNX model `FILE` whose tasks the records measured (repeatable; --input and --no-pass apply to each)")
	fs.StringVar(&c.target, "target", "", "only the records of this target: its key, or a part of it that names one target (default: all)")
	if c.verb == "train" {
		fs.StringVar(&c.out, "o", "", "write the model to `FILE` (LightGBM text)")
		fs.StringVar(&c.objective, "objective", "pack-sum", "training objective: pack-sum (Ansor's) or pairwise (RankNet's)")
	}
	cli.SetUsage(fs, costModelUsage)
}

// runCostModel is `tune costmodel train|eval|pretrain`.
func runCostModel(args []string, stdout, stderr io.Writer) error {
	verb, args, err := cli.Verb(stderr, "usage: tune costmodel train --db FILE... --model M.onnx... -o model.txt\n       tune costmodel eval --db FILE... --model M.onnx... model.txt\n       tune costmodel pretrain --db FILE... [-o model.txt]", args,
		"train", "eval", "pretrain")
	if err != nil {
		return err
	}
	cf := costModelFlags{verb: verb}
	pos, err := cli.Parse(cli.NewFlagSet("tune costmodel "+cf.verb, stderr, &cf), args)
	switch {
	case err != nil:
		return err
	case cf.verb == "pretrain" && (len(pos) > 0 || len(cf.dbs) == 0):
		return cli.Usagef(stderr, "usage: tune costmodel pretrain --db FILE... [-o model.txt] (run 'tune costmodel pretrain -h')")
	case cf.verb == "pretrain":
		return pretrain(cf, stdout)
	case cf.verb == "eval" && len(pos) != 1:
		return cli.Usagef(stderr, "usage: tune costmodel eval [flags] model.txt (run 'tune costmodel eval -h')")
	case cf.verb == "eval":
		return tuning.EvaluateModel(stdout, pos[0], cf.data())
	case len(pos) > 0 || cf.out == "":
		return cli.Usagef(stderr, "usage: tune costmodel train [flags] -o model.txt (models go with --model; run 'tune costmodel train -h')")
	}
	params := costmodel.DefaultParams()
	if params.Objective, err = costmodel.ParseObjective(cf.objective); err != nil {
		return fmt.Errorf("--%w", err) // --objective "x": ...
	}
	params.Seed = cf.seed
	m, err := tuning.TrainModel(stdout, cf.data(), params)
	if err != nil {
		return err
	}
	if err := cli.WriteOutput(cf.out, m.Save); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "trained %s\nwrote %s\n", m.Info, cf.out)
	return nil
}

// data says which records train or evaluate a model: those of the --db
// files that measure the tasks of the --model files.
func (c *costModelFlags) data() tuning.DataOptions {
	return tuning.DataOptions{DBs: c.dbs, Target: c.target, Models: c.models,
		Load: c.mf.HostLoadOptions(), Partition: c.mf.Partition(), Ranges: c.mf.Ranges}
}

// pretrain is `tune costmodel pretrain` (tuning.Pretrain).
func pretrain(c costModelFlags, stdout io.Writer) error {
	params := costmodel.DefaultParams()
	params.Seed = c.seed
	opts := tuning.PretrainOptions{DBs: c.dbs, Models: c.models, TestData: c.testdata, GeneratedDir: c.generatedDir, HoldOut: c.holdOut, Params: params}
	if c.generated != "" {
		opts.Generated = strings.Split(c.generated, ",")
	}
	m, rep, err := tuning.Pretrain(opts)
	if err != nil {
		return err
	}
	rep.Write(stdout)
	if err := cli.WriteOutput(c.out, m.Save); err != nil {
		return err
	}
	st, _ := os.Stat(c.out)
	fmt.Fprintf(stdout, "trained %d trees on %d programs in %v; wrote %s (%s)\n", m.Info.Trees, m.Info.Programs, m.Info.Duration.Round(1e6), c.out, measure.Bytes(st.Size()))
	return nil
}
