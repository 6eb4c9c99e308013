package te

import (
	"fmt"

	"github.com/tessera-ml/tessera/tir"
)

// maxCheckPoints bounds the points SampleWise evaluates an index
// expression at: beyond it the expression is refused as too large to check.
const maxCheckPoints = 1 << 22

// SampleWise reports whether d computes each sample of a batch apart, so
// that its kernel at batch 1 run once per sample computes it at any batch.
// rows gives, for a tensor whose leading dimension holds the batch, the
// rows of one sample there (1 for [N, ...], 64 for a [64·N, ...] that
// folds 64 windows of each sample into it), and 0 for any other tensor.
//
// A batched compute tensor t of r rows a sample, i0 its leading index,
// must read a batched tensor p of r' rows a sample at a leading index e
// in sample ⌊i0/r⌋ (⌊e/r'⌋ = ⌊i0/r⌋), the same row of it in every sample
// (e(i0+r) = e(i0) + r'), and may use i0 otherwise only in integer
// expressions that are the same in every sample (v(i0+r) = v(i0): the row
// within the sample, i0 mod r, and no select on the sample itself). A read
// at e = i0 with r' = r passes at once; any other expression is checked
// at every point of its variables' ranges. Then sample i of every output
// is the same function of sample i of the inputs, for every i. A compute
// tensor that is not batched must read no batched tensor (it would
// combine the samples). The error names the tensor and the read.
func SampleWise(d *DAG, rows func(*Tensor) int) error {
	for _, t := range d.Tensors {
		if t.IsPlaceholder() {
			continue
		}
		if err := sampleWise(t, rows); err != nil {
			return err
		}
	}
	return nil
}

func sampleWise(t *Tensor, rows func(*Tensor) int) error {
	r := rows(t)
	var sample *tir.Var
	if r > 0 {
		if len(t.Axis) == 0 {
			return fmt.Errorf("te: %s is batched but has no axis", t.Name)
		}
		sample = t.Axis[0].Var
	}
	ranges := map[*tir.Var]int{}
	for _, a := range append(append([]IterVar(nil), t.Axis...), t.ReduceAxis...) {
		ranges[a.Var] = a.Extent
	}
	c := sampleCheck{t: t, sample: sample, rows: r, ranges: ranges}
	var walk func(e tir.Expr) bool
	walk = func(e tir.Expr) bool {
		if c.err != nil {
			return false
		}
		if l, ok := e.(*tir.Load); ok {
			p, ok := l.Buf.Owner.(*Tensor)
			if ok && rows(p) > 0 {
				if sample == nil {
					c.err = fmt.Errorf("te: %s%v is not batched but reads the batched %s: it combines the samples", t.Name, t.Shape, p.Name)
					return false
				}
				c.leading(p, rows(p), l.Indices[0])
				for _, i := range l.Indices[1:] {
					tir.WalkExpr(i, walk)
				}
				return false
			}
			for _, i := range l.Indices {
				tir.WalkExpr(i, walk) // a gather's index may read a batched tensor
			}
			return false
		}
		if e.Type() != tir.Float32 && e.Type() != tir.Bool && c.usesSample(e) {
			c.same(e) // an integer expression (an index, a Cast's operand, a Compare's side)
			return false
		}
		return true
	}
	tir.WalkExpr(t.Body, walk)
	return c.err
}

// sampleCheck checks the expressions of one tensor's body.
type sampleCheck struct {
	t      *Tensor
	sample *tir.Var // the leading index; nil when t is not batched
	rows   int      // of a sample in t's leading dimension
	ranges map[*tir.Var]int
	err    error
}

// leading checks e, the leading index of a read of the batched p (rows
// of a sample): the same sample, the same row in every sample.
func (c *sampleCheck) leading(p *Tensor, rows int, e tir.Expr) {
	if e == tir.Expr(c.sample) && rows == c.rows {
		return
	}
	ok, err := c.everywhere(e, func(at func(shift int64) int64, i0 int64) bool {
		v := at(0)
		if floorDiv(v, int64(rows)) != floorDiv(i0, int64(c.rows)) {
			return false
		}
		return i0+int64(c.rows) >= int64(c.t.Axis[0].Extent) || at(int64(c.rows)) == v+int64(rows)
	})
	switch {
	case err != nil:
		c.err = fmt.Errorf("te: %s reads %s at %s: %w", c.t.Name, p.Name, tir.ExprString(e), err)
	case !ok:
		c.err = fmt.Errorf("te: %s reads %s at sample %s, not at its own (%s, %d rows a sample)", c.t.Name, p.Name, tir.ExprString(e), c.sample.Name, c.rows)
	}
}

// usesSample reports whether e uses the sample index other than in the
// indices of a read (which are checked as reads).
func (c *sampleCheck) usesSample(e tir.Expr) bool {
	if c.sample == nil {
		return false
	}
	uses := false
	tir.WalkExpr(e, func(x tir.Expr) bool {
		if _, ok := x.(*tir.Load); ok {
			return false
		}
		uses = uses || x == tir.Expr(c.sample)
		return !uses
	})
	return uses
}

// same checks that the integer expression e, which uses the sample index,
// has the same value in every sample.
func (c *sampleCheck) same(e tir.Expr) {
	if c.err != nil {
		return
	}
	ok, err := c.everywhere(e, func(at func(shift int64) int64, i0 int64) bool {
		return i0+int64(c.rows) >= int64(c.t.Axis[0].Extent) || at(int64(c.rows)) == at(0)
	})
	switch {
	case err != nil:
		c.err = fmt.Errorf("te: %s uses its sample index in %s: %w", c.t.Name, tir.ExprString(e), err)
	case !ok:
		c.err = fmt.Errorf("te: %s uses its sample index %s outside the leading index of a batched read: %s differs from one sample to the next", c.t.Name, c.sample.Name, tir.ExprString(e))
	}
}

// everywhere evaluates the integer expression e at every point of the
// ranges of its variables and reports whether pred holds at all of them;
// pred gets e with the sample index shifted by shift, and the sample
// index's value.
func (c *sampleCheck) everywhere(e tir.Expr, pred func(at func(shift int64) int64, i0 int64) bool) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			ee, isEval := r.(evalError)
			if !isEval {
				panic(r)
			}
			ok, err = false, fmt.Errorf("%s", ee.msg)
		}
	}()
	var vars []*tir.Var
	seen := map[*tir.Var]bool{c.sample: true}
	vars = append(vars, c.sample)
	points := int64(c.ranges[c.sample])
	loads := false
	tir.WalkExpr(e, func(x tir.Expr) bool {
		switch x := x.(type) {
		case *tir.Load:
			loads = true
		case *tir.Var:
			if !seen[x] {
				seen[x] = true
				vars = append(vars, x)
				points *= int64(max(c.ranges[x], 1))
			}
		}
		return true
	})
	if loads {
		return false, fmt.Errorf("an index read from a tensor cannot be checked")
	}
	if points > maxCheckPoints {
		return false, fmt.Errorf("%d points, too many to check", points)
	}
	comp := &compiler{slots: map[*tir.Var]int{}}
	for i, v := range vars {
		if _, ok := c.ranges[v]; !ok {
			return false, fmt.Errorf("variable %s has no range", v.Name)
		}
		comp.slots[v] = i
	}
	f := comp.int(e)
	if comp.err != nil {
		return false, comp.err
	}
	en := &env{v: make([]int64, len(vars))}
	at := func(shift int64) int64 {
		i0 := en.v[0]
		en.v[0] = i0 + shift
		v := f(en)
		en.v[0] = i0
		return v
	}
	var rec func(k int) bool
	rec = func(k int) bool {
		if k == len(vars) {
			return pred(at, en.v[0])
		}
		for i := range int64(c.ranges[vars[k]]) {
			en.v[k] = i
			if !rec(k + 1) {
				return false
			}
		}
		return true
	}
	return rec(0), nil
}
