// Package tsrt is Tessera's runtime: all of its C, in tsrt/c, and the Go
// package that opens a built model and runs it. Open is the entry point:
// it reads a build folder (its manifest, weights and library) into one
// Model, whose Run, RunInto and RunNamed run it on typed tensors and
// RunFloat32, Bench, Profile, BenchReport and RunFiles do what tune run
// and tune bench do; ReadTensorFile and WriteTensorFile read and write
// tensor files (.npy, ONNX .pb, raw) in their dtypes.
//
//	c/tessera.h          the C ABI of every built model
//	c/tessera_load.h     a C program's checked dlopen of a model (runner.c's too)
//	c/runtime.c          its implementation over the generated model's descriptor
//	                     (c/tessera_model.h), carried by every model's library
//	c/device_opencl.c    the device runtimes of GPU models
//	c/device_cuda.c
//	c/opencl_api.h       OpenCL and CUDA loaded at run time, the device chosen and
//	c/cuda_api.h         the kernels compiled: the same for models and harnesses
//	c/runner.c           a built model in a process of its own (emulated runs)
//	c/harness.c          one kernel timed for measurement, on the CPU
//	c/harness_gpu.c      the same on a GPU, with harness_opencl.c or harness_cuda.c
//	c/timing.h           the timing protocol of both harnesses
//
// The programs print "tessera KEY VALUE" lines, which ParseReport reads.
// Open loads a model's library through github.com/ebitengine/purego: no
// cgo, so a program that runs models needs no C compiler. A library this
// process cannot load (another architecture) runs in the runner under an
// emulator (OpenChild), compiled by the caller.
package tsrt

import _ "embed"

// The C files of the runtime, by the names a build writes them under.
var (
	//go:embed c/tessera.h
	Header string
	// Loader is tessera_load.h: a C program's checked dlopen of a model.
	//go:embed c/tessera_load.h
	Loader string
	//go:embed c/tessera_model.h
	ModelHeader string
	//go:embed c/runtime.c
	Source string
	//go:embed c/device_opencl.c
	DeviceOpenCL string
	//go:embed c/device_cuda.c
	DeviceCUDA string
	// OpenCLAPI and CUDAAPI load a GPU API at run time, open its device
	// and compile kernels for it; the device runtimes and the GPU
	// harnesses include them as "opencl_api.h" and "cuda_api.h".
	//go:embed c/opencl_api.h
	OpenCLAPI string
	//go:embed c/cuda_api.h
	CUDAAPI string
	// Runner is a program that runs a built model in a process of its own
	// (through tessera.h; it includes it).
	//go:embed c/runner.c
	Runner string

	// Harness is the program that times one kernel of a shared library
	// for measurement (package measure), on the CPU.
	//go:embed c/harness.c
	Harness string
	// HarnessGPU is the device-independent part of the GPU measurement
	// runners; one of HarnessOpenCL and HarnessCUDA follows it.
	//go:embed c/harness_gpu.c
	HarnessGPU string
	//go:embed c/harness_opencl.c
	HarnessOpenCL string
	//go:embed c/harness_cuda.c
	HarnessCUDA string
	// Timing is the harnesses' timing protocol, which they include as
	// "timing.h".
	//go:embed c/timing.h
	Timing string
)

// Files returns the runtime's C files by name, to be written next to a
// model's generated source, which includes them: the ABI and the runtime,
// and for a GPU model (device "opencl" or "cuda") its device runtime.
func Files(device string) map[string]string {
	files := map[string]string{"tessera.h": Header, "tessera_load.h": Loader, "tessera_model.h": ModelHeader, "runtime.c": Source}
	switch device {
	case "opencl":
		files["device_opencl.c"] = DeviceOpenCL
		files["opencl_api.h"] = OpenCLAPI
	case "cuda":
		files["device_cuda.c"] = DeviceCUDA
		files["cuda_api.h"] = CUDAAPI
	}
	return files
}

// ABIVersion is the TESSERA_ABI_VERSION of tessera.h this package speaks.
const ABIVersion = 4

// Exports are the functions tessera.h declares: all that a model's library
// exports.
var Exports = []string{
	"tessera_abi_version", "tessera_open", "tessera_close", "tessera_num_inputs", "tessera_num_outputs",
	"tessera_input_info", "tessera_output_info", "tessera_run", "tessera_run_named", "tessera_set_num_threads",
	"tessera_num_steps", "tessera_step_name", "tessera_profile", "tessera_target",
	"tessera_last_error", "tessera_status_name", "tessera_batch_range", "tessera_dim_range",
}
