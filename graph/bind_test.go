package graph_test

import (
	"slices"
	"strings"
	"testing"

	. "github.com/tessera-ml/tessera/graph"
)

func TestBind(t *testing.T) {
	mk := func() *Graph {
		g := New("m", 17)
		v := g.AddInput("x", Float32, []int{-1, 3, -1})
		v.DimParams = []string{"batch", "", ""}
		g.AddInput("y", Float32, []int{2})
		g.AddNode(node("Relu r x -> z"))
		g.Outputs = []string{"z"}
		return g
	}
	tests := []struct {
		name string
		dims map[string][]int
		want string // error substring, "" for success
	}{
		{"unbound", nil, "x[0] (batch), x[2]"},
		{"partially bound", map[string][]int{"y": {2}}, "x[0] (batch)"},
		{"bound", map[string][]int{"x": {1, 3, 5}}, ""},
		{"wrong static dim", map[string][]int{"x": {1, 4, 5}}, "fixes dimension 1 to 3"},
		{"wrong rank", map[string][]int{"x": {1, 3}}, "rank 3"},
		{"not an input", map[string][]int{"z": {1}}, "not a graph input"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := mk()
			err := g.Bind(tc.dims)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if x := g.Values["x"]; !slices.Equal(x.Shape, []int{1, 3, 5}) || x.DimParams != nil {
					t.Errorf("x bound to %v (dimension names %v)", x.Shape, x.DimParams)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
