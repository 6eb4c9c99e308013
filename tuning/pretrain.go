package tuning

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/costmodel"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records/dataset"
)

// PretrainOptions say what a pretrained cost model learns from.
type PretrainOptions struct {
	DBs []string // records databases
	// Generated names the generated models whose tasks the records
	// measure, read from GeneratedDir where cmd/genmodels wrote them
	// (GeneratedModels); Models are other ONNX files (the test data's
	// models). Records of other workloads are left out: a model held out
	// of pretraining is one left out of both lists.
	Generated, Models []string
	GeneratedDir      string
	// TestData is the folder of the test data's models (TestDataDir),
	// whose layers PretrainTestData names (TestDataModels) are learned
	// from too; "": none.
	TestData string
	// HoldOut is the share of workloads held out for the report (0: 0.2).
	HoldOut float64
	Params  costmodel.Params
}

// PretrainReport says what a pretrained model learned from and how well it
// ranks the programs of workloads it did not see.
type PretrainReport struct {
	Data dataset.Report
	// HeldOut are TenSet's metrics on the held-out workloads of a model
	// trained on the others; Cold the same for a model trained on the
	// first half of each held-out task's records and evaluated on the
	// rest, against which Pretrained, the model of the other workloads,
	// is measured on that rest.
	HeldOutTasks, HeldOutRecords int
	Pretrained, Cold             costmodel.TenSetMetrics
}

// Write writes the report: the data, and the held-out metrics of the
// pretrained and the cold model.
func (r PretrainReport) Write(w io.Writer) {
	fmt.Fprintln(w, r.Data)
	if r.HeldOutTasks > 0 {
		fmt.Fprintf(w, "held out: %d tasks, %d records\n", r.HeldOutTasks, r.HeldOutRecords)
		fmt.Fprintf(w, "  pretrained %s\n  cold       %s\n", r.Pretrained, r.Cold)
	}
}

// LoadDataset reads the records of the databases that measure a task of
// the models (loaded with lo and po) on target (its key, or a part of it
// that names one; "": every target) as a cost model's dataset (package
// dataset, featurized by backend.FeaturesOf), and reports what it holds
// and left out.
func LoadDataset(dbs []string, target string, models []string, lo frontend.LoadOptions, po partition.Options) (*costmodel.Dataset, dataset.Report, error) {
	dags, err := TaskDAGs(models, lo, po)
	if err != nil {
		return nil, dataset.Report{}, err
	}
	data := &costmodel.Dataset{}
	rep, err := dataset.Load(dataset.Options{DBs: dbs, Target: target, DAGs: dags, Features: backend.FeaturesOf}, data)
	return data, rep, err
}

// DataOptions say which records LoadTrainingData reads.
type DataOptions struct {
	DBs    []string // records databases (none: tuning.db)
	Target string   // its key, or a part of it that names one ("": every target)
	// Models are the ONNX models whose tasks the records measured (at
	// least one), loaded with Load and partitioned with Partition.
	Models    []string
	Load      frontend.LoadOptions
	Partition partition.Options
	// Ranges are refused: the records of a tuning over ranges (tune
	// --range) are read with the model bound in Load at batch 1.
	Ranges map[string][2]int
}

// LoadTrainingData is LoadDataset for a cost model trained or evaluated
// on the records of models of static shapes (tune costmodel train and
// eval): the models are required, records keeping workload keys, not
// DAGs.
func LoadTrainingData(o DataOptions) (*costmodel.Dataset, dataset.Report, error) {
	if len(o.Models) == 0 {
		return nil, dataset.Report{}, errors.New("name the models whose tasks the records measured with --model (records keep workload keys, not the DAGs)")
	}
	if len(o.Ranges) > 0 {
		// A range tuning's records are those of the model at batch 1:
		// bind it there (--input NAME=1,...) to read them.
		return nil, dataset.Report{}, fmt.Errorf("--range %s: tune costmodel reads models of static shapes; bind the batch to 1 with --input to read the records of a tuning over a range", formatRanges(o.Ranges))
	}
	dbs := o.DBs
	if len(dbs) == 0 {
		dbs = []string{"tuning.db"}
	}
	return LoadDataset(dbs, o.Target, o.Models, o.Load, o.Partition)
}

// TrainModel trains a cost model with params on the records o names
// (LoadTrainingData; tune costmodel train), having written on w what they
// hold.
func TrainModel(w io.Writer, o DataOptions, params costmodel.Params) (*costmodel.Model, error) {
	data, rep, err := LoadTrainingData(o)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(w, rep)
	return costmodel.Train(data, params)
}

// EvaluateModel writes on w how the cost model saved at path ranks the
// programs of the records o names (LoadTrainingData; tune costmodel
// eval): what the records hold, the model, and TenSet's metrics
// (costmodel.EvaluateTenSet) with the tasks and records they average.
func EvaluateModel(w io.Writer, path string, o DataOptions) error {
	m, err := costmodel.LoadFile(path)
	if err != nil {
		return err
	}
	data, rep, err := LoadTrainingData(o)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, rep)
	r := costmodel.EvaluateTenSet(data, m.Predict(data.Programs()))
	fmt.Fprintf(w, "model %s: %d trees, %s\n", path, m.NumTrees(), m.Objective())
	fmt.Fprintf(w, "pairwise accuracy = %.4f\ntop-1 score = %.4f\ntop-5 score = %.4f\n", r.Pairwise, r.Top1, r.Top5)
	fmt.Fprintf(w, "(%d tasks, %d records)\n", r.Tasks, r.Programs)
	return nil
}

// Pretrain trains a cost model on every record of the databases that
// measures a task of the models. Before it trains on all of them, it
// holds out a share of the workloads (by a hash of their key), trains on
// the rest and evaluates on them: what the report says of programs the
// model never saw.
func Pretrain(opts PretrainOptions) (*costmodel.Model, PretrainReport, error) {
	var rep PretrainReport
	if opts.TestData != "" {
		opts.Models = append(slices.Clip(opts.Models), TestDataModels(opts.TestData, PretrainTestData...)...)
	}
	if len(opts.Generated) > 0 {
		paths, err := GeneratedModels(opts.GeneratedDir, opts.Generated)
		if err != nil {
			return nil, rep, err
		}
		opts.Models = append(opts.Models, paths...)
	}
	data, drep, err := LoadDataset(opts.DBs, "", opts.Models, frontend.LoadOptions{}, partition.Options{Alternatives: true})
	rep.Data = drep
	if err != nil {
		return nil, rep, err
	}
	share := opts.HoldOut
	if share <= 0 {
		share = 0.2
	}
	var trainIdx, testIdx []int
	for i := range data.Len() {
		if heldOut(data.Task(i), share) {
			testIdx = append(testIdx, i)
		} else {
			trainIdx = append(trainIdx, i)
		}
	}
	if len(testIdx) > 0 && len(trainIdx) > 0 {
		if err := evalHeldOut(data, trainIdx, testIdx, opts.Params, &rep); err != nil {
			return nil, rep, err
		}
	}
	m, err := costmodel.Train(data, opts.Params)
	return m, rep, err
}

// heldOut says whether a dataset task ("workload @ target") is in the
// held-out share: every target of a workload alike.
func heldOut(task string, share float64) bool {
	workload, _, _ := strings.Cut(task, " @ ")
	h := fnv.New32a()
	h.Write([]byte(workload))
	return float64(h.Sum32()%1000) < share*1000
}

// evalHeldOut fills the report's held-out metrics.
func evalHeldOut(data *costmodel.Dataset, trainIdx, testIdx []int, params costmodel.Params, rep *PretrainReport) error {
	m, err := costmodel.Train(data.Subset(trainIdx), params)
	if err != nil {
		return fmt.Errorf("held-out evaluation: %w", err)
	}
	// Each held-out task's first half trains the cold model; both are
	// judged on the second half.
	seen := map[string]int{}
	total := map[string]int{}
	for _, i := range testIdx {
		total[data.Task(i)]++
	}
	var first, rest []int
	for _, i := range testIdx {
		if seen[data.Task(i)] < total[data.Task(i)]/2 {
			first = append(first, i)
		} else {
			rest = append(rest, i)
		}
		seen[data.Task(i)]++
	}
	test := data.Subset(rest)
	rep.HeldOutTasks, rep.HeldOutRecords = len(total), len(testIdx)
	rep.Pretrained = costmodel.EvaluateTenSet(test, m.Predict(test.Programs()))
	cold, err := costmodel.Train(data.Subset(first), params)
	if err != nil {
		return fmt.Errorf("held-out evaluation (cold): %w", err)
	}
	rep.Cold = costmodel.EvaluateTenSet(test, cold.Predict(test.Programs()))
	return nil
}

// PretrainTestData are the prefixes of the test data's models pretraining
// reads (TestDataModels): the PyTorch-converted layers whose tasks the
// models tune (convolutions, depthwise and grouped ones, linear layers,
// pools, softmax).
var PretrainTestData = []string{"test_Conv1d", "test_Conv2d", "test_Linear", "test_Softmax", "test_LogSoftmax",
	"test_MaxPool2d", "test_AvgPool2d", "test_BatchNorm2d_eval", "test_PReLU_2d", "test_ELU"}

// PretrainGenerated are the generated models pretraining reads by default:
// MobileNetV2 and the BERT layer are held out (the BERT-style encoder, of
// other sizes, is what teaches the model transformers).
var PretrainGenerated = []string{"tiny", "resnet18", "resnet50", "densenet121", "bert_encoder"}

// GeneratedModels returns the files of the generated models named, as
// cmd/genmodels writes them: dir/NAME.onnx. A missing one is an error
// that says how to write them.
func GeneratedModels(dir string, names []string) ([]string, error) {
	paths := make([]string, len(names))
	for i, name := range names {
		paths[i] = filepath.Join(dir, name+".onnx")
		if _, err := os.Stat(paths[i]); err != nil {
			return nil, fmt.Errorf("generated model %s: %w (write them with go run ./cmd/genmodels -o %s %s)", name, err, dir, strings.Join(names, " "))
		}
	}
	return paths, nil
}

// TestDataDir is where Debian's libonnx-testdata keeps the PyTorch-converted
// models.
const TestDataDir = "/usr/share/libonnx-testdata/data/pytorch-converted"

// TestDataModels returns the ONNX models of Debian's libonnx-testdata
// under dir whose names start with one of prefixes (its PyTorch-converted
// convolutions, linear layers, pools...); none when it is not installed.
func TestDataModels(dir string, prefixes ...string) []string {
	var out []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		for _, p := range prefixes {
			if strings.HasPrefix(e.Name(), p) {
				out = append(out, filepath.Join(dir, e.Name(), "model.onnx"))
				break
			}
		}
	}
	return out
}
