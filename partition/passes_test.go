package partition

import (
	"testing"

	"github.com/tessera-ml/tessera/graph"
)

// TestFuseGeluComputes: a matmul with a bias and GELU as PyTorch exports it
// (Div by √2, Erf, Add 1, Mul by x, Mul by 0.5) is one group with
// fuse-gelu (MatMul+Add+Gelu, the matmul's one consumer) and computes what
// the written-out pattern computes without it.
func TestFuseGeluComputes(t *testing.T) {
	build := func(fuse bool) *graph.Graph {
		b := newTG(17)
		x := b.input("x", 1, 6, 16)
		h := b.op("mm", "MatMul", []string{x, b.weight("w", 16, 32)})
		h = b.op("bias", "Add", []string{h, b.weight("b", 32)})
		s := b.op("div", "Div", []string{h, b.scalar("sqrt2", 1.4142135)})
		e := b.op("erf", "Erf", []string{s})
		a := b.op("add1", "Add", []string{e, b.scalar("one", 1)})
		p := b.op("mul", "Mul", []string{h, a})
		y := b.op("y", "Mul", []string{p, b.scalar("half", 0.5)})
		return b.done(t, map[string]bool{"convert-layout": true, "fuse-gelu": !fuse}, y)
	}
	fused, plain := build(true), build(false)
	p, err := Extract(fused, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Groups) != 1 || p.Groups[0].Task.Ops() != "MatMul+Add+Gelu" {
		t.Errorf("groups %d, first %q, want one MatMul+Add+Gelu", len(p.Groups), p.Groups[0].Task.Ops())
	}
	want, got := evalWhole(t, plain), evalWhole(t, fused)
	if d := maxDiff(got[0], want[0]); d > 1e-6 {
		t.Errorf("Gelu differs from the written-out pattern by %g", d)
	}
}
