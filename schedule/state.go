// Package schedule holds the schedule of a compute DAG as Ansor keeps it:
// the transform steps are the truth (step.go and one file per step family),
// and a State is the cheap preview they produce — one Stage per operation,
// with its loop iterators, compute location and annotations. Replaying the
// steps of a State on its DAG gives the same State, always (Replay).
//
// Lower (lower.go) turns a complete State into a tir.PrimFunc: it infers
// the region every attached producer must compute (bound.go) and builds the
// loop nest of every stage.
//
// States are immutable values: applying a step copies what it changes, so
// search can share states freely.
package schedule

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// IterKind says what an iterator ranges over.
type IterKind uint8

const (
	Spatial IterKind = iota
	Reduce
)

func (k IterKind) String() string { return [...]string{"spatial", "reduce"}[k] }

// Annotation is how an iterator's loop runs.
type Annotation uint8

const (
	NoAnn Annotation = iota
	Unroll
	Vectorize
	Parallel
	VThread
	BlockX
	BlockY
	BlockZ
	ThreadX
	ThreadY
	ThreadZ
)

var annNames = [...]string{"none", "unroll", "vectorize", "parallel", "vthread",
	"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"}

func (a Annotation) String() string {
	if int(a) < len(annNames) {
		return annNames[a]
	}
	return fmt.Sprintf("annotation(%d)", uint8(a))
}

// ParseAnnotation is the inverse of Annotation.String.
func ParseAnnotation(s string) (Annotation, error) {
	for i, n := range annNames {
		if n == s {
			return Annotation(i), nil
		}
	}
	return 0, fmt.Errorf("unknown annotation %q", s)
}

// Iter is a loop of a stage.
type Iter struct {
	Name   string
	Extent int // 0 while a split length is unfilled (a sketch)
	Kind   IterKind
	Ann    Annotation
	id     int // identity within the stage; survives reorders
}

// AttachKind is a stage's compute location.
type AttachKind uint8

const (
	Root    AttachKind = iota // its own loop nest at the top level
	Inlined                   // folded into its consumers' bodies
	At                        // nested inside another stage's loop
)

// Stage is the schedule of one tensor.
type Stage struct {
	Tensor *te.Tensor
	Iters  []Iter
	Attach AttachKind
	// Target of At: the stage index and the identity of its iterator.
	AttachStage int
	attachIter  int
	// AutoUnroll is the auto_unroll_max_step pragma (0: none), applied to
	// the loop of the iterator with identity unrollIter.
	AutoUnroll int
	unrollIter int
	Scope      tir.Scope
	// Output is true for stages whose tensor is an output of the DAG.
	Output bool
	// Packed is true for a constant input whose layout is rewritten for
	// the stage that reads it (RewriteLayout).
	Packed bool

	roots  []int // iterator identities of the root axes: spatial then reduce
	rels   []rel // how the current iterators derive from the roots, in order
	nextID int
}

// rel is one step of iterator derivation.
type rel struct {
	split    bool
	parent   int   // split: the iterator split
	children []int // split: the parts, outer to inner
	lengths  []int // split: extents of children[1:]
	parents  []int // fuse: the iterators fused, outer to inner
	child    int   // fuse: the fused iterator
}

// State is a schedule: its stages and the steps that made them.
type State struct {
	DAG    *te.DAG
	Stages []*Stage
	Steps  []Step

	// idx caches who reads whom. It is shared by the states derived from
	// this one until a step changes a stage's tensor or the stage list;
	// see index.
	idx atomic.Pointer[index]
}

// index is the dataflow between the stages of a state: for every stage,
// the stages it reads and the stages that read it, each in stage order (of
// first read, for producers). It depends only on the stages' tensors, so
// it stays valid for every state whose stages hold the same tensors in
// the same order: tensors identifies them.
//
// Without it, Consumers walked every stage's body, and the long chains of
// inlined elementwise ops a model can fuse (hundreds of stages, one
// ComputeInline step each) took quadratic time to replay.
type index struct {
	tensors   []*te.Tensor
	producers [][]int
	consumers [][]int
}

// valid reports whether x was built for the stages of s.
func (x *index) valid(s *State) bool {
	if x == nil || len(x.tensors) != len(s.Stages) {
		return false
	}
	for i, st := range s.Stages {
		if x.tensors[i] != st.Tensor {
			return false
		}
	}
	return true
}

// index returns the dataflow index of s, building it when the cached one
// belongs to other stages. Safe for concurrent use: states are shared.
func (s *State) index() *index {
	if x := s.idx.Load(); x.valid(s) {
		return x
	}
	x := &index{
		tensors:   make([]*te.Tensor, len(s.Stages)),
		producers: make([][]int, len(s.Stages)),
		consumers: make([][]int, len(s.Stages)),
	}
	byBuf := s.stageByBuf()
	for j, st := range s.Stages {
		x.tensors[j] = st.Tensor
		if st.IsPlaceholder() {
			continue
		}
		seen := map[int]bool{}
		tir.WalkExpr(st.Tensor.Body, func(e tir.Expr) bool {
			if l, ok := e.(*tir.Load); ok {
				if i, ok := byBuf[l.Buf]; ok && !seen[i] {
					seen[i] = true
					x.producers[j] = append(x.producers[j], i)
				}
			}
			return true
		})
	}
	for j, ps := range x.producers {
		for _, i := range ps {
			x.consumers[i] = append(x.consumers[i], j)
		}
	}
	s.idx.Store(x)
	return x
}

// NewState returns the initial state of d: one root stage per tensor, each
// with its axes as loops (spatial then reduce), no steps.
func NewState(d *te.DAG) *State {
	s := &State{DAG: d}
	for _, t := range d.Tensors {
		s.Stages = append(s.Stages, newStage(t, d.IsOutput(t)))
	}
	return s
}

func newStage(t *te.Tensor, output bool) *Stage {
	st := &Stage{Tensor: t, Output: output, Scope: tir.Global}
	for _, a := range t.Axis {
		st.addRoot(a.Var.Name, a.Extent, Spatial)
	}
	for _, a := range t.ReduceAxis {
		st.addRoot(a.Var.Name, a.Extent, Reduce)
	}
	return st
}

func (st *Stage) addRoot(name string, ext int, kind IterKind) {
	id := st.newID()
	st.roots = append(st.roots, id)
	st.Iters = append(st.Iters, Iter{Name: name, Extent: ext, Kind: kind, id: id})
}

func (st *Stage) newID() int {
	id := st.nextID
	st.nextID++
	return id
}

// IsPlaceholder reports whether the stage is an input (it has no loops to
// schedule).
func (st *Stage) IsPlaceholder() bool { return st.Tensor.IsPlaceholder() }

// clone copies the stage so that it can be changed without touching states
// that share the original.
func (st *Stage) clone() *Stage {
	c := *st
	c.Iters = append([]Iter(nil), st.Iters...)
	c.roots = append([]int(nil), st.roots...)
	c.rels = append([]rel(nil), st.rels...)
	return &c
}

// iterPos returns the position of the iterator with identity id, or -1.
func (st *Stage) iterPos(id int) int {
	for i, it := range st.Iters {
		if it.id == id {
			return i
		}
	}
	return -1
}

// AttachIter returns the position in the target stage of the iterator this
// stage is attached at (valid when Attach == At).
func (s *State) AttachIter(stage int) int {
	st := s.Stages[stage]
	return s.Stages[st.AttachStage].iterPos(st.attachIter)
}

// Complete reports whether every split length is filled, so the state can
// be lowered.
func (s *State) Complete() bool {
	for _, st := range s.Stages {
		for _, it := range st.Iters {
			if it.Extent == 0 {
				return false
			}
		}
	}
	return true
}

// copyState copies the state shallowly; stages are copied on write by the
// steps that change them (mutStage). The copy shares the index while it
// stays valid.
func (s *State) copyState() *State {
	c := &State{DAG: s.DAG, Stages: append([]*Stage(nil), s.Stages...), Steps: append([]Step(nil), s.Steps...)}
	c.idx.Store(s.idx.Load())
	return c
}

// mutStage returns a private copy of stage i for a step to change.
func (s *State) mutStage(i int) *Stage {
	c := s.Stages[i].clone()
	s.Stages[i] = c
	return c
}

// insertStage puts st at index i, shifting later stages and the attach
// targets that point at them.
func (s *State) insertStage(i int, st *Stage) {
	s.Stages = append(s.Stages, nil)
	copy(s.Stages[i+1:], s.Stages[i:])
	s.Stages[i] = st
	for j, o := range s.Stages {
		if j != i && o.Attach == At && o.AttachStage >= i {
			c := s.mutStage(j)
			c.AttachStage++
		}
	}
}

// StageOf returns the index of the stage computing t, or -1.
func (s *State) StageOf(t *te.Tensor) int {
	for i, st := range s.Stages {
		if st.Tensor == t {
			return i
		}
	}
	return -1
}

// stageByBuf maps each tensor buffer to its stage index.
func (s *State) stageByBuf() map[*tir.Buffer]int {
	m := make(map[*tir.Buffer]int, len(s.Stages))
	for i, st := range s.Stages {
		m[st.Tensor.Buf] = i
	}
	return m
}

// Consumers returns the indices of the stages whose bodies read stage i,
// in stage order. The caller must not change the slice.
func (s *State) Consumers(i int) []int { return s.index().consumers[i] }

// Producers returns the indices of the stages stage i reads, in the order
// its body first reads them. The caller must not change the slice.
func (s *State) Producers(i int) []int { return s.index().producers[i] }

// String prints the state as a loop-nest preview, e.g.
//
//	C: i.0@parallel(4) j.0(8) k.0(64) i.1(32) j.1@vectorize(16) k.1(8)
//	D: inline
func (s *State) String() string {
	var b strings.Builder
	for i, st := range s.Stages {
		if st.IsPlaceholder() {
			if st.Packed {
				fmt.Fprintf(&b, "%s: packed for its reader\n", st.Tensor.Name)
			}
			continue
		}
		fmt.Fprintf(&b, "%s:", st.Tensor.Name)
		switch st.Attach {
		case Inlined:
			b.WriteString(" inline\n")
			continue
		case At:
			t := s.Stages[st.AttachStage]
			fmt.Fprintf(&b, " @%s.%s", t.Tensor.Name, t.Iters[s.AttachIter(i)].Name)
		}
		for _, it := range st.Iters {
			b.WriteString(" " + it.Name)
			if it.Ann != NoAnn {
				b.WriteString("@" + it.Ann.String())
			}
			if it.Extent == 0 {
				b.WriteString("(?)")
			} else {
				fmt.Fprintf(&b, "(%d)", it.Extent)
			}
		}
		if st.AutoUnroll > 0 {
			fmt.Fprintf(&b, " unroll<=%d", st.AutoUnroll)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
