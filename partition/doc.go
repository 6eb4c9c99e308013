// Package partition turns an operator graph into tuning tasks: it lowers
// graph nodes to te compute definitions (lower.go), and — coming next —
// classifies ops by pattern, fuses them along the post-dominator tree and
// extracts one task per distinct fused subgraph.
//
// The entry point today is Lower, which maps a whole *graph.Graph (shapes
// inferred, passes run) to te tensors; LowerNode maps a single node and is
// what fusion will call for each node of a group.
package partition
