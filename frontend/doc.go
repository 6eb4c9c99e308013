// Package frontend takes a model from its file to an operator graph ready
// for partition: Load decodes it (package graph/onnx), freezes and binds
// its inputs, infers every value's shape by the rules of package ops
// (InferShapes) and simplifies the graph by the named passes of Passes
// (RunPasses): constant folding, removal of no-op nodes, BatchNormalization
// folding, pattern fusions, dead-code and common-subexpression elimination,
// and the channels-last layout.
//
//	model.onnx ── onnx.DecodeFile ─▶ *graph.Graph
//	  ── Graph.Freeze, Graph.Bind (LoadOptions: --freeze, --input)
//	  ── InferShapes: each node's ops.Op (shape rule, evaluator, expansion)
//	  ── RunPasses: Passes in order, shapes inferred again after every change
//	  ▶ Loaded{Graph, Before, After} for partition.Extract
//
// It sits above both graph, the IR that knows no op, and ops, which
// defines the ops on that IR: it reads ops' definitions directly
// (ops.LookupNode), so nothing needs registering at init.
package frontend
