package tsrt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"unsafe"

	"github.com/ebitengine/purego"
)

// library is one loaded libmodel.so and its API. A library stays loaded
// for the life of the process (its OpenMP threads may outlive a model),
// and loading one file twice gives the same library. A file replaced at
// the same path (a rebuild) is another library: the dynamic loader would
// give the old one for the path, so the new one is loaded from a private
// copy.
type library struct {
	path string
	id   fileID
	fn   struct {
		abiVersion, open, close, numInputs, numOutputs, inputInfo, outputInfo,
		run, setThreads, numSteps, stepName, profile, target, lastError, batchRange, dimRange uintptr
	}
}

// fileID tells one file from another at the same path.
type fileID struct {
	dev, ino  uint64
	size      int64
	mtimeNano int64
}

func identify(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	id := fileID{size: fi.Size(), mtimeNano: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(st.Dev), st.Ino
	}
	return id, nil
}

var (
	librariesMu sync.Mutex
	libraries   = map[string]*library{} // by absolute path: the library loaded from it
	loadedPaths = map[string]bool{}     // paths the dynamic loader has seen
)

func loadLibrary(path string) (*library, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	librariesMu.Lock()
	defer librariesMu.Unlock()
	id, err := identify(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errorf(NotFound, "tessera: %s: no such file (not a build folder, or its library is missing)", abs)
		}
		return nil, fmt.Errorf("tessera: %w", err)
	}
	if l := libraries[abs]; l != nil && l.id == id {
		return l, nil
	}
	if err := VerifyLibrary(abs); err != nil {
		return nil, err
	}
	load := abs
	if loadedPaths[abs] {
		// Rebuilt since it was loaded: load a private copy.
		tmp, err := copyToTemp(abs)
		if err != nil {
			return nil, fmt.Errorf("tessera: load %s: %w", abs, err)
		}
		defer os.Remove(tmp)
		load = tmp
	}
	h, err := purego.Dlopen(load, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, errorf(BadLibrary, "tessera: load %s: %v", abs, err)
	}
	loadedPaths[load] = true
	l := &library{path: abs, id: id}
	for _, s := range []struct {
		name string
		p    *uintptr
	}{
		{"tessera_abi_version", &l.fn.abiVersion}, {"tessera_open", &l.fn.open}, {"tessera_close", &l.fn.close},
		{"tessera_num_inputs", &l.fn.numInputs}, {"tessera_num_outputs", &l.fn.numOutputs},
		{"tessera_input_info", &l.fn.inputInfo}, {"tessera_output_info", &l.fn.outputInfo},
		{"tessera_run", &l.fn.run}, {"tessera_set_num_threads", &l.fn.setThreads},
		{"tessera_num_steps", &l.fn.numSteps}, {"tessera_step_name", &l.fn.stepName},
		{"tessera_profile", &l.fn.profile}, {"tessera_target", &l.fn.target},
		{"tessera_last_error", &l.fn.lastError}, {"tessera_batch_range", &l.fn.batchRange}, {"tessera_dim_range", &l.fn.dimRange},
	} {
		p, err := purego.Dlsym(h, s.name)
		if err != nil {
			return nil, errorf(ABIMismatch, "tessera: %s has no %s: not a library built by tune build with ABI version %d (rebuild the model)", abs, s.name, ABIVersion)
		}
		*s.p = p
	}
	if v, _, _ := purego.SyscallN(l.fn.abiVersion); uint32(v) != ABIVersion {
		return nil, &Error{Status: ABIMismatch, Msg: fmt.Sprintf("%s implements ABI version %d, this package version %d", abs, uint32(v), ABIVersion)}
	}
	libraries[abs] = l
	return l, nil
}

// copyToTemp copies the file at path to a new temporary file.
func copyToTemp(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "tessera-lib-*.so")
	if err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// lastError returns this thread's tessera_last_error. The caller must be
// on the thread of the failed call (a runner: call).
func (l *library) lastError() string {
	p, _, _ := purego.SyscallN(l.fn.lastError)
	return cString(p)
}

// cString copies the NUL-terminated C string at p.
func cString(p uintptr) string {
	if p == 0 {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(nil), p+uintptr(n))) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), p)), n))
}

// call runs fn with args on a runner thread (threads.go) and returns its
// status as an *Error (nil for TESSERA_OK), with the message the library
// gives for that thread.
//
// The caller's goroutine waits parked while the runner makes the call, and
// the garbage collector may move a parked goroutine's stack: a pointer
// converted to uintptr in a call of call is therefore moved to the heap and
// kept alive until call returns (go:uintptrescapes), as purego.SyscallN
// does for its own arguments.
//
//go:uintptrescapes
func (l *library) call(fn uintptr, args ...uintptr) error {
	var err error
	onRunner(func() {
		st, _, _ := purego.SyscallN(fn, args...)
		if Status(int32(st)) != OK {
			err = &Error{Status: Status(int32(st)), Msg: l.lastError()}
		}
	})
	return err
}
