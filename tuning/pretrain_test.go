package tuning

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/costmodel"
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
	_, tasks := tinyRecords(t, dir, "r.db")
	m, rep, err := Pretrain(PretrainOptions{DBs: []string{filepath.Join(dir, "r.db")}, Generated: []string{"tiny"}, GeneratedDir: dir, HoldOut: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Data)
	if rep.Data.Records != 40*tasks || rep.Data.Unknown != 40 {
		t.Errorf("%d records learned from, %d left out; want %d and 40 (the matmul no model has)", rep.Data.Records, rep.Data.Unknown, 40*tasks)
	}
	if m.NumFeatures() == 0 || rep.HeldOutTasks == 0 || rep.HeldOutTasks == tasks {
		t.Errorf("held out %d of %d tasks; want some, not all", rep.HeldOutTasks, tasks)
	}
}

// tinyRecords generates the tiny model into dir and writes the records
// database dir/db: 40 records of each of its tasks, stored with them
// (PutTask), and 40 of a matmul that no model has. It returns the model's
// file and its tasks.
func tinyRecords(t *testing.T, dir, db string) (string, int) {
	t.Helper()
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
	store, err := records.Open(filepath.Join(dir, db))
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
	for _, task := range plan.Tasks {
		if err := store.PutTask(TaskInfo(task)); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()
	return path, len(plan.Tasks)
}

// TestPretrainTestData: the layers of the test data's folder are learned
// from (TestDataModels), a model whose name PretrainTestData does not
// start not; without the folder, nothing is.
func TestPretrainTestData(t *testing.T) {
	dir := t.TempDir()
	tiny, tasks := tinyRecords(t, dir, "r.db")
	data, err := os.ReadFile(tiny)
	if err != nil {
		t.Fatal(err)
	}
	testdata, other := filepath.Join(dir, "testdata"), filepath.Join(dir, "other")
	for _, d := range []string{filepath.Join(testdata, "test_Conv2d_tiny"), filepath.Join(other, "test_Other_tiny")} {
		os.MkdirAll(d, 0o755)
		if err := os.WriteFile(filepath.Join(d, "model.onnx"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name     string
		testdata string
		records  int
	}{
		{"test data", testdata, 40 * tasks},
		{"test data of other layers", other, 0},
		{"none", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, rep, err := Pretrain(PretrainOptions{DBs: []string{filepath.Join(dir, "r.db")}, TestData: c.testdata, HoldOut: 0.5})
			if c.records == 0 {
				if err == nil || rep.Data.Records != 0 {
					t.Errorf("learned from %d records (err %v); want none, and an error", rep.Data.Records, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.Data.Records != c.records {
				t.Errorf("learned from %d records; want %d", rep.Data.Records, c.records)
			}
		})
	}
}

// TestLoadTrainingData: the records of a cost model's training are read
// from tuning.db unless databases are named; without a model, or over
// ranges, they are not read.
func TestLoadTrainingData(t *testing.T) {
	dir := t.TempDir()
	tiny, tasks := tinyRecords(t, dir, "tuning.db")
	t.Chdir(dir)
	for _, c := range []struct {
		name string
		opts DataOptions
		err  string // "": the records of the tiny model
	}{
		{"tuning.db", DataOptions{Models: []string{tiny}}, ""},
		{"named database", DataOptions{DBs: []string{filepath.Join(dir, "tuning.db")}, Models: []string{tiny}}, ""},
		{"missing database", DataOptions{DBs: []string{"nope.db"}, Models: []string{tiny}}, "nope.db"},
		{"no model", DataOptions{DBs: []string{"tuning.db"}}, "name the models whose tasks the records measured with --model"},
		{"over ranges", DataOptions{Models: []string{tiny}, Ranges: map[string][2]int{"S": {16, 128}, "N": {1, 8}}}, "--range N=1..8 S=16..128: tune costmodel reads models of static shapes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data, rep, err := LoadTrainingData(c.opts)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("err = %v; want it to say %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.Records != 40*tasks || rep.Unknown != 40 || data.Len() == 0 {
				t.Errorf("%d records read, %d left out, %d tasks; want %d and 40 (the matmul no model has)", rep.Records, rep.Unknown, data.Len(), 40*tasks)
			}
		})
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

// TestLoadCurve: the curve of a database is of a model's tasks, named by
// index and ops, or, without a model, of every task it holds, named by
// short key (those it has stored, not the matmul's); a missing database
// or model is an error.
func TestLoadCurve(t *testing.T) {
	dir := t.TempDir()
	tiny, tasks := tinyRecords(t, dir, "r.db")
	db := filepath.Join(dir, "r.db")
	for _, c := range []struct {
		name      string
		db, model string
		tasks     int
		prefix    string // of the first name
		err       string
	}{
		{"model", db, tiny, tasks, "0 ", ""},
		{"every task", db, "", tasks, "", ""},
		{"missing database", filepath.Join(dir, "nope.db"), tiny, 0, "", "nope.db"},
		{"missing model", db, filepath.Join(dir, "nope.onnx"), 0, "", "nope.onnx"},
	} {
		t.Run(c.name, func(t *testing.T) {
			curve, names, err := LoadCurve(c.db, c.model, frontend.LoadOptions{}, nil, partition.Options{Alternatives: true}, "")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v; want it to say %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(curve.Tasks) != c.tasks || len(names) != c.tasks || !strings.HasPrefix(names[0], c.prefix) {
				t.Fatalf("%d tasks, names %q; want %d, the first starting %q", len(curve.Tasks), names, c.tasks, c.prefix)
			}
			if c.model == "" && len(names[0]) != len(records.ShortKey(curve.Tasks[0].Key)) {
				t.Errorf("names %q; want short keys", names)
			}
		})
	}
}

// TestTrainEvaluateModel: a model trained on the records of a model's
// tasks says what it learned from; evaluated on the same records, it
// says so again, names itself and gives TenSet's metrics over every task
// and record. A missing model file, or records without their model, are
// errors, with nothing written.
func TestTrainEvaluateModel(t *testing.T) {
	dir := t.TempDir()
	tiny, tasks := tinyRecords(t, dir, "r.db")
	data := DataOptions{DBs: []string{filepath.Join(dir, "r.db")}, Models: []string{tiny}}
	var out strings.Builder
	params := costmodel.DefaultParams()
	params.MaxRounds = 20
	m, err := TrainModel(&out, data, params)
	if err != nil {
		t.Fatal(err)
	}
	reads := fmt.Sprintf("%d successful records of %d tasks on 1 target(s) from %s", 40*tasks, tasks, data.DBs[0])
	if !strings.HasPrefix(out.String(), reads) || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("train wrote %q, want one line beginning %q", out.String(), reads)
	}
	path := filepath.Join(dir, "m.txt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Save(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, c := range []struct {
		name, path string
		data       DataOptions
		want       []string // the lines, by their beginnings; nil for an error
		err        string
	}{
		{"the training records", path, data, []string{reads, fmt.Sprintf("model %s: %d trees, pack-sum", path, m.NumTrees()),
			"pairwise accuracy = ", "top-1 score = ", "top-5 score = ", fmt.Sprintf("(%d tasks, %d records)", tasks, 40*tasks)}, ""},
		{"no model file", filepath.Join(dir, "none.txt"), data, nil, "none.txt"},
		{"no --model", path, DataOptions{DBs: data.DBs}, nil, "with --model"},
	} {
		out.Reset()
		err := EvaluateModel(&out, c.path, c.data)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || out.Len() > 0 {
				t.Errorf("%s: %v, wrote %q; want an error containing %q, nothing written", c.name, err, out.String(), c.err)
			}
			continue
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if err != nil || len(lines) != len(c.want) {
			t.Errorf("%s: %v, wrote\n%s", c.name, err, out.String())
			continue
		}
		for i, w := range c.want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("%s: line %d is %q, want it to begin %q", c.name, i+1, lines[i], w)
			}
		}
	}
}
