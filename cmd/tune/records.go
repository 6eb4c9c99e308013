package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/tessera-ml/tessera/internal/cli"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/records/curveplot"
	"github.com/tessera-ml/tessera/tuning"
)

// runRecords is `tune records export|import|distill|stats|plot`.
func runRecords(args []string, stdout, stderr io.Writer) error {
	verb, args, err := cli.Verb(stderr, "usage: tune records export|import|distill|stats|plot [--db FILE] ... (run 'tune records VERB -h')", args,
		"export", "import", "distill", "stats", "plot")
	if err != nil {
		return err
	}
	if verb == "plot" {
		return runPlot(args, stdout, stderr)
	}
	fs := cli.NewFlagSet("tune records "+verb, stderr, nil)
	var db string
	cli.RegisterDB(fs, &db, "")
	out := fs.String("o", "-", "output `FILE` (- for standard output)")
	k := fs.Int("k", 1, "records kept per task and target (distill)")
	asJSON := false
	if verb == "stats" {
		fs.BoolVar(&asJSON, "json", false, "print the stats as one JSON document")
	}
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if *k < 1 {
		return fmt.Errorf("-k %d: want at least 1 record per task and target", *k)
	}
	if verb != "import" && len(pos) > 0 {
		return fmt.Errorf("%s takes no file arguments (got %s); the output goes to -o", verb, strings.Join(pos, " "))
	}
	// Only import writes: the others read, so that a read-only database
	// (file or file system) can be exported or summarized.
	open := records.OpenReadOnly
	if verb == "import" {
		open = records.Open
	}
	store, err := open(db)
	if err != nil {
		return err
	}
	defer store.Close()
	if verb == "import" {
		return store.ImportFiles(stdout, pos)
	}
	w, closeOut, err := cli.Create(*out, stdout)
	if err != nil {
		return err
	}
	switch {
	case verb == "export":
		err = store.Export(w)
	case verb == "distill":
		err = store.Distill(w, *k)
	default: // stats, as text or JSON
		var r *records.StatsReport
		if r, err = store.StatsReport(); err == nil {
			err = cli.WriteReport(w, r, asJSON)
		}
	}
	return errors.Join(err, closeOut())
}

// plotUsage is the help of the command, before its flags.
const plotUsage = `usage: tune records plot [flags] [model.onnx]

Draws the tuning curve of --db: the estimated model latency (the sum over
tasks of weight × best latency so far) and each task's best GFLOP/s, against
the trials in measurement order. With a model, its tasks and weights are
plotted; without, every task stored in --db that has records on the target.

`

// plotFlags are the flags of `tune records plot`.
type plotFlags struct {
	mf              cli.Model
	db, target, out string
}

func (p *plotFlags) Register(fs *flag.FlagSet) {
	p.mf.Register(fs)
	cli.RegisterDB(fs, &p.db, "")
	fs.StringVar(&p.target, "target", "", "target key, or a part of it that names one target (default: the only target of the records)")
	fs.StringVar(&p.out, "o", "tuning.svg", "output `FILE`: .svg or .png")
	cli.SetUsage(fs, plotUsage)
}

// runPlot is `tune records plot [flags] [model.onnx]` (tuning.LoadCurve,
// package curveplot).
func runPlot(args []string, stdout, stderr io.Writer) error {
	var pf plotFlags
	pos, err := cli.Parse(cli.NewFlagSet("tune records plot", stderr, &pf), args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return cli.Usagef(stderr, "usage: tune records plot [flags] [model.onnx] (at most one model; run 'tune records plot -h')")
	}
	format, err := curveplot.FormatOf(pf.out)
	if err != nil {
		return err
	}
	model, title := "", filepath.Base(pf.db)
	if len(pos) == 1 {
		model, title = pos[0], filepath.Base(pos[0])
	}
	c, names, err := tuning.LoadCurve(pf.db, model, pf.mf.HostLoadOptions(), pf.mf.Ranges, pf.mf.Partition(), pf.target)
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
