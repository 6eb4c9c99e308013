package backend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/measure"
)

// Peak is one core's measured arithmetic peak for a machine's code: what
// the FMA-throughput probe reached with the machine's vectors (fused
// multiply-adds, or a multiply and an add where the ISA has no FMA).
type Peak struct {
	// GFLOPS is one core's float32 peak in GFLOP/s (an FMA is two).
	GFLOPS float64 `json:"gflops"`
	// GHz is the core clock the probe ran at (a chain of dependent adds).
	GHz float64 `json:"ghz"`
	// FMAUnits is how many vector FMAs of the machine's width a core
	// issues per cycle: the peak over clock, lanes and 2; 0 without FMA.
	FMAUnits int `json:"fma_units"`
}

// String is "57.6 GFLOP/s per core (2 FMA units of 256 bits at 3.60 GHz)".
func (p Peak) String() string {
	if p.FMAUnits == 0 {
		return fmt.Sprintf("%.1f GFLOP/s per core (no FMA; %.2f GHz)", p.GFLOPS, p.GHz)
	}
	return fmt.Sprintf("%.1f GFLOP/s per core (%d FMA units at %.2f GHz)", p.GFLOPS, p.FMAUnits, p.GHz)
}

// MachineReport is what tune machine shows: the machine model a cpu
// name resolves to, the portable levels this host runs, and with --peak
// one core's measured FMA peak for it (tune machine --json).
type MachineReport struct {
	machine.Report
	Peak *Peak `json:"peak,omitempty"`
}

// Machine returns the report of the machine model cpu resolves to
// (ResolveMachine) next to this host's, with peak one core's FMA peak
// for it (MeasurePeak).
func Machine(ctx context.Context, cpu string, peak bool) (*MachineReport, error) {
	b := &measure.Builder{}
	m, err := ResolveMachine(cpu, b)
	if err != nil {
		return nil, err
	}
	r := &MachineReport{Report: m.Report(NativeMachine())}
	if !peak {
		return r, nil
	}
	p, err := MeasurePeak(ctx, b, m)
	if err != nil {
		return nil, err
	}
	r.Peak = &p
	return r, nil
}

// Write writes the report as tune machine prints it (machine.Report's
// lines, then "peak: ...").
func (r *MachineReport) Write(w io.Writer) error {
	r.Report.Write(w)
	if r.Peak == nil {
		return nil
	}
	_, err := fmt.Fprintf(w, "peak: %s\n", r.Peak)
	return err
}

// WriteMachine writes what tune machine shows: the machine model cpu
// resolves to (ResolveMachine) next to this host's, and with peak one
// core's FMA peak for it (MeasurePeak).
func WriteMachine(ctx context.Context, w io.Writer, cpu string, peak bool) error {
	r, err := Machine(ctx, cpu, peak)
	if err != nil {
		return err
	}
	return r.Write(w)
}

// MeasurePeak runs the FMA-throughput probe for machine m on this host,
// compiled by b for m, once per machine: the result is cached in the user's
// cache directory under the host's model and m's key. The probe keeps
// VectorRegs−2 independent vector accumulators busy (enough to cover the
// FMA latency of every core Tessera has met) and times the best of seven
// runs; the clock comes from a chain of dependent integer adds, one per
// cycle. Benchmarks quote their figures as shares of it.
func MeasurePeak(ctx context.Context, b *measure.Builder, m machine.Machine) (Peak, error) {
	if err := RunsHere(m); err != nil {
		return Peak{}, fmt.Errorf("peak of %s: %w", m.Name, err)
	}
	sum := sha256.Sum256([]byte(NativeMachine().Model + "\x00" + m.Key() + "\x00" + strings.Join(b.Command(), " ")))
	cache := ""
	if dir, err := os.UserCacheDir(); err == nil {
		cache = filepath.Join(dir, "tessera", "peak-"+hex.EncodeToString(sum[:8])+".json")
		if data, err := os.ReadFile(cache); err == nil {
			var p Peak
			if json.Unmarshal(data, &p) == nil && p.GFLOPS > 0 {
				return p, nil
			}
		}
	}
	acc := max(1, min(m.VectorRegs-2, 12))
	src := peakSource(m, acc)
	flags := append([]string{"-O2", "-std=gnu11", "-ffp-contract=fast"}, m.Flags()...)
	exe, err := b.BuildProgram(ctx, "peak", measure.Source{Code: src}, flags, nil)
	if err != nil {
		return Peak{}, fmt.Errorf("peak probe: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe).Output()
	if err != nil {
		return Peak{}, fmt.Errorf("peak probe: %w", err)
	}
	var flops, adds float64
	if _, err := fmt.Sscanf(string(out), "flops %g adds %g", &flops, &adds); err != nil || flops <= 0 || adds <= 0 {
		return Peak{}, fmt.Errorf("peak probe printed %q", out)
	}
	p := Peak{GFLOPS: flops / 1e9, GHz: adds / 1e9}
	if m.FMA {
		p.FMAUnits = int(math.Round(flops / adds / float64(2*m.Lanes())))
	}
	if cache != "" {
		if data, err := json.Marshal(p); err == nil {
			_ = os.MkdirAll(filepath.Dir(cache), 0o755)
			_ = os.WriteFile(cache, data, 0o644)
		}
	}
	return p, nil
}

// peakSource is the probe's C: acc chains of x = x·a + b on vectors of m's
// width (one FMA each where m has FMA), then a chain of dependent adds.
func peakSource(m machine.Machine, acc int) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("#include <stdio.h>\n#include <stdint.h>\n#include <time.h>")
	w("typedef float vf __attribute__((vector_size(%d)));", m.VectorBytes)
	w("static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }")
	w("int main(void) {")
	w("  volatile float seed = 1.0f;")
	w("  vf a = (vf){} + seed * 0.999999f, c = (vf){} + seed * 1e-7f;")
	for i := range acc {
		w("  vf x%d = (vf){} + seed * %d.0f;", i, i+1)
	}
	w("  const long n = 1L << 22;")
	w("  double best = 1e30;")
	w("  for (int rep = 0; rep < 7; rep++) {")
	w("    double t0 = now();")
	w("    for (long i = 0; i < n; i++) {")
	for i := range acc {
		w("      x%d = x%d * a + c;", i, i)
	}
	w("    }")
	w("    double t = now() - t0;")
	w("    if (t < best) best = t;")
	w("  }")
	var sum []string
	for i := range acc {
		sum = append(sum, fmt.Sprintf("x%d[0]", i))
	}
	w("  volatile float sink = %s;", strings.Join(sum, " + "))
	w("  (void)sink;")
	w("  double flops = (double)n * %d * %d * 2 / best;", acc, m.Lanes())
	// One add per cycle: the chain's adds depend on each other.
	add := `"add $1, %0\n\t"`
	if m.Arch == "arm64" {
		add = `"add %0, %0, #1\n\t"`
	}
	w("  uint64_t r = 0; double bestAdd = 1e30; const long na = 1L << 20;")
	w("  for (int rep = 0; rep < 7; rep++) {")
	w("    double t0 = now();")
	w("    for (long i = 0; i < na; i++) __asm__ volatile(%s : \"+r\"(r));", strings.Repeat(add, 64))
	w("    double t = now() - t0;")
	w("    if (t < bestAdd) bestAdd = t;")
	w("  }")
	w("  printf(\"flops %%g adds %%g\\n\", flops, (double)na * 64 / bestAdd + (double)(r & 0));")
	w("  return 0;")
	w("}")
	return b.String()
}
