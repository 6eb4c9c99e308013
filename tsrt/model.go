package tsrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Model is a built model opened for running: its library, loaded into
// this process (Open) or run by the runtime's runner in a process of its
// own (OpenChild), and the manifest of its build folder (Manifest). Run,
// RunInto and RunNamed run it on typed tensors; RunFloat32, Bench,
// Profile, BenchReport and RunFiles (run.go, bench.go, files.go) are what
// tune run and tune bench do with it.
//
// A Model is safe for concurrent use: Run may be called from many
// goroutines at once (each call takes a workspace of its own; the weights
// are shared). Close must not overlap a Run; it waits for those running.
type Model struct {
	path     string    // as given to Open
	dir      string    // its build folder
	manifest *Manifest // nil for a library without one
	lib      *library  // nil for a model run in a child process
	child    *child    // nil for a model loaded into this process
	h        uintptr   // the tessera_model
	inputs   []TensorInfo
	outputs  []TensorInfo
	steps    []string
	target   string
	batch    Batch
	dim      Batch

	mu         sync.RWMutex // Run holds it shared, Close exclusively
	closed     bool
	profilePin runtime.Pinner // the array SetProfile set
}

// TensorInfo describes an input or output of a model. In a model built
// over a dynamic batch (Model.Batch), a batched tensor's leading dimension
// is -1; in one built over a dimension given at run time (Model.Dim), the
// dimensions that are it are -2: each run gives them (TensorInfo.At,
// TensorInfo.WithDim).
type TensorInfo struct {
	Name  string
	DType DType
	Shape []int64
}

// Batch is the dynamic batch of a model built over a range of it: its
// name and range, Lo..Hi inclusive. The zero Batch is a model of static
// shapes.
type Batch struct {
	Name   string
	Lo, Hi int64
}

// At returns the tensor's description in a run at batch n: its dynamic
// leading dimension (-1) set to n.
func (t TensorInfo) At(n int64) TensorInfo {
	if len(t.Shape) > 0 && t.Shape[0] == -1 {
		t.Shape = append([]int64{n}, t.Shape[1:]...)
	}
	return t
}

// WithDim returns the tensor's description in a run whose dimension given
// at run time is v: its dimensions -2 set to v.
func (t TensorInfo) WithDim(v int64) TensorInfo {
	t.Shape = slices.Clone(t.Shape)
	for k, d := range t.Shape {
		if d == -2 {
			t.Shape[k] = v
		}
	}
	return t
}

// Elems returns the number of elements of a tensor of this shape (of a
// dynamic one, -1: see At).
func (t TensorInfo) Elems() int {
	n := 1
	for _, d := range t.Shape {
		n *= int(d)
	}
	return n
}

func (t TensorInfo) String() string {
	dims := make([]string, len(t.Shape))
	for i, d := range t.Shape {
		dims[i] = fmt.Sprint(d)
	}
	return fmt.Sprintf("%s %s[%s]", t.Name, t.DType, strings.Join(dims, ","))
}

// Open loads a built model: path is its build folder (libmodel.so and
// weights.bin), or its library (a --single-file build's weights are
// inside it; another's are in weights.bin beside it). The library is
// checked before it is loaded (VerifyLibrary), and checks its weights
// when it opens. A build folder's manifest (of a library, the one beside
// it that names it) is read with it (ReadManifest) and checked against
// the library (the names, dtypes and sizes of the tensors, the batch and
// the dimension given at run time). Every error is an *Error whose Status
// classifies it as the C ABI and the Python module do.
func Open(path string) (*Model, error) {
	lib, dir := path, path
	var man *Manifest
	if fi, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errorf(NotFound, "tessera: open %s: no such model folder or library", path)
		}
		return nil, errorf(InvalidArgument, "tessera: open %s: %v", path, err)
	} else if fi.IsDir() {
		if man, err = openManifest(dir, ""); err != nil {
			return nil, err
		}
		lib = filepath.Join(path, LibraryFile)
		if man != nil {
			lib = filepath.Join(path, man.Library)
		}
	} else {
		dir = filepath.Dir(path)
		if man, err = openManifest(dir, filepath.Base(path)); err != nil {
			return nil, err
		}
	}
	l, err := loadLibrary(lib)
	if err != nil {
		return nil, err
	}
	m := &Model{path: path, dir: dir, lib: l}
	cdir := append([]byte(dir), 0)
	if err := l.call(l.fn.open, ABIVersion, uintptr(unsafe.Pointer(&cdir[0])), uintptr(unsafe.Pointer(&m.h))); err != nil {
		e := err.(*Error)
		return nil, &Error{Status: e.Status, Msg: fmt.Sprintf("tessera: open %s: %s", path, e.Msg)}
	}
	runtime.KeepAlive(cdir)
	if m.inputs, err = m.tensorInfos(l.fn.numInputs, l.fn.inputInfo); err == nil {
		m.outputs, err = m.tensorInfos(l.fn.numOutputs, l.fn.outputInfo)
	}
	if err != nil {
		purego.SyscallN(l.fn.close, m.h)
		return nil, fmt.Errorf("tessera: open %s: %w", path, err)
	}
	n, _, _ := purego.SyscallN(l.fn.numSteps, m.h)
	for i := range int32(n) {
		p, _, _ := purego.SyscallN(l.fn.stepName, m.h, uintptr(i))
		m.steps = append(m.steps, cString(p))
	}
	p, _, _ := purego.SyscallN(l.fn.target, m.h)
	m.target = cString(p)
	var name uintptr
	if err := l.call(l.fn.batchRange, m.h, uintptr(unsafe.Pointer(&name)), uintptr(unsafe.Pointer(&m.batch.Lo)), uintptr(unsafe.Pointer(&m.batch.Hi))); err != nil {
		purego.SyscallN(l.fn.close, m.h)
		return nil, fmt.Errorf("tessera: open %s: %w", path, err)
	}
	m.batch.Name = cString(name)
	if err := l.call(l.fn.dimRange, m.h, uintptr(unsafe.Pointer(&name)), uintptr(unsafe.Pointer(&m.dim.Lo)), uintptr(unsafe.Pointer(&m.dim.Hi))); err != nil {
		purego.SyscallN(l.fn.close, m.h)
		return nil, fmt.Errorf("tessera: open %s: %w", path, err)
	}
	m.dim.Name = cString(name)
	if man != nil {
		if err := m.checkManifest(man); err != nil {
			purego.SyscallN(l.fn.close, m.h)
			return nil, err
		}
		m.manifest = man
	}
	return m, nil
}

// openManifest reads the manifest of the build folder dir for Open: nil
// where there is none, or, when Open was given the library lib rather
// than the folder, where the manifest names another library. Its errors
// are *Error: a missing file TESSERA_NOT_FOUND, any other fault
// TESSERA_BAD_LIBRARY, as VerifyLibrary classifies a damaged manifest.
func openManifest(dir, lib string) (*Manifest, error) {
	if lib != "" {
		data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
		var rec LibraryRecord
		if err != nil || json.Unmarshal(data, &rec) != nil || rec.Library != lib {
			return nil, nil // none, or another library's; VerifyLibrary judges a damaged one
		}
	}
	man, err := ReadManifest(dir)
	if errors.Is(err, ErrNoManifest) {
		return nil, nil
	}
	if err != nil {
		st := BadLibrary
		if errors.Is(err, fs.ErrNotExist) {
			st = NotFound
		}
		return nil, &Error{Status: st, Msg: err.Error()}
	}
	return man, nil
}

func (m *Model) tensorInfos(count, info uintptr) ([]TensorInfo, error) {
	n, _, _ := purego.SyscallN(count, m.h)
	out := make([]TensorInfo, int32(n))
	for i := range out {
		var name, shape uintptr
		var dtype, rank int32
		if err := m.lib.call(info, m.h, uintptr(i), uintptr(unsafe.Pointer(&name)), uintptr(unsafe.Pointer(&dtype)),
			uintptr(unsafe.Pointer(&rank)), uintptr(unsafe.Pointer(&shape))); err != nil {
			return nil, err
		}
		t := TensorInfo{Name: cString(name), DType: DType(dtype), Shape: make([]int64, rank)}
		if rank > 0 {
			copy(t.Shape, unsafe.Slice((*int64)(unsafe.Add(unsafe.Pointer(nil), shape)), rank))
		}
		out[i] = t
	}
	return out, nil
}

// Inputs and Outputs describe the model's tensors, in the order Run takes
// and returns them.
func (m *Model) Inputs() []TensorInfo  { return m.inputs }
func (m *Model) Outputs() []TensorInfo { return m.outputs }

// Steps names the executor's steps (one kernel call each), for
// SetProfile; nil for a model run in a child process (its Profile still
// times them: Manifest.Steps describes them).
func (m *Model) Steps() []string { return m.steps }

// Manifest is the manifest of the model's build folder; nil for a library
// opened without one (a --single-file library copied alone), which runs
// (Run, RunInto, RunNamed) but cannot be benchmarked or given float32
// values or files (RunFloat32, Bench, Profile, RunFiles: ErrNoManifest).
func (m *Model) Manifest() *Manifest { return m.manifest }

// Dir is the model's build folder: the folder Open was given, or its
// library's.
func (m *Model) Dir() string { return m.dir }

// Target is the target the library was built for (its records' key).
func (m *Model) Target() string { return m.target }

// Batch is the model's dynamic batch; the zero Batch for a model of
// static shapes.
func (m *Model) Batch() Batch { return m.batch }

// Dim is the dimension a model built over one takes at run time (a
// sequence length): its name and range; the zero Batch for a model
// without one.
func (m *Model) Dim() Batch { return m.dim }

// cTensor is tessera_tensor.
type cTensor struct {
	dtype int32
	rank  int32
	shape uintptr
	data  uintptr
	name  uintptr // names are checked here, not by the library: always NULL
}

// Run runs the model once on inputs (one per Inputs entry, of its dtype
// and shape) and returns new output tensors. In a model built over a
// dynamic batch, the run's batch is the leading dimension of its first
// batched input; in one built over a dimension given at run time, its
// value is where the first input that has it has it.
func (m *Model) Run(ctx context.Context, inputs []Tensor) ([]Tensor, error) {
	batch, dim, err := m.shapeOf(inputs)
	if err != nil {
		return nil, err
	}
	outs := make([]Tensor, len(m.outputs))
	for i, o := range m.outputs {
		o = o.At(batch).WithDim(dim)
		outs[i] = Tensor{DType: o.DType, Shape: o.Shape, Data: make([]byte, o.Elems()*o.DType.Size()), Name: o.Name}
	}
	if err := m.RunInto(ctx, inputs, outs); err != nil {
		return nil, err
	}
	return outs, nil
}

// shapeOf returns the batch and the value of the dimension given at run
// time of a run on inputs, as Run takes them from the inputs' shapes.
func (m *Model) shapeOf(inputs []Tensor) (batch, dim int64, err error) {
	batch, dim = 1, m.dim.Hi
	for i, t := range m.inputs {
		if len(t.Shape) > 0 && t.Shape[0] == -1 && i < len(inputs) && len(inputs[i].Shape) > 0 {
			batch = inputs[i].Shape[0]
			break
		}
	}
	if m.batch.Name != "" && (batch < m.batch.Lo || batch > m.batch.Hi) {
		return 0, 0, &Error{Status: ShapeMismatch, Msg: fmt.Sprintf("tessera: run: batch %s=%d is outside the range %d..%d the model was built for", m.batch.Name, batch, m.batch.Lo, m.batch.Hi)}
	}
dims:
	for i, t := range m.inputs {
		for k, d := range t.Shape {
			if d == -2 && i < len(inputs) && k < len(inputs[i].Shape) {
				dim = inputs[i].Shape[k]
				break dims
			}
		}
	}
	if m.dim.Name != "" && (dim < m.dim.Lo || dim > m.dim.Hi) {
		return 0, 0, &Error{Status: ShapeMismatch, Msg: fmt.Sprintf("tessera: run: %s=%d is outside the range %d..%d the model was built for", m.dim.Name, dim, m.dim.Lo, m.dim.Hi)}
	}
	return batch, dim, nil
}

// RunNamed runs the model once on inputs by name (every input of the
// model, once) and returns its outputs by name.
func (m *Model) RunNamed(ctx context.Context, inputs map[string]Tensor) (map[string]Tensor, error) {
	ordered := make([]Tensor, len(m.inputs))
	for name := range inputs {
		if !slices.ContainsFunc(m.inputs, func(t TensorInfo) bool { return t.Name == name }) {
			return nil, errorf(InvalidArgument, "tessera: run: the model has no input named %q (its inputs: %s)", name, m.names(m.inputs))
		}
	}
	for i, t := range m.inputs {
		in, ok := inputs[t.Name]
		if !ok {
			return nil, errorf(InvalidArgument, "tessera: run: input %q is missing (its inputs: %s)", t.Name, m.names(m.inputs))
		}
		in.Name = t.Name
		ordered[i] = in
	}
	outs, err := m.Run(ctx, ordered)
	if err != nil {
		return nil, err
	}
	named := make(map[string]Tensor, len(outs))
	for _, o := range outs {
		named[o.Name] = o
	}
	return named, nil
}

// names lists the tensors' names for a message.
func (m *Model) names(ts []TensorInfo) string {
	ns := make([]string, len(ts))
	for i, t := range ts {
		ns[i] = strconv.Quote(t.Name)
	}
	return strings.Join(ns, ", ")
}

// errClosed is the error of a call on a closed model.
func errClosed(call string) error {
	return errorf(InvalidArgument, "tessera: %s: the model is closed", call)
}

// RunInto runs the model once on inputs and writes its outputs into
// outputs, tensors of the dtypes and shapes Outputs gives, which must not
// overlap each other or the inputs. A tensor whose Name is set must be
// the model's tensor of that name at that position. ctx is checked before
// the run starts: a run, once started, finishes.
func (m *Model) RunInto(ctx context.Context, inputs, outputs []Tensor) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return errClosed("run")
	}
	for _, side := range []struct {
		what  string
		ts    []Tensor
		infos []TensorInfo
	}{{"input", inputs, m.inputs}, {"output", outputs, m.outputs}} {
		for i, t := range side.ts {
			if t.Name != "" && i < len(side.infos) && t.Name != side.infos[i].Name {
				return errorf(InvalidArgument, "tessera: run: %s %d is named %q, the model's %s %d is %q", side.what, i, t.Name, side.what, i, side.infos[i].Name)
			}
		}
	}
	if m.child != nil {
		return m.child.runInto(ctx, m, inputs, outputs)
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	cts := make([]cTensor, len(inputs)+len(outputs)+1)
	for i := range len(inputs) + len(outputs) {
		var t *Tensor
		if i < len(inputs) {
			t = &inputs[i]
		} else {
			t = &outputs[i-len(inputs)]
		}
		c := &cts[i]
		c.dtype, c.rank = int32(t.DType), int32(len(t.Shape))
		if len(t.Shape) > 0 {
			pin.Pin(&t.Shape[0])
			c.shape = uintptr(unsafe.Pointer(&t.Shape[0]))
		}
		if len(t.Data) > 0 {
			pin.Pin(&t.Data[0])
			c.data = uintptr(unsafe.Pointer(&t.Data[0]))
		}
		if want := tensorBytes(*t); want >= 0 && len(t.Data) < want {
			what, k := "input", i
			if i >= len(inputs) {
				what, k = "output", i-len(inputs)
			}
			return errorf(InvalidArgument, "tessera: run: %s %d has %d bytes of data, its dtype and shape need %d", what, k, len(t.Data), want)
		}
	}
	pin.Pin(&cts[0])
	in, out := &cts[0], &cts[len(inputs)]
	return m.lib.call(m.lib.fn.run, m.h, uintptr(unsafe.Pointer(in)), uintptr(len(inputs)), uintptr(unsafe.Pointer(out)), uintptr(len(outputs)))
}

// tensorBytes is the size of t's data by its dtype and shape, or -1 when
// the library is to judge them (an unknown dtype, a negative dimension, a
// size beyond int64).
func tensorBytes(t Tensor) int {
	n := t.DType.Size()
	if n == 0 {
		return -1
	}
	for _, d := range t.Shape {
		if d < 0 || (d > 0 && int64(n) > math.MaxInt64/d) {
			return -1
		}
		n *= int(d)
	}
	return n
}

// SetThreads sets the threads each later run of this model uses (0: the
// default, OMP_NUM_THREADS or every core).
func (m *Model) SetThreads(n int) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return errClosed("set threads")
	}
	if m.child != nil {
		m.child.threads.Store(int32(n))
		return nil
	}
	return m.lib.call(m.lib.fn.setThreads, m.h, uintptr(int32(n)))
}

// SetProfile makes every later run add the seconds each step takes to
// seconds[step] (len(Steps()) of them); nil stops it. seconds must stay
// alive, and pinned by the caller, while set: SetProfile pins it until
// the next SetProfile call or Close. Profile does it for a benchmark.
func (m *Model) SetProfile(seconds []float64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed("profile")
	}
	if m.child != nil {
		return errorf(InvalidArgument, "tessera: profile: %s runs in a child process: time its steps with Profile", m.dir)
	}
	if seconds != nil && len(seconds) < len(m.steps) {
		return errorf(InvalidArgument, "tessera: profile: %d seconds for %d steps", len(seconds), len(m.steps))
	}
	var p uintptr
	if len(seconds) > 0 {
		p = uintptr(unsafe.Pointer(&seconds[0]))
	}
	m.profilePin.Unpin()
	if len(seconds) > 0 {
		m.profilePin.Pin(&seconds[0])
	}
	return m.lib.call(m.lib.fn.profile, m.h, p, uintptr(int32(min(len(seconds), math.MaxInt32))))
}

// Close frees the model after the runs in progress end. The library stays
// loaded.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	if m.lib != nil {
		purego.SyscallN(m.lib.fn.close, m.h)
	}
	m.profilePin.Unpin()
	return nil
}

// OpenChecked opens the build folder dir (Open) once its manifest
// (ReadManifest) and, unless they are inside the library, its weights
// (VerifyWeights) are checked in Go: a damaged folder is named as such
// before its library loads (tune run and tune bench open one so).
func OpenChecked(dir string) (*Model, error) {
	man, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if !man.Weights.Embedded { // else inside the library, which checks them
		if err := VerifyWeights(filepath.Join(dir, man.Weights.File), man.Weights); err != nil {
			return nil, err
		}
	}
	return Open(dir)
}
