package tir

import "testing"

func TestDynamicLoops(t *testing.T) {
	buf := &Buffer{Name: "A", DType: Float32, Shape: []int{64}, Scope: Global}
	nest := func(outer, inner int) *PrimFunc {
		i, j := NewVar("i"), NewVar("j")
		store := &Store{Buf: buf, Indices: []Expr{AddE(MulE(i, Const(4)), j)}, Value: F32(0)}
		return &PrimFunc{Name: "k", Params: []*Buffer{buf},
			Body: &For{Var: i, Extent: outer, Body: &For{Var: j, Extent: inner, Body: store}}}
	}
	f := nest(3, 4)
	dyn := DynamicLoops(f, nest(5, 4), nest(3, 4))
	outer := f.Body.(*For)
	if len(dyn) != 1 || !dyn[outer.Var] {
		t.Errorf("dynamic loops %v, want the outer one only", dyn)
	}
	// A kernel of another shape is passed over.
	other := nest(5, 4)
	other.Body = &Seq{Stmts: []Stmt{other.Body, other.Body}}
	if dyn := DynamicLoops(f, other); len(dyn) != 0 {
		t.Errorf("a kernel of another shape gave dynamic loops %v", dyn)
	}
}
