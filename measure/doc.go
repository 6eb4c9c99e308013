// Package measure turns candidate programs into timings. It owns the builder
// (compile C sources in parallel into cached shared libraries), the runner
// (time one kernel per isolated child process with a deadline), the timing
// protocol, and the error kinds every failure is reduced to. Its entry points
// are Builder.Build and Runner.Run.
//
// Data flow, one batch at a time:
//
//	[]Source   C translation units from the code generator
//	  └─ build   Builder.Build: the compiler, Parallel at a time, each killed at its
//	  │          deadline; libraries cached by sha256(CompilerID, source)
//	  │          → []Built: a .so path, or CompileError / BuildTimeout
//	  └─ run     Runner.Run: one harness child per Job, one at a time, killed at its
//	  │          deadline; first call on zeroed outputs (checked), then grow number
//	  │          until a repetition lasts MinRepeatMs, then Repeat repetitions (no
//	  │          more after BudgetMs of timed calls; one timed call only when the
//	  │          first call lasted longer than the Job's Cutoff)
//	  │          → []Result: seconds per call of each repetition, or RuntimeError / RunTimeout
//	  └─ check   the caller: Compare(outputs, reference) → WrongResult on a mismatch
//
// Build and Run return one value per input, in input order, and every
// failure of a candidate (a compiler error, a crash, a hang) becomes an
// ErrorKind with a message; the calling process survives all of them.
// Measurer.Measure adds the other kind of failure: a batch that cannot be
// measured for a reason that is the machine's (no compiler, no harness, no
// build cache, the context ended) is its error, and never any candidate's.
//
// An Input has a JSON form (input.go) that carries the task's DAG and the
// schedule's steps, so that another process can measure it without the
// model (measure/remote).
//
// The kernel ABI is
//
//	int NAME(float *const *args); /* args[i] points at buffer i; 0 on success */
//
// The runner executes tsrt/c/harness.c (embedded, compiled once per machine
// into the build cache), which dlopens the library. Its command line and
// output are described at its top and in Runner.Run.
//
// GPU targets measure through a Device (device.go): a runner child per API
// (tsrt/c/harness_gpu.c with harness_opencl.c or harness_cuda.c) that loads its driver at
// run time. Device.Build is the GPU targets' Compiler (the driver's runtime
// compiler: OpenCL's, or NVRTC for the device's own architecture), and a
// Runner whose Device is set times GPU programs (Job.Launches) by the same
// protocol, with the device's clock. A machine without the device, driver
// or runtime compiler gets one clear error wrapping ErrNoDevice.
package measure
