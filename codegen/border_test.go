package codegen

import (
	"testing"

	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// TestSplitBorders: a 3×3 convolution of dilation 12 on a 17×17 map
// (padding 12, as ASPP's), default schedule: split-borders cuts its loops
// where taps read only padding, the products it drops leave fewer
// multiplications than taps × outputs, and the kernel
// after every pass computes what the reference evaluator does. The same
// convolution of dilation 1 is left whole (its dead taps are 2 rows of 17).
func TestSplitBorders(t *testing.T) {
	m, err := machine.Level("x86-64-v3")
	if err != nil {
		t.Fatal(err)
	}
	m.Cores = 2
	opts := sketch.CPUOptions(m)
	for _, c := range []struct {
		dilation int
		cut      bool
	}{{12, true}, {1, false}} {
		x, w := te.Placeholder("X", 1, 17, 17, 8), te.Constant("W", 8, 8, 3, 3)
		p := c.dilation
		conv, err := te.ConvNHWC("conv", x, w, nil, te.ConvAttrs{Pads: []int{p, p, p, p}, Strides: []int{1, 1}, Dilations: []int{c.dilation, c.dilation}})
		if err != nil {
			t.Fatal(err)
		}
		d, err := te.NewDAG(conv)
		if err != nil {
			t.Fatal(err)
		}
		st, _, err := sketch.Default(schedule.NewState(d), opts)
		if err != nil {
			t.Fatal(err)
		}
		f, err := schedule.Lower(st, "conv")
		if err != nil {
			t.Fatal(err)
		}
		var before, after tir.Stmt
		err = Trace(f, false, 8, func(pass string, g *tir.PrimFunc) error {
			switch pass {
			case "unroll":
				before = g.Body
			case "split-borders":
				after = g.Body
			}
			return schedtest.Check(d, g, 5)
		})
		if err != nil {
			t.Fatalf("dilation %d: %v", c.dilation, err)
		}
		nb, na := products(before), products(after)
		if cut := na < nb; cut != c.cut {
			t.Errorf("dilation %d: products of the input %d before split-borders, %d after: cut %v, want %v", c.dilation, nb, na, cut, c.cut)
		}
	}
}

// products counts the float multiplications of s, weighted by the
// iterations of the loops around them.
func products(s tir.Stmt) int {
	n := 0
	var walk func(s tir.Stmt, times int)
	walk = func(s tir.Stmt, times int) {
		switch x := s.(type) {
		case *tir.For:
			walk(x.Body, times*x.Extent)
		case *tir.Seq:
			for _, c := range x.Stmts {
				walk(c, times)
			}
		case *tir.Allocate:
			walk(x.Body, times)
		case *tir.Let:
			walk(x.Body, times)
		case *tir.Pragma:
			walk(x.Body, times)
		case *tir.IfThenElse:
			walk(x.Then, times)
			if x.Else != nil {
				walk(x.Else, times)
			}
		case *tir.Store:
			tir.WalkExpr(x.Value, func(e tir.Expr) bool {
				if b, ok := e.(*tir.Binary); ok && b.Op == tir.Mul && b.Type() == tir.Float32 {
					n += times
				}
				return true
			})
		}
	}
	walk(s, 1)
	return n
}
