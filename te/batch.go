package te

import (
	"fmt"

	"tessera/tir"
)

// SampleWise reports whether d computes each sample of a batch apart, so
// that its kernel at batch 1 run once per sample computes it at any batch.
// batched marks the tensors whose leading dimension is the batch (and no
// other dimension depends on it). Each batched compute tensor must read
// the batched tensors at its own leading index only, and use that index
// nowhere else (no select on it, no constant indexed by it): then sample i
// of every output is the same function of sample i of the inputs, for
// every i. A compute tensor that is not batched must read no batched
// tensor (it would combine the samples). The error names the tensor and
// the read.
func SampleWise(d *DAG, batched func(*Tensor) bool) error {
	for _, t := range d.Tensors {
		if t.IsPlaceholder() {
			continue
		}
		var sample *tir.Var
		if batched(t) {
			if len(t.Axis) == 0 {
				return fmt.Errorf("te: %s is batched but has no axis", t.Name)
			}
			sample = t.Axis[0].Var
		}
		var err error
		var walk func(e tir.Expr) bool
		walk = func(e tir.Expr) bool {
			if err != nil {
				return false
			}
			switch e := e.(type) {
			case *tir.Var:
				if e == sample {
					err = fmt.Errorf("te: %s uses its sample index %s outside the leading index of a batched read", t.Name, e.Name)
				}
			case *tir.Load:
				p, ok := e.Buf.Owner.(*Tensor)
				if !ok || !batched(p) {
					return true
				}
				switch {
				case sample == nil:
					err = fmt.Errorf("te: %s%v is not batched but reads the batched %s: it combines the samples", t.Name, t.Shape, p.Name)
				case e.Indices[0] != tir.Expr(sample):
					err = fmt.Errorf("te: %s reads %s at sample %s, not at its own (%s)", t.Name, p.Name, tir.ExprString(e.Indices[0]), sample.Name)
				default:
					for _, i := range e.Indices[1:] {
						tir.WalkExpr(i, walk)
					}
				}
				return false
			}
			return true
		}
		tir.WalkExpr(t.Body, walk)
		if err != nil {
			return err
		}
	}
	return nil
}
