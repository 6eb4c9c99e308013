package assemble

import (
	"fmt"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/te"
)

// Reference evaluates the whole graph g (shapes inferred, passes run) on
// inputs, one per graph input in order, with the reference evaluator
// (te.Eval of partition.Lower's DAG): the oracle a built model's outputs
// are checked against. It is a naive interpreter: ResNet-18 at 224×224
// takes minutes.
func Reference(g *graph.Graph, inputs [][]float32) ([][]float32, error) {
	if len(inputs) != len(g.Inputs) {
		return nil, fmt.Errorf("build: reference: %d inputs given, the graph has %d", len(inputs), len(g.Inputs))
	}
	l, err := partition.Lower(g)
	if err != nil {
		return nil, err
	}
	d, err := te.NewDAG(l.Outputs...)
	if err != nil {
		return nil, err
	}
	byName := map[string][]float32{}
	for i, name := range g.Inputs {
		byName[name] = inputs[i]
	}
	feed, err := l.Feed(d, byName)
	if err != nil {
		return nil, err
	}
	return d.Eval(feed)
}
