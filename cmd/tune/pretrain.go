package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"tessera/costmodel"
	"tessera/internal/cli"
	"tessera/measure"
	"tessera/tuning"
)

// pretrainUsage is the help of the command, before its flags.
const pretrainUsage = `usage: tune costmodel pretrain --db FILE... [flags]

pretrain trains the cost model tune starts from (--cost-model pretrained)
on every successful record of the --db files that measures a task of the
generated models, the test data's layers or the --model files, on any
target. Before it trains on all of them it holds out a share of the
workloads, trains on the rest and reports TenSet's metrics on them
(pretrained), next to a model trained on the first half of each held-out
task's own records (cold), both judged on the second half.

`

// pretrainFlags are the flags of `tune costmodel pretrain`.
type pretrainFlags struct {
	dbs, models cli.List
	generated   string
	testdata    string
	holdOut     float64
	out         string
	seed        uint64
}

func (p *pretrainFlags) Register(fs *flag.FlagSet) {
	fs.Var(&p.dbs, "db", "records database `FILE` (repeatable)")
	fs.Var(&p.models, "model", "another ONNX model `FILE` whose tasks the records measured (repeatable)")
	fs.StringVar(&p.generated, "generated", strings.Join(tuning.PretrainGenerated, ","), "the generated models (cmd/genmodels) whose records it learns from; a model left out is held out (MobileNetV2 and the BERT layer are, by default)")
	fs.StringVar(&p.testdata, "testdata", tuning.TestDataDir, "`DIR` of the test data's PyTorch-converted models (Debian's libonnx-testdata), whose layers' records it learns from")
	fs.Float64Var(&p.holdOut, "hold-out", 0.2, "share of the workloads held out to report how the model ranks programs of workloads it did not see")
	fs.StringVar(&p.out, "o", "tuning/pretrained/cpu-amd64.txt", "write the model to `FILE` (LightGBM text): the default is the model tune ships, embedded when tune is built")
	fs.Uint64Var(&p.seed, "seed", 1, "random seed of the validation split")
	cli.SetUsage(fs, pretrainUsage)
}

// runPretrain is `tune costmodel pretrain`.
func runPretrain(args []string, stdout, stderr io.Writer) error {
	var p pretrainFlags
	pos, err := cli.Parse(cli.NewFlagSet("tune costmodel pretrain", stderr, &p), args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || len(p.dbs) == 0 {
		return cli.Usagef(stderr, "usage: tune costmodel pretrain --db FILE... [-o model.txt] (run 'tune costmodel pretrain -h')")
	}
	params := costmodel.DefaultParams()
	params.Seed = p.seed
	opts := tuning.PretrainOptions{DBs: p.dbs, Models: append(p.models, tuning.TestDataModels(p.testdata, tuning.PretrainTestData...)...),
		HoldOut: p.holdOut, Params: params}
	if p.generated != "" {
		opts.Generated = strings.Split(p.generated, ",")
	}
	m, rep, err := tuning.Pretrain(opts)
	if err != nil {
		return err
	}
	rep.Write(stdout)
	if err := cli.WriteOutput(p.out, m.Save); err != nil {
		return err
	}
	st, _ := os.Stat(p.out)
	fmt.Fprintf(stdout, "trained %d trees on %d programs in %v; wrote %s (%s)\n", m.Info.Trees, m.Info.Programs, m.Info.Duration.Round(1e6), p.out, measure.Bytes(st.Size()))
	return nil
}
