package main

import (
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/modelgen"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/schedule"
)

// The -fused DAG (in the models' layout, NHWC since the convert-layout
// pass) must be ResNet-18's Conv+Relu task of the 56×56 stage (same
// workload key), or the records of a ResNet-18 tuning run would not apply
// to it; the plain conv is a different workload.
func TestFusedIsResNet18Task(t *testing.T) {
	g, err := modelgen.Build("resnet18", modelgen.DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	if err := frontend.RunPasses(g, nil); err != nil {
		t.Fatal(err)
	}
	plan, err := partition.Extract(g, partition.Options{Alternatives: true})
	if err != nil {
		t.Fatal(err)
	}
	fused, err := convDAG(true, true)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := convDAG(true, false)
	if err != nil {
		t.Fatal(err)
	}
	wino, err := winogradDAG(true, true, winogradTile)
	if err != nil {
		t.Fatal(err)
	}
	found, foundWino := false, false
	for _, task := range plan.Tasks {
		switch task.Key {
		case fused.WorkloadKey():
			found = task.Ops() == "Conv+Relu"
		case wino.WorkloadKey():
			foundWino = task.Ops() == "Conv+Relu [winograd F(4×4,3×3)]"
		case plain.WorkloadKey():
			t.Errorf("the plain conv has the key of ResNet-18's task %s", task.Ops())
		}
	}
	if !found {
		t.Errorf("no Conv+Relu task of ResNet-18 has the -fused workload key %s", fused.WorkloadKey())
	}
	if !foundWino {
		t.Errorf("no Winograd Conv+Relu task of ResNet-18 has the -fused Winograd workload key %s", wino.WorkloadKey())
	}
}

// The expert schedule replays and lowers on every DAG, for AVX-512's
// registers and AVX2's and SSE's (its results are checked against the
// reference evaluator by every run of the benchmark).
func TestExpertReplays(t *testing.T) {
	for _, mr := range [][2]int{{16, 32}, {8, 16}, {4, 16}} {
		lanes, regs := mr[0], mr[1]
		for _, nhwc := range []bool{false, true} {
			for _, fused := range []bool{false, true} {
				d, err := convDAG(nhwc, fused)
				if err != nil {
					t.Fatal(err)
				}
				st, err := expert(d, nhwc, lanes, regs)
				if err != nil {
					t.Fatalf("nhwc=%v fused=%v: %v", nhwc, fused, err)
				}
				if _, err := schedule.Lower(st, "k"); err != nil {
					t.Errorf("nhwc=%v fused=%v: %v", nhwc, fused, err)
				}
			}
		}
	}
}
