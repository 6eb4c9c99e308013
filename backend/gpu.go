package backend

import (
	"context"
	"fmt"

	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/tir"
)

// GPUConfig configures a GPU target (OpenCL or CUDA).
type GPUConfig struct {
	// Host is the host C compiler: it builds the runner programs (and
	// the host code of built models) and its cache keeps the built
	// candidates. nil means a zero measure.Builder.
	Host *measure.Builder
	// Run is the timing protocol; the zero value means GPURunOptions.
	Run measure.RunOptions
	// Limits are the device's limits for the sketch rules and the
	// lowering; zero fields come from the device (threads and shared
	// memory per block, capped at 1024 and 48 KiB; multiprocessors), from
	// defaults (warp 32, 8 virtual threads) and from the printer (vector
	// lanes: codegen.GPUVectorLanes).
	Limits schedule.GPULimits
	// Key, when set, replaces the derived target key.
	Key string
}

// GPURunOptions is the timing protocol of GPU tuning: the CPU search's
// (repetitions of at least 25 ms, three of them, none started after 100 ms
// of timed calls), timed by the device's own clock.
func GPURunOptions() measure.RunOptions {
	return measure.RunOptions{Repeat: 3, MinRepeatMs: 25, BudgetMs: 100}
}

// OpenCL returns the opencl target: Ansor's GPU rules, kernels printed as
// OpenCL C, built and timed on the OpenCL device of this machine (the
// first GPU, else the first device: PoCL's CPU device where there is no
// GPU). Without a device the error wraps measure.ErrNoDevice.
func OpenCL(ctx context.Context, cfg GPUConfig) (*Target, error) {
	return gpuTarget(ctx, measure.OpenCL, codegen.OpenCL, cfg)
}

// CUDA returns the cuda target: Ansor's GPU rules, kernels printed as CUDA
// C, built by NVRTC for the GPU's own architecture and timed with CUDA
// events on the first NVIDIA GPU. Without a GPU, driver or NVRTC the error
// wraps measure.ErrNoDevice and says which.
func CUDA(ctx context.Context, cfg GPUConfig) (*Target, error) {
	return gpuTarget(ctx, measure.CUDA, codegen.CUDA, cfg)
}

func gpuTarget(ctx context.Context, api measure.API, dialect codegen.Dialect, cfg GPUConfig) (*Target, error) {
	host := cfg.Host
	if host == nil {
		host = &measure.Builder{}
	}
	dev := &measure.Device{API: api, Builder: host}
	info, err := dev.Probe(ctx)
	if err != nil {
		return nil, fmt.Errorf("target %v: %w", api, err)
	}
	lim := cfg.Limits
	if lim.WarpSize <= 0 {
		lim.WarpSize = 32
	}
	if lim.MaxThreadsPerBlock <= 0 {
		lim.MaxThreadsPerBlock = min(info.MaxThreads, 1024)
	}
	if lim.MaxSharedBytes <= 0 {
		lim.MaxSharedBytes = min(info.SharedBytes, 48<<10)
	}
	if lim.MaxVThread <= 0 {
		lim.MaxVThread = 8
	}
	if lim.Processors <= 0 {
		lim.Processors = info.Processors
	}
	if lim.VectorLanes <= 0 {
		lim.VectorLanes = codegen.GPUVectorLanes
	}
	run := cfg.Run
	if run == (measure.RunOptions{}) {
		run = GPURunOptions()
	}
	key := info.Key(api)
	if cfg.Key != "" {
		key = cfg.Key
	}
	return &Target{
		Name:      api.String(),
		Sketch:    sketch.GPUOptions(lim),
		Mutations: sketch.GPUMutations,
		Builder:   dev,
		Runner:    &measure.Runner{Builder: host, Device: dev, Opts: run},
		Host:      host,
		lower:     lim.Lower,
		module: func(f *tir.PrimFunc) (measure.Program, error) {
			src, err := codegen.GPU([]*tir.PrimFunc{f}, dialect)
			if err != nil {
				return measure.Program{}, err
			}
			return measure.Program{Code: src.Code, Launches: src.Funcs[0].Launches, Temps: src.Funcs[0].Temps}, nil
		},
		gpu: &gpuInfo{dialect: dialect, device: info, limits: lim},
		key: func() string { return key },
	}, nil
}

// gpuInfo is what a GPU target adds.
type gpuInfo struct {
	dialect codegen.Dialect
	device  measure.DeviceInfo
	limits  schedule.GPULimits
}

// GPU reports whether the target is a GPU.
func (t *Target) GPU() bool { return t.gpu != nil }

// Device returns the GPU target's device as it described itself.
func (t *Target) Device() (measure.DeviceInfo, bool) {
	if t.gpu == nil {
		return measure.DeviceInfo{}, false
	}
	return t.gpu.device, true
}

// GPUModule prints lowered functions as one GPU source with the launches
// of each (a built model's kernels); an error on a CPU target.
func (t *Target) GPUModule(fs []*tir.PrimFunc) (*codegen.GPUSource, error) {
	if t.gpu == nil {
		return nil, fmt.Errorf("target %s is not a GPU", t.Name)
	}
	return codegen.GPU(fs, t.gpu.dialect)
}
