package measure_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
	"github.com/tessera-ml/tessera/tir"
)

// TestNaNPropagates: compiled kernels propagate NaN through min and max
// (Relu, Clip, Max, Min, the max and min reductions and pools) exactly as
// the reference evaluator does, in scalar and in vector code. An all-NaN
// input gave finite outputs: tsr_maxf(a, b) = a > b ? a : b turned
// Relu(NaN) into 0. onnxruntime agrees on the elementwise ops (Relu(NaN),
// Max and Min with a NaN operand are NaN); its ReduceMax, ReduceMin and
// MaxPool skip NaN, where the reference evaluator and numpy (ONNX's own
// reference) give NaN, as these kernels do.
func TestNaNPropagates(t *testing.T) {
	b := &measure.Builder{CacheDir: t.TempDir(), Timeout: 120 * time.Second}
	r := &measure.Runner{Builder: b, Opts: measure.RunOptions{Threads: 2, Number: 1, Repeat: 1, MinRepeatMs: -1, Check: true, Timeout: 20 * time.Second}}
	defer r.Close()
	dags := tetest.DAGs()
	names := []string{"relu", "clip", "max", "min", "reduce_max", "reduce_min", "max_pool", "global_max_pool", "conv_bias_relu"}
	opts := sketch.CPUOptions(backend.MustDefaultMachine())
	var funcs []*tir.PrimFunc
	type kernel struct {
		dag    *te.DAG
		inputs [][]float32
	}
	var ks []kernel
	for i, name := range names {
		d := dags[name]
		if d == nil {
			t.Fatalf("no example %s", name)
		}
		// Inputs with NaN, ±Inf and ordinary values; for the binary ops
		// NaN in either operand, and in both.
		rng := rand.New(rand.NewPCG(7, uint64(i)))
		inputs := measure.RandomInputs(measure.Args(d), uint64(i))[:len(d.Inputs)]
		for k, in := range inputs {
			for j := range in {
				switch rng.IntN(5) {
				case 0:
					in[j] = float32(math.NaN())
				case 1:
					if k == 0 {
						in[j] = float32(math.Inf(2*rng.IntN(2) - 1))
					}
				}
			}
		}
		states := []*schedule.State{schedule.NewState(d)}
		sk, err := sketch.Generate(schedule.NewState(d), opts)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 6 {
			s, err := sketch.Sample(rng, sk[k%len(sk)], opts)
			if err != nil {
				t.Fatal(err)
			}
			states = append(states, s)
		}
		for _, s := range states {
			f := mustLower(t, s, fmt.Sprintf("k%d", len(funcs)))
			funcs = append(funcs, f)
			ks = append(ks, kernel{d, inputs})
		}
	}
	src, err := codegen.CModule(funcs, codegen.COptions{VectorBits: backend.MustDefaultMachine().VectorBits()})
	if err != nil {
		t.Fatal(err)
	}
	built := b.Build(context.Background(), []measure.Source{{Code: src.Code}})
	if built[0].Kind != measure.None {
		t.Fatalf("%v: %s", built[0].Kind, built[0].Msg)
	}
	jobs := make([]measure.Job, len(funcs))
	for k, f := range funcs {
		jobs[k] = measure.Job{Lib: built[0].Path, Entry: f.Name, Workspace: src.Workspace[k], Args: measure.FuncArgs(f, len(ks[k].dag.Outputs)), Inputs: tir.PackArgs(f.Params, ks[k].inputs)}
	}
	nans := 0
	for k, res := range r.Run(context.Background(), jobs) {
		if res.Kind != measure.None {
			t.Errorf("kernel %d: %v: %s", k, res.Kind, res.Msg)
			continue
		}
		want, err := ks[k].dag.Eval(ks[k].inputs)
		if err != nil {
			t.Fatal(err)
		}
		for o := range want {
			for _, v := range want[o] {
				if v != v {
					nans++
				}
			}
			if ok, msg := measure.Compare(res.Outputs[o], want[o], 1e-5, 1e-5); !ok {
				t.Errorf("kernel %d (%s): %s", k, ks[k].dag.Outputs[o].Name, msg)
			}
		}
	}
	if nans == 0 {
		t.Error("no NaN in the reference outputs: the test checks nothing")
	}
}
