package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"tessera/internal/cli"
	"tessera/records"
	"tessera/records/curveplot"
)

// plotUsage is the help of the command, before its flags.
const plotUsage = `usage: tune records plot [flags] [model.onnx]

Draws the tuning curve of --db: the estimated model latency (the sum over
tasks of weight × best latency so far) and each task's best GFLOP/s, against
the trials in measurement order. With a model, its tasks and weights are
plotted; without, every task stored in --db that has records on the target.

`

// plotFlags are the flags of `tune records plot`.
type plotFlags struct {
	mf              modelFlags
	db, target, out string
}

func (p *plotFlags) Register(fs *flag.FlagSet) {
	p.mf.Register(fs)
	fs.StringVar(&p.db, "db", "tuning.db", "records database `FILE`")
	fs.StringVar(&p.target, "target", "", "target key, or a part of it that names one target (default: the only target of the records)")
	fs.StringVar(&p.out, "o", "tuning.svg", "output `FILE`: .svg or .png")
	cli.SetUsage(fs, plotUsage)
}

// runPlot is `tune records plot [flags] [model.onnx]` (package curveplot).
func runPlot(args []string, stdout, stderr io.Writer) error {
	var pf plotFlags
	pos, err := cli.Parse(cli.NewFlagSet("tune records plot", stderr, &pf), args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return cli.Usagef(stderr, "usage: tune records plot [flags] [model.onnx] (at most one model; run 'tune records plot -h')")
	}
	format := strings.ToLower(filepath.Ext(pf.out))
	if format != ".svg" && format != ".png" {
		return fmt.Errorf("-o %s: the output is .svg or .png", pf.out)
	}
	store, err := records.OpenReadOnly(pf.db)
	if err != nil {
		return err
	}
	defer store.Close()
	c, names, title, err := pf.curve(store, pos)
	if err != nil {
		return err
	}
	err = cli.WriteOutput(pf.out, func(w io.Writer) error { return curveplot.Draw(w, format, c, names, title) })
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %s\n", pf.out, c.Summary())
	return nil
}

// curve returns the curve to plot (Store.CurveOf), its tasks' names and
// the figure's title: the model's tasks (pos holds the model), or every
// task stored in the database that has records on the target, named by
// its key.
func (pf *plotFlags) curve(store *records.Store, pos []string) (*records.Curve, []string, string, error) {
	if len(pos) == 0 {
		c, err := store.CurveOf(nil, pf.target)
		if err != nil {
			return nil, nil, "", err
		}
		var names []string
		for _, t := range c.Tasks {
			names = append(names, records.ShortKey(t.Key))
		}
		return c, names, filepath.Base(pf.db), nil
	}
	mts, err := modelTasks(pos[0], pf.mf)
	if err != nil {
		return nil, nil, "", err
	}
	tasks, names := make([]records.TaskInfo, len(mts)), make([]string, len(mts))
	for i, t := range mts {
		tasks[i] = records.TaskInfo{Key: t.Key, FLOPs: t.FLOPs, Weight: t.Weight}
		names[i] = fmt.Sprintf("%d %s", i, t.Ops())
	}
	c, err := store.CurveOf(tasks, pf.target)
	return c, names, filepath.Base(pos[0]), err
}
