package partition

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
)

// Plans over a dynamic batch: a model whose every group computes each
// sample apart needs no kernel of the batch's extent. Its plan at batch 1
// is tuned like any model's, and the build runs each group's kernel once
// per sample, the batch a run-time loop around it (DietCode's micro-kernel
// whose tile is one sample). Batch checks that this is exact: at two
// batches (2 and 3) the groups' DAGs differ only in the leading extent of
// the batched tensors, and each DAG computes sample i from sample i alone
// (te.SampleWise), a sample being one row of a batched tensor's leading
// dimension or several (a reshape that folds windows or tokens into it);
// at batch 1 the groups are the same, reading and writing the same values.

// BatchSample is a model prepared at one value of its batch.
type BatchSample struct {
	Graph *graph.Graph
	Plan  *Plan
}

// BatchPlan is a model's plan over a dynamic batch that every group
// computes sample by sample.
type BatchPlan struct {
	Symbol Symbol
	One    BatchSample // the model at batch 1: what is tuned and built
	// Batched holds the values whose leading dimension holds the batch: a
	// run at batch n holds n times their elements at batch 1, sample i
	// the i-th block. Inside the model a sample may be several rows there
	// ([64·N, 49, 96]: 64 windows of each image); the model's inputs and
	// outputs have the batch itself.
	Batched map[string]bool
}

// Batch derives the plan over the batch sym from the model at batches 1,
// 2 and 3. It fails, naming the value or the group and tensor, where a
// dimension other than the leading one depends on the batch, a number of
// a DAG does, or a group combines samples.
func Batch(sym Symbol, one, two, three BatchSample) (*BatchPlan, error) {
	bp := &BatchPlan{Symbol: sym, One: one, Batched: map[string]bool{}}
	// In graph order: the first value in error is the one named.
	names := slices.Clone(two.Graph.Inputs)
	for _, n := range two.Graph.Nodes {
		names = append(names, n.Outputs...)
	}
	for _, name := range names {
		v1, v2, v3 := one.Graph.Values[name], two.Graph.Values[name], three.Graph.Values[name]
		if v1 == nil || v2 == nil || v3 == nil {
			continue // a value of one preparation only (a folded shape): checked by the groups' DAGs
		}
		switch batched, err := leadingBatch(v1.Shape, v2.Shape, v3.Shape); {
		case err != nil:
			return nil, fmt.Errorf("value %s: %w", name, err)
		case batched && v1.Shape[0] != 1 && (slices.Contains(two.Graph.Inputs, name) || slices.Contains(two.Graph.Outputs, name)):
			// The library's API gives a batched tensor the batch as its
			// leading dimension; inside the model a sample may be rows.
			return nil, fmt.Errorf("value %s, a model input or output: shape %v at batch 1, %v at 2: its leading dimension is %d·N, where the batch N is wanted", name, v1.Shape, v2.Shape, v1.Shape[0])
		case batched:
			bp.Batched[name] = true
		}
	}
	for _, s := range []BatchSample{one, three} {
		if err := sameStructure(two.Plan, s.Plan); err != nil {
			return nil, fmt.Errorf("the plan at batch %d differs from the one at 2: %w", s.batch(two), err)
		}
	}
	for g, grp := range two.Plan.Groups {
		at1 := one.Plan.Groups[g]
		if !slices.Equal(at1.Inputs, grp.Inputs) || !slices.Equal(at1.Outputs, grp.Outputs) {
			return nil, fmt.Errorf("group %d (%s) reads %v and writes %v at batch 2, but %v and %v at batch 1", g, grp.Ops(), grp.Inputs, grp.Outputs, at1.Inputs, at1.Outputs)
		}
		// The direct DAG defines the group: an alternative algorithm
		// (Winograd's, which tiles the batch and the image as one axis)
		// computes the same function, at batch 1 a sample's.
		if err := sampleWise(grp.DAG, three.Plan.Groups[g].DAG); err != nil {
			return nil, fmt.Errorf("group %d (%s): %w", g, grp.Ops(), err)
		}
	}
	return bp, nil
}

// batch returns the batch s is prepared at: the leading extent of a value
// that is 2 in two.
func (s BatchSample) batch(two BatchSample) int {
	for _, name := range two.Graph.Inputs {
		if v, w := s.Graph.Values[name], two.Graph.Values[name]; v != nil && len(v.Shape) > 0 && len(w.Shape) > 0 && w.Shape[0] == 2 {
			return v.Shape[0]
		}
	}
	return 0
}

// leadingBatch reports whether a shape at batches 1, 2 and 3 has the batch
// as its leading dimension (and no other dimension depends on it), or
// false when no dimension does; any other dependence is an error.
func leadingBatch(s1, s2, s3 []int) (bool, error) {
	if slices.Equal(s1, s2) && slices.Equal(s2, s3) {
		return false, nil
	}
	if len(s1) > 0 && len(s1) == len(s2) && len(s2) == len(s3) && s2[0] == 2*s1[0] && s3[0] == 3*s1[0] &&
		slices.Equal(s1[1:], s2[1:]) && slices.Equal(s2[1:], s3[1:]) {
		return true, nil // s1[0] rows a sample: N, or the batch folded with another axis (64·N windows)
	}
	return false, fmt.Errorf("shape %v at batch 1, %v at 2, %v at 3: only the leading dimension may be the batch", s1, s2, s3)
}

// sampleWise checks one DAG of a group at batches 2 and 3: their canonical
// prints differ only in the leading extent of batched tensors (2 and 3),
// and the DAG at 2 computes each sample apart (te.SampleWise).
func sampleWise(two, three *te.DAG) error {
	l2 := strings.Split(two.CanonicalString(), "\n")
	l3 := strings.Split(three.CanonicalString(), "\n")
	if len(l2) != len(l3) {
		return fmt.Errorf("its DAG has %d lines at batch 2 and %d at 3", len(l2), len(l3))
	}
	rows := map[*te.Tensor]int{} // of a sample, in a batched tensor's leading dimension
	for i, t := range two.Tensors {
		d2, rest2, _ := strings.Cut(l2[i], " = ")
		d3, rest3, _ := strings.Cut(l3[i], " = ")
		if rest2 != rest3 {
			return fmt.Errorf("tensor T%d depends on the batch other than by its leading extent (it reduces over the batch, or a number of it is the batch): %q at batch 2, %q at 3", i, l2[i], l3[i])
		}
		three := three.Tensors[i].Shape
		switch {
		case d2 == d3:
		case len(t.Shape) == len(three) && t.Shape[0]%2 == 0 && three[0] == t.Shape[0]/2*3 && slices.Equal(t.Shape[1:], three[1:]):
			rows[t] = t.Shape[0] / 2
		default:
			return fmt.Errorf("tensor T%d is %v at batch 2 and %v at 3: only the leading dimension may be the batch", i, t.Shape, three)
		}
	}
	return te.SampleWise(two, func(t *te.Tensor) int { return rows[t] })
}
