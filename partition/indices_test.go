package partition

import (
	"slices"
	"testing"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/ops"
)

// Indices computed at run time stay in memory: the read of an index
// operand (ops.Op.Indices) is an opaque edge, so the producer of the
// indices never joins the group that reads them (the build checks them
// there before the kernel runs); what feeds the data still fuses.

func TestEdgePatternIndices(t *testing.T) {
	b := newTG(17)
	b.g.AddInput("ids", graph.Int64, []int{3})
	y := b.op("y", "Gather", []string{b.weight("table", 10, 4), "ids"})
	g := b.done(t, nil, y)
	n := g.Nodes[0]
	if p := EdgePattern(g, n, "ids"); p != Opaque {
		t.Errorf("Gather's read of its indices is %v, want opaque", p)
	}
	if p := EdgePattern(g, n, "table"); p != Injective {
		t.Errorf("Gather's read of its data is %v, want injective", p)
	}
}

// checkIndicesApart fails when a group computes indices one of its nodes
// reads.
func checkIndicesApart(t *testing.T, g *graph.Graph, groups []*Group) {
	t.Helper()
	for _, grp := range groups {
		inside := map[string]bool{}
		for _, n := range grp.Nodes {
			for _, o := range n.Outputs {
				inside[o] = true
			}
		}
		for _, n := range grp.Nodes {
			ios, err := ops.IndexOperands(g, n)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range ios {
				if inside[n.Input(o.Input)] {
					t.Errorf("group %d (%s) computes %s, the indices of %s", grp.ID, grp.Ops(), n.Input(o.Input), n.Name)
				}
			}
		}
	}
}

func TestFuseIndicesApart(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func(b *tg) string
		want  []string // the groups' ops
	}{
		{"elementwise producer", func(b *tg) string {
			b.g.AddInput("ids", graph.Int64, []int{3})
			b.g.AddConst("one", graph.Int64Tensor([]int{}, []int64{1}))
			next := b.op("next", "Add", []string{"ids", "one"})
			return b.op("y", "Relu", []string{b.op("g", "Gather", []string{b.weight("table", 10, 4), next})})
		}, []string{"Add", "Gather+Relu"}},
		{"injective producer", func(b *tg) string {
			b.g.AddInput("ids", graph.Int64, []int{2, 3})
			tr := b.op("tr", "Transpose", []string{"ids"})
			return b.op("y", "Relu", []string{b.op("g", "Gather", []string{b.weight("table", 10, 4), tr})})
		}, []string{"Transpose", "Gather+Relu"}},
		{"reduction producer", func(b *tg) string {
			x := b.input("x", 2, 6)
			pick := b.op("pick", "ArgMax", []string{x}, "axis", 1)
			return b.op("y", "Gather", []string{b.weight("table", 6, 3), pick})
		}, []string{"ArgMax", "Gather"}},
		{"the data's producer fuses", func(b *tg) string {
			b.g.AddInput("ids", graph.Int64, []int{3})
			r := b.op("r", "Relu", []string{b.input("table", 10, 4)})
			return b.op("y", "Gather", []string{r, "ids"})
		}, []string{"Relu+Gather"}},
		{"one producer, data and indices", func(b *tg) string {
			x := b.input("x", 4)
			a := b.op("a", "Abs", []string{x})
			idx := b.op("idx", "Cast", []string{a}, "to", int(graph.Int64.ONNX()))
			return b.op("y", "GatherElements", []string{a, idx})
		}, []string{"Abs", "Cast", "GatherElements"}},
		{"scatter of computed indices", func(b *tg) string {
			x := b.input("x", 4, 3)
			b.g.AddInput("ids", graph.Int64, []int{2, 1})
			b.g.AddConst("two", graph.Int64Tensor([]int{}, []int64{2}))
			idx := b.op("idx", "Sub", []string{"ids", "two"})
			return b.op("y", "ScatterND", []string{x, idx, b.input("upd", 2, 3)})
		}, []string{"Sub", "ScatterND"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newTG(17)
			y := c.build(b)
			g := b.done(t, nil, y)
			groups, err := Fuse(g, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, grp := range groups {
				got = append(got, grp.Ops())
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("groups %v, want %v", got, c.want)
			}
			checkIndicesApart(t, g, groups)
		})
	}
}
