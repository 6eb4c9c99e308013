package tsrt

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tessera-ml/tessera/graph"
)

// The manifest: what a build folder holds, in manifest.json. Package
// assemble writes it; this package reads it (ReadManifest, Open). It
// names the files, the model's inputs and outputs, the memory plan, the
// coverage and, per task, the record whose schedule was compiled (or
// "default"). It holds nothing that changes from one build of the same
// model and records to the next (no times, no absolute paths).

// The files of a build folder that the runtime reads.
const (
	ManifestFile = "manifest.json"
	LibraryFile  = "libmodel.so"
	WeightsFile  = "weights.bin"
)

// ManifestFormat is the version of the manifest's layout. 2: the library
// implements the C ABI of tsrt/c/tessera.h (abi), weights may be
// embedded. 3: the library's size and SHA-256 (library_bytes,
// library_sha256), which the loaders check before loading it.
const ManifestFormat = 3

// Manifest describes a built model.
type Manifest struct {
	Format  int    `json:"format"`
	Model   string `json:"model"` // the model file's base name
	Graph   string `json:"graph"`
	Target  string `json:"target"` // the records' target key: the CPU level and flags, or the GPU
	ABI     int    `json:"abi"`    // the library's TESSERA_ABI_VERSION (tessera.h)
	Library string `json:"library"`
	// LibraryBytes and LibrarySHA256 are the library's size and SHA-256
	// (hex), which the loaders check before loading it (VerifyLibrary,
	// tessera_load.h, the Python module): the keys of LibraryRecord.
	LibraryBytes  int64            `json:"library_bytes"`
	LibrarySHA256 string           `json:"library_sha256"`
	Header        string           `json:"header"`
	Source        string           `json:"source"`
	Weights       WeightsInfo      `json:"weights"`
	Inputs        []ManifestTensor `json:"inputs"`
	Outputs       []ManifestTensor `json:"outputs"`
	// Frozen lists the model's inputs that were frozen to values
	// ("sr=16000"): not inputs of the library, which computes the model
	// for those values only.
	Frozen []string `json:"frozen,omitempty"`
	// Batch is the range of the dynamic batch of a model built over one;
	// nil for a model of static shapes.
	Batch *BatchInfo `json:"batch,omitempty"`
	// Dim is the range of the dimension a model built over one takes at
	// run time (a sequence length); nil if none.
	Dim *BatchInfo `json:"dim,omitempty"`

	Memory   MemoryInfo   `json:"memory"`
	Coverage Coverage     `json:"coverage"`
	Tasks    []TaskReport `json:"tasks"`
	Steps    []StepReport `json:"steps"`
}

// ManifestTensor is one input or output of the model as the manifest
// lists it: the library describes the same tensor as a TensorInfo, with
// -1 and -2 where this says Batched and DimAxes.
type ManifestTensor struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"` // of a batched tensor: at batch 1
	DType string `json:"dtype"`
	// Batched says that the leading dimension is the model's batch
	// (Manifest.Batch): a run at batch n gives it n there.
	Batched bool `json:"batched,omitempty"`
	// DimAxes are the dimensions that are the model's dimension given at
	// run time (Manifest.Dim); Shape holds its largest value there.
	DimAxes []int `json:"dim_axes,omitempty"`
}

// BatchInfo is the dynamic batch of a model built over a range of it, or
// the dimension it takes at run time (Manifest.Dim), as the manifest
// records it (the library's is a Batch).
type BatchInfo struct {
	Name string `json:"name"` // the dimension's name (N)
	Lo   int    `json:"lo"`
	Hi   int    `json:"hi"`
}

// At returns the tensor's description in a run at batch n: of a batched
// tensor, its static shape there (t itself if it is not batched).
func (t ManifestTensor) At(n int) ManifestTensor {
	if !t.Batched {
		return t
	}
	t.Shape = append([]int{n}, t.Shape[1:]...)
	t.Batched = false
	return t
}

// WithDim returns the tensor's description in a run where the model's
// dimension given at run time is v (t itself if it has none of it).
func (t ManifestTensor) WithDim(v int) ManifestTensor {
	if len(t.DimAxes) == 0 {
		return t
	}
	t.Shape = slices.Clone(t.Shape)
	for _, a := range t.DimAxes {
		t.Shape[a] = v
	}
	t.DimAxes = nil
	return t
}

// String returns "name[d0,d1,...]".
func (t ManifestTensor) String() string { return t.Name + t.dims() }

// dims returns "[d0,d1,...]".
func (t ManifestTensor) dims() string {
	dims := make([]string, len(t.Shape))
	for i, d := range t.Shape {
		dims[i] = strconv.Itoa(d)
	}
	return "[" + strings.Join(dims, ",") + "]"
}

// Elems returns the number of elements.
func (t ManifestTensor) Elems() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// TensorList prints "name[d0,d1] name2[...]".
func TensorList(ts []ManifestTensor) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.String()
	}
	return strings.Join(parts, " ")
}

// checkSizes checks the numbers a run allocates by before it does: every
// dimension positive, at most graph.MaxElems elements per tensor, byte
// counts that are not negative and at most 2^50.
func (m *Manifest) checkSizes() error {
	for _, c := range []struct {
		what string
		ts   []ManifestTensor
	}{{"input", m.Inputs}, {"output", m.Outputs}} {
		for i, t := range c.ts {
			n := 1
			for _, d := range t.Shape {
				if d <= 0 || n > graph.MaxElems/d {
					return fmt.Errorf("%s %d (%q) has shape %s: want positive dimensions and at most %d elements", c.what, i, t.Name, t.dims(), graph.MaxElems)
				}
				n *= d
			}
		}
	}
	const maxBytes = 1 << 50
	for _, c := range []struct {
		what string
		n    int64
	}{{"weights.bytes", m.Weights.Bytes}, {"memory.arena_bytes", m.Memory.ArenaBytes}} {
		if c.n < 0 || c.n > maxBytes {
			return fmt.Errorf("%s is %d: want 0 to %d", c.what, c.n, int64(maxBytes))
		}
	}
	return nil
}

// MemoryInfo is the memory plan's outcome.
type MemoryInfo struct {
	ArenaBytes         int64 `json:"arena_bytes"`         // the arena: peak of the plan
	IntermediatesBytes int64 `json:"intermediates_bytes"` // sum of the intermediate tensors
	LiveMaxBytes       int64 `json:"live_max_bytes"`      // most bytes live at one step
	Intermediates      int   `json:"intermediates"`       // how many buffers the arena holds: tensors and kernel workspaces
	WorkspaceBytes     int64 `json:"workspace_bytes"`     // the largest kernel workspace (in the arena during its call)
}

// Coverage says how much of the model runs tuned schedules.
type Coverage struct {
	TunedTasks int     `json:"tuned_tasks"`
	Tasks      int     `json:"tasks"`
	TunedFLOPs float64 `json:"tuned_flops"` // per inference
	FLOPs      float64 `json:"flops"`       // per inference
}

// TunedShare returns the share of the FLOPs of one inference that run
// tuned schedules, in percent.
func (c Coverage) TunedShare() float64 {
	if c.FLOPs == 0 {
		return 100 * float64(c.TunedTasks) / float64(max(c.Tasks, 1))
	}
	return 100 * c.TunedFLOPs / c.FLOPs
}

// TaskReport is one task: its kernel and where its schedule came from.
type TaskReport struct {
	Index    int          `json:"index"`
	Key      string       `json:"key"`
	Ops      string       `json:"ops"`              // with the algorithm of an alternative: "Conv+Relu [winograd F(4×4,3×3)]"
	Layout   string       `json:"layout,omitempty"` // "NHWC" where convert-layout made the ops channels-last
	Weight   int          `json:"weight"`
	FLOPs    float64      `json:"flops"`
	Kernel   string       `json:"kernel"`
	Schedule string       `json:"schedule"` // "record" or "default"
	Record   *RecordUsed  `json:"record,omitempty"`
	Default  *DefaultUsed `json:"default,omitempty"`
	// Packed lists the kernel's parameters that take a constant repacked
	// (schedule.RewriteLayout), as "input k: packing".
	Packed []string `json:"packed,omitempty"`
	// Family describes the kernels of a model built over a dimension given
	// at run time (Manifest.Dim).
	Family *FamilyReport `json:"family,omitempty"`
}

// FamilyReport is how a task's kernels cover a dimension given at run
// time: the kernels that take its value (codegen.Family's classes), and
// how many of its values have a record's schedule, by the probe point
// (partition.Symbol.ProbePoints) whose record they replay, and in how many
// layouts its kernels take the
// constants (each layout a copy in the weights).
type FamilyReport struct {
	Classes     int         `json:"classes"`
	Values      int         `json:"values"`
	Layouts     int         `json:"layouts"`
	FromRecords int         `json:"from_records"`
	Points      map[int]int `json:"points,omitempty"`
}

// RecordUsed is the record a task's kernel was compiled from.
type RecordUsed struct {
	Steps json.RawMessage `json:"steps"`
	Cost  float64         `json:"cost"` // median seconds, as measured when tuning
	At    string          `json:"at"`
	Tool  string          `json:"tool,omitempty"`
}

// DefaultUsed says which default schedule a task got, and why.
type DefaultUsed struct {
	Why   string          `json:"why"`
	Rule  string          `json:"rule"`
	Steps json.RawMessage `json:"steps"`
}

// StepReport is one call of the executor.
type StepReport struct {
	Group int    `json:"group"`
	Task  int    `json:"task"`
	Ops   string `json:"ops"`
}

// Schedule values of TaskReport.
const (
	FromRecord  = "record"
	FromDefault = "default"
)

// ErrNoManifest is returned by ReadManifest for a folder without a
// manifest: not a build folder.
var ErrNoManifest = errors.New("no " + ManifestFile + " (not a directory written by tune build?)")

// ReadManifest reads the manifest of the build folder dir and checks
// that the files it names exist.
func ReadManifest(dir string) (*Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		if fi, derr := os.Stat(dir); derr != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%s is not a directory", dir)
		}
		return nil, fmt.Errorf("%s: %w", dir, ErrNoManifest)
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if m.Format != ManifestFormat {
		return nil, fmt.Errorf("%s: manifest format %d, this tessera reads %d (rebuild the model)", filepath.Join(dir, ManifestFile), m.Format, ManifestFormat)
	}
	if err := m.checkSizes(); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	files := []string{m.Library}
	if !m.Weights.Embedded || m.Weights.File != "" {
		files = append(files, m.Weights.File)
	}
	for _, f := range files {
		if f == "" || filepath.Base(f) != f {
			return nil, fmt.Errorf("%s: bad file name %q", filepath.Join(dir, ManifestFile), f)
		}
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	return &m, nil
}

// libTensor is what a library says of one of its tensors: at batch 1 and
// at value 1 of a dimension given at run time.
type libTensor struct {
	name, dtype string
	elems       int
}

// checkManifest compares man with the library loaded into m: the library
// is the truth, and a manifest that disagrees with it was edited or
// belongs to another build (TESSERA_BAD_LIBRARY).
func (m *Model) checkManifest(man *Manifest) error {
	bad := func(err error) error { return &Error{Status: BadLibrary, Msg: err.Error()} }
	lib := make(map[string][]libTensor)
	for _, t := range m.inputs {
		lib["input"] = append(lib["input"], libTensor{t.Name, t.DType.String(), t.At(1).WithDim(1).Elems()})
	}
	for _, t := range m.outputs {
		lib["output"] = append(lib["output"], libTensor{t.Name, t.DType.String(), t.At(1).WithDim(1).Elems()})
	}
	if b := m.batch; (b.Name != "") != (man.Batch != nil) {
		return bad(fmt.Errorf("%s: %s and the library %s disagree on the model's batch (%v, %+v): the manifest does not belong to this library", m.dir, ManifestFile, man.Library, man.Batch, b))
	}
	if d := m.dim; (d.Name != "") != (man.Dim != nil) {
		return bad(fmt.Errorf("%s: %s and the library %s disagree on the model's dimensions (%v, %+v): the manifest does not belong to this library", m.dir, ManifestFile, man.Library, man.Dim, d))
	}
	if err := man.checkLibrary(m.dir, lib); err != nil {
		return bad(err)
	}
	return nil
}

// checkLibrary compares the inputs and outputs the manifest of the build
// folder dir lists (names, dtypes, element counts) with those the library
// was compiled with (lib["input"], lib["output"]).
func (man *Manifest) checkLibrary(dir string, lib map[string][]libTensor) error {
	for _, c := range []struct {
		what string
		man  []ManifestTensor
	}{{"input", man.Inputs}, {"output", man.Outputs}} {
		got := lib[c.what]
		if len(got) != len(c.man) {
			names := make([]string, len(got))
			for i, t := range got {
				names[i] = strconv.Quote(t.name)
			}
			return fmt.Errorf("%s: %s lists %d %ss, the library %s has %d (%s): the manifest does not belong to this library",
				dir, ManifestFile, len(c.man), c.what, man.Library, len(got), strings.Join(names, ", "))
		}
		for i, t := range c.man {
			t = t.WithDim(1) // as the library describes it: at batch 1 and value 1
			if t.Name != got[i].name || t.Elems() != got[i].elems || t.DType != got[i].dtype {
				return fmt.Errorf("%s: %s says %s %d is %q%s (%s, %d elements), the library %s has %q (%s, %d elements): the manifest does not belong to this library",
					dir, ManifestFile, c.what, i, t.Name, t.dims(), t.DType, t.Elems(), man.Library, got[i].name, got[i].dtype, got[i].elems)
			}
		}
	}
	return nil
}
