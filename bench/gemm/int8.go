package main

import (
	"context"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/tessera-ml/tessera/bench/internal/benchutil"
	"github.com/tessera-ml/tessera/internal/cli"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// The int8 race (-dtype int8): C = A·B for uint8 A and int8 B, int32 C,
// n×n×n, Tessera's default schedule of te.IntMatMul with k in groups of
// four (the dot-product form its code generator emits as one vpdpbusd
// with VNNI, as vpmaddubsw and vpmaddwd on AVX2) against oneDNN's
// dnnl_gemm_u8s8s32.
//
// On a CPU with VNNI, B spans int8 and both kernels sum every group of
// four products exactly (vpdpbusd). Elsewhere B holds 7-bit weights,
// [-64, 63] (onnxruntime's reduce_range, tune quantize --reduce-range):
// both kernels sum each pair of products in int16 (vpmaddubsw), exact
// only where no pair can leave int16, and Tessera's kernel is the
// saturated-pair form (te.IntMatMulOptions.SaturatePairs) only where that
// holds — as a model's build chooses (cli.ExactDots). B is a constant,
// packed by the schedule's rewrite_layout at build time as a model's
// weights are; oneDNN's GEMM, like BLAS, packs on every call.
//
// The peak is the int8 multiply-add rate of the machine's dot-product
// instructions, measured by a probe of independent chains: vpdpbusd with
// AVX-512 VNNI or AVX-VNNI, else vpmaddubsw + vpmaddwd + vpaddd (SSSE3 at
// x86-64-v2).

//go:embed onednn/u8s8s32.c
var onednnGEMMSrc string

// int8DAG is the race's computation: the exact groups (exact: the CPU
// sums four products in one instruction) or the saturated pairs.
func int8DAG(n int, exact bool) (*te.DAG, error) {
	a := te.TypedPlaceholder("A", tir.Uint8, n, n)
	b := te.TypedPlaceholder("B", tir.Int8, n, n)
	b.Const = true
	c, err := te.IntMatMul("C", a, b, te.IntMatMulOptions{Dot: 4, SaturatePairs: !exact})
	if err != nil {
		return nil, err
	}
	return te.NewDAG(c)
}

// int8Inputs are A's and B's values (uint8; int8, 7-bit unless full) as
// slots, B in its logical layout.
func int8Inputs(n int, full bool) (a, b []float32) {
	rng := rand.New(rand.NewPCG(2026, 12))
	a, b = make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i] = tir.IntSlot(int64(rng.IntN(256)))
		if full {
			b[i] = tir.IntSlot(int64(rng.IntN(256) - 128))
		} else {
			b[i] = tir.IntSlot(int64(rng.IntN(128) - 64))
		}
	}
	return a, b
}

func runInt8(n, threads, rounds int, m benchutil.Machine, dump string) error {
	ctx := context.Background()
	exact := cli.ExactDots(m.Machine)
	d, err := int8DAG(n, exact)
	if err != nil {
		return err
	}
	st, rule, err := sketch.Default(schedule.NewState(d), sketch.CPUOptions(m.Machine))
	if err != nil {
		return fmt.Errorf("default schedule: %w", err)
	}
	f, err := schedule.Lower(st, benchutil.KernelName)
	if err != nil {
		return err
	}
	prog, err := benchutil.Lower(st, m.Machine)
	if err != nil {
		return err
	}
	if dump != "" {
		if err := os.WriteFile(dump+".c", []byte(prog.Code), 0o644); err != nil {
			return err
		}
	}
	if !strings.Contains(prog.Code, "tsr_dot4") {
		return fmt.Errorf("the default int8 GEMM kernel calls no dot-product helper (tsr_dot4*): code generation did not find the groups")
	}
	args := measure.FuncArgs(f, 1)
	tk, err := benchutil.Build(ctx, m.Builder, []string{"tessera"}, []measure.Program{prog}, args)
	if err != nil {
		return err
	}
	b := &measure.Builder{Flags: append(measure.DefaultFlags(), "-Wl,--no-as-needed", "-ldnnl")}
	ok, err := benchutil.Build(ctx, b, []string{"onednn"}, []measure.Program{{Code: fmt.Sprintf("#define GEMM_N %d\n", n) + onednnGEMMSrc}}, measure.Args(d))
	if err != nil {
		return fmt.Errorf("%w (is libdnnl-dev installed? scripts/deps.sh installs it)", err)
	}
	ks := []benchutil.Kernel{tk[0], ok[0]}

	// Both compute the same product, the exact one.
	av, bv := int8Inputs(n, exact)
	packed := bv
	if p := f.Params[1].Packed; p != nil {
		packed = p.Pack(bv)
	}
	checker := &measure.Runner{Opts: measure.RunOptions{Threads: threads, Number: 1, Repeat: 1, MinRepeatMs: -1, Check: true, Timeout: 120e9}}
	defer checker.Close()
	var outs [][]float32
	for i, k := range ks {
		j := k.Job()
		j.Inputs = [][]float32{av, bv}
		if i == 0 {
			j.Inputs[1] = packed
		}
		res := checker.Run(ctx, []measure.Job{j})[0]
		if res.Kind != measure.None {
			return fmt.Errorf("%s: %v: %s", k.Name, res.Kind, res.Msg)
		}
		outs = append(outs, res.Outputs[0])
	}
	if err := checkInt8Product(n, av, bv, outs, []string{"tessera", "onednn"}); err != nil {
		return err
	}

	peak, isa, err := int8Peak(ctx, m)
	if err != nil {
		return err
	}
	ops := 2 * float64(n) * float64(n) * float64(n)
	bRange := "7-bit B: no dot-product instruction sums four products exactly"
	if exact {
		bRange = "full-range B, exact groups"
	}
	fmt.Printf("gemm %d×%d×%d u8×s8→s32 (%s), %d thread(s), %d alternating rounds, each kernel in its own process\n", n, n, n, bRange, threads, rounds)
	fmt.Printf("tessera: default schedule (%s)\n", rule)
	fmt.Printf("int8 peak: %.1f GOP/s per core (%s)\n", peak/1e9, isa)
	r := &measure.Runner{Opts: measure.RunOptions{Threads: threads, Repeat: 3, MinRepeatMs: 200, Timeout: 600e9}}
	defer r.Close()
	tm, err := benchutil.Alternate(ctx, r, ks, rounds)
	if err != nil {
		return err
	}
	for _, k := range ks {
		lo, med := benchutil.MinMedian(tm[k.Name])
		fmt.Printf("%s GOP/s = %.1f (median; best %.1f) = %.0f%% of the int8 peak on %d core(s)\n", k.Name, ops/med/1e9, ops/lo/1e9, 100*ops/med/(peak*float64(threads)), threads)
	}
	lo, med := benchutil.MinMedian(benchutil.Ratios(tm["onednn"], tm["tessera"]))
	fmt.Printf("speed ratio per round: min %.2f median %.2f\n", lo, med)
	fmt.Printf("github.com/tessera-ml/tessera/onednn-u8s8s32 = %.2f\n", med)
	return nil
}

// checkInt8Product checks every kernel's output against A·B computed here.
func checkInt8Product(n int, a, b []float32, outs [][]float32, names []string) error {
	ai, bi := make([]int64, len(a)), make([]int64, len(b))
	for i := range a {
		ai[i], bi[i] = tir.SlotInt(tir.Uint8, a[i]), tir.SlotInt(tir.Int8, b[i])
	}
	row := make([]int64, n)
	for i := range n {
		clear(row)
		for k := range n {
			x := ai[i*n+k]
			for j, w := range bi[k*n : (k+1)*n] {
				row[j] += x * w
			}
		}
		for o, out := range outs {
			for j := range n {
				if got := tir.SlotInt(tir.Int32, out[i*n+j]); got != row[j] {
					return fmt.Errorf("%s: C[%d, %d] = %d, want %d", names[o], i, j, got, row[j])
				}
			}
		}
	}
	return nil
}

// int8Peak measures one core's u8×s8 multiply-add rate (multiply-adds
// counted as two operations) with the machine's dot-product instructions.
func int8Peak(ctx context.Context, m benchutil.Machine) (float64, string, error) {
	flags := append([]string{"-O2", "-std=gnu11"}, m.Flags()...)
	exe, err := m.Builder.BuildProgram(ctx, "int8peak", measure.Source{Code: int8PeakSrc}, flags, nil)
	if err != nil {
		return 0, "", fmt.Errorf("int8 peak probe: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe).Output()
	if err != nil {
		return 0, "", fmt.Errorf("int8 peak probe: %w", err)
	}
	var macs float64
	var isa string
	if _, err := fmt.Sscanf(string(out), "macs %g isa %s", &macs, &isa); err != nil || macs <= 0 {
		return 0, "", fmt.Errorf("int8 peak probe printed %q", out)
	}
	return 2 * macs, strings.ReplaceAll(isa, "_", " "), nil
}

// int8PeakSrc: independent accumulator chains of the widest dot-product
// step the compiler's target has, timed over 2^22 rounds, best of five:
// twelve vpdpbusd chains, or six chains of vpmaddubsw + vpmaddwd + vpaddd whose products
// differ (two activation and three weight registers: with one pair the
// compiler would compute the product once for every chain; with more the
// accumulators no longer fit sixteen registers), each step one asm
// statement so that the compiler keeps the accumulators in registers (it
// spilled two of the six otherwise; and as intrinsics the twelve vpdpbusd
// chains, equal from their start, were computed once: a latency-bound
// chain counted twelve times). Only the vpaddd is on a chain, so six
// cover its latency.
const int8PeakSrc = `#include <immintrin.h>
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
typedef __m512i V;
#define MACS 64
#define ISA "vpdpbusd_(AVX-512_VNNI)"
#define SPLAT8(x) _mm512_set1_epi8(x)
#define STEP(acc, a, w) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(w))
#define LANE0(v) _mm_cvtsi128_si32(_mm512_castsi512_si128(v))
#define VNNI 1
#elif defined(__AVXVNNI__)
typedef __m256i V;
#define MACS 32
#define ISA "vpdpbusd_(AVX-VNNI)"
#define SPLAT8(x) _mm256_set1_epi8(x)
#define STEP(acc, a, w) __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(w))
#define LANE0(v) _mm_cvtsi128_si32(_mm256_castsi256_si128(v))
#define VNNI 1
#elif defined(__AVX2__)
typedef __m256i V;
#define MACS 32
#define ISA "vpmaddubsw+vpmaddwd+vpaddd_(AVX2)"
#define SPLAT8(x) _mm256_set1_epi8(x)
#define STEP(acc, a, w) do { V t_; __asm__("vpmaddubsw %2, %3, %1\n\tvpmaddwd %4, %1, %1\n\tvpaddd %1, %0, %0" : "+x"(acc), "=&x"(t_) : "x"(w), "x"(a), "x"(ones)); } while (0)
#define LANE0(v) _mm_cvtsi128_si32(_mm256_castsi256_si128(v))
#define ONES _mm256_set1_epi16(1)
#else
typedef __m128i V;
#define MACS 16
#define ISA "pmaddubsw+pmaddwd+paddd_(SSSE3)"
#define SPLAT8(x) _mm_set1_epi8(x)
#define STEP(acc, a, w) do { V t_; __asm__("movdqa %3, %1\n\tpmaddubsw %2, %1\n\tpmaddwd %4, %1\n\tpaddd %1, %0" : "+x"(acc), "=&x"(t_) : "x"(w), "x"(a), "x"(ones)); } while (0)
#define LANE0(v) _mm_cvtsi128_si32(v)
#define ONES _mm_set1_epi16(1)
#endif
int main(void) {
  volatile char seed = 1;
  const long n = 1L << 22;
  double best = 1e30;
  int sink = 0, chains;
  for (int rep = 0; rep < 5; ++rep) {
    V a0 = SPLAT8(seed), a1 = SPLAT8(seed + 1), w0 = SPLAT8(seed + 2), w1 = SPLAT8(seed + 3), w2 = SPLAT8(seed + 4);
    double t0 = now(); /* the accumulators start after the call: none lives across it, in memory */
    V x0 = SPLAT8(0), x1 = x0, x2 = x0, x3 = x0, x4 = x0, x5 = x0;
#ifdef VNNI
    V x6 = x0, x7 = x0, x8 = x0, x9 = x0, x10 = x0, x11 = x0;
    chains = 12;
#else
    const V ones = ONES;
    chains = 6;
#endif
    for (long i = 0; i < n; ++i) {
#ifdef VNNI
      STEP(x0, a0, w0); STEP(x1, a0, w0); STEP(x2, a0, w0); STEP(x3, a0, w0); STEP(x4, a0, w0); STEP(x5, a0, w0);
      STEP(x6, a0, w0); STEP(x7, a0, w0); STEP(x8, a0, w0); STEP(x9, a0, w0); STEP(x10, a0, w0); STEP(x11, a0, w0);
#else
      STEP(x0, a0, w0); STEP(x1, a0, w1); STEP(x2, a0, w2);
      STEP(x3, a1, w0); STEP(x4, a1, w1); STEP(x5, a1, w2);
#endif
      __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(w0), "+x"(w1), "+x"(w2));
    }
    double t = now() - t0;
    if (t < best) best = t;
    sink += LANE0(x0) + LANE0(x1) + LANE0(x2) + LANE0(x3) + LANE0(x4) + LANE0(x5);
#ifdef VNNI
    sink += LANE0(x6) + LANE0(x7) + LANE0(x8) + LANE0(x9) + LANE0(x10) + LANE0(x11);
#endif
  }
  printf("macs %g isa %s\n", (double)chains * MACS * n / best, ISA);
  return sink == 12345 ? 1 : 0;
}
`
