package assemble

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tsrt"
)

// The files of a build directory besides those the runtime reads
// (tsrt.ManifestFile, tsrt.LibraryFile, tsrt.WeightsFile).
const (
	SourceFile = "model.c"
	HeaderFile = "tessera.h" // the ABI (tsrt/c/tessera.h), the same for every model
)

// Options configure a build.
type Options struct {
	// Records gives each task's best record; nil builds every task with
	// the default schedule.
	Records RecordSource
	// Target is what the model is built for: its key finds the records,
	// its lowering and printer make the kernels, and its host compiler
	// (Target.Host, with the flags the records were measured with) compiles
	// the library. Required.
	Target *backend.Target
	// Model names the model file in the manifest (its base name is kept).
	Model string
	// Frozen lists the graph inputs frozen to values before the build
	// ("sr=16000", what --freeze said), recorded in the manifest: the
	// library computes the model for those values only.
	Frozen []string
	// Warn receives one line per warning (a task without a record); nil
	// discards them.
	Warn io.Writer
	// SingleFile embeds the weights in the library (no weights.bin): the
	// library alone is the model.
	SingleFile bool
	// Batch builds the model over a dynamic batch: the graph and plan
	// given to Generate are the model at batch 1 (Batch.One), every group
	// runs once per sample of a run's batch, and the arena holds the
	// range's largest. CPU targets only.
	Batch *partition.BatchPlan
	// Dim builds the model over a dimension its kernels take at run time
	// (a sequence length): the graph and plan given to Generate are the
	// model at its largest value (Dim.Hi), every task's kernel is printed
	// at every value as a family (target.Family), and the executor calls
	// the one of a run's value. With Batch, the model at batch 1. CPU
	// targets only.
	Dim *partition.DimPlan
}

// LibraryTimeout is the default time limit of compiling a model's library:
// a whole network is one translation unit of dozens of kernels.
const LibraryTimeout = 20 * time.Minute

// Files is a build before it is written: every file's contents but the
// library's.
type Files struct {
	Source   string
	Kernels  []KernelSource    // on the CPU, the kernels (kernels/NAME.c); nil for a GPU build
	Runtime  map[string]string // the runtime's C (tessera.h, runtime.c, ...), which Source includes
	Weights  []byte
	Manifest *tsrt.Manifest
}

// Generate produces the files of a build: it picks each task's schedule
// (Schedules), places every value (the executor and the memory plan), and
// writes the C, the header, the weights and the manifest. g's shapes must
// be inferred and its passes run; plan is partition.Extract(g, ...).
// The same graph, plan and records always give the same files.
func Generate(g *graph.Graph, plan *partition.Plan, opts Options) (*Files, error) {
	warn := func(format string, args ...any) {
		if opts.Warn != nil {
			fmt.Fprintf(opts.Warn, "warning: "+format+"\n", args...)
		}
	}
	if opts.Target == nil {
		return nil, errors.New("build: no target")
	}
	if opts.Batch != nil && opts.Target.GPU() {
		return nil, fmt.Errorf("build: a model over a dynamic batch (%s) is built for the CPU only", opts.Batch.Symbol)
	}
	var kernels []kernel
	if opts.Dim != nil {
		if opts.Target.GPU() {
			return nil, fmt.Errorf("build: a model over a dimension given at run time (%s) is built for the CPU only", opts.Dim.Symbol)
		}
		if err := checkDimConstants(opts.Dim); err != nil {
			return nil, err
		}
		var err error
		if kernels, err = scheduleFamilies(opts.Dim, opts.Records, opts.Target, warn); err != nil {
			return nil, err
		}
	} else {
		var err error
		if plan, err = chooseAlgorithms(plan, opts.Records, opts.Target); err != nil {
			return nil, err
		}
		if kernels, err = scheduleTasks(plan, opts.Records, opts.Target, warn); err != nil {
			return nil, err
		}
		if err := printKernels(kernels, opts.Target); err != nil {
			return nil, err
		}
	}
	p, err := planProgram(g, plan, kernels, opts.Batch, opts.Dim)
	if err != nil {
		return nil, err
	}
	src, kernelSrcs, err := cSource(p, kernels, opts.Target, opts.SingleFile)
	if err != nil {
		return nil, err
	}
	m := &tsrt.Manifest{
		Format: tsrt.ManifestFormat, Model: filepath.Base(opts.Model), Graph: g.Name, Target: opts.Target.Key(),
		ABI: tsrt.ABIVersion, Library: tsrt.LibraryFile, Header: HeaderFile, Source: SourceFile,
		Weights: tsrt.WeightsInfo{
			File: tsrt.WeightsFile, Bytes: int64(len(p.weights.payload)), Checksum: fmt.Sprintf("%016x", tsrt.WeightsChecksum(p.weights.payload)),
			Tensors: len(p.weights.order), Layout: weightsLayout,
		},
		Inputs: p.inputs, Outputs: p.outputs, Frozen: opts.Frozen, Batch: p.batch, Dim: p.dim,
		Memory: tsrt.MemoryInfo{ArenaBytes: p.mem.Peak, IntermediatesBytes: p.mem.Sum, LiveMaxBytes: p.mem.LiveMax, Intermediates: len(p.bufs), WorkspaceBytes: p.workspace},
	}
	if m.Model == "." {
		m.Model = ""
	}
	m.Coverage.Tasks = len(kernels)
	for _, k := range kernels {
		flops := float64(k.task.Weight) * k.task.FLOPs
		m.Coverage.FLOPs += flops
		if k.report.Schedule == tsrt.FromRecord {
			m.Coverage.TunedTasks++
			m.Coverage.TunedFLOPs += flops
		}
		m.Tasks = append(m.Tasks, k.report)
	}
	for _, c := range p.calls {
		m.Steps = append(m.Steps, tsrt.StepReport{Group: c.group.ID, Task: c.task, Ops: c.group.Ops()})
	}
	f := &Files{Source: src, Kernels: kernelSrcs, Runtime: tsrt.Files(deviceOf(opts.Target)), Weights: p.weights.file(), Manifest: m}
	if opts.SingleFile {
		// model.c includes the weights file (.incbin): it travels with the
		// source to the compiler, and is not written to the build folder.
		f.Runtime[tsrt.WeightsFile] = string(f.Weights)
		m.Weights.File, m.Weights.Embedded = "", true
	}
	return f, nil
}

// Build generates the files of the model (Generate), writes them to dir
// and compiles the library with opts.Builder. The manifest is written
// last, so a directory whose build failed is never taken for a model.
func Build(ctx context.Context, g *graph.Graph, plan *partition.Plan, dir string, opts Options) (*tsrt.Manifest, error) {
	f, err := Generate(g, plan, opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Remove(filepath.Join(dir, tsrt.ManifestFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	files := map[string][]byte{SourceFile: []byte(f.Source)}
	if f.Manifest.Weights.File != "" {
		files[tsrt.WeightsFile] = f.Weights
	}
	for name, data := range f.Runtime {
		if name != tsrt.WeightsFile {
			files[name] = []byte(data)
		}
	}
	for _, k := range f.Kernels {
		files[k.file()] = []byte(k.Code)
	}
	if len(f.Kernels) > 0 {
		if err := os.MkdirAll(filepath.Join(dir, "kernels"), 0o755); err != nil {
			return nil, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := writeFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return nil, err
		}
	}
	lib, err := compileLibrary(ctx, f, opts.Target)
	if err != nil {
		return nil, fmt.Errorf("build: %s: %w", dir, err)
	}
	if err := writeFile(filepath.Join(dir, tsrt.LibraryFile), lib, 0o755); err != nil {
		return nil, err
	}
	f.Manifest.LibraryBytes, f.Manifest.LibrarySHA256 = tsrt.LibraryDigest(lib)
	data, err := json.MarshalIndent(f.Manifest, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, tsrt.ManifestFile), append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	return f.Manifest, nil
}

// writeFile replaces the file at path with data: written beside it and
// renamed over it, so that a process that has the old library loaded (it
// is mapped) keeps it intact, and no reader sees a partial file.
func writeFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("build: write %s: %w", path, err)
	}
	return nil
}

// deviceOf names the device runtime a model built for tg includes: "" on
// the CPU, else the GPU target's name (opencl, cuda).
func deviceOf(tg *backend.Target) string {
	if tg.GPU() {
		return tg.Name
	}
	return ""
}
