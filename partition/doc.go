// Package partition turns an operator graph into tuning tasks: it
// classifies ops by pattern (pattern.go), fuses them along the
// post-dominator tree as TVM's FuseOps does (fuse.go), lowers each group to
// a te compute DAG with the per-node lowering of lower.go, and merges
// groups of equal workload key into tasks (task.go). For a model with
// dynamic dimensions it derives the plan over their ranges from plans at
// sampled values (symbolic.go).
//
// The entry point is Extract, for a graph whose shapes are inferred and
// whose passes have run. Lower maps a whole graph to one DAG, the
// reference for tests; LowerNode maps a single node.
package partition
