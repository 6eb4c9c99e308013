package assemble

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tsrt"
)

// The activation layouts ChooseLayout weighs: channels-last (the
// convert-layout pass, on by default) and the model's own.
const (
	LayoutNHWC = "nhwc"
	LayoutNCHW = "nchw"
)

// MinTunedShare is the share of a plan's FLOPs (percent) that must run
// tuned schedules for the plan to be timed against the other layout's: a
// plan mostly on default schedules says nothing about its layout.
const MinTunedShare = 90

// Rounds of the end-to-end race between layouts, each a bench of
// RaceRepeat runs after raceWarmup untimed ones per built model.
const (
	RaceRounds = 3
	raceWarmup = 2
	RaceRepeat = 10
)

// LayoutModel is the model loaded and partitioned in one layout, and how
// much of its plan the records cover.
type LayoutModel struct {
	Layout string
	*frontend.Loaded
	Plan  *partition.Plan // every alternative algorithm offered: the build keeps the fastest
	Share float64         // percent of the FLOPs of one inference with a record
	// OwnShare is Share over the tasks no other layout has (100 when it
	// has none): the tasks that make the layouts differ.
	OwnShare float64
	Estimate float64 // seconds: the records' costs summed over the plan
	Median   float64 // seconds end to end in the race; 0 when not raced

	tasks []taskCover // the plan's chosen tasks
}

// taskCover is one task of a plan: its key, its FLOPs per inference and
// whether a record covers it.
type taskCover struct {
	key   string
	flops float64
	tuned bool
}

// LayoutChoice is the layout ChooseLayout chose and why.
type LayoutChoice struct {
	Chosen *LayoutModel // the model to build: Build(ctx, Chosen.Graph, Chosen.Plan, ...)
	// Weighed are the layouts weighed, in order of preference; nil when
	// there was nothing to weigh (one layout, or no records).
	Weighed []*LayoutModel
	Raced   bool // the records covered every layout: each was built and timed
}

// ChooseLayout loads and partitions the model at path once per layout
// (in order of preference on a tie) and returns the one to build: the one
// whose plan the records cover (at least MinTunedShare of its FLOPs, and
// of the FLOPs of the tasks no other layout has: Swin-T's layouts share
// every task but the patch embedding's, and a race against a layout whose
// only own task runs its default schedule measures nothing but noise);
// where every layout is covered, it builds each into a temporary
// directory, times them end to end (RaceRounds alternating rounds, run
// with run) and returns the fastest. Without records, the first layout.
// load says how to read the model (in the NCHW layout the convert-layout
// pass does not run), part how to partition it (Alternatives: the Winograd
// rivals a build may choose).
func ChooseLayout(ctx context.Context, path string, load frontend.LoadOptions, part partition.Options, layouts []string, opts Options, run tsrt.RunOptions) (*LayoutChoice, error) {
	if opts.Records == nil || len(layouts) == 1 {
		lm, err := loadLayout(path, load, part, layouts[0])
		return &LayoutChoice{Chosen: lm}, err
	}
	c := &LayoutChoice{}
	var covered []*LayoutModel
	for _, layout := range layouts {
		lm, err := loadLayout(path, load, part, layout)
		if err != nil {
			return nil, err
		}
		if err := lm.cover(opts); err != nil {
			return nil, err
		}
		c.Weighed = append(c.Weighed, lm)
		if c.Chosen == nil || lm.Share > c.Chosen.Share {
			c.Chosen = lm
		}
	}
	ownShares(c.Weighed)
	for _, lm := range c.Weighed {
		if lm.Share >= MinTunedShare && lm.OwnShare >= MinTunedShare {
			covered = append(covered, lm)
		}
	}
	if len(covered) < 2 {
		return c, nil
	}
	c.Raced = true
	var err error
	c.Chosen, err = race(ctx, covered, opts, run)
	return c, err
}

// loadLayout loads the model in one layout and extracts its plan with
// every alternative algorithm.
func loadLayout(path string, load frontend.LoadOptions, part partition.Options, layout string) (*LayoutModel, error) {
	l, err := frontend.Load(path, LayoutLoadOptions(load, layout))
	if err != nil {
		return nil, err
	}
	plan, err := partition.Extract(l.Graph, part)
	if err != nil {
		return nil, err
	}
	return &LayoutModel{Layout: layout, Loaded: l, Plan: plan}, nil
}

// LayoutLoadOptions returns load made to load the model in layout: for
// NCHW, the convert-layout pass off (in a copy of load.NoPass; load's is
// left as it is); for NHWC, load itself.
func LayoutLoadOptions(load frontend.LoadOptions, layout string) frontend.LoadOptions {
	if layout == LayoutNCHW {
		load.NoPass = maps.Clone(load.NoPass)
		if load.NoPass == nil {
			load.NoPass = map[string]bool{}
		}
		load.NoPass["convert-layout"] = true
	}
	return load
}

// cover sums what the records cover of the plan: per group, the
// alternative with the fastest record, as the build chooses.
func (lm *LayoutModel) cover(opts Options) error {
	key := opts.Target.Key()
	var lookupErr error
	cost := func(t *partition.Task) (float64, bool) {
		rs, err := opts.Records.Ranked(t.Key, key)
		if err != nil {
			lookupErr = err
			return 0, false
		}
		if len(rs) == 0 {
			return 0, false
		}
		return rs[0].Cost(), true
	}
	chosen := lm.Plan.Choose(cost)
	if lookupErr != nil {
		return lookupErr
	}
	var total, tuned float64
	for _, t := range chosen.Tasks {
		flops := float64(t.Weight) * t.FLOPs
		total += flops
		c, ok := cost(t)
		if ok {
			tuned += flops
			lm.Estimate += float64(t.Weight) * c
		}
		lm.tasks = append(lm.tasks, taskCover{t.Key, flops, ok})
	}
	if total > 0 {
		lm.Share = 100 * tuned / total
	}
	return lookupErr // a lookup of the loop above may have failed too
}

// ownShares sets each layout's OwnShare: the percent of the FLOPs of its
// tasks that no other layout has which records cover.
func ownShares(lms []*LayoutModel) {
	for _, lm := range lms {
		others := map[string]bool{}
		for _, o := range lms {
			if o != lm {
				for _, t := range o.tasks {
					others[t.key] = true
				}
			}
		}
		var total, tuned float64
		for _, t := range lm.tasks {
			if others[t.key] {
				continue
			}
			total += t.flops
			if t.tuned {
				tuned += t.flops
			}
		}
		lm.OwnShare = 100
		if total > 0 {
			lm.OwnShare = 100 * tuned / total
		}
	}
}

// race builds each layout's model into a temporary directory, times them
// in alternating rounds and returns the fastest by the median of its
// rounds' medians.
func race(ctx context.Context, lms []*LayoutModel, opts Options, run tsrt.RunOptions) (*LayoutModel, error) {
	dirs := map[*LayoutModel]string{}
	for _, lm := range lms {
		dir, err := os.MkdirTemp("", "tessera-layout-"+lm.Layout+"-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		o := opts
		o.Warn = io.Discard
		if _, err := Build(ctx, lm.Graph, lm.Plan, dir, o); err != nil {
			return nil, fmt.Errorf("layout %s: %w", lm.Layout, err)
		}
		dirs[lm] = dir
	}
	medians := map[*LayoutModel][]float64{}
	for range RaceRounds {
		for _, lm := range lms {
			m, err := tsrt.Open(dirs[lm])
			if err != nil {
				return nil, err
			}
			times, err := m.Bench(ctx, raceWarmup, RaceRepeat, run)
			m.Close()
			if err != nil {
				return nil, fmt.Errorf("layout %s: %w", lm.Layout, err)
			}
			medians[lm] = append(medians[lm], measure.Result{Costs: times}.Median())
		}
	}
	var best *LayoutModel
	for _, lm := range lms {
		lm.Median = measure.Result{Costs: medians[lm]}.Median()
		if best == nil || lm.Median < best.Median {
			best = lm
		}
	}
	return best, nil
}

// Layouts returns the layouts tune build's --layout asks for (auto, nhwc
// or nchw), in order of preference on a tie. Without the convert-layout
// pass (noConvert: --no-pass convert-layout) only NCHW is left.
func Layouts(layout string, noConvert bool) ([]string, error) {
	switch layout {
	case "auto":
		if noConvert {
			return []string{LayoutNCHW}, nil
		}
		return []string{LayoutNHWC, LayoutNCHW}, nil
	case LayoutNHWC:
		if noConvert {
			return nil, fmt.Errorf("--layout nhwc needs the convert-layout pass, which --no-pass convert-layout disables")
		}
		return []string{LayoutNHWC}, nil
	case LayoutNCHW:
		return []string{LayoutNCHW}, nil
	}
	return nil, fmt.Errorf("--layout %q: want auto, nhwc or nchw", layout)
}

// Reason says why the layout was chosen, where there was a choice (""
// where there was none): the race's times at threads (the RunOptions of
// ChooseLayout) and the directory it is built into, or what the records
// cover of each layout.
func (c *LayoutChoice) Reason(threads int, dir string) string {
	var b strings.Builder
	switch {
	case c.Raced:
		fmt.Fprintf(&b, "both layouts are tuned; end to end, %d threads, median of %d rounds of %d runs:", threads, RaceRounds, RaceRepeat)
		for _, lm := range c.Weighed {
			if lm.Share >= MinTunedShare {
				fmt.Fprintf(&b, " %s %.3f ms (records' estimate %.3f);", lm.Layout, lm.Median*1e3, lm.Estimate*1e3)
			}
		}
		fmt.Fprintf(&b, " building %s into %s", c.Chosen.Layout, dir)
	case len(c.Weighed) > 1:
		fmt.Fprintf(&b, "layout %s: records cover %.1f%% of its FLOPs", c.Chosen.Layout, c.Chosen.Share)
		for _, lm := range c.Weighed {
			if lm != c.Chosen {
				fmt.Fprintf(&b, ", %.1f%% of %s's", lm.Share, lm.Layout)
				if lm.Share >= MinTunedShare {
					fmt.Fprintf(&b, " but %.1f%% of the tasks only %s has", lm.OwnShare, lm.Layout)
				}
			}
		}
		fmt.Fprintf(&b, " (layouts are raced end to end when records cover %d%% of each, and of the tasks only it has)", MinTunedShare)
	}
	return b.String()
}
