package ops

import (
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/graph"
)

// TestTableLookup: the constant evaluator and the lowering (through the
// reference evaluator, with integer storage and without) agree on every
// value of uint8 and int8 indices, each reading the entry of its value
// from the type's smallest; a float index or a table of another size is
// refused, naming the node.
func TestTableLookup(t *testing.T) {
	for _, dt := range []graph.DType{graph.Uint8, graph.Int8} {
		lo := int64(0)
		if dt == graph.Int8 {
			lo = -128
		}
		xs := make([]int64, TableSize)
		xf := make([]float32, TableSize)
		entries := make([]int64, TableSize)
		for i := range xs {
			xs[i] = lo + int64((i*37)%TableSize) // every value, shuffled
			xf[i] = float32(xs[i])
			entries[i] = int64((i*i + 3) % 256)
		}
		table := &graph.Tensor{DType: graph.Uint8, Shape: []int{TableSize}, I64: entries}
		n := &graph.Node{Name: "lut", OpType: TableLookup, Inputs: []string{"x", "t"}, Outputs: []string{"y"}}
		folded, err := evalTableLookup(&InferCtx{N: n}, []*graph.Tensor{{DType: dt, Shape: []int{TableSize}, I64: xs}, table})
		if err != nil {
			t.Fatal(err)
		}
		for _, integer := range []bool{false, true} {
			g := graph.New("lookup", 17)
			g.Integer = integer
			g.AddInput("x", dt, []int{TableSize})
			g.AddConst("t", table)
			g.AddNode(n)
			g.Values["y"] = &graph.Value{Name: "y", DType: graph.Uint8, Shape: []int{TableSize}}
			g.Outputs = []string{"y"}
			got, err := EvalGraph(g, map[string][]float32{"x": xf})
			if err != nil {
				t.Fatal(err)
			}
			for i, x := range xs {
				want := entries[x-lo]
				if folded[0].I64[i] != want || got[0][i] != float32(want) {
					t.Fatalf("%s (integer %v) x=%d: folded %d, lowered %v, want %d", dt, integer, x, folded[0].I64[i], got[0][i], want)
				}
			}
		}
	}
	n := &graph.Node{Name: "lut", OpType: TableLookup}
	for _, c := range []struct {
		x     graph.DType
		shape []int
		want  string
	}{
		{graph.Float32, []int{TableSize}, "node lut: TableLookup indexes its table with float32 values"},
		{graph.Uint8, []int{255}, "node lut: TableLookup's table has shape [255], want [256]"},
	} {
		if _, err := checkTableLookup(n, c.x, c.shape); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}
