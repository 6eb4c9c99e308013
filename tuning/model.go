package tuning

import (
	"fmt"

	"tessera/graph/onnx"
	"tessera/partition"
	"tessera/te"
)

// LoadModel loads the ONNX model at path (onnx.Load with lo) and extracts
// its tasks (partition.Extract with po): the model as tune, inspect and
// the cost model commands see it, loaded and partitioned once.
func LoadModel(path string, lo onnx.LoadOptions, po partition.Options) (*onnx.Loaded, *partition.Plan, error) {
	l, err := onnx.Load(path, lo)
	if err != nil {
		return nil, nil, err
	}
	plan, err := partition.Extract(l.Graph, po)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, plan, nil
}

// ModelTasks loads a model as tune does by default (every graph pass) and
// returns the tasks tune tunes, Winograd alternatives included.
func ModelTasks(path string) ([]*partition.Task, error) {
	_, plan, err := LoadModel(path, onnx.LoadOptions{}, partition.Options{Alternatives: true})
	if err != nil {
		return nil, err
	}
	return plan.Tasks, nil
}

// TaskDAGs returns the compute DAG of every task of the models, by
// workload key: records keep workload keys, not DAGs, so reading them as
// programs (package dataset) needs the models whose tasks they measured.
func TaskDAGs(paths []string, lo onnx.LoadOptions, po partition.Options) (map[string]*te.DAG, error) {
	dags := map[string]*te.DAG{}
	for _, path := range paths {
		_, plan, err := LoadModel(path, lo, po)
		if err != nil {
			return nil, err
		}
		for _, t := range plan.Tasks {
			dags[t.Key] = t.DAG
		}
	}
	return dags, nil
}
