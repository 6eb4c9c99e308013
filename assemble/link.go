package assemble

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/tsrt"
)

// Compiling a model's library.
//
// On the CPU every kernel is its own translation unit, compiled to an
// object through the target's build cache (measure.Builder.Objects) as
// many at a time as the builder runs, once: a rebuild (other records for
// a few tasks, --single-file, another layout) compiles only the kernels
// it has not compiled before. A kernel's source is the one its tuning
// measured, byte for byte.
// Each object names its kernel tessera_kernel; a copy renamed
// tessera_kernelN (objcopy --redefine-sym) is linked with model.c's
// object into the library, whose version script exports only the ABI
// (tsrt.Exports). A GPU build's model.c is the whole library.

// KernelSource is one CPU kernel of a build: its C, whose entry is
// measure.KernelName, renamed Name when linked.
type KernelSource struct {
	Name string // tessera_kernelN; tessera_kernelN_cM, class M of a family
	Code string
}

// file is the path, in a build folder, of the kernel's source:
// kernels/kernelN.c.
func (k KernelSource) file() string {
	return filepath.Join("kernels", strings.TrimPrefix(k.Name, "tessera_")+".c")
}

// compileLibrary compiles the library of f for tg and returns its bytes.
func compileLibrary(ctx context.Context, f *Files, tg *backend.Target) ([]byte, error) {
	b := tg.Host
	if len(f.Kernels) == 0 {
		built := b.Build(ctx, []measure.Source{{Code: f.Source, Files: f.Runtime}})[0]
		if built.Kind != measure.None {
			return nil, fmt.Errorf("compiling %s: %s: %s", SourceFile, built.Kind, built.Msg)
		}
		return os.ReadFile(built.Path)
	}
	srcs := make([]measure.Source, 0, len(f.Kernels)+1)
	srcs = append(srcs, measure.Source{Code: f.Source, Files: f.Runtime})
	for _, k := range f.Kernels {
		srcs = append(srcs, measure.Source{Code: k.Code})
	}
	objs := b.Objects(ctx, srcs)
	for i, o := range objs {
		if o.Kind != measure.None {
			name := SourceFile
			if i > 0 {
				name = f.Kernels[i-1].file()
			}
			return nil, fmt.Errorf("compiling %s: %s: %s", name, o.Kind, o.Msg)
		}
	}
	scratch, err := measure.TempDir("tessera-link")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	objcopy := objcopyFor(b.Command())
	paths := []string{objs[0].Path}
	for i, o := range objs[1:] {
		dst := filepath.Join(scratch, fmt.Sprintf("kernel%d.o", i))
		cmd := exec.CommandContext(ctx, objcopy, "--redefine-sym", measure.KernelName+"="+f.Kernels[i].Name, o.Path, dst)
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s (renaming kernel %d): %v: %s", objcopy, i, err, strings.TrimSpace(string(out)))
		}
		paths = append(paths, dst)
	}
	script := filepath.Join(scratch, "exports.map")
	if err := os.WriteFile(script, []byte(versionScript()), 0o644); err != nil {
		return nil, err
	}
	lib := filepath.Join(scratch, tsrt.LibraryFile)
	built := b.Link(ctx, lib, paths, []string{"-Wl,--version-script=" + script})
	if built.Kind != measure.None {
		return nil, fmt.Errorf("linking %s: %s: %s", tsrt.LibraryFile, built.Kind, built.Msg)
	}
	return os.ReadFile(lib)
}

// versionScript exports the ABI's functions and nothing else.
func versionScript() string {
	return "{\n  global:\n    " + strings.Join(tsrt.Exports, ";\n    ") + ";\n  local: *;\n};\n"
}

// objcopyFor returns the objcopy of the binutils that go with the C
// compiler argv: a cross compiler's own (aarch64-linux-gnu-gcc:
// aarch64-linux-gnu-objcopy), else the host's.
func objcopyFor(argv []string) string {
	cc := filepath.Base(argv[len(argv)-1])
	if i := strings.LastIndex(cc, "-"); i > 0 && (strings.HasSuffix(cc, "-gcc") || strings.HasSuffix(cc, "-cc")) {
		return cc[:i+1] + "objcopy"
	}
	return "objcopy"
}
