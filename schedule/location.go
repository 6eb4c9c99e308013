package schedule

import "fmt"

// ComputeAt nests Stage inside the loop of iterator TargetIter (a position)
// of TargetStage, a later stage that reads it directly or through inlined
// stages. Lowering then computes, at each iteration of that loop, exactly
// the region of Stage that the iteration needs.
type ComputeAt struct {
	Stage, TargetStage, TargetIter int
}

// ComputeInline folds Stage into every consumer's body.
type ComputeInline struct{ Stage int }

// ComputeRoot gives Stage its own top-level loop nest again.
type ComputeRoot struct{ Stage int }

func (st *ComputeAt) String() string {
	return fmt.Sprintf("compute_at(%s, %s, %d)", stageName(st.Stage), stageName(st.TargetStage), st.TargetIter)
}
func (st *ComputeInline) String() string {
	return fmt.Sprintf("compute_inline(%s)", stageName(st.Stage))
}
func (st *ComputeRoot) String() string { return fmt.Sprintf("compute_root(%s)", stageName(st.Stage)) }

func (st *ComputeAt) apply(s *State) error {
	p, err := s.stage(st.Stage)
	if err != nil {
		return err
	}
	if p.Output {
		return fmt.Errorf("output stage %s cannot be attached", p.Tensor.Name)
	}
	if st.TargetStage <= st.Stage {
		return fmt.Errorf("target stage %d does not come after stage %d", st.TargetStage, st.Stage)
	}
	t, err := s.iter(st.TargetStage, st.TargetIter)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	m := s.mutStage(st.Stage)
	m.Attach = At
	m.AttachStage = st.TargetStage
	m.attachIter = t.Iters[st.TargetIter].id
	return nil
}

// attachedTo reports whether any stage is attached at stage i.
func (s *State) attachedTo(i int) bool {
	for _, o := range s.Stages {
		if o.Attach == At && o.AttachStage == i {
			return true
		}
	}
	return false
}

func (st *ComputeInline) apply(s *State) error {
	p, err := s.stage(st.Stage)
	if err != nil {
		return err
	}
	switch {
	case p.Output:
		return fmt.Errorf("output stage %s cannot be inlined", p.Tensor.Name)
	case p.Tensor.Reducer != 0:
		return fmt.Errorf("reduction %s cannot be inlined", p.Tensor.Name)
	case len(s.Consumers(st.Stage)) == 0:
		return fmt.Errorf("stage %s has no consumer to inline into", p.Tensor.Name)
	case s.attachedTo(st.Stage):
		return fmt.Errorf("stages are attached at %s", p.Tensor.Name)
	}
	s.mutStage(st.Stage).Attach = Inlined
	return nil
}

func (st *ComputeRoot) apply(s *State) error {
	if _, err := s.stage(st.Stage); err != nil {
		return err
	}
	s.mutStage(st.Stage).Attach = Root
	return nil
}
