package costmodel

import (
	"fmt"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/tir"
)

// StateFeatures lowers a state with a target's lowering and returns the
// features of the program compiled for hw: the one way a state becomes a
// cost model's input, for candidates in the search and for records read
// back. A program without stores has an empty, non-nil set of rows; an
// error means the state does not lower.
func StateFeatures(lower func(s *schedule.State, name string) (*tir.PrimFunc, error), hw Hardware, s *schedule.State) ([][]float32, error) {
	f, err := lower(s, "k")
	if err != nil {
		return nil, fmt.Errorf("costmodel: lower: %w", err)
	}
	rows := Extract(f, hw)
	if rows == nil {
		rows = [][]float32{}
	}
	return rows, nil
}
