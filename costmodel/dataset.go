package costmodel

import (
	"fmt"
	"math"
)

// Dataset holds measured programs for training and evaluation: each
// program is a block of feature rows (one per store), its measured cost in
// seconds, and the task it belongs to. Labels are derived per task when they
// are needed, so a Dataset grows by Add as measurements arrive. The zero
// Dataset is empty and ready to use.
//
// Invariant: every row of every program has the same length (the first row
// added fixes it).
type Dataset struct {
	nf    int       // row length
	flat  []float32 // all rows, program after program
	start []int     // program p's rows are flat rows start[p] … start[p+1]-1 (len = programs+1 once non-empty)
	task  []int32   // task of each program
	cost  []float64 // measured cost of each program; +Inf when it failed

	taskNames []string
	taskIDs   map[string]int32
}

// Add appends one measured program. A cost that is not a positive finite
// number (a failed measurement: pass math.Inf(1)) gets label 0. rows may be
// empty (a program without stores scores 0).
//
// Precondition: every row has the dataset's row length; Add panics
// otherwise, since rows of another layout would silently corrupt training.
func (d *Dataset) Add(task string, rows [][]float32, cost float64) {
	for _, r := range rows {
		if d.nf == 0 {
			d.nf = len(r)
		}
		if len(r) != d.nf || d.nf == 0 {
			panic(fmt.Sprintf("costmodel: Dataset.Add: row of %d features, dataset has %d", len(r), d.nf))
		}
	}
	if d.start == nil {
		d.start = []int{0}
	}
	if d.taskIDs == nil {
		d.taskIDs = map[string]int32{}
	}
	id, ok := d.taskIDs[task]
	if !ok {
		id = int32(len(d.taskNames))
		d.taskIDs[task] = id
		d.taskNames = append(d.taskNames, task)
	}
	for _, r := range rows {
		d.flat = append(d.flat, r...)
	}
	d.start = append(d.start, d.start[len(d.start)-1]+len(rows))
	d.task = append(d.task, id)
	if !(cost > 0) || math.IsInf(cost, 0) {
		cost = math.Inf(1)
	}
	d.cost = append(d.cost, cost)
}

// Successes returns the number of programs measured without error
// (positive labels); a nil dataset has none.
func (d *Dataset) Successes() int {
	if d == nil {
		return 0
	}
	n := 0
	for _, y := range d.Labels() {
		if y > 0 {
			n++
		}
	}
	return n
}

// Len returns the number of programs.
func (d *Dataset) Len() int { return len(d.task) }

// NumRows returns the number of feature rows over all programs.
func (d *Dataset) NumRows() int {
	if len(d.start) == 0 {
		return 0
	}
	return d.start[len(d.start)-1]
}

// NumFeatures returns the row length (0 while no row was added).
func (d *Dataset) NumFeatures() int { return d.nf }

// Program returns the rows of program i; they alias the dataset.
func (d *Dataset) Program(i int) [][]float32 {
	rows := make([][]float32, d.start[i+1]-d.start[i])
	for k := range rows {
		r := d.start[i] + k
		rows[k] = d.flat[r*d.nf : (r+1)*d.nf : (r+1)*d.nf]
	}
	return rows
}

// Programs returns the rows of every program.
func (d *Dataset) Programs() [][][]float32 {
	out := make([][][]float32, d.Len())
	for i := range out {
		out[i] = d.Program(i)
	}
	return out
}

// Task returns the task of program i.
func (d *Dataset) Task(i int) string { return d.taskNames[d.task[i]] }

// TaskIDs returns the task of every program as a small integer (tasks are
// numbered in order of first appearance).
func (d *Dataset) TaskIDs() []int {
	out := make([]int, len(d.task))
	for i, t := range d.task {
		out[i] = int(t)
	}
	return out
}

// Cost returns the measured cost of program i (+Inf when it failed).
func (d *Dataset) Cost(i int) float64 { return d.cost[i] }

// Labels returns y for every program: the best (smallest) cost of its task
// divided by its cost, so the best program of a task has y = 1 and a failed
// one y = 0. A task whose every measurement failed has all labels 0.
func (d *Dataset) Labels() []float64 {
	best := make([]float64, len(d.taskNames))
	for i := range best {
		best[i] = math.Inf(1)
	}
	for i, c := range d.cost {
		best[d.task[i]] = min(best[d.task[i]], c)
	}
	y := make([]float64, len(d.cost))
	for i, c := range d.cost {
		if !math.IsInf(c, 1) {
			y[i] = best[d.task[i]] / c
		}
	}
	return y
}

// Subset returns a new dataset of the given programs, in the given order.
// Labels of the subset are normalized within the subset.
func (d *Dataset) Subset(programs []int) *Dataset {
	s := &Dataset{}
	for _, p := range programs {
		s.Add(d.Task(p), d.Program(p), d.cost[p])
	}
	if s.nf == 0 {
		s.nf = d.nf
	}
	return s
}

// rowRange returns the flat row range of program p.
func (d *Dataset) rowRange(p int) (lo, hi int) { return d.start[p], d.start[p+1] }
