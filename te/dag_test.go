package te

import (
	"math"
	"testing"

	"github.com/tessera-ml/tessera/tir"
)

func matmul(n, m, k int) (*DAG, *Tensor, *Tensor) {
	a := Placeholder("A", n, k)
	b := Placeholder("B", k, m)
	c := Reduce("C", []int{n, m}, Sum, []int{k}, func(i, r []tir.Expr) tir.Expr {
		return tir.MulE(a.At(i[0], r[0]), b.At(r[0], i[1]))
	})
	relu := Compute("D", []int{n, m}, func(i []tir.Expr) tir.Expr {
		return tir.MaxE(c.At(i...), tir.F32(0))
	})
	d, err := NewDAG(relu)
	if err != nil {
		panic(err)
	}
	return d, a, b
}

func TestEvalMatmulRelu(t *testing.T) {
	d, _, _ := matmul(3, 4, 5)
	a := make([]float32, 15)
	b := make([]float32, 20)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	for i := range b {
		b[i] = float32(i%5) - 2
	}
	out, err := d.Eval([][]float32{a, b})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		for j := 0; j < 4; j++ {
			var s float32
			for k := 0; k < 5; k++ {
				s += a[i*5+k] * b[k*4+j]
			}
			want := float32(math.Max(float64(s), 0))
			if got := out[0][i*4+j]; got != want {
				t.Fatalf("D[%d,%d] = %v, want %v", i, j, got, want)
			}
		}
	}
}

// TestStrictlyInlineable: an expensive call or a division by a computed
// value anywhere in the body makes a stage costly, also when a cheap
// operation follows it in the walk (exp(x) + a·b, x / y + a·b).
func TestStrictlyInlineable(t *testing.T) {
	x, y := Placeholder("x", 4), Placeholder("y", 4)
	for _, c := range []struct {
		name string
		body func(i []tir.Expr) tir.Expr
		want bool
	}{
		{"mul add", func(i []tir.Expr) tir.Expr { return tir.AddE(x.At(i...), tir.MulE(y.At(i...), y.At(i...))) }, true},
		{"div by a constant", func(i []tir.Expr) tir.Expr { return tir.DivE(x.At(i...), tir.F32(8)) }, true},
		{"exp then mul", func(i []tir.Expr) tir.Expr {
			return tir.AddE(tir.CallE("exp", x.At(i...)), tir.MulE(y.At(i...), y.At(i...)))
		}, false},
		{"div by a value then mul", func(i []tir.Expr) tir.Expr {
			return tir.AddE(tir.DivE(x.At(i...), y.At(i...)), tir.MulE(y.At(i...), y.At(i...)))
		}, false},
	} {
		if got := IsStrictlyInlineable(Compute(c.name, []int{4}, c.body)); got != c.want {
			t.Errorf("%s: strictly inlineable %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDAGAnalysis(t *testing.T) {
	d, _, _ := matmul(8, 8, 8)
	if len(d.Tensors) != 4 || len(d.Inputs) != 2 {
		t.Fatalf("tensors %d inputs %d", len(d.Tensors), len(d.Inputs))
	}
	c, relu := d.Tensors[2], d.Tensors[3]
	if !d.NeedsMultiLevelTiling(c) || d.NeedsMultiLevelTiling(relu) {
		t.Error("multi-level tiling: want matmul only")
	}
	if !d.IsStrictlyInlineable(relu) || d.IsStrictlyInlineable(c) {
		t.Error("strictly inlineable: want relu only")
	}
	if !d.IsElementwiseRead(relu, c) {
		t.Error("relu reads matmul elementwise")
	}
	if got, want := d.FLOPs(), 8.0*8*8*2+64; got != want {
		t.Errorf("FLOPs = %v, want %v", got, want)
	}
	d2, _, _ := matmul(8, 8, 8)
	if d.WorkloadKey() != d2.WorkloadKey() {
		t.Error("equal DAGs have different workload keys")
	}
	d3, _, _ := matmul(8, 8, 9)
	if d.WorkloadKey() == d3.WorkloadKey() {
		t.Error("different DAGs share a workload key")
	}
}

func TestEvalOutOfBounds(t *testing.T) {
	a := Placeholder("A", 4)
	b := Compute("B", []int{4}, func(i []tir.Expr) tir.Expr { return a.At(tir.AddE(i[0], tir.Const(1))) })
	d, err := NewDAG(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Eval([][]float32{make([]float32, 4)}); err == nil {
		t.Fatal("out-of-bounds read not reported")
	}
}

// TestIsContraction: matmuls, matrix-vector products and convolutions are
// contractions (some load misses an output axis); a pooling window, a sum
// over a row and an elementwise op are not. NeedsMultiLevelTiling wants
// two missed axes: a matrix-vector product is a contraction without it.
func TestIsContraction(t *testing.T) {
	must := func(x *Tensor, err error) *Tensor {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	mm := must(MatMul("mm", Placeholder("A", 8, 16), Placeholder("B", 16, 8)))
	gemv := must(MatMul("gemv", Placeholder("A", 1, 16), Placeholder("B", 16, 8)))
	pool := must(MaxPool("pool", Placeholder("X", 1, 4, 8, 8), PoolAttrs{KernelShape: []int{2, 2}, Strides: []int{2, 2}}))
	sum := must(ReduceSum("sum", Placeholder("X", 4, 8), ReduceAttrs{Axes: []int{1}}))
	relu := must(Relu("relu", Placeholder("X", 4, 8)))
	for _, c := range []struct {
		t                  *Tensor
		contraction, multi bool
	}{
		{mm, true, true}, {gemv, true, false}, {pool, false, false}, {sum, false, false}, {relu, false, false},
	} {
		if got := IsContraction(c.t); got != c.contraction {
			t.Errorf("%s: IsContraction %v", c.t.Name, got)
		}
		if got := NeedsMultiLevelTiling(c.t); got != c.multi {
			t.Errorf("%s: NeedsMultiLevelTiling %v", c.t.Name, got)
		}
	}
}
