package tuning

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/modelgen"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
)

// TestPretrain: records of a generated model's tasks train a model and a
// held-out report; records of a workload that no model has (a held-out
// model) are left out and counted.
func TestPretrain(t *testing.T) {
	dir := t.TempDir()
	path, err := modelgen.Generate(dir, "tiny", modelgen.DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	l, err := frontend.Load(path, frontend.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.Extract(l.Graph, partition.Options{Alternatives: true})
	if err != nil {
		t.Fatal(err)
	}
	tg := cpuTarget()
	store, err := records.Open(filepath.Join(dir, "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	var recs []records.Record
	for _, task := range append(plan.Tasks, matmulTask(t, 24, 24, 24)) {
		for _, s := range samples(t, task, tg, 40) {
			recs = append(recs, record(t, task, tg.Key(), s, measure.Result{Costs: []float64{1e-4 * (1 + rng.Float64())}}))
		}
	}
	if err := store.Add(recs); err != nil {
		t.Fatal(err)
	}
	store.Close()
	m, rep, err := Pretrain(PretrainOptions{DBs: []string{filepath.Join(dir, "r.db")}, Generated: []string{"tiny"}, GeneratedDir: dir, HoldOut: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Data)
	if rep.Data.Records != 40*len(plan.Tasks) || rep.Data.Unknown != 40 {
		t.Errorf("%d records learned from, %d left out; want %d and 40 (the matmul no model has)", rep.Data.Records, rep.Data.Unknown, 40*len(plan.Tasks))
	}
	if m.NumFeatures() == 0 || rep.HeldOutTasks == 0 || rep.HeldOutTasks == len(plan.Tasks) {
		t.Errorf("held out %d of %d tasks; want some, not all", rep.HeldOutTasks, len(plan.Tasks))
	}
}

// TestGeneratedModels: a generated model is read where genmodels wrote
// it; a missing one says how to write it.
func TestGeneratedModels(t *testing.T) {
	dir := t.TempDir()
	path, err := modelgen.Generate(dir, "tiny", modelgen.DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := GeneratedModels(dir, []string{"tiny"}); err != nil || len(got) != 1 || got[0] != path {
		t.Errorf("GeneratedModels(tiny) = %v, %v; want [%s]", got, err, path)
	}
	want := "write them with go run ./cmd/genmodels -o " + dir + " tiny resnet18"
	if _, err := GeneratedModels(dir, []string{"tiny", "resnet18"}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("GeneratedModels without resnet18.onnx: %v; want it to say %q", err, want)
	}
}
