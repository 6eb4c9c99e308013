package schedule

import "fmt"

// Annotate sets how the loop of iterator Iter of Stage runs.
type Annotate struct {
	Stage, Iter int
	Ann         Annotation
}

// PragmaAutoUnroll is the one pragma key: unroll, inside the annotated
// loop, every loop nest of at most Value steps.
const PragmaAutoUnroll = "auto_unroll_max_step"

// Pragma attaches a hint to the loop of iterator Iter of Stage.
type Pragma struct {
	Stage, Iter int
	Key         string
	Value       int
}

func (st *Annotate) String() string {
	return fmt.Sprintf("annotate(%s, %d, %v)", stageName(st.Stage), st.Iter, st.Ann)
}

func (st *Pragma) String() string {
	return fmt.Sprintf("pragma(%s, %d, %s=%d)", stageName(st.Stage), st.Iter, st.Key, st.Value)
}

func (st *Annotate) apply(s *State) error {
	stg, err := s.iter(st.Stage, st.Iter)
	if err != nil {
		return err
	}
	it := stg.Iters[st.Iter]
	if int(st.Ann) >= len(annNames) {
		return fmt.Errorf("unknown annotation %d", st.Ann)
	}
	if it.Kind == Reduce && (st.Ann == Parallel || st.Ann == Vectorize || st.Ann >= VThread && st.Ann < ThreadX) {
		// A reduce iterator bound to a thread index is a cross-thread
		// reduction (LowerGPU); a block or virtual thread cannot share
		// partial results.
		return fmt.Errorf("reduce iterator %s cannot be %v", it.Name, st.Ann)
	}
	s.mutStage(st.Stage).Iters[st.Iter].Ann = st.Ann
	return nil
}

func (st *Pragma) apply(s *State) error {
	stg, err := s.iter(st.Stage, st.Iter)
	if err != nil {
		return err
	}
	if st.Key != PragmaAutoUnroll {
		return fmt.Errorf("unknown pragma %q", st.Key)
	}
	if st.Value < 0 {
		return fmt.Errorf("negative %s %d", st.Key, st.Value)
	}
	m := s.mutStage(st.Stage)
	m.AutoUnroll = st.Value
	m.unrollIter = stg.Iters[st.Iter].id
	return nil
}
