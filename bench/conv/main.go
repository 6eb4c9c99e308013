// Command conv measures, side by side in one run, the GFLOP/s of a 3×3
// convolution (1×64×56×56 → 64 channels, pad 1, stride 1, NCHW, float32)
// computed by the naive schedule and by an expert schedule written only as
// schedule steps, each kernel in its own process, in turn, round after
// round. The last line is "tessera/naive = R", the median over rounds of
// the expert schedule's speed divided by the naive schedule's.
//
//	go run ./bench/conv
//	go run ./bench/conv -threads 2
package main

import (
	"context"
	"flag"
	"fmt"

	"tessera/bench/internal/benchutil"
	"tessera/measure"
	"tessera/schedule"
	"tessera/te"
	"tessera/tir"
)

func main() {
	threads := flag.Int("threads", 1, "threads for both schedules")
	rounds := flag.Int("rounds", 5, "alternating rounds")
	flag.Parse()
	if err := run(*threads, *rounds); err != nil {
		benchutil.Fatal(err)
	}
}

func convDAG() (*te.DAG, error) {
	x := te.Placeholder("X", 1, 64, 56, 56)
	w := te.Placeholder("W", 64, 64, 3, 3)
	c, err := te.Conv("conv", x, w, nil, te.ConvAttrs{Pads: []int{1, 1, 1, 1}})
	if err != nil {
		return nil, err
	}
	return te.NewDAG(c)
}

func stage(s *schedule.State, name string) (int, error) {
	for i, st := range s.Stages {
		if st.Tensor.Name == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no stage %s", name)
}

// expert is a conv schedule in steps: the padded input computed once at the
// root; the conv accumulates into a local tile of 16 output channels × 8
// pixels of a row (16 vector registers of 8 lanes), tiled SSRSRS over
// (n, f, h, w | rc, rh, rw); the output copy follows the tile, its outer
// loops fused and parallel, the pixel lanes vectorized.
func expert(d *te.DAG) (*schedule.State, error) {
	s := schedule.NewState(d)
	c, err := stage(s, "conv")
	if err != nil {
		return nil, err
	}
	cl, out := c, c+1 // after cache_write
	steps := []schedule.Step{
		&schedule.CacheWrite{Stage: c, Scope: tir.Local},
		// conv.local: n f h w rc rh rw
		&schedule.Split{Stage: cl, Iter: 1, Lengths: []int{1, 16}}, // step 1: f.0 f.1 f.2
		&schedule.Split{Stage: cl, Iter: 4, Lengths: []int{1, 1}},  // h.0 h.1 h.2
		&schedule.Split{Stage: cl, Iter: 7, Lengths: []int{1, 8}},  // step 3: w.0 w.1 w.2
		&schedule.Split{Stage: cl, Iter: 10, Lengths: []int{4}},    // rc.0 rc.1
		&schedule.Split{Stage: cl, Iter: 12, Lengths: []int{3}},    // rh.0 rh.1
		&schedule.Split{Stage: cl, Iter: 14, Lengths: []int{3}},    // rw.0 rw.1
		// n f.0 h.0 w.0 rc.0 rh.0 rw.0 f.1 h.1 w.1 rc.1 rh.1 rw.1 f.2 h.2 w.2
		&schedule.Reorder{Stage: cl, Order: []int{0, 1, 4, 7, 10, 12, 14, 2, 5, 8, 11, 13, 15, 3, 6, 9}},
		&schedule.Annotate{Stage: cl, Iter: 15, Ann: schedule.Vectorize},
		&schedule.Pragma{Stage: cl, Iter: 0, Key: schedule.PragmaAutoUnroll, Value: 512},
		// conv: n f h w → n f.0 h w.0 f.1 w.1
		&schedule.FollowSplit{Stage: out, Iter: 1, SrcStep: 1, NParts: 2},
		&schedule.FollowSplit{Stage: out, Iter: 4, SrcStep: 3, NParts: 2},
		&schedule.Reorder{Stage: out, Order: []int{0, 1, 3, 4, 2, 5}},
		&schedule.ComputeAt{Stage: cl, TargetStage: out, TargetIter: 3},
		&schedule.Fuse{Stage: out, Iters: []int{0, 1, 2}},
		&schedule.Annotate{Stage: out, Iter: 0, Ann: schedule.Parallel},
		&schedule.Annotate{Stage: out, Iter: 3, Ann: schedule.Vectorize},
	}
	if pad, err := stage(s, "conv_pad"); err == nil {
		// The padded copy: rows in parallel, lanes vectorized.
		steps = append(steps,
			&schedule.Fuse{Stage: pad, Iters: []int{0, 1, 2}},
			&schedule.Annotate{Stage: pad, Iter: 0, Ann: schedule.Parallel},
		)
	}
	return schedule.Replay(s, steps)
}

func run(threads, rounds int) error {
	ctx := context.Background()
	d, err := convDAG()
	if err != nil {
		return err
	}
	ex, err := expert(d)
	if err != nil {
		return fmt.Errorf("expert schedule: %w", err)
	}
	names := []string{"expert", "naive"}
	var srcs []string
	for _, s := range []*schedule.State{ex, schedule.NewState(d)} {
		src, err := benchutil.Lower(s)
		if err != nil {
			return err
		}
		srcs = append(srcs, src)
	}
	args := measure.Args(d)
	ks, err := benchutil.Build(ctx, &measure.Builder{}, names, srcs, args)
	if err != nil {
		return err
	}

	// Both schedules must compute what the reference evaluator computes.
	inputs := measure.RandomInputs(args, 1)[:len(d.Inputs)]
	want, err := d.Eval(inputs)
	if err != nil {
		return err
	}
	checker := &measure.Runner{Opts: measure.RunOptions{Threads: threads, Number: 1, Repeat: 1, MinRepeatMs: -1, Check: true}}
	defer checker.Close()
	for _, k := range ks {
		res := checker.Run(ctx, []measure.Job{{Lib: k.Lib, Entry: benchutil.KernelName, Args: args, Inputs: inputs}})[0]
		if res.Kind != measure.None {
			return fmt.Errorf("%s: %v: %s", k.Name, res.Kind, res.Msg)
		}
		tol := measure.Tolerance(d)
		if ok, msg := measure.Compare(res.Outputs[0], want[0], tol, tol); !ok {
			return fmt.Errorf("%s: wrong result: %s", k.Name, msg)
		}
	}

	flops := d.FLOPs()
	fmt.Printf("conv 3×3 1×64×56×56 → 64, pad 1, float32, %d thread(s), %d alternating rounds, each kernel in its own process\n", threads, rounds)
	r := &measure.Runner{Opts: measure.RunOptions{Threads: threads, Repeat: 3, MinRepeatMs: 200}}
	defer r.Close()
	tm, err := benchutil.Alternate(ctx, r, ks, rounds)
	if err != nil {
		return err
	}
	benchutil.Report(flops, tm, ks, "expert", "naive", "tessera/naive")
	return nil
}
