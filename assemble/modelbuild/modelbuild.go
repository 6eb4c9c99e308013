// Package modelbuild opens a build of a model as `tune build` makes it:
// the target, the records database, the model over the ranges of its
// dynamic dimensions (package tuning, which tunes it so) or in the layout
// the records choose (assemble.ChooseLayout), then builds it
// (assemble.Build) and reports. It sits above assemble and tuning, which
// it joins: neither imports the other.
package modelbuild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tessera-ml/tessera/assemble"
	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/tsrt"
	"github.com/tessera-ml/tessera/tuning"
)

// Options say what Open builds, for what and with which records (tune
// build).
type Options struct {
	Load      frontend.LoadOptions // how to read the model (frontend.Load)
	Partition partition.Options    // how to extract its tasks
	// Ranges are the values of the inputs' dynamic dimensions to build
	// over, by name (tune build --range); none builds the model as Load
	// binds it.
	Ranges map[string][2]int
	// Layouts are the activation layouts to weigh, in order of preference
	// on a tie (assemble.Layouts).
	Layouts []string
	// Target is the target to build for (backend.New, its library
	// compiled within assemble.LibraryTimeout); its Threads also run the
	// models that time the layouts end to end.
	Target backend.Config
	// DB is the records database whose best records the tasks are built
	// with (assemble.OpenRecords, read-only), unless NoRecords: every task
	// then gets its default schedule.
	DB        string
	NoRecords bool
	// Assemble are the build's options; Open sets their Target and
	// Records and, over ranges, Batch and Dim.
	Assemble assemble.Options
	Dir      string // where the model is built
}

// Build is a build of a model (Open): the model as it is built, the
// build's options and what a user should know; Run builds it.
type Build struct {
	Graph   *graph.Graph
	Plan    *partition.Plan
	Options assemble.Options
	// Reason says why the layout was chosen, where there was a choice
	// (assemble.LayoutChoice.Reason); Notes say how the model was read.
	Reason string
	Notes  []string

	dir    string
	path   string    // the model file
	opts   Options   // what Open was given (CompareFloat32 builds its twin so)
	start  time.Time // when the model began loading
	target *backend.Target
	store  *records.Store // nil without records
}

// Open makes the target o names, opens its records database and loads
// the model at path as a build of it builds it: over o.Ranges, the model
// over them (tuning.LoadDims, tuning.RangeModel) in the first of
// o.Layouts, without a race of the layouts; else in the layout that
// assemble.ChooseLayout chooses by the records, which may build and time
// each end to end (ctx ends that). Close closes the target and records.
func Open(ctx context.Context, path string, o Options) (*Build, error) {
	tc := o.Target
	tc.Host = &measure.Builder{Timeout: assemble.LibraryTimeout}
	tg, err := backend.New(tc)
	if err != nil {
		return nil, err
	}
	b := &Build{Options: o.Assemble, dir: o.Dir, path: path, opts: o, target: tg}
	b.Options.Target = tg
	if !o.NoRecords {
		if b.store, err = assemble.OpenRecords(o.DB, path); err != nil {
			b.Close()
			return nil, err
		}
		b.Options.Records = b.store
	}
	if err := b.load(ctx, path, o); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// load loads the model at path as Open says.
func (b *Build) load(ctx context.Context, path string, o Options) error {
	b.start = time.Now()
	if len(o.Ranges) > 0 {
		// With --layout auto the first is channels-last, the layout tune
		// tunes by default.
		l, bp, dp, err := tuning.LoadDims(path, assemble.LayoutLoadOptions(o.Load, o.Layouts[0]), o.Ranges, o.Partition)
		if err != nil {
			return err
		}
		b.Options.Batch, b.Options.Dim = bp, dp
		rm := tuning.RangeModel(bp, dp)
		b.Graph, b.Plan, b.Notes = rm.Graph, rm.Plan, l.Notes
		return nil
	}
	c, err := assemble.ChooseLayout(ctx, path, o.Load, o.Partition, o.Layouts, b.Options, tsrt.RunOptions{Threads: o.Target.Threads})
	if err != nil {
		return err
	}
	b.Graph, b.Plan, b.Notes = c.Chosen.Graph, c.Chosen.Plan, c.Chosen.Notes
	b.Reason = c.Reason(o.Target.Threads, o.Dir)
	return nil
}

// Run builds the model into the build's directory (assemble.Build) and
// writes its report on w (assemble.WriteReport, with the time since the
// model began loading). A bf16 build then reports how far it is from
// float32 (CompareFloat32); where that cannot run (a library for another
// CPU), why goes to the build's warnings, and the build stands.
func (b *Build) Run(ctx context.Context, w io.Writer) (*tsrt.Manifest, error) {
	m, err := assemble.Build(ctx, b.Graph, b.Plan, b.dir, b.Options)
	if err != nil {
		return nil, err
	}
	assemble.WriteReport(w, m, b.dir, time.Since(b.start))
	if b.opts.Load.BF16 {
		diffs, err := CompareFloat32(ctx, b.path, b.dir, b.opts)
		if err != nil && b.Options.Warn != nil {
			fmt.Fprintf(b.Options.Warn, "bf16 not compared with float32: %v\n", err)
		}
		WritePrecision(w, diffs)
	}
	return m, nil
}

// WriteOtherTargets writes on w the other targets that have records of
// the tasks the build m got default schedules for
// (assemble.WriteOtherTargets); without records, nothing.
func (b *Build) WriteOtherTargets(w io.Writer, m *tsrt.Manifest) error {
	if b.store == nil {
		return nil
	}
	return assemble.WriteOtherTargets(w, m, b.store)
}

// Close closes the records database and the target.
func (b *Build) Close() error {
	var err error
	if b.store != nil {
		err = b.store.Close()
	}
	return errors.Join(err, b.target.Close())
}
