package measure

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tessera-ml/tessera/tsrt"
)

// The GPU runners: one C program per driver API, the common part (command
// line, data files, timing protocol: tsrt/c/harness_gpu.c) followed by
// the API's part (harness_opencl.c, harness_cuda.c).

// API is the driver interface of a GPU device.
type API uint8

const (
	OpenCL API = iota + 1 // libOpenCL.so.1: any OpenCL device (PoCL's CPU device where there is no GPU)
	CUDA                  // libcuda.so.1 and NVRTC: an NVIDIA GPU
)

func (a API) String() string {
	switch a {
	case OpenCL:
		return "opencl"
	case CUDA:
		return "cuda"
	}
	return fmt.Sprintf("api(%d)", uint8(a))
}

// ErrNoDevice is returned by Device.Probe when the machine has no device,
// driver or runtime compiler of the API; the message says which.
var ErrNoDevice = errors.New("no GPU device")

// DeviceInfo is what a device says of itself (Device.Probe).
type DeviceInfo struct {
	Name        string
	Driver      string // driver (and platform) version
	Compiler    string // the runtime compiler: OpenCL C version, NVRTC version
	Arch        string // device version (OpenCL) or compute capability (CUDA)
	MaxThreads  int    // threads per block
	SharedBytes int    // shared memory per block
	Processors  int    // multiprocessors (OpenCL: compute units); 0: not reported
	GPU         bool   // a GPU (an OpenCL CPU device is not)
}

// Device is a GPU reached through a runner child process, the GPU
// counterpart of the CPU's harness: it builds candidates with the driver's
// runtime compiler (it is the Compiler of a GPU target) and, through a
// Runner whose Device it is, times them. The zero value (with API set) is
// ready to use; fields must not change once it is in use.
type Device struct {
	API API
	// Builder compiles the runner program with the host C compiler into
	// its cache, which also keeps the built candidates; nil means a zero
	// Builder.
	Builder *Builder
	// Timeout bounds one candidate's build; 0 means 60s (the drivers'
	// compilers are slow, PoCL's especially).
	Timeout time.Duration
	// Parallel is the number of builds at a time; 0 means one per CPU
	// (at least 2): NVRTC compiles in the runner child, one core each.
	Parallel int

	mu      sync.Mutex
	runner  string
	info    *DeviceInfo
	infoErr error
}

func (d *Device) builder() *Builder {
	if d.Builder == nil {
		d.Builder = &Builder{}
	}
	return d.Builder
}

// program returns the path of the runner program, building it once.
func (d *Device) program(ctx context.Context) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.runner != "" {
		return d.runner, nil
	}
	files := map[string]string{"timing.h": tsrt.Timing}
	var src string
	switch d.API {
	case OpenCL:
		src = tsrt.HarnessGPU + tsrt.HarnessOpenCL
		files["opencl_api.h"] = tsrt.OpenCLAPI
	case CUDA:
		src = tsrt.HarnessGPU + tsrt.HarnessCUDA
		files["cuda_api.h"] = tsrt.CUDAAPI
	default:
		return "", fmt.Errorf("measure: device API %v", d.API)
	}
	path, err := d.builder().BuildProgram(ctx, d.API.String()+"-runner", Source{Code: src, Files: files}, []string{"-O2", "-std=gnu11"}, []string{"-ldl"})
	if err != nil {
		return "", err
	}
	d.runner = path
	return path, nil
}

// Probe asks the device for its name, versions and limits, once; without a
// device, driver or runtime compiler the error wraps ErrNoDevice and says
// which is missing.
func (d *Device) Probe(ctx context.Context) (DeviceInfo, error) {
	prog, err := d.program(ctx)
	if err != nil {
		return DeviceInfo{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.info != nil || d.infoErr != nil {
		if d.infoErr != nil {
			return DeviceInfo{}, d.infoErr
		}
		return *d.info, nil
	}
	cmd, tctx, cancel := groupCommand(ctx, 60*time.Second, prog, "probe")
	defer cancel()
	stdout := &tailBuffer{max: 16 << 10}
	stderr := &tailBuffer{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	switch classify(ctx, tctx, err) {
	case canceled:
		return DeviceInfo{}, ctx.Err()
	case timedOut:
		return DeviceInfo{}, fmt.Errorf("measure: %v device probe: no answer in 60s", d.API)
	}
	if code := exitCode(err); code == 1 {
		d.infoErr = fmt.Errorf("%w: %s", ErrNoDevice, stderr.lastLines(1))
		return DeviceInfo{}, d.infoErr
	} else if err != nil {
		return DeviceInfo{}, fmt.Errorf("measure: %v device probe: %s", d.API, withTail(exitReason(err), stderr))
	}
	r := tsrt.ParseReport(string(stdout.buf))
	info := DeviceInfo{Name: r.Last("device"), Driver: r.Last("driver"), Compiler: r.Last("compiler")}
	arch := r.Last("arch")
	info.GPU = !strings.HasSuffix(arch, " not-gpu")
	info.Arch = strings.TrimSuffix(strings.TrimSuffix(arch, " not-gpu"), " gpu")
	info.MaxThreads, _ = strconv.Atoi(r.Last("max_threads"))
	info.SharedBytes, _ = strconv.Atoi(r.Last("shared_bytes"))
	info.Processors, _ = strconv.Atoi(r.Last("processors"))
	if info.Name == "" || info.MaxThreads <= 0 {
		return DeviceInfo{}, fmt.Errorf("measure: %v device probe: incomplete answer %q", d.API, stdout.lastLines(8))
	}
	d.info = &info
	return info, nil
}

// exitCode returns the exit status of a child that exited, else -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return -1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Exited() {
		return ws.ExitStatus()
	}
	return -1
}

// Key identifies the device for records: its name, driver and runtime
// compiler versions.
func (info DeviceInfo) Key(api API) string {
	return fmt.Sprintf("%v device %s | arch %s | driver %s | compiler %s", api, info.Name, info.Arch, info.Driver, info.Compiler)
}

// programExt is the extension of a built candidate.
func (d *Device) programExt() string {
	if d.API == CUDA {
		return ".cubin"
	}
	return ".cl"
}

// Build builds GPU sources with the device's runtime compiler, Parallel at
// a time, through the Builder's cache (keyed by the device and the source).
// It is the Compiler of a GPU target; like Builder.Build it never fails as
// a whole: a source that does not build is a CompileError, a build past
// Timeout a BuildTimeout; a machine without the device gives every source
// a CompileError with Infra set.
func (d *Device) Build(ctx context.Context, srcs []Source) []Built {
	out := make([]Built, len(srcs))
	fail := func(err error) []Built {
		for i := range out {
			out[i] = Built{Kind: CompileError, Msg: err.Error(), Infra: true}
		}
		return out
	}
	info, err := d.Probe(ctx)
	if err != nil {
		return fail(err)
	}
	prog, err := d.program(ctx)
	if err != nil {
		return fail(err)
	}
	dir, err := d.builder().cacheDir()
	if err != nil {
		return fail(err)
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	parallel := d.Parallel
	if parallel <= 0 {
		parallel = max(2, runtime.NumCPU())
	}
	return buildEach(ctx, srcs, parallel, func(src Source) string { return cacheKey(d.API.String(), info.Key(d.API), src.Code) },
		func(key string, src Source) Built {
			return d.compile(ctx, prog, filepath.Join(dir, key+d.programExt()), src.Code, info, timeout)
		})
}

// compile builds one source into dst unless dst exists: the runner's
// compile mode, which exits 4 for a source that does not build. CUDA
// compiles for the probed architecture, with no CUDA context.
func (d *Device) compile(ctx context.Context, prog, dst, code string, info DeviceInfo, timeout time.Duration) Built {
	argv := []string{prog, "compile", "kernels.src", "out"}
	if d.API == CUDA && info.Arch != "" {
		argv = append(argv, info.Arch)
	}
	return compileFile(ctx, timeout, dst, "kernels.src", Source{Code: code}, argv,
		func(err error) bool { return exitCode(err) == 4 })
}

// gpuJobArgs are the temporaries and launches of a GPU job on the runner's
// command line (after its ARGs).
func gpuJobArgs(job Job) []string {
	argv := []string{"--"}
	for _, t := range job.Temps {
		argv = append(argv, strconv.Itoa(t))
	}
	argv = append(argv, "--")
	for _, l := range job.Launches {
		args := make([]string, len(l.Args))
		for i, a := range l.Args {
			args[i] = strconv.Itoa(a)
		}
		argv = append(argv, fmt.Sprintf("%s:%d,%d,%d:%d,%d,%d:%s", l.Name,
			l.Grid[0], l.Grid[1], l.Grid[2], l.Block[0], l.Block[1], l.Block[2], strings.Join(args, ",")))
	}
	return argv
}
