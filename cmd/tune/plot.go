package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

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

func (p *plotFlags) register(fs *flag.FlagSet) {
	p.mf.register(fs)
	fs.StringVar(&p.db, "db", "tuning.db", "records database `FILE`")
	fs.StringVar(&p.target, "target", "", "target key, or a part of it that names one target (default: the only target of the records)")
	fs.StringVar(&p.out, "o", "tuning.svg", "output `FILE`: .svg or .png")
	setUsage(fs, plotUsage)
}

// runPlot is `tune records plot [flags] [model.onnx]` (package curveplot).
func runPlot(args []string, stdout, stderr io.Writer) error {
	var pf plotFlags
	fs := flagSet("tune records plot", stderr, &pf)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		fmt.Fprintln(stderr, "usage: tune records plot [flags] [model.onnx] (at most one model; run 'tune records plot -h')")
		return errUsage
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
	f, err := os.Create(pf.out)
	if err != nil {
		return err
	}
	err = curveplot.Draw(f, format, c, names, title)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("-o %s: %w", pf.out, err)
	}
	lat := c.Latency()
	fmt.Fprintf(stdout, "wrote %s: %d trials (%d successful) of %d tasks on %s\n", pf.out, c.Trials, c.Valid, len(c.Tasks), c.Target)
	if len(lat) == 0 {
		fmt.Fprintln(stdout, "estimated model latency: not defined yet (a task has no successful record)")
	} else {
		fmt.Fprintf(stdout, "estimated model latency: %.4f ms after trial %d, %.4f ms after trial %d\n",
			lat[0].Value*1e3, lat[0].Trial, lat[len(lat)-1].Value*1e3, lat[len(lat)-1].Trial)
	}
	return nil
}

// curve returns the curve to plot, its tasks' names and the figure's
// title: the model's tasks (pos holds the model), or every task stored
// in the database that has records on the target, named by its key.
func (pf *plotFlags) curve(store *records.Store, pos []string) (*records.Curve, []string, string, error) {
	var tasks []records.TaskInfo
	var names []string
	title := filepath.Base(pf.db)
	var err error
	if len(pos) == 1 {
		mts, err := modelTasks(pos[0], pf.mf)
		if err != nil {
			return nil, nil, "", err
		}
		for i, t := range mts {
			tasks = append(tasks, records.TaskInfo{Key: t.Key, FLOPs: t.FLOPs, Weight: t.Weight})
			names = append(names, fmt.Sprintf("%d %s", i, t.Ops()))
		}
		title = filepath.Base(pos[0])
	} else if tasks, err = store.Tasks(); err != nil {
		return nil, nil, "", err
	}
	keys := make([]string, len(tasks))
	for i, t := range tasks {
		keys[i] = t.Key
	}
	targets, err := store.Targets(keys)
	if err != nil {
		return nil, nil, "", err
	}
	key, err := records.PickTarget(slices.Collect(maps.Keys(targets)), pf.target, pf.db)
	if err != nil {
		return nil, nil, "", err
	}
	if len(pos) == 0 {
		tasks = slices.DeleteFunc(tasks, func(t records.TaskInfo) bool { return targets[key][t.Key].Records == 0 })
		for _, t := range tasks {
			names = append(names, shortKey(t.Key))
		}
	}
	c, err := store.Curve(key, tasks)
	switch {
	case err != nil:
		return nil, nil, "", err
	case c.Trials == 0:
		return nil, nil, "", fmt.Errorf("%s has no records of these tasks on %s: nothing to plot", pf.db, key)
	case c.Valid == 0:
		return nil, nil, "", fmt.Errorf("%s has %d records of these tasks on %s, none successful: nothing to plot", pf.db, c.Trials, key)
	}
	return c, names, title, nil
}

// shortKey abbreviates a workload key as the task tables do.
func shortKey(key string) string {
	if len(key) > 11 {
		return key[:11]
	}
	return key
}
