package tuning

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/te"
)

// LoadModel loads the ONNX model at path (frontend.Load with lo) and extracts
// its tasks (partition.Extract with po): the model as tune, inspect and
// the cost model commands see it, loaded and partitioned once.
func LoadModel(path string, lo frontend.LoadOptions, po partition.Options) (*frontend.Loaded, *partition.Plan, error) {
	l, err := frontend.Load(path, lo)
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
	_, plan, err := LoadModel(path, frontend.LoadOptions{}, partition.Options{Alternatives: true})
	if err != nil {
		return nil, err
	}
	return plan.Tasks, nil
}

// TaskDAGs returns the compute DAG of every task of the models, by
// workload key: records keep workload keys, not DAGs, so reading them as
// programs (package dataset) needs the models whose tasks they measured.
func TaskDAGs(paths []string, lo frontend.LoadOptions, po partition.Options) (map[string]*te.DAG, error) {
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

// dynInput is a graph input with dynamic dimensions: its shape, -1 where
// dynamic, and each dimension's name ("" for a static one).
type dynInput struct {
	shape []int
	names []string
}

// symbols returns the dynamic dimensions of the inputs of graph g (read
// from path) that lo.Inputs leaves unbound, by name (lo.DimNames, else the
// model's ONNX dim_param), each with its range from ranges, and the inputs
// they are dimensions of. A dynamic dimension without a name, a symbol
// without a range, a range of no symbol, or a name given to a dimension
// the model fixes is an error.
func symbols(g *graph.Graph, path string, lo frontend.LoadOptions, ranges map[string][2]int) ([]partition.Symbol, map[string]dynInput, error) {
	seen := map[string]bool{}
	var syms []partition.Symbol
	inputs := map[string]dynInput{}
	for _, in := range g.Inputs {
		if lo.Freeze[in] != nil {
			continue
		}
		v := g.Values[in]
		d := dynInput{shape: slices.Clone(v.Shape), names: make([]string, len(v.Shape))}
		copy(d.names, v.DimParams)
		if given, ok := lo.Inputs[in]; ok {
			named := lo.DimNames[in]
			if named == nil {
				continue // bound to a static shape
			}
			if v.Shape != nil && len(given) != len(v.Shape) {
				return nil, nil, fmt.Errorf("--input %s: %d dimensions, the model gives it %d", in, len(given), len(v.Shape))
			}
			for i := range given {
				switch {
				case given[i] >= 0:
					d.names[i] = ""
				case v.Shape != nil && v.Shape[i] >= 0:
					return nil, nil, fmt.Errorf("--input %s: dimension %d is named %s, but %s fixes it to %d (exported for that size only)", in, i, named[i], path, v.Shape[i])
				default:
					d.names[i] = named[i]
				}
			}
			d.shape = slices.Clone(given)
		}
		dynamic := false
		for i, n := range d.shape {
			if n >= 0 {
				continue
			}
			dynamic = true
			name := d.names[i]
			if name == "" {
				return nil, nil, fmt.Errorf("%s: input %s: dimension %d is dynamic and has no name: bind it, or name it, with --input %s=d0,d1,...", path, in, i, in)
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			r, ok := ranges[name]
			if !ok {
				return nil, nil, fmt.Errorf("%s: input %s: dimension %d (%s) is dynamic: give it a range with --range %s=lo..hi, or bind the input with --input", path, in, i, name, name)
			}
			syms = append(syms, partition.Symbol{Name: name, Lo: r[0], Hi: r[1]})
		}
		if dynamic {
			inputs[in] = d
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ranges)) {
		if !seen[name] {
			return nil, nil, fmt.Errorf("--range %s: no dynamic dimension of the inputs of %s is named %s (dynamic: %s)", name, path, name, strings.Join(slices.Sorted(maps.Keys(seen)), ", "))
		}
	}
	return syms, inputs, nil
}

// Range is a model loaded over the ranges of its dynamic dimensions
// (LoadRange): its plan as a function of them, and what Batch needs.
type Range struct {
	Plan *partition.SymbolicPlan

	path   string
	lo     frontend.LoadOptions
	po     partition.Options
	g      *graph.Graph
	syms   []partition.Symbol
	inputs map[string]dynInput
	// batch holds the model prepared at batches 1, 2 and 3 where the
	// sample points were those (a model of one dynamic dimension).
	batch map[int]partition.BatchSample
	one   *frontend.Loaded // at batch 1
}

// LoadRange loads the model at path over the ranges of its dynamic
// dimensions (symbols): the plan at each of partition.SamplePoints, each
// loaded with the dimensions bound to the point's values, then
// partition.Symbolic of them.
func LoadRange(path string, lo frontend.LoadOptions, ranges map[string][2]int, po partition.Options) (*Range, error) {
	g, err := onnx.DecodeFile(path)
	if err != nil {
		return nil, err
	}
	syms, inputs, err := symbols(g, path, lo, ranges)
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
	r := &Range{path: path, lo: lo, po: po, g: g, syms: syms, inputs: inputs, batch: map[int]partition.BatchSample{}}
	samples := make([]partition.Sample, len(points))
	for i, p := range points {
		l, plan, err := prepareAt(g, path, lo, syms, inputs, p, po)
		if err != nil {
			return nil, err
		}
		samples[i] = partition.Sample{Values: p, Plan: plan}
		if v := p[syms[0].Name]; len(syms) == 1 && v <= 3 {
			r.batch[v] = partition.BatchSample{Graph: l.Graph, Plan: plan}
			if v == 1 {
				r.one = l
			}
		}
	}
	if r.Plan, err = partition.Symbolic(syms, samples); err != nil {
		return nil, fmt.Errorf("%s over %s: %w", path, rangesString(syms), err)
	}
	return r, nil
}

// Batch returns the model over its one dynamic dimension as a batch that
// every group computes sample by sample (partition.Batch): the model at
// batch 1, which tune tunes and the build runs once per sample, and the
// plan over the batch. A model over several dynamic dimensions, or whose
// groups combine samples, is an error that says why.
func (r *Range) Batch() (*frontend.Loaded, *partition.BatchPlan, error) {
	if len(r.syms) != 1 {
		return nil, nil, fmt.Errorf("%s over %s: a build over a range takes one dynamic dimension, the batch (kernels whose inner extents vary at run time are not built yet): bind all but one with --input", r.path, rangesString(r.syms))
	}
	var at [3]partition.BatchSample
	for i := range at {
		b, ok := r.batch[i+1]
		if !ok { // not a sample point of the range
			l, plan, err := prepareAt(r.g, r.path, r.lo, r.syms, r.inputs, map[string]int{r.syms[0].Name: i + 1}, r.po)
			if err != nil {
				return nil, nil, err
			}
			b = partition.BatchSample{Graph: l.Graph, Plan: plan}
			if i == 0 {
				r.one = l
			}
			r.batch[i+1] = b
		}
		at[i] = b
	}
	bp, err := partition.Batch(r.syms[0], at[0], at[1], at[2])
	if err != nil {
		return nil, nil, fmt.Errorf("%s over %s, one sample at a time: %w", r.path, r.syms[0], err)
	}
	return r.one, bp, nil
}

// Dims returns the model over its dynamic dimensions as a build over the
// range takes them: a batch that every group computes sample by sample
// (partition.Batch; nil if the model has none) and at most one other
// dimension, whose value the kernels take at run time (partition.Dim; nil
// if none), the model prepared at each of its values (at batch 1). The
// loaded model is the one at batch 1 and the dimension's largest value.
// With two dimensions the batch is the one whose samples the groups
// compute apart, checked at the other's both ends.
func (r *Range) Dims() (*frontend.Loaded, *partition.BatchPlan, *partition.DimPlan, error) {
	switch len(r.syms) {
	case 1:
		l, bp, berr := r.Batch()
		if berr == nil {
			return l, bp, nil, nil
		}
		l, dp, err := r.dimPlan(r.syms[0], nil)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%w; nor is it a batch: %v", err, berr)
		}
		return l, nil, dp, nil
	case 2:
	default:
		return nil, nil, nil, fmt.Errorf("%s over %s: a build over a range takes a batch and one other dynamic dimension at most: bind the others with --input", r.path, rangesString(r.syms))
	}
	var why []string
	for b := range 2 {
		batch, dim := r.syms[b], r.syms[1-b]
		var bp *partition.BatchPlan
		var err error
		for _, d := range []int{dim.Hi, dim.Lo} {
			var at [3]partition.BatchSample
			for n := range at {
				l, plan, perr := prepareAt(r.g, r.path, r.lo, r.syms, r.inputs, map[string]int{batch.Name: n + 1, dim.Name: d}, r.po)
				if perr != nil {
					return nil, nil, nil, perr
				}
				at[n] = partition.BatchSample{Graph: l.Graph, Plan: plan}
			}
			if bp, err = partition.Batch(batch, at[0], at[1], at[2]); err != nil {
				err = fmt.Errorf("%s as the batch (at %s=%d): %w", batch.Name, dim.Name, d, err)
				break
			}
		}
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		l, dp, err := r.dimPlan(dim, map[string]int{batch.Name: 1})
		if err != nil {
			return nil, nil, nil, err
		}
		bp.One = dp.Hi()
		return l, bp, dp, nil
	}
	return nil, nil, nil, fmt.Errorf("%s over %s: neither dimension is a batch whose samples every group computes apart: %s", r.path, rangesString(r.syms), strings.Join(why, "; "))
}

// dimPlan prepares the model at every value of dim, the other symbols at
// fixed, and checks the plans agree (partition.Dim).
func (r *Range) dimPlan(dim partition.Symbol, fixed map[string]int) (*frontend.Loaded, *partition.DimPlan, error) {
	at := make([]partition.BatchSample, dim.Hi-dim.Lo+1)
	var hi *frontend.Loaded
	for v := dim.Lo; v <= dim.Hi; v++ {
		p := maps.Clone(fixed)
		if p == nil {
			p = map[string]int{}
		}
		p[dim.Name] = v
		l, plan, err := prepareAt(r.g, r.path, r.lo, r.syms, r.inputs, p, r.po)
		if err != nil {
			return nil, nil, err
		}
		at[v-dim.Lo] = partition.BatchSample{Graph: l.Graph, Plan: plan}
		hi = l
	}
	dp, err := partition.Dim(dim, at)
	if err != nil {
		return nil, nil, fmt.Errorf("%s over %s: %w", r.path, dim, err)
	}
	return hi, dp, nil
}

// prepareAt prepares graph g (decoded from path, not changed) with its
// dynamic inputs bound at point p of the symbols, and extracts its plan.
func prepareAt(g *graph.Graph, path string, lo frontend.LoadOptions, syms []partition.Symbol, inputs map[string]dynInput, p map[string]int, po partition.Options) (*frontend.Loaded, *partition.Plan, error) {
	at := lo
	at.Inputs, at.DimNames = maps.Clone(lo.Inputs), nil
	if at.Inputs == nil {
		at.Inputs = map[string][]int{}
	}
	for in, d := range inputs {
		shape := slices.Clone(d.shape)
		for k := range shape {
			if shape[k] < 0 {
				shape[k] = p[d.names[k]]
			}
		}
		at.Inputs[in] = shape
	}
	l, err := frontend.Prepare(g.Clone(), path, at)
	if err != nil {
		return nil, nil, fmt.Errorf("at %s: %w", pointString(syms, p), err)
	}
	plan, err := partition.Extract(l.Graph, po)
	if err != nil {
		return nil, nil, fmt.Errorf("%s at %s: %w", path, pointString(syms, p), err)
	}
	return l, plan, nil
}

// LoadBatch loads the model at path over the range of its one dynamic
// dimension, a batch (LoadRange, then Range.Batch): the plan over the
// range checks that the model has the same groups at every batch of it,
// its ends included.
func LoadBatch(path string, lo frontend.LoadOptions, ranges map[string][2]int, po partition.Options) (*frontend.Loaded, *partition.BatchPlan, error) {
	r, err := LoadRange(path, lo, ranges, po)
	if err != nil {
		return nil, nil, err
	}
	return r.Batch()
}

// LoadDims loads the model at path over the ranges of its dynamic
// dimensions as tune build builds it (LoadRange, then Range.Dims).
func LoadDims(path string, lo frontend.LoadOptions, ranges map[string][2]int, po partition.Options) (*frontend.Loaded, *partition.BatchPlan, *partition.DimPlan, error) {
	r, err := LoadRange(path, lo, ranges, po)
	if err != nil {
		return nil, nil, nil, err
	}
	return r.Dims()
}

// LoadPlan loads the model at path and extracts its plan (LoadModel);
// over ranges (--range), the model a build over them generates from
// (LoadDims, RangeModel).
func LoadPlan(path string, lo frontend.LoadOptions, ranges map[string][2]int, po partition.Options) (*frontend.Loaded, *partition.Plan, error) {
	if len(ranges) == 0 {
		return LoadModel(path, lo, po)
	}
	l, bp, dp, err := LoadDims(path, lo, ranges, po)
	if err != nil {
		return nil, nil, err
	}
	return l, RangeModel(bp, dp).Plan, nil
}

// RangeModel returns the model that a build over ranges generates from
// (assemble.Options.Batch and Dim), of the plans LoadDims returns: the
// model at the largest value of the dimension given at run time (dp) if
// there is one, else at batch 1 (bp).
func RangeModel(bp *partition.BatchPlan, dp *partition.DimPlan) partition.BatchSample {
	if dp != nil {
		return dp.Hi()
	}
	return bp.One
}

// TaskOptions say how LoadTasks loads the tasks a session tunes.
type TaskOptions struct {
	Load      frontend.LoadOptions // how to read the model (frontend.Load)
	Partition partition.Options    // how to extract its tasks
	// Ranges are the values of the inputs' dynamic dimensions to tune
	// over, by name (tune --range); none tunes the model as Load binds it.
	Ranges map[string][2]int
	// Weights weigh the values of the dimension given at run time, by its
	// name and value (tune --weights, RangeEmphasis); weights on a batch
	// move nothing, every sample running the same kernels.
	Weights map[string]map[int]float64
}

// TaskSet is the tasks of a model that a session tunes (LoadTasks) and
// what its Options take of the ranges.
type TaskSet struct {
	Model *frontend.Loaded // over ranges, at batch 1 and the largest value of Dim
	Tasks []*partition.Task
	Batch *partition.BatchPlan // the dynamic batch of the ranges, tuned at batch 1; nil if none
	Dim   *partition.DimPlan   // the dimension given at run time of the ranges (Options.Dim); nil if none
	// Emphasis weighs the tasks by the Weights on Dim's values
	// (Options.Emphasis), and Points says the tuning points' weights
	// (RangeEmphasis); nil and "" without such weights.
	Emphasis map[string]float64
	Points   string
	// weighedBatch says that Weights weighed the values of Batch, which
	// move nothing.
	weighedBatch bool
}

// WriteRanges writes, a line each beginning "prefix: ", what a tuning
// over ranges tunes of them: the batch one sample at a time, the
// dimension given at run time at its tuning points and then its probe
// points, that weights on the batch move nothing, and the tuning points'
// weights. Of a model tuned as bound, nothing.
func (ts *TaskSet) WriteRanges(w io.Writer, prefix string) {
	if bp := ts.Batch; bp != nil {
		fmt.Fprintf(w, "%s: over %s one sample at a time: the tasks of the model at %s=1, which tune build --range runs once per sample\n", prefix, bp.Symbol, bp.Symbol.Name)
	}
	if dp := ts.Dim; dp != nil {
		fmt.Fprintf(w, "%s: over %s: the tasks at %s=%v (%d workloads), their best schedules then measured at %s=%v, whose fastest tune build --range replays at the values nearest each\n",
			prefix, dp.Symbol, dp.Symbol.Name, dp.Symbol.TunePoints(), len(ts.Tasks), dp.Symbol.Name, dp.Symbol.ProbePoints())
	}
	if ts.weighedBatch {
		fmt.Fprintf(w, "%s: --weights %s=...: every sample of the batch runs the same kernels, so its weights move no trials\n", prefix, ts.Batch.Symbol.Name)
	}
	if ts.Emphasis != nil {
		fmt.Fprintf(w, "%s: --weights: %s\n", prefix, ts.Points)
	}
}

// LoadTasks loads the model at path and returns the tasks a session
// tunes: the model's (LoadModel) or, over o.Ranges, those of a tuning for
// a build over them (LoadDims, RangeTasks), weighed by o.Weights.
func LoadTasks(path string, o TaskOptions) (*TaskSet, error) {
	if len(o.Ranges) == 0 {
		l, plan, err := LoadModel(path, o.Load, o.Partition)
		if err != nil {
			return nil, err
		}
		return &TaskSet{Model: l, Tasks: plan.Tasks}, nil
	}
	l, bp, dp, err := LoadDims(path, o.Load, o.Ranges, o.Partition)
	if err != nil {
		return nil, err
	}
	ts := &TaskSet{Model: l, Batch: bp, Dim: dp, weighedBatch: bp != nil && o.Weights[bp.Symbol.Name] != nil}
	var one *partition.Plan
	if bp != nil {
		one = bp.One.Plan
	}
	ts.Tasks = RangeTasks(one, dp)
	if dp != nil && o.Weights[dp.Symbol.Name] != nil {
		if ts.Emphasis, ts.Points, err = RangeEmphasis(dp, o.Weights[dp.Symbol.Name]); err != nil {
			return nil, fmt.Errorf("--weights: %w", err)
		}
	}
	return ts, nil
}

// CheckFootprints checks that measuring each of the tasks takes at most
// max bytes (measure.CheckFootprint; tune --max-memory).
func CheckFootprints(tasks []*partition.Task, max int64) error {
	for i, t := range tasks {
		if err := measure.CheckFootprint(t.DAG, max); err != nil {
			return fmt.Errorf("task %d (%s) cannot be tuned: %w (--max-memory)", i, t.Ops(), err)
		}
	}
	return nil
}

// RangeTasks returns the tasks a tuning for a build over ranges tunes:
// those of one, the model at batch 1 (the model's plan if it has no
// batch), or, over a dimension given at run time (dp), those of the model
// at each of its tuning points (partition.Symbol.TunePoints), whose
// records the build replays at the values nearest them; each workload
// once.
func RangeTasks(one *partition.Plan, dp *partition.DimPlan) []*partition.Task {
	if dp == nil {
		return one.Tasks
	}
	seen := map[string]bool{}
	var tasks []*partition.Task
	for _, p := range dp.Symbol.TunePoints() {
		for _, t := range dp.At[p-dp.Symbol.Lo].Plan.Tasks {
			if !seen[t.Key] {
				seen[t.Key] = true
				tasks = append(tasks, t)
			}
		}
	}
	return tasks
}

// DAGRow returns the form of task n of r's plan over the ranges (tune
// inspect --range --dag N): nil for n < 0, an error for a task the plan
// does not have.
func (r *Range) DAGRow(n int) (*partition.SymbolicDAGRow, error) {
	if n >= len(r.Plan.Tasks) {
		return nil, fmt.Errorf("--dag %d: the model has %d tasks", n, len(r.Plan.Tasks))
	}
	if n < 0 {
		return nil, nil
	}
	t := r.Plan.Tasks[n]
	return &partition.SymbolicDAGRow{Task: n, Ops: t.Ops, Key: t.Key, Form: t.Form}, nil
}

// RangeSupport says whether tune and tune build take a model's ranges
// (tune inspect --range --json: range_tuning): how (a batch run a sample
// at a time, a dimension given to the kernels at run time), or why not.
type RangeSupport struct {
	Ranges string   `json:"ranges"`
	Yes    bool     `json:"yes"`
	How    []string `json:"how,omitempty"`
	Why    string   `json:"why,omitempty"`
}

// Support says whether tune and tune build take r's ranges, written
// ranges (as --range gives them): a batch whose samples every group
// computes apart, and one dimension whose value the kernels take at run
// time (Dims).
func (r *Range) Support(ranges string) RangeSupport {
	s := RangeSupport{Ranges: ranges}
	_, bp, dp, err := r.Dims()
	if err != nil {
		s.Why = err.Error()
		return s
	}
	s.Yes = true
	if bp != nil {
		s.How = append(s.How, fmt.Sprintf("%s one sample at a time (the model at %s=1, each task run once per sample)", bp.Symbol, bp.Symbol.Name))
	}
	if dp != nil {
		s.How = append(s.How, fmt.Sprintf("%s given to the kernels at run time (tuned at %s=%v, %d workloads, their best schedules probed at %v; built at each of its %d values)",
			dp.Symbol, dp.Symbol.Name, dp.Symbol.TunePoints(), len(RangeTasks(nil, dp)), dp.Symbol.ProbePoints(), dp.Symbol.Hi-dp.Symbol.Lo+1))
	}
	return s
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

// RangeEmphasis weighs the tasks of a tuning over a dimension given at run
// time (RangeTasks) by weights on its values (tune --weights): each
// tuning point weighs the weights of the values nearest it
// (partition.Symbol.PointWeights, averaging 1), a task the mean of the
// points it is tuned for. It returns the emphasis by task key
// (search.TuneOptions.Emphasis) and a line that gives the points'
// weights.
func RangeEmphasis(dp *partition.DimPlan, w map[int]float64) (map[string]float64, string, error) {
	pw, err := dp.Symbol.PointWeights(w)
	if err != nil {
		return nil, "", err
	}
	sum, n := map[string]float64{}, map[string]int{}
	points := dp.Symbol.TunePoints()
	parts := make([]string, len(points))
	for i, p := range points {
		parts[i] = fmt.Sprintf("%s=%d weighs %.2f", dp.Symbol.Name, p, pw[p])
		seen := map[string]bool{}
		for _, t := range dp.At[p-dp.Symbol.Lo].Plan.Tasks {
			if !seen[t.Key] {
				seen[t.Key] = true
				sum[t.Key] += pw[p]
				n[t.Key]++
			}
		}
	}
	em := make(map[string]float64, len(sum))
	for k, s := range sum {
		em[k] = s / float64(n[k])
	}
	return em, strings.Join(parts, ", "), nil
}
