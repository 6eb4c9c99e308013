// Package benchutil holds what the programs under bench/ share: building
// schedules into kernels, timing several kernels in alternating child
// processes, and printing figures as "name = value" lines.
package benchutil

import (
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
)

// KernelName is the symbol every benchmark kernel exports.
const KernelName = "tessera_kernel"

// Kernel is one contender: a name and a built library.
type Kernel struct {
	Name      string
	Lib       string
	Args      []measure.Arg
	Workspace int // bytes after the args (measure.Program.Workspace)
}

// Job is the job that runs the kernel on random inputs (seed 1).
func (k Kernel) Job() measure.Job {
	return measure.Job{Lib: k.Lib, Entry: KernelName, Args: k.Args, Workspace: k.Workspace, Seed: 1}
}

// Lower prints a schedule as C for machine m.
func Lower(s *schedule.State, m machine.Machine) (measure.Program, error) {
	f, err := schedule.Lower(s, KernelName)
	if err != nil {
		return measure.Program{}, err
	}
	src, err := codegen.C(f, codegen.COptions{VectorBits: m.VectorBits()})
	if err != nil {
		return measure.Program{}, err
	}
	return measure.Program{Code: src.Code, Entry: KernelName, Workspace: src.Workspace[0]}, nil
}

// Machine is a benchmark's --cpu: the machine its kernels are compiled for,
// the builder that compiles them, and one core's measured peak there.
type Machine struct {
	machine.Machine
	Builder *measure.Builder
	Peak    backend.Peak
}

// CPU resolves a benchmark's --cpu (native, a level, a -march name) on this
// host, measures its peak, and restricts the peers to its ISA level in this
// process's environment, which every timed child inherits (PeerISA). It
// prints the header line naming the CPU, the ISA and the peak.
func CPU(ctx context.Context, name string, b *measure.Builder) (Machine, error) {
	m, err := machine.Resolve(name, b.Command())
	if err != nil {
		return Machine{}, fmt.Errorf("--cpu: %w", err)
	}
	if err := backend.RunsHere(m); err != nil {
		return Machine{}, fmt.Errorf("--cpu %s: %w", name, err)
	}
	b.March, b.Tune = m.March, m.Tune
	p, err := backend.MeasurePeak(ctx, b, m)
	if err != nil {
		return Machine{}, err
	}
	env := PeerISA(m)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return Machine{}, err
		}
	}
	peers := "not restricted (no level of theirs matches)"
	if len(env) > 0 {
		peers = "restricted to " + m.Level + ": " + strings.Join(env, " ")
	}
	fmt.Printf("%s\npeak: %s; peers %s\n", m, p, peers)
	return Machine{Machine: m, Builder: b, Peak: p}, nil
}

// PeerISA returns the environment that restricts the peers to m's ISA
// level where they allow it: OpenBLAS's core type and oneDNN's highest
// ISA. For native too, the peers get the level this machine reaches: a
// core type set in the environment (some machines set OPENBLAS_CORETYPE
// because older OpenBLAS builds misdetect their processor) would otherwise
// race an AVX2 OpenBLAS against AVX-512 code. A machine with dot-product
// instructions beyond its level (VNNI, AVX512_BF16: the native machine on such
// a CPU, or a named CPU that has them) lets oneDNN use them too, as
// Tessera's code does: its int8 GEMM is exact with VNNI, saturating pairs
// without.
func PeerISA(m machine.Machine) []string {
	var blas, dnnl string
	switch m.Level {
	case "x86-64-v2":
		blas, dnnl = "Nehalem", "SSE41"
	case "x86-64-v3":
		blas, dnnl = "Haswell", "AVX2"
		if m.Has("avxvnni") {
			dnnl = "AVX2_VNNI"
		}
	case "x86-64-v4":
		blas, dnnl = "SkylakeX", "AVX512_CORE"
		switch {
		case m.Has("avx512bf16") && m.Has("avx512vnni"):
			dnnl = "AVX512_CORE_BF16"
		case m.Has("avx512vnni"):
			dnnl = "AVX512_CORE_VNNI"
		}
	default:
		return nil
	}
	return []string{"OPENBLAS_CORETYPE=" + blas, "ONEDNN_MAX_CPU_ISA=" + dnnl, "DNNL_MAX_CPU_ISA=" + dnnl}
}

// Share prints a figure as a share of the machine's peak on threads cores.
func (m Machine) Share(gflops float64, threads int) string {
	return fmt.Sprintf("%.0f%% of the %s peak (%.1f GFLOP/s on %d core(s))", 100*gflops/(m.Peak.GFLOPS*float64(threads)), m.Level, m.Peak.GFLOPS*float64(threads), threads)
}

// Build compiles programs with b; it fails on the first error.
func Build(ctx context.Context, b *measure.Builder, names []string, progs []measure.Program, args []measure.Arg) ([]Kernel, error) {
	in := make([]measure.Source, len(progs))
	for i, p := range progs {
		in[i] = measure.Source{Code: p.Code}
	}
	out := b.Build(ctx, in)
	ks := make([]Kernel, len(out))
	for i, r := range out {
		if r.Kind != measure.None {
			return nil, fmt.Errorf("build %s: %v: %s", names[i], r.Kind, r.Msg)
		}
		ks[i] = Kernel{Name: names[i], Lib: r.Path, Args: args, Workspace: progs[i].Workspace}
	}
	return ks, nil
}

// Timings holds, per kernel, the median seconds per call of each round.
type Timings map[string][]float64

// Alternate runs the kernels in turn, each in its own process, for the given
// number of rounds (A B C A B C ...), so that drift of the machine's speed
// hits all of them alike.
func Alternate(ctx context.Context, r *measure.Runner, ks []Kernel, rounds int) (Timings, error) {
	t := Timings{}
	for round := 0; round < rounds; round++ {
		jobs := make([]measure.Job, len(ks))
		for i, k := range ks {
			jobs[i] = k.Job()
		}
		for i, res := range r.Run(ctx, jobs) {
			if res.Kind != measure.None {
				return nil, fmt.Errorf("run %s: %v: %s", ks[i].Name, res.Kind, res.Msg)
			}
			t[ks[i].Name] = append(t[ks[i].Name], res.Median())
		}
	}
	return t, nil
}

// MinMedian returns the minimum and the median of xs.
func MinMedian(xs []float64) (float64, float64) {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return math.NaN(), math.NaN()
	}
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[0], med
}

// Ratios returns a[i]/b[i] for each round.
func Ratios(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] / b[i]
	}
	return out
}

// Report prints each kernel's GFLOP/s (median and best over rounds) and
// its share of m's peak on threads cores, the per-round speed ratio of
// fast over base, and last the line "label = R" with the median ratio.
func Report(flops float64, tm Timings, ks []Kernel, fast, base, label string, m Machine, threads int) {
	for _, k := range ks {
		lo, med := MinMedian(tm[k.Name])
		fmt.Printf("%s GFLOP/s = %.2f (median; best %.2f) = %s\n", k.Name, flops/med/1e9, flops/lo/1e9, m.Share(flops/med/1e9, threads))
	}
	lo, med := MinMedian(Ratios(tm[base], tm[fast]))
	fmt.Printf("speed ratio per round: min %.2f median %.2f\n", lo, med)
	fmt.Printf("%s = %.2f\n", label, med)
}

// OpenBLASGEMM returns a kernel source with the benchmark ABI that
// computes args[2] = args[0] · args[1] (n×n row-major) with OpenBLAS's
// cblas_sgemm on as many threads as OpenMP is given. Build it with
// -lopenblas.
func OpenBLASGEMM(n int) string {
	return fmt.Sprintf(`#include <cblas.h>
#include <omp.h>
int %s(float *const *args) {
	openblas_set_num_threads(omp_get_max_threads());
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, %d, %d, %d, 1.0f, args[0], %d, args[1], %d, 0.0f, args[2], %d);
	return 0;
}
`, KernelName, n, n, n, n, n, n)
}

// Fatal prints the error and exits.
func Fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
