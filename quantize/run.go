package quantize

import (
	"context"
	"fmt"
	"os"
	"runtime"

	"github.com/tessera-ml/tessera/assemble"
	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tsrt"
)

// BuildRunner returns the Runner that compiles the float graph with
// Tessera's default schedules (no records: nothing is tuned) into a
// temporary build and runs it with the given threads (0: all CPUs). The
// graph passes run on it first, the channels-last layout included, so
// that the kernels are the fast ones; the calibrated tensors are its
// outputs, which keep their names and layout. ResNet-18 builds in seconds
// and runs a sample in a fraction of one.
func BuildRunner(threads int) Runner {
	return func(ctx context.Context, g *graph.Graph, samples [][]*graph.Tensor, each func(int, [][]float32) error) error {
		if threads <= 0 {
			threads = runtime.NumCPU()
		}
		g = g.Clone()
		if err := frontend.RunPasses(g, nil); err != nil {
			return fmt.Errorf("calibration model: %w", err)
		}
		plan, err := partition.Extract(g, partition.Options{})
		if err != nil {
			return fmt.Errorf("calibration model: %w", err)
		}
		dir, err := os.MkdirTemp("", "tessera-calibrate-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		tg := backend.CPU(backend.CPUConfig{Threads: threads, Builder: &measure.Builder{Timeout: assemble.LibraryTimeout}})
		defer tg.Close()
		if _, err := assemble.Build(ctx, g, plan, dir, assemble.Options{Target: tg, Model: g.Name}); err != nil {
			return fmt.Errorf("calibration model: %w", err)
		}
		m, err := tsrt.Open(dir)
		if err != nil {
			return err
		}
		defer m.Close()
		at := map[string]int{}
		for i, o := range m.Manifest().Outputs {
			at[o.Name] = i
		}
		order := make([]int, len(g.Outputs))
		for j, name := range g.Outputs {
			i, ok := at[name]
			if !ok {
				return fmt.Errorf("calibration model: the build has no output %s", name)
			}
			order[j] = i
		}
		for k, s := range samples {
			ins, err := kernelInputs(s)
			if err != nil {
				return err
			}
			outs, err := m.RunFloat32(ctx, ins, tsrt.RunOptions{Threads: threads})
			if err != nil {
				return fmt.Errorf("calibration sample %d: %w", k, err)
			}
			picked := make([][]float32, len(order))
			for j, i := range order {
				picked[j] = outs[i]
			}
			if err := each(k, picked); err != nil {
				return err
			}
		}
		return nil
	}
}

// ReferenceRunner is the Runner of the reference evaluator (te.Eval of
// the whole graph, build.Reference): no compiler, slow, for small graphs
// and tests.
func ReferenceRunner(ctx context.Context, g *graph.Graph, samples [][]*graph.Tensor, each func(int, [][]float32) error) error {
	for k, s := range samples {
		if err := ctx.Err(); err != nil {
			return err
		}
		ins, err := kernelInputs(s)
		if err != nil {
			return err
		}
		outs, err := assemble.Reference(g, ins)
		if err != nil {
			return fmt.Errorf("calibration sample %d: %w", k, err)
		}
		if err := each(k, outs); err != nil {
			return err
		}
	}
	return nil
}

// kernelInputs returns a sample's tensors as the float32 values a model
// run takes.
func kernelInputs(s []*graph.Tensor) ([][]float32, error) {
	out := make([][]float32, len(s))
	for i, t := range s {
		v, err := t.KernelData()
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
