package tuning

import (
	"fmt"
	"maps"
	"slices"
	"strings"

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

// Symbols returns the dynamic dimensions of the graph inputs at path that
// lo.Inputs leaves unbound, by the name the model gives them (their ONNX
// dim_param), each with its range from ranges. A dynamic dimension without
// a name, a symbol without a range, or a range of no symbol is an error.
func Symbols(path string, lo onnx.LoadOptions, ranges map[string][2]int) ([]partition.Symbol, error) {
	g, err := onnx.DecodeFile(path)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var syms []partition.Symbol
	for _, in := range g.Inputs {
		v := g.Values[in]
		if _, bound := lo.Inputs[in]; bound || lo.Freeze[in] != nil {
			continue
		}
		for i, d := range v.Shape {
			if d >= 0 {
				continue
			}
			name := ""
			if i < len(v.DimParams) {
				name = v.DimParams[i]
			}
			if name == "" {
				return nil, fmt.Errorf("%s: input %s: dimension %d is dynamic and has no name: bind it with --input %s=d0,d1,...", path, in, i, in)
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			r, ok := ranges[name]
			if !ok {
				return nil, fmt.Errorf("%s: input %s: dimension %d (%s) is dynamic: give it a range with --range %s=lo..hi, or bind the input with --input", path, in, i, name, name)
			}
			syms = append(syms, partition.Symbol{Name: name, Lo: r[0], Hi: r[1]})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ranges)) {
		if !seen[name] {
			return nil, fmt.Errorf("--range %s: no dynamic dimension of the inputs of %s is named %s (dynamic: %s)", name, path, name, strings.Join(slices.Sorted(maps.Keys(seen)), ", "))
		}
	}
	return syms, nil
}

// LoadRange loads the model at path over the ranges of its dynamic
// dimensions (Symbols): the plan at each of partition.SamplePoints, each
// loaded with the dimensions bound to the point's values, then
// partition.Symbolic of them.
func LoadRange(path string, lo onnx.LoadOptions, ranges map[string][2]int, po partition.Options) (*partition.SymbolicPlan, error) {
	syms, err := Symbols(path, lo, ranges)
	if err != nil {
		return nil, err
	}
	if len(syms) == 0 {
		return nil, fmt.Errorf("%s: no dynamic dimension to range over", path)
	}
	points, err := partition.SamplePoints(syms)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	g, err := onnx.DecodeFile(path)
	if err != nil {
		return nil, err
	}
	samples := make([]partition.Sample, len(points))
	for i, p := range points {
		at := lo
		at.Inputs = maps.Clone(lo.Inputs)
		if at.Inputs == nil {
			at.Inputs = map[string][]int{}
		}
		for _, in := range g.Inputs {
			v := g.Values[in]
			if _, bound := lo.Inputs[in]; bound || lo.Freeze[in] != nil || !slices.Contains(v.Shape, -1) {
				continue
			}
			shape := slices.Clone(v.Shape)
			for d := range shape {
				if shape[d] < 0 {
					shape[d] = p[v.DimParams[d]]
				}
			}
			at.Inputs[in] = shape
		}
		l, err := onnx.Prepare(g.Clone(), path, at)
		if err != nil {
			return nil, fmt.Errorf("at %s: %w", pointString(syms, p), err)
		}
		plan, err := partition.Extract(l.Graph, po)
		if err != nil {
			return nil, fmt.Errorf("%s at %s: %w", path, pointString(syms, p), err)
		}
		samples[i] = partition.Sample{Values: p, Plan: plan}
	}
	sp, err := partition.Symbolic(syms, samples)
	if err != nil {
		return nil, fmt.Errorf("%s over %s: %w", path, rangesString(syms), err)
	}
	return sp, nil
}

func pointString(syms []partition.Symbol, p map[string]int) string {
	parts := make([]string, len(syms))
	for i, s := range syms {
		parts[i] = fmt.Sprintf("%s=%d", s.Name, p[s.Name])
	}
	return strings.Join(parts, ", ")
}

func rangesString(syms []partition.Symbol) string {
	parts := make([]string, len(syms))
	for i, s := range syms {
		parts[i] = s.String()
	}
	return strings.Join(parts, ", ")
}
