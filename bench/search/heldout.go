package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/costmodel"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/modelgen"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records/dataset"
	"github.com/tessera-ml/tessera/tuning"
)

// heldOut compares the shipped pretrained cost model with a cold one on
// the records of models it was not trained on (-heldout-db, tasks of
// -heldout-model), as TenSet does: per (workload, target) task, the first
// `seen` records are what a session has measured after its warm-up; the
// rest are the test set. It prints, for each model,
//
//	cold: trained on the seen records of every held-out task, as a cold
//	      session's model after its warm-up;
//	pretrained: the shipped model alone (zero-shot);
//	pretrained+seen: the shipped model boosted on the seen records, what
//	      the session predicts with once it has its own measurements,
//
// its pairwise accuracy, top-1 and top-5 peak scores and top-5 recall on
// the test records.
func heldOut(dbs, models []string, seen int, pretrainedFile string) error {
	dags, err := tuning.TaskDAGs(models, frontend.LoadOptions{}, partition.Options{Alternatives: true})
	if err != nil {
		return err
	}
	data := &costmodel.Dataset{}
	rep, err := dataset.Load(dataset.Options{DBs: dbs, DAGs: dags, Features: backend.FeaturesOf}, data)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, rep)
	var seenIdx, testIdx []int
	count := map[string]int{}
	for i := range data.Len() {
		if count[data.Task(i)] < seen {
			seenIdx = append(seenIdx, i)
		} else {
			testIdx = append(testIdx, i)
		}
		count[data.Task(i)]++
	}
	if len(testIdx) == 0 || len(seenIdx) == 0 {
		return fmt.Errorf("no task has more than %d records: nothing to test on (lower -seen)", seen)
	}
	train, test := data.Subset(seenIdx), data.Subset(testIdx)
	fmt.Printf("heldout tasks = %d, seen records = %d, test records = %d\n", len(count), train.Len(), test.Len())
	pre, err := pretrainedModel(pretrainedFile)
	if err != nil {
		return err
	}
	params := costmodel.DefaultParams()
	cold, err := costmodel.Train(train, params)
	if err != nil {
		return fmt.Errorf("cold model: %w", err)
	}
	boosted, err := costmodel.TrainFrom(pre, train, params)
	if err != nil {
		return fmt.Errorf("pretrained+seen model: %w", err)
	}
	for _, m := range []struct {
		name string
		p    costmodel.Predictor
	}{{"cold", cold}, {"pretrained", pre}, {"pretrained+seen", boosted}} {
		scores := m.p.Predict(test.Programs())
		ts := costmodel.EvaluateTenSet(test, scores)
		r5 := costmodel.Evaluate(test, scores, 5).TopKRecall
		fmt.Printf("heldout %s pairwise = %.4f\n", m.name, ts.Pairwise)
		fmt.Printf("heldout %s top-1 = %.4f\n", m.name, ts.Top1)
		fmt.Printf("heldout %s top-5 = %.4f\n", m.name, ts.Top5)
		fmt.Printf("heldout %s top-5 recall = %.4f\n", m.name, r5)
	}
	return nil
}

// pretrainedModel loads -pretrained, or the shipped model of this
// machine's cpu target.
func pretrainedModel(file string) (*costmodel.Model, error) {
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return costmodel.Load(f)
	}
	m, err := machine.Resolve("native", (&measure.Builder{}).Command())
	if err != nil {
		return nil, err
	}
	return tuning.Pretrained(backend.CPU(backend.CPUConfig{Threads: 1, Machine: m}))
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// heldOutTasks pretrains as `tune costmodel pretrain` does on the
// databases and prints its report on the workloads held out of training:
// the model of the other workloads (pretrained) against one trained on the
// first half of each held-out task's own records (cold), both judged on
// the second half.
func heldOutTasks(dbs []string) error {
	dir, err := os.MkdirTemp("", "tessera-pretrain-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, name := range tuning.PretrainGenerated {
		if _, err := modelgen.Generate(dir, name, modelgen.DefaultSeed); err != nil {
			return err
		}
	}
	opts := tuning.PretrainOptions{DBs: dbs, Generated: tuning.PretrainGenerated, GeneratedDir: dir,
		TestData: tuning.TestDataDir, Params: costmodel.DefaultParams()}
	opts.Params.Seed = 1 // tune costmodel pretrain's default
	_, rep, err := tuning.Pretrain(opts)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, rep.Data)
	fmt.Printf("heldout-task tasks = %d, records = %d\n", rep.HeldOutTasks, rep.HeldOutRecords)
	for _, m := range []struct {
		name string
		m    costmodel.TenSetMetrics
	}{{"cold", rep.Cold}, {"pretrained", rep.Pretrained}} {
		fmt.Printf("heldout-task %s pairwise = %.4f\n", m.name, m.m.Pairwise)
		fmt.Printf("heldout-task %s top-1 = %.4f\n", m.name, m.m.Top1)
		fmt.Printf("heldout-task %s top-5 = %.4f\n", m.name, m.m.Top5)
	}
	return nil
}
