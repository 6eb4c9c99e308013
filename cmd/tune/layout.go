package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"

	"tessera/build"
	"tessera/measure"
	"tessera/partition"
)

// The activation layouts `tune build --layout` chooses from: channels-last
// (the convert-layout pass, on by default) and the model's own.
const (
	layoutNHWC = "nhwc"
	layoutNCHW = "nchw"
)

// minTunedShare is the share of a plan's FLOPs (percent) that must run
// tuned schedules for the plan to be timed against the other layout's: a
// plan mostly on default schedules says nothing about its layout.
const minTunedShare = 90

// Rounds of the end-to-end race between layouts, each a bench of
// layoutRepeat runs after layoutWarmup untimed ones per built model.
const (
	layoutRounds = 3
	layoutWarmup = 2
	layoutRepeat = 10
)

// buildLayouts returns the layouts --layout asks for, in order of
// preference on a tie. --no-pass convert-layout leaves only NCHW.
func buildLayouts(layout string, mf modelFlags) ([]string, error) {
	noConvert := mf.noPass["convert-layout"]
	switch layout {
	case "auto":
		if noConvert {
			return []string{layoutNCHW}, nil
		}
		return []string{layoutNHWC, layoutNCHW}, nil
	case layoutNHWC:
		if noConvert {
			return nil, fmt.Errorf("--layout nhwc needs the convert-layout pass, which --no-pass convert-layout disables")
		}
		return []string{layoutNHWC}, nil
	case layoutNCHW:
		return []string{layoutNCHW}, nil
	}
	return nil, fmt.Errorf("--layout %q: want auto, nhwc or nchw", layout)
}

// withLayout returns the model flags that give the layout: NCHW disables
// the convert-layout pass.
func (m modelFlags) withLayout(layout string) modelFlags {
	c := m
	c.noPass = maps.Clone(m.noPass)
	if c.noPass == nil {
		c.noPass = namesFlag{}
	}
	if layout == layoutNCHW {
		c.noPass["convert-layout"] = true
	}
	return c
}

// layoutPlan is the model's plan in one layout, and how much of it the
// records cover.
type layoutPlan struct {
	layout   string
	l        *loaded
	plan     *partition.Plan // every alternative offered, as the build takes it
	share    float64         // percent of the FLOPs of one inference with a record
	estimate float64         // seconds: the records' costs summed over the plan
}

// chooseLayout returns the layout to build: the one whose plan the records
// cover (at least minTunedShare of its FLOPs); where both are covered, it
// builds both into temporary directories, times them end to end in
// alternating rounds and returns the faster. Without records, the first
// layout.
func chooseLayout(ctx context.Context, path string, mf modelFlags, layouts []string, opts build.Options, out string, threads int, log io.Writer) (string, error) {
	if opts.Records == nil {
		return layouts[0], nil
	}
	var plans []layoutPlan
	for _, layout := range layouts {
		lp, err := coverLayout(path, mf.withLayout(layout), layout, opts)
		if err != nil {
			return "", err
		}
		plans = append(plans, lp)
	}
	var covered []layoutPlan
	for _, lp := range plans {
		if lp.share >= minTunedShare {
			covered = append(covered, lp)
		}
	}
	if len(covered) < 2 {
		best := plans[0]
		for _, lp := range plans[1:] {
			if lp.share > best.share {
				best = lp
			}
		}
		fmt.Fprintf(log, "tune build: layout %s: records cover %.1f%% of its FLOPs", best.layout, best.share)
		for _, lp := range plans {
			if lp.layout != best.layout {
				fmt.Fprintf(log, ", %.1f%% of %s's", lp.share, lp.layout)
			}
		}
		if len(plans) > 1 {
			fmt.Fprintf(log, " (layouts are raced end to end when records cover %d%% of each)", minTunedShare)
		}
		fmt.Fprintln(log)
		return best.layout, nil
	}

	// Both layouts are tuned: build each and race them.
	dirs := map[string]string{}
	for _, lp := range covered {
		dir, err := os.MkdirTemp("", "tessera-layout-"+lp.layout+"-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(dir)
		o := opts
		o.Warn = io.Discard
		if _, err := build.Build(ctx, lp.l.g, lp.plan, dir, o); err != nil {
			return "", fmt.Errorf("layout %s: %w", lp.layout, err)
		}
		dirs[lp.layout] = dir
	}
	medians := map[string][]float64{}
	for range layoutRounds {
		for _, lp := range covered {
			m, err := build.Open(dirs[lp.layout])
			if err != nil {
				return "", err
			}
			times, err := m.Bench(ctx, layoutWarmup, layoutRepeat, build.RunOptions{Threads: threads})
			if err != nil {
				return "", fmt.Errorf("layout %s: %w", lp.layout, err)
			}
			medians[lp.layout] = append(medians[lp.layout], measure.Result{Costs: times}.Median())
		}
	}
	best, bestMs := "", 0.0
	fmt.Fprintf(log, "tune build: both layouts are tuned; end to end, %d threads, median of %d rounds of %d runs:", threads, layoutRounds, layoutRepeat)
	for _, lp := range covered {
		ms := measure.Result{Costs: medians[lp.layout]}.Median() * 1e3
		fmt.Fprintf(log, " %s %.3f ms (records' estimate %.3f);", lp.layout, ms, lp.estimate*1e3)
		if best == "" || ms < bestMs {
			best, bestMs = lp.layout, ms
		}
	}
	fmt.Fprintf(log, " building %s into %s\n", best, out)
	return best, nil
}

// coverLayout loads the model in one layout, extracts its plan (kept for
// the race) and sums what the records cover: per group, the alternative
// with the fastest record, as the build chooses.
func coverLayout(path string, mf modelFlags, layout string, opts build.Options) (layoutPlan, error) {
	lp := layoutPlan{layout: layout}
	var err error
	if lp.l, err = loadModel(path, mf); err != nil {
		return lp, err
	}
	if lp.plan, err = partition.Extract(lp.l.g, partition.Options{Winograd: true}); err != nil {
		return lp, err
	}
	plan := lp.plan
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
	chosen := plan.Choose(cost)
	if lookupErr != nil {
		return lp, lookupErr
	}
	var total, tuned float64
	for _, t := range chosen.Tasks {
		flops := float64(t.Weight) * t.FLOPs
		total += flops
		if c, ok := cost(t); ok {
			tuned += flops
			lp.estimate += float64(t.Weight) * c
		}
	}
	if total > 0 {
		lp.share = 100 * tuned / total
	}
	return lp, lookupErr // a lookup of the loop above may have failed too
}
