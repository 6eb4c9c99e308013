package tir

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// launch wraps body in a kernel chain: blockIdx.x over grid, threadIdx.x
// over block.
func launch(bx, tx *Var, grid, block int, body Stmt) Stmt {
	return &For{Var: bx, Extent: grid, Kind: ThreadBound, Thread: "blockIdx.x",
		Body: &For{Var: tx, Extent: block, Kind: ThreadBound, Thread: "threadIdx.x", Body: body}}
}

// reverseKernel reverses every block-sized chunk of A into B through
// shared memory; withBarrier false plants the missing read-after-write
// barrier.
func reverseKernel(n, block int, withBarrier bool) *PrimFunc {
	A := &Buffer{Name: "A", DType: Float32, Shape: []int{n}}
	B := &Buffer{Name: "B", DType: Float32, Shape: []int{n}}
	sh := &Buffer{Name: "sh", DType: Float32, Shape: []int{block}, Scope: Shared}
	bx, tx := NewVar("bx"), NewVar("tx")
	T := Const(int64(block))
	g := AddE(MulE(bx, T), tx)
	var sync Stmt
	if withBarrier {
		sync = &Barrier{}
	}
	body := &Allocate{Buf: sh, Body: SeqOf(
		&Store{Buf: sh, Indices: []Expr{tx}, Value: &Load{Buf: A, Indices: []Expr{g}}},
		sync,
		&Store{Buf: B, Indices: []Expr{g}, Value: &Load{Buf: sh, Indices: []Expr{SubE(Const(int64(block-1)), tx)}}},
	)}
	return &PrimFunc{Name: "reverse", Params: []*Buffer{A, B}, Body: launch(bx, tx, n/block, block, body)}
}

func TestRunGPUShared(t *testing.T) {
	const n, block = 12, 4
	a := make([]float32, n)
	for i := range a {
		a[i] = float32(i)
	}
	b := make([]float32, n)
	if err := RunGPU(reverseKernel(n, block, true), [][]float32{a, b}); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		blk, k := i/block, i%block
		if want := float32(blk*block + block - 1 - k); b[i] != want {
			t.Fatalf("B[%d] = %v, want %v", i, b[i], want)
		}
	}
}

// TestRunGPUMissingBarrierRAW: without the barrier between the shared
// store and the load of another thread's element, the race is reported
// with its buffer, element and threads.
func TestRunGPUMissingBarrierRAW(t *testing.T) {
	const n, block = 8, 4
	err := RunGPU(reverseKernel(n, block, false), [][]float32{make([]float32, n), make([]float32, n)})
	var re *RaceError
	if !errors.As(err, &re) {
		t.Fatalf("missing barrier: got %v, want a race", err)
	}
	if re.Buffer != "sh" || re.Scope != Shared || re.Kernel != 0 || len(re.Index) != 1 {
		t.Errorf("race %+v", re)
	}
	// Threads take turns: 0 reads sh[3], 1 reads sh[2], then 2 writes sh[2].
	if re.Index[0] != 2 || !re.Write || re.Thread.Thread[0] != 2 || re.Other.Thread[0] != 1 || re.Wrote {
		t.Errorf("race reported as %v", re)
	}
	if !strings.Contains(err.Error(), "race on shared buffer sh[2]") {
		t.Errorf("message %q", err)
	}
}

// tiledSum sums, per thread, two tiles read through one shared buffer:
// every tile is loaded, synchronized, read at another thread's element.
// withWAR false plants the missing write-after-read barrier at the end of
// the loop body: the second tile's store overwrites what another thread
// has still to read.
func tiledSum(block int, withWAR bool) *PrimFunc {
	A := &Buffer{Name: "A", DType: Float32, Shape: []int{2 * block}}
	B := &Buffer{Name: "B", DType: Float32, Shape: []int{block}}
	sh := &Buffer{Name: "sh", DType: Float32, Shape: []int{block}, Scope: Shared}
	acc := &Buffer{Name: "acc", DType: Float32, Shape: []int{1}, Scope: Local}
	bx, tx, k := NewVar("bx"), NewVar("tx"), NewVar("k")
	var war Stmt
	if withWAR {
		war = &Barrier{}
	}
	zero := []Expr{Const(0)}
	body := &Allocate{Buf: sh, Body: &Allocate{Buf: acc, Body: SeqOf(
		&Store{Buf: acc, Indices: zero, Value: F32(0)},
		&For{Var: k, Extent: 2, Body: SeqOf(
			&Store{Buf: sh, Indices: []Expr{tx}, Value: &Load{Buf: A, Indices: []Expr{AddE(MulE(k, Const(int64(block))), tx)}}},
			&Barrier{},
			&Store{Buf: acc, Indices: zero, Value: AddE(&Load{Buf: acc, Indices: zero},
				&Load{Buf: sh, Indices: []Expr{FloorModE(AddE(tx, Const(1)), Const(int64(block)))}})},
			war,
		)},
		&Store{Buf: B, Indices: []Expr{tx}, Value: &Load{Buf: acc, Indices: zero}},
	)}}
	return &PrimFunc{Name: "tiled", Params: []*Buffer{A, B}, Body: launch(bx, tx, 1, block, body)}
}

func TestRunGPUMissingBarrierWAR(t *testing.T) {
	const block = 4
	a := make([]float32, 2*block)
	for i := range a {
		a[i] = float32(i)
	}
	b := make([]float32, block)
	if err := RunGPU(tiledSum(block, true), [][]float32{a, b}); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		j := (i + 1) % block
		if want := a[j] + a[block+j]; b[i] != want {
			t.Fatalf("B[%d] = %v, want %v", i, b[i], want)
		}
	}
	err := RunGPU(tiledSum(block, false), [][]float32{a, make([]float32, block)})
	var re *RaceError
	if !errors.As(err, &re) || re.Buffer != "sh" || !re.Write || re.Wrote {
		t.Fatalf("missing write-after-read barrier: got %v, want a write over another thread's read of sh", err)
	}
}

// TestRunGPUGlobalRace: two blocks writing one element race, whatever the
// barriers.
func TestRunGPUGlobalRace(t *testing.T) {
	B := &Buffer{Name: "B", DType: Float32, Shape: []int{1}}
	bx, tx := NewVar("bx"), NewVar("tx")
	f := &PrimFunc{Name: "g", Params: []*Buffer{B}, Body: launch(bx, tx, 2, 1,
		&Store{Buf: B, Indices: []Expr{Const(0)}, Value: F32(1)})}
	err := RunGPU(f, [][]float32{make([]float32, 1)})
	var re *RaceError
	if !errors.As(err, &re) || re.Scope != Global || re.Other.Block[0] != 0 || re.Thread.Block[0] != 1 {
		t.Fatalf("got %v, want a race between blocks 0 and 1", err)
	}
}

// TestRunGPUBarrierDivergence: a barrier only some threads reach is an
// error, not a hang.
func TestRunGPUBarrierDivergence(t *testing.T) {
	B := &Buffer{Name: "B", DType: Float32, Shape: []int{4}}
	bx, tx := NewVar("bx"), NewVar("tx")
	f := &PrimFunc{Name: "d", Params: []*Buffer{B}, Body: launch(bx, tx, 1, 4, SeqOf(
		&IfThenElse{Cond: Cmp(LT, tx, Const(2)), Then: &Barrier{}},
		&Store{Buf: B, Indices: []Expr{tx}, Value: F32(1)},
	))}
	err := RunGPU(f, [][]float32{make([]float32, 4)})
	if err == nil || !strings.Contains(err.Error(), "barrier divergence") {
		t.Fatalf("got %v, want barrier divergence", err)
	}
	g := &PrimFunc{Name: "d2", Params: []*Buffer{B}, Body: launch(bx, tx, 1, 4, SeqOf(
		&IfThenElse{Cond: Cmp(LT, tx, Const(2)), Then: &Barrier{}, Else: &Barrier{}},
		&Store{Buf: B, Indices: []Expr{tx}, Value: F32(1)},
	))}
	if err := RunGPU(g, [][]float32{make([]float32, 4)}); err == nil || !strings.Contains(err.Error(), "different barriers") {
		t.Fatalf("got %v, want different barriers", err)
	}
}

// TestRunGPUUninitializedShared: shared memory starts as NaN.
func TestRunGPUUninitializedShared(t *testing.T) {
	B := &Buffer{Name: "B", DType: Float32, Shape: []int{2}}
	sh := &Buffer{Name: "sh", DType: Float32, Shape: []int{2}, Scope: Shared}
	bx, tx := NewVar("bx"), NewVar("tx")
	f := &PrimFunc{Name: "u", Params: []*Buffer{B}, Body: launch(bx, tx, 1, 2,
		&Allocate{Buf: sh, Body: &Store{Buf: B, Indices: []Expr{tx}, Value: &Load{Buf: sh, Indices: []Expr{tx}}}})}
	b := []float32{1, 2}
	if err := RunGPU(f, [][]float32{b}); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(b[0])) || !math.IsNaN(float64(b[1])) {
		t.Errorf("read of unwritten shared memory gave %v", b)
	}
}

// TestKernels: the host structure splits into launches and temporaries.
func TestKernels(t *testing.T) {
	A := &Buffer{Name: "A", DType: Float32, Shape: []int{4}}
	tmp := &Buffer{Name: "tmp", DType: Float32, Shape: []int{4}}
	B := &Buffer{Name: "B", DType: Float32, Shape: []int{4}}
	bx, tx, i := NewVar("bx"), NewVar("tx"), NewVar("i")
	body := &Allocate{Buf: tmp, Body: SeqOf(
		launch(bx, tx, 2, 2, &Store{Buf: tmp, Indices: []Expr{AddE(MulE(bx, Const(2)), tx)}, Value: &Load{Buf: A, Indices: []Expr{AddE(MulE(bx, Const(2)), tx)}}}),
		&For{Var: i, Extent: 4, Body: &Store{Buf: B, Indices: []Expr{i}, Value: AddE(&Load{Buf: tmp, Indices: []Expr{i}}, F32(1))}},
	)}
	f := &PrimFunc{Name: "k", Params: []*Buffer{A, B}, Body: body}
	ks, temps, err := Kernels(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 2 || len(temps) != 1 || temps[0] != tmp || ks[0].Grid != [3]int{2, 1, 1} || ks[0].Block != [3]int{2, 1, 1} || ks[1].Threads() != 1 {
		t.Fatalf("kernels %+v temps %v", ks, temps)
	}
	a := []float32{1, 2, 3, 4}
	b := make([]float32, 4)
	if err := RunGPU(f, [][]float32{a, b}); err != nil {
		t.Fatal(err)
	}
	for k := range b {
		if b[k] != a[k]+1 {
			t.Fatalf("B = %v", b)
		}
	}
}
