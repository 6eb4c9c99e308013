package tir

import "fmt"

// Scope says where a buffer lives.
type Scope uint8

const (
	Global Scope = iota // function parameters and heap scratch
	Local               // per-thread scratch: registers or stack
	Shared              // GPU shared memory (block-local)
)

func (s Scope) String() string {
	switch s {
	case Global:
		return "global"
	case Local:
		return "local"
	case Shared:
		return "shared"
	}
	return fmt.Sprintf("scope(%d)", uint8(s))
}

// Buffer is a dense row-major array. Two Buffers are the same buffer only if
// they are the same pointer.
type Buffer struct {
	Name  string
	DType DType
	Shape []int
	Scope Scope
	// Packed is set on a kernel parameter that holds its tensor in
	// another layout (see Packing); Shape is then the packed shape.
	Packed *Packing
	// Owner is set by the package that created the buffer for its own
	// bookkeeping (te points it at the Tensor the buffer holds); tir
	// never reads it.
	Owner any
}

// Size returns the number of elements.
func (b *Buffer) Size() int {
	n := 1
	for _, d := range b.Shape {
		n *= d
	}
	return n
}

// Strides returns the row-major element strides.
func (b *Buffer) Strides() []int {
	s := make([]int, len(b.Shape))
	acc := 1
	for i := len(b.Shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= b.Shape[i]
	}
	return s
}

// Stmt is a statement of the loop-nest IR. The family is closed.
type Stmt interface{ isStmt() }

// ForKind says how a loop runs.
type ForKind uint8

const (
	Serial ForKind = iota
	Parallel
	Vectorized
	Unrolled
	ThreadBound // bound to the GPU thread index named in For.Thread
)

var forKindNames = [...]string{"serial", "parallel", "vectorized", "unrolled", "thread"}

func (k ForKind) String() string { return forKindNames[k] }

// For runs Body for Var = 0, 1, ..., Extent-1.
type For struct {
	Var    *Var
	Extent int
	Kind   ForKind
	Thread string // for ThreadBound: "blockIdx.x", "threadIdx.y", "vthread", ...
	Body   Stmt
}

// Store writes one element of a buffer.
type Store struct {
	Buf     *Buffer
	Indices []Expr
	Value   Expr
}

// Allocate declares Buf (Scope Local or Shared, or Global scratch) for the
// duration of Body.
type Allocate struct {
	Buf  *Buffer
	Body Stmt
}

// IfThenElse runs Then when Cond holds, else Else (which may be nil).
type IfThenElse struct {
	Cond Expr
	Then Stmt
	Else Stmt
}

// Seq runs statements in order.
type Seq struct{ Stmts []Stmt }

// Let binds Var to Value inside Body.
type Let struct {
	Var   *Var
	Value Expr
	Body  Stmt
}

// Pragma attaches a hint to Body. Known keys: "auto_unroll_max_step".
type Pragma struct {
	Key   string
	Value int
	Body  Stmt
}

// Barrier makes every thread of a GPU block wait until all of them have
// reached it; shared memory written before it by one thread is then visible
// to the others (__syncthreads in CUDA, barrier in OpenCL). Every thread of
// the block must reach the same barriers in the same order, so a barrier
// never sits under control flow that depends on the thread index. Run, which
// runs loops serially, treats it as a no-op; RunGPU switches threads there.
type Barrier struct{}

func (*For) isStmt()        {}
func (*Barrier) isStmt()    {}
func (*Store) isStmt()      {}
func (*Allocate) isStmt()   {}
func (*IfThenElse) isStmt() {}
func (*Seq) isStmt()        {}
func (*Let) isStmt()        {}
func (*Pragma) isStmt()     {}

// SeqOf builds a sequence, flattening nested sequences and dropping nils.
// It returns the single statement itself when only one remains.
func SeqOf(stmts ...Stmt) Stmt {
	var out []Stmt
	for _, s := range stmts {
		switch s := s.(type) {
		case nil:
		case *Seq:
			out = append(out, s.Stmts...)
		default:
			out = append(out, s)
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	return &Seq{Stmts: out}
}

// PrimFunc is one kernel: Params are the global buffers it reads and writes,
// in the order of the generated function's arguments.
type PrimFunc struct {
	Name   string
	Params []*Buffer
	Body   Stmt
	// Dynamic holds the variables of the loops whose extents vary with a
	// dimension given at run time (DynamicLoops): the C printer keeps them
	// loops, never unrolling them or the loops around them, so that the
	// kernel's text has the same shape at every value.
	Dynamic map[*Var]bool
}
