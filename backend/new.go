package backend

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/measure"
)

// Config names a target the way tune's flags do (--target, --cpu,
// --threads): what New needs to make any of them.
type Config struct {
	Name string // one of Names
	// CPU is the cpu target's machine: native (this host), a portable
	// level or a compiler -march name (machine.Resolve). A GPU target
	// takes none but DefaultCPU.
	CPU     string
	Threads int                // the cpu target's thread count
	Run     measure.RunOptions // the timing protocol; zero: the search's
	// Host is the C compiler of candidates (cpu), of GPU runners and of
	// built model libraries.
	Host *measure.Builder
	// Measures says candidates are measured on this host: the cpu
	// target's machine must run here.
	Measures bool
}

// New makes the target cfg names. A GPU target asks its device for its
// limits first: without one the error says what is missing (no device,
// driver or runtime compiler). The errors speak of tune's --target and
// --cpu flags.
func New(cfg Config) (*Target, error) {
	// A GPU target refuses a --cpu given on its command line; the default
	// ($TESSERA_CPU) is the cpu target's only.
	if cfg.Name != "cpu" && cfg.CPU != "" && cfg.CPU != "native" && cfg.CPU != DefaultCPU() {
		return nil, fmt.Errorf("--cpu %s: only the cpu target takes --cpu, not %s", cfg.CPU, cfg.Name)
	}
	switch cfg.Name {
	case "cpu":
		m, err := ResolveMachine(cfg.CPU, cfg.Host)
		if err != nil {
			return nil, err
		}
		if err := crossCompiler(cfg.CPU, m, cfg.Host); err != nil {
			return nil, err
		}
		if cfg.Measures {
			if err := RunsHere(m); err != nil {
				return nil, fmt.Errorf("--cpu %s: %w: it can build for %s (tune build --cpu %s) but not measure its code", cfg.CPU, err, cfg.CPU, cfg.CPU)
			}
		}
		return CPU(CPUConfig{Threads: cfg.Threads, Builder: cfg.Host, Run: cfg.Run, Machine: m}), nil
	case "opencl":
		return OpenCL(context.Background(), GPUConfig{Host: cfg.Host, Run: cfg.Run})
	case "cuda":
		return CUDA(context.Background(), GPUConfig{Host: cfg.Host, Run: cfg.Run})
	}
	return nil, fmt.Errorf("--target %q: %w (known: %s)", cfg.Name, ErrUnknown, strings.Join(Names, ", "))
}

// ResolveMachine returns the machine model cpu names (machine.Resolve,
// with host's compiler); its error speaks of --cpu.
func ResolveMachine(cpu string, host *measure.Builder) (machine.Machine, error) {
	m, err := machine.Resolve(cpu, host.Command())
	if err != nil {
		return machine.Machine{}, fmt.Errorf("--cpu: %w", err)
	}
	return m, nil
}

// DefaultCPU is the CPU a cpu target compiles for where none is named
// (tune's --cpu default): $TESSERA_CPU where set, else native.
func DefaultCPU() string {
	if c := os.Getenv("TESSERA_CPU"); c != "" {
		return c
	}
	return "native"
}

// crossCompilers are the C compilers Debian packages for the other
// architectures a model can be built for (gcc-aarch64-linux-gnu, ...).
var crossCompilers = map[string]string{"arm64": "aarch64-linux-gnu-gcc", "amd64": "x86-64-linux-gnu-gcc"}

// crossCompiler gives host the cross compiler of m's architecture when m
// is not this machine's and no compiler was chosen ($CC, or the builder's
// own): --cpu armv8-a on x86-64 builds with aarch64-linux-gnu-gcc. It is
// an error, naming the package to install, where there is none.
func crossCompiler(cpu string, m machine.Machine, host *measure.Builder) error {
	if host == nil || m.Arch == runtime.GOARCH || host.CC != "" || os.Getenv("CC") != "" {
		return nil
	}
	cc, ok := crossCompilers[m.Arch]
	if !ok {
		return nil
	}
	if _, err := exec.LookPath(cc); err != nil {
		return fmt.Errorf("--cpu %s builds %s code: no %s on the PATH (Debian: apt-get install gcc-%s; or set CC to a cross compiler)",
			cpu, m.Arch, cc, strings.TrimSuffix(cc, "-gcc"))
	}
	host.CC = cc
	return nil
}
