package te

import (
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/tir"
)

// TestSampleWise: per-sample computations pass, among them windows that
// fold the batch ([2·N, ...]) and unfold it; every way of mixing the
// samples (a reduction over the batch, a read of another sample or
// window, the sample index used as a value, a softmax over the batch) is
// refused, naming the tensor.
func TestSampleWise(t *testing.T) {
	const n = 5 // the batch; no other extent below is 5
	x := func() *Tensor { return Placeholder("x", n, 3, 8, 8) }
	cases := []struct {
		name  string
		build func() (*Tensor, error)
		want  string // "" for sample-wise
	}{
		{"conv and softmax", func() (*Tensor, error) {
			c, err := Conv("conv", x(), Constant("w", 4, 3, 3, 3), Constant("b", 4), ConvAttrs{Pads: []int{1, 1, 1, 1}})
			if err != nil {
				return nil, err
			}
			return Softmax("sm", c, 1)
		}, ""},
		{"gather by a batched index", func() (*Tensor, error) {
			in, table := x(), Constant("table", 10, 8)
			return Compute("emb", []int{n, 8}, func(i []tir.Expr) tir.Expr {
				id := tir.FloorModE(&tir.Cast{To: tir.Int, X: in.At(i[0], tir.Const(0), tir.Const(0), tir.Const(0))}, tir.Const(10))
				return table.At(id, i[1])
			}), nil
		}, ""},
		{"gather by the sample index", func() (*Tensor, error) {
			in, table := x(), Constant("table", 10, 8)
			return Compute("emb", []int{n, 8}, func(i []tir.Expr) tir.Expr {
				return tir.AddE(table.At(i[0], i[1]), in.At(i[0], tir.Const(0), tir.Const(0), i[1]))
			}), nil
		}, "differs from one sample to the next"},
		{"softmax over the batch", func() (*Tensor, error) { return Softmax("sm", x(), 0) }, "combines the samples"},
		{"sum over the batch", func() (*Tensor, error) {
			in := x()
			return Reduce("s", []int{3}, Sum, []int{n}, func(i, r []tir.Expr) tir.Expr {
				return in.At(r[0], i[0], tir.Const(0), tir.Const(0))
			}), nil
		}, "combines the samples"},
		{"read of the next sample", func() (*Tensor, error) {
			in := x()
			return Compute("shift", []int{n, 3}, func(i []tir.Expr) tir.Expr {
				return in.At(tir.FloorModE(tir.AddE(i[0], tir.Const(1)), tir.Const(n)), i[1], tir.Const(0), tir.Const(0))
			}), nil
		}, "not at its own"},
		{"sample index as a value", func() (*Tensor, error) {
			in := x()
			return Compute("first", []int{n, 3}, func(i []tir.Expr) tir.Expr {
				return tir.SelectE(tir.Cmp(tir.EQ, i[0], tir.Const(0)), in.At(i[0], i[1], tir.Const(0), tir.Const(0)), tir.F32(0))
			}), nil
		}, "outside the leading index"},
		// Windows: each sample's 4 rows as 2 windows of 2 ([2·N, 2, 8]),
		// then back: sample-wise, the row within the sample used freely.
		{"windows and back", func() (*Tensor, error) {
			in := x()
			win := Compute("win", []int{2 * n, 2, 8}, func(i []tir.Expr) tir.Expr {
				row := tir.AddE(tir.MulE(tir.FloorModE(i[0], tir.Const(2)), tir.Const(2)), i[1])
				v := in.At(tir.FloorDivE(i[0], tir.Const(2)), tir.Const(0), row, i[2])
				return tir.SelectE(tir.Cmp(tir.EQ, tir.FloorModE(i[0], tir.Const(2)), tir.Const(0)), v, tir.MulE(v, tir.F32(2)))
			})
			return Compute("back", []int{n, 4, 8}, func(i []tir.Expr) tir.Expr {
				return win.At(tir.AddE(tir.MulE(i[0], tir.Const(2)), tir.FloorDivE(i[1], tir.Const(2))), tir.FloorModE(i[1], tir.Const(2)), i[2])
			}), nil
		}, ""},
		{"windows of the next sample", func() (*Tensor, error) {
			in := x()
			return Compute("win", []int{2 * n, 2, 8}, func(i []tir.Expr) tir.Expr {
				return in.At(tir.FloorModE(tir.FloorDivE(tir.AddE(i[0], tir.Const(1)), tir.Const(2)), tir.Const(n)), tir.Const(0), i[1], i[2])
			}), nil
		}, "not at its own"},
		{"the first window of the batch", func() (*Tensor, error) {
			in := x()
			return Compute("win", []int{2 * n, 2, 8}, func(i []tir.Expr) tir.Expr {
				v := in.At(tir.FloorDivE(i[0], tir.Const(2)), tir.Const(0), i[1], i[2])
				return tir.SelectE(tir.Cmp(tir.LT, i[0], tir.Const(2)), v, tir.F32(0))
			}), nil
		}, "differs from one sample to the next"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			d, err := NewDAG(out)
			if err != nil {
				t.Fatal(err)
			}
			err = SampleWise(d, func(t *Tensor) int {
				if t.Const || len(t.Shape) == 0 || t.Shape[0]%n != 0 {
					return 0
				}
				return t.Shape[0] / n // x: 1 row a sample, the windows below 2
			})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
		})
	}
}
