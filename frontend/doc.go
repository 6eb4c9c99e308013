// Package frontend makes a decoded operator graph ready for partition: it
// infers every value's shape by the rules of package ops (InferShapes)
// and simplifies the graph by the named passes of Passes (RunPasses):
// constant folding, removal of no-op nodes, BatchNormalization folding,
// pattern fusions, dead-code and common-subexpression elimination, and
// the channels-last layout.
//
//	*graph.Graph (decoded, bound: Graph.Bind)
//	  ── InferShapes: ops.Op's shape rule, evaluator and expansion, node by node
//	  ── RunPasses: Passes in order, shapes inferred again after every change
//	  ▶ *graph.Graph for partition.Extract
//
// It sits above both: package graph holds the IR and knows no op, package
// ops defines the ops on that IR, and this package reads ops' definitions
// directly (ops.LookupNode), so nothing needs registering at init.
package frontend
