// Package assemble compiles a whole model from tuning records. It owns
// the step from "the best record of every task" to a shared library any
// program can load (the C ABI of tsrt/c/tessera.h):
//
//	graph + plan (partition.Extract)
//	  └─ schedules  each task's best record on the target (records.Store.Best),
//	  │             replayed and lowered; a task without one gets a deterministic
//	  │             default schedule and a warning (schedule.go)
//	  └─ executor   every value placed: caller's inputs and outputs, the weights
//	  │             blob, or the arena of intermediate tensors (executor.go), whose
//	  │             offsets the static memory planner picks so that memory is
//	  │             reused as lifetimes end (memplan.go)
//	  └─ C          one translation unit: every kernel (hidden), one generated
//	  │             function calling them in order and the model's descriptor
//	  │             (csource.go), then the runtime, the same for every model
//	  │             (package tsrt: tsrt/c/runtime.c, which implements tessera.h)
//	  └─ files      model.c and the runtime's C, tessera.h, libmodel.so (compiled by
//	                measure.Builder with the flags the records were measured with),
//	                weights.bin (weights.go) and manifest.json (tsrt.Manifest)
//
// Build writes a build directory; Generate makes its files in memory. The
// same graph and records always give byte-identical files. ChooseLayout
// comes first where the activation layout is open: it loads and
// partitions the model once per layout, weighs what the records cover and
// races covered layouts end to end (layout.go); the algorithm of each
// group is chosen inside Generate, by its fastest record.
//
// The runtime, package tsrt, reads a build directory back and runs it
// (tsrt.Open: its manifest, weights and library; Run, Bench, RunFiles),
// tune run and tune bench through it. What running needs a compiler for
// is here: Emulate compiles the runtime's runner, which runs a library
// built for another architecture under an emulator (tsrt.OpenChild).
package assemble
