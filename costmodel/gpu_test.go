package costmodel

import (
	"slices"
	"testing"

	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te/tetest"
)

// TestGPULoweredFeatures: the features of a GPU schedule are taken after GPU
// lowering, as TVM takes them: the kernel's launch dimensions and its
// virtual threads are there.
func TestGPULoweredFeatures(t *testing.T) {
	opts := sketch.GPUOptions(schedule.GPULimits{WarpSize: 32, MaxThreadsPerBlock: 1024, MaxSharedBytes: 48 << 10, MaxVThread: 8, VectorLanes: codegen.GPUVectorLanes})
	s, _, err := sketch.Default(schedule.NewState(tetest.DAGs()["matmul"]), opts)
	if err != nil {
		t.Fatal(err)
	}
	f, err := opts.Lower(s, "k")
	if err != nil {
		t.Fatal(err)
	}
	rows := Extract(f, noMachine)
	col := func(name string) int { return slices.Index(FeatureNames, name) }
	gpu, tx := col("is_gpu"), col("threadIdx_x_len")
	if gpu < 0 || tx < 0 || len(rows) == 0 {
		t.Fatalf("no rows or no GPU features (%d, %d)", gpu, tx)
	}
	for _, r := range rows {
		if r[gpu] == 0 || r[tx] == 0 {
			t.Errorf("a store of the GPU kernel without GPU features: is_gpu %v, threadIdx_x_len %v", r[gpu], r[tx])
		}
	}
}
