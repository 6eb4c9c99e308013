// Package build compiles a whole model from tuning records and runs the
// result. It owns the step from "the best record of every task" to a
// shared library any program can load (the C ABI of tsrt/c/tessera.h):
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
//	                weights.bin (weights.go) and manifest.json (manifest.go)
//
// Build writes a build directory; Generate makes its files in memory. The
// same graph and records always give byte-identical files. ChooseLayout
// comes first where the activation layout is open: it loads and
// partitions the model once per layout, weighs what the records cover and
// races covered layouts end to end (layout.go); the algorithm of each
// group is chosen inside Generate, by its fastest record.
//
// Open reads a build directory back; Model.Run (float32 values),
// Model.RunTensors (each tensor in its dtype) and Model.Bench run it in
// this process through package tsrt (the library loaded with dlopen, no
// compiler needed), or, for a library built for another architecture, in
// the runtime's runner under an emulator (RunOptions.Exec).
// ReadTensorFile and WriteTensorFile read and write the tensor files
// `tune run` takes and writes (raw float32, .npy through npyio, ONNX
// TensorProto .pb) in their dtypes; ReadTensor and WriteTensor as float32.
package assemble
