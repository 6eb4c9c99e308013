package schedule

import (
	"fmt"
	"strings"
)

// Split divides iterator Iter of Stage into len(Lengths)+1 loops: the inner
// ones have the given extents (outer to inner), the outermost covers the
// rest, rounded up. A length of 0 is unfilled (sketches leave tile sizes
// for sampling); such a state cannot be lowered. When the lengths do not
// divide the extent, lowering guards the body.
type Split struct {
	Stage, Iter int
	Lengths     []int
}

// FollowSplit splits Iter of Stage like the Split at step index SrcStep,
// into NParts loops: the first NParts-2 inner lengths are copied, the last
// is the product of the remaining ones. It keeps a consumer's tiles aligned
// with its producer's when the producer's tile sizes change.
type FollowSplit struct {
	Stage, Iter int
	SrcStep     int
	NParts      int
}

// FollowFusedSplit splits Iter of Stage in two, the inner part of length
// the product of the lengths at position Level of the Split steps SrcSteps
// (the parts of a fused loop: one split per axis of another stage). A
// cooperative fetch splits a shared stage's fused loop this way, so that it
// runs on as many threads as the tiles of the stage that reads it (whose
// thread loop is the fusion of those parts), whatever tile sizes the
// search gives them. An unfilled source length leaves the split unfilled.
// (Ansor's step can also take the product as the outer part; this one
// always splits by it as a factor, cut to the extent when larger.)
type FollowFusedSplit struct {
	Stage, Iter int
	SrcSteps    []int
	Level       int
}

// Fuse merges the consecutive iterators Iters (positions, outer to inner)
// of Stage into one.
type Fuse struct {
	Stage int
	Iters []int
}

// Reorder puts the iterators of Stage in the order Order (a permutation of
// their current positions, outer to inner).
type Reorder struct {
	Stage int
	Order []int
}

func (st *Split) String() string {
	return fmt.Sprintf("split(%s, %d, %v)", stageName(st.Stage), st.Iter, st.Lengths)
}

func (st *FollowSplit) String() string {
	return fmt.Sprintf("follow_split(%s, %d, step %d, %d parts)", stageName(st.Stage), st.Iter, st.SrcStep, st.NParts)
}

func (st *FollowFusedSplit) String() string {
	return fmt.Sprintf("follow_fused_split(%s, %d, steps %v, level %d)", stageName(st.Stage), st.Iter, st.SrcSteps, st.Level)
}

func (st *Fuse) String() string {
	return fmt.Sprintf("fuse(%s, %v)", stageName(st.Stage), st.Iters)
}

func (st *Reorder) String() string {
	return fmt.Sprintf("reorder(%s, %v)", stageName(st.Stage), st.Order)
}

func (st *Split) apply(s *State) error {
	return splitIter(s, st.Stage, st.Iter, st.Lengths)
}

func (st *FollowSplit) apply(s *State) error {
	lengths, err := followLengths(s, st.SrcStep, st.NParts)
	if err != nil {
		return err
	}
	return splitIter(s, st.Stage, st.Iter, lengths)
}

func (st *FollowFusedSplit) apply(s *State) error {
	if len(st.SrcSteps) == 0 {
		return fmt.Errorf("no source steps")
	}
	length := 1
	for _, src := range st.SrcSteps {
		if src < 0 || src >= len(s.Steps) {
			return fmt.Errorf("source step %d out of range [0, %d)", src, len(s.Steps))
		}
		sp, ok := s.Steps[src].(*Split)
		if !ok {
			return fmt.Errorf("source step %d is %v, not a split", src, s.Steps[src])
		}
		if st.Level < 0 || st.Level >= len(sp.Lengths) {
			return fmt.Errorf("level %d: source split %d has %d lengths", st.Level, src, len(sp.Lengths))
		}
		length *= sp.Lengths[st.Level] // an unfilled (0) length stays unfilled
	}
	// More threads than the loop has iterations is no error: the inner
	// part is cut to the extent, and the spare threads idle.
	if _, err := s.iter(st.Stage, st.Iter); err != nil {
		return err
	}
	if e := s.Stages[st.Stage].Iters[st.Iter].Extent; e > 0 && length > e {
		length = e
	}
	return splitIter(s, st.Stage, st.Iter, []int{length})
}

// followLengths derives a FollowSplit's lengths from its source step.
func followLengths(s *State, src, nparts int) ([]int, error) {
	if src < 0 || src >= len(s.Steps) {
		return nil, fmt.Errorf("source step %d out of range [0, %d)", src, len(s.Steps))
	}
	sp, ok := s.Steps[src].(*Split)
	if !ok {
		return nil, fmt.Errorf("source step %d is %v, not a split", src, s.Steps[src])
	}
	if nparts < 2 || nparts-1 > len(sp.Lengths) {
		return nil, fmt.Errorf("%d parts: source split has %d", nparts, len(sp.Lengths)+1)
	}
	lengths := append([]int(nil), sp.Lengths[:nparts-2]...)
	last := 1
	for _, l := range sp.Lengths[nparts-2:] {
		last *= l // an unfilled (0) length stays unfilled
	}
	return append(lengths, last), nil
}

func splitIter(s *State, stage, pos int, lengths []int) error {
	if _, err := s.iter(stage, pos); err != nil {
		return err
	}
	if len(lengths) == 0 {
		return fmt.Errorf("no lengths")
	}
	prod := 1
	for _, l := range lengths {
		if l < 0 {
			return fmt.Errorf("negative length %d", l)
		}
		prod *= l
	}
	if e := s.Stages[stage].Iters[pos].Extent; e > 0 && prod > e {
		return fmt.Errorf("lengths %v cover %d, more than the extent %d", lengths, prod, e)
	}
	st := s.mutStage(stage)
	it := st.Iters[pos]
	if it.Ann != NoAnn {
		return fmt.Errorf("iterator %s is annotated %v", it.Name, it.Ann)
	}
	outer := 0
	if it.Extent > 0 && prod > 0 {
		outer = (it.Extent + prod - 1) / prod
	}
	parts := make([]Iter, len(lengths)+1)
	ids := make([]int, len(parts))
	for i := range parts {
		ext := outer
		if i > 0 {
			ext = lengths[i-1]
		}
		ids[i] = st.newID()
		parts[i] = Iter{Name: fmt.Sprintf("%s.%d", it.Name, i), Extent: ext, Kind: it.Kind, id: ids[i]}
	}
	st.rels = append(st.rels, rel{split: true, parent: it.id, children: ids, lengths: append([]int(nil), lengths...)})
	st.Iters = append(st.Iters[:pos], append(parts, st.Iters[pos+1:]...)...)
	s.moveAttachments(stage, []int{it.id}, ids[len(ids)-1])
	if st.unrollIter == it.id {
		st.unrollIter = ids[0]
	}
	return nil
}

// moveAttachments re-points stages attached at any of the iterators from
// of stage to the iterator to.
func (s *State) moveAttachments(stage int, from []int, to int) {
	for j, o := range s.Stages {
		if o.Attach != At || o.AttachStage != stage {
			continue
		}
		for _, id := range from {
			if o.attachIter == id {
				s.mutStage(j).attachIter = to
				break
			}
		}
	}
}

func (st *Fuse) apply(s *State) error {
	if len(st.Iters) == 0 {
		return fmt.Errorf("no iterators")
	}
	if _, err := s.iter(st.Stage, st.Iters[0]); err != nil {
		return err
	}
	stg := s.Stages[st.Stage]
	for i, p := range st.Iters {
		if p < 0 || p >= len(stg.Iters) {
			return fmt.Errorf("iterator %d out of range: stage %s has %d", p, stg.Tensor.Name, len(stg.Iters))
		}
		if i > 0 && p != st.Iters[i-1]+1 {
			return fmt.Errorf("iterators %v are not consecutive", st.Iters)
		}
		if stg.Iters[p].Kind != stg.Iters[st.Iters[0]].Kind {
			return fmt.Errorf("cannot fuse spatial and reduce iterators")
		}
		if stg.Iters[p].Ann != NoAnn {
			return fmt.Errorf("iterator %s is annotated %v", stg.Iters[p].Name, stg.Iters[p].Ann)
		}
	}
	if len(st.Iters) == 1 {
		return nil
	}
	m := s.mutStage(st.Stage)
	first, last := st.Iters[0], st.Iters[len(st.Iters)-1]
	ext := 1
	names := make([]string, 0, len(st.Iters))
	ids := make([]int, 0, len(st.Iters))
	for _, it := range m.Iters[first : last+1] {
		ext *= it.Extent
		names = append(names, it.Name)
		ids = append(ids, it.id)
	}
	fused := Iter{Name: strings.Join(names, "@"), Extent: ext, Kind: m.Iters[first].Kind, id: m.newID()}
	m.rels = append(m.rels, rel{parents: ids, child: fused.id})
	m.Iters = append(m.Iters[:first], append([]Iter{fused}, m.Iters[last+1:]...)...)
	s.moveAttachments(st.Stage, ids, fused.id)
	for _, id := range ids {
		if m.unrollIter == id {
			m.unrollIter = fused.id
		}
	}
	return nil
}

func (st *Reorder) apply(s *State) error {
	stg, err := s.stage(st.Stage)
	if err != nil {
		return err
	}
	if stg.Attach == Inlined {
		return fmt.Errorf("stage %s is inlined", stg.Tensor.Name)
	}
	if len(st.Order) != len(stg.Iters) {
		return fmt.Errorf("order %v has %d entries, stage %s has %d iterators", st.Order, len(st.Order), stg.Tensor.Name, len(stg.Iters))
	}
	seen := make([]bool, len(st.Order))
	for _, p := range st.Order {
		if p < 0 || p >= len(seen) || seen[p] {
			return fmt.Errorf("order %v is not a permutation", st.Order)
		}
		seen[p] = true
	}
	m := s.mutStage(st.Stage)
	iters := make([]Iter, len(st.Order))
	for i, p := range st.Order {
		iters[i] = stg.Iters[p]
	}
	m.Iters = iters
	return nil
}
