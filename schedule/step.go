package schedule

import (
	"fmt"
)

// Step is one transform of a State. Every step kind has the same few
// operations: apply it to a state (with its preconditions checked, failing
// with an error, never a panic), encode it as a JSON array for records
// (codec.go), and print it as a readable call.
//
// How to add a step:
//  1. Declare the struct in the file of its family (loop.go, location.go,
//     cache.go, annotate.go) with exported fields that say everything the step
//     needs (stage and iterator by index, lengths, ...).
//  2. Write apply: check every precondition and return an error naming the
//     step and the reason; change only stages taken with mutStage.
//  3. Give it a String in the form of a call, e.g. split(C, i, [8 4]).
//  4. Add its tag to the table in codec.go and the decoder case.
//  5. Add it to the random step generator in the tests and a round-trip
//     case to TestCodecRoundTrip.
type Step interface {
	apply(s *State) error
	String() string
}

// Apply returns the state after step, or an error naming the step and why
// it does not apply. s is not changed.
func (s *State) Apply(step Step) (*State, error) {
	n := s.copyState()
	if err := step.apply(n); err != nil {
		return nil, fmt.Errorf("step %d %v: %w", len(s.Steps), step, err)
	}
	n.Steps = append(n.Steps, step)
	return n, nil
}

// Replay applies steps in order to s0 (usually a DAG's initial state).
// s0 is not changed.
func Replay(s0 *State, steps []Step) (*State, error) {
	return ReplayEdit(s0, steps, nil)
}

// ReplayEdit is Replay where edit, when not nil, may replace each step
// before it is applied: it gets the state the step will apply to (which it
// must neither change nor keep) and the step's index in steps.
//
// Replaying works on one private copy of s0, so it takes time linear in
// the number of steps, where applying them one by one with Apply copies
// the stage and step lists at every step.
func ReplayEdit(s0 *State, steps []Step, edit func(cur *State, k int, step Step) Step) (*State, error) {
	s := s0.copyState()
	s.Steps = make([]Step, len(s0.Steps), len(s0.Steps)+len(steps))
	copy(s.Steps, s0.Steps)
	for k, st := range steps {
		if edit != nil {
			st = edit(s, k, st)
		}
		if err := st.apply(s); err != nil {
			return nil, fmt.Errorf("step %d %v: %w", len(s.Steps), st, err)
		}
		s.Steps = append(s.Steps, st)
	}
	return s, nil
}

// stage checks that i names a schedulable stage.
func (s *State) stage(i int) (*Stage, error) {
	if i < 0 || i >= len(s.Stages) {
		return nil, fmt.Errorf("stage %d out of range [0, %d)", i, len(s.Stages))
	}
	st := s.Stages[i]
	if st.IsPlaceholder() {
		return nil, fmt.Errorf("stage %d (%s) is a placeholder", i, st.Tensor.Name)
	}
	return st, nil
}

// iter checks that iterator position it exists in stage i.
func (s *State) iter(i, it int) (*Stage, error) {
	st, err := s.stage(i)
	if err != nil {
		return nil, err
	}
	if it < 0 || it >= len(st.Iters) {
		return nil, fmt.Errorf("iterator %d out of range: stage %s has %d", it, st.Tensor.Name, len(st.Iters))
	}
	if st.Attach == Inlined {
		return nil, fmt.Errorf("stage %s is inlined", st.Tensor.Name)
	}
	return st, nil
}

// name returns a stage's tensor name for printing steps; steps print
// without a state, so they show indices.
func stageName(i int) string { return fmt.Sprintf("s%d", i) }
