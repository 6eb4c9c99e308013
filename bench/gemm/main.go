// Command gemm measures, side by side in one run, the GFLOP/s of an N×N×N
// float32 matrix multiplication computed by the naive schedule, by an
// expert schedule written only as schedule steps (tiling, cache write,
// vectorize, parallel, unroll), and by OpenBLAS's cblas_sgemm, on the same
// inputs and thread count. Each kernel runs in its own process, in turn,
// round after round; the figures are the minimum and median over rounds.
// The last line is "github.com/tessera-ml/tessera/openblas = R", the median over rounds of the
// expert schedule's speed divided by OpenBLAS's.
//
// Every kernel is compiled for --cpu (native, or a level such as
// x86-64-v3), OpenBLAS is restricted to the same ISA level where it allows
// it (OPENBLAS_CORETYPE), and each figure is printed as a share of that
// level's measured FMA peak too.
//
// With -dtype int8 the race is an integer GEMM, u8×s8→s32, Tessera's
// default schedule against oneDNN's dnnl_gemm_u8s8s32, each as a share of
// the machine's int8 multiply-add peak (int8.go, onednn/u8s8s32.c); its last line is
// "github.com/tessera-ml/tessera/onednn-u8s8s32 = R".
//
//	go run ./bench/gemm              # 1024³, 1 thread
//	go run ./bench/gemm -threads 2
//	go run ./bench/gemm -cpu x86-64-v3
//	go run ./bench/gemm -dtype int8
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/tessera-ml/tessera/bench/internal/benchutil"
	"github.com/tessera-ml/tessera/bench/internal/gpubench"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

func main() {
	n := flag.Int("n", 1024, "matrix size")
	threads := flag.Int("threads", 1, "threads for every contender")
	rounds := flag.Int("rounds", 7, "alternating rounds")
	naive := flag.Bool("naive", true, "also time the naive schedule (slow at 1024)")
	ti := flag.String("tile", "", "expert tile sizes: rows per block, register-tile rows, register tiles across a block, register-tile columns (lanes), k tile: ib,i2,j1,j2,k (default: the register tile of --cpu, expertTiles)")
	unroll := flag.Int("unroll", 0, "the expert's auto_unroll_max_step (default: its register tile's steps)")
	dump := flag.String("dump", "", "write the expert kernel's C to `PREFIX`.c and its assembly to PREFIX.s")
	cpu := flag.String("cpu", "native", "compile for native, a level (x86-64-v2, x86-64-v3, x86-64-v4) or a -march name; OpenBLAS is restricted to its level")
	dtype := flag.String("dtype", "float32", "element type of the race: float32 (against OpenBLAS's sgemm) or int8 (uint8 × int8 → int32, against oneDNN's u8s8s32 GEMM)")
	gpu := gpubench.Flags(flag.CommandLine)
	flag.Parse()
	if *dtype != "float32" && *dtype != "int8" {
		benchutil.Fatal(fmt.Errorf("-dtype %q: float32 or int8", *dtype))
	}
	if *dtype == "int8" && gpu.On() {
		benchutil.Fatal(fmt.Errorf("-dtype int8 races on the CPU only"))
	}
	if gpu.On() {
		d, err := gemmDAG(*n)
		if err != nil {
			benchutil.Fatal(err)
		}
		if err := gpu.Run(gpubench.Race{Name: fmt.Sprintf("gemm %d", *n), Label: strconv.Itoa(*n), DAG: d, Torch: "matmul", Library: "cublas", Rounds: *rounds}); err != nil {
			benchutil.Fatal(err)
		}
		return
	}
	m, err := benchutil.CPU(context.Background(), *cpu, &measure.Builder{})
	if err != nil {
		benchutil.Fatal(err)
	}
	if *dtype == "int8" {
		if err := runInt8(*n, *threads, *rounds, m, *dump); err != nil {
			benchutil.Fatal(err)
		}
		return
	}
	t := expertTiles(*n, m.Lanes(), m.VectorRegs, m.L1D)
	if *ti != "" {
		if _, err := fmt.Sscanf(*ti, "%d,%d,%d,%d,%d", &t.ib, &t.i2, &t.j1, &t.j2, &t.k); err != nil {
			benchutil.Fatal(fmt.Errorf("-tile: %w", err))
		}
	}
	if *unroll > 0 {
		t.unroll = *unroll
	}
	if err := run(*n, *threads, *rounds, *naive, t, m, *dump); err != nil {
		benchutil.Fatal(err)
	}
}

// expertTiles is the tiling a performance engineer would pick for a
// machine of lanes float32 lanes, regs vector registers and an L1 data
// cache of l1 bytes, in the shape of OpenBLAS's kernels:
//   - a register tile of two vectors per row and as many rows as the
//     register file holds with the two B vectors and one broadcast A
//     element beside the accumulators (sketch.TileRows), at most
//     maxExpertRows: 6 rows on 16 registers (12 accumulators, as
//     OpenBLAS's Haswell kernel), 8 on 32.
//     The rows need not divide the block: the last, partial register tile
//     is guarded, and the C printer cuts it off the loop (codegen's loop
//     partitioning), so the others run unguarded;
//   - blocks of 128 rows (a divisor of n) and 128 columns of accumulators,
//     kept local, so that each row of A a register tile loads serves the
//     block's whole width;
//   - for each k tile and register-tile column, B's k × two-vector panel
//     packed contiguously (for up to 256 k, at most two thirds of L1) and
//     reused by every register tile of the block's rows.
//
// Measured on a Zen 5 at 1024³, one thread, against OpenBLAS (2026-11-27):
// at x86-64-v3, the 4-row tile with B packed per block (k × 128 columns,
// each k row 512 bytes apart) ran 0.78-0.80; packed per register-tile
// column, 0.86-0.87; with the 6-row tile, partitioned, 0.93-0.94 (min
// 0.91 over 10 rounds in two runs). Natively (AVX-512, the 8-row tile):
// 0.96-0.97; at x86-64-v2 (SSE, no FMA), 0.97.
func expertTiles(n, lanes, regs, l1 int) tiles {
	block := 128
	for n%block != 0 {
		block--
	}
	rows := min(block, sketch.TileRows(2, regs), maxExpertRows)
	j2 := 2 * lanes
	j1 := max(1, 128/j2)
	for j1 > 1 && n%(j1*j2) != 0 {
		j1--
	}
	if l1 <= 0 {
		l1 = 32 << 10
	}
	k := 256
	for k > 8 && (n%k != 0 || k*j2*4 > 2*l1/3) {
		k /= 2
	}
	// Unrolled: the register tile (rows × two vectors), not the k loop,
	// which stays a loop so the compiler keeps its accumulators in
	// registers, nor the copy of the B panel.
	return tiles{ib: block, i2: rows, j1: j1, j2: j2, k: k, unroll: 2 * rows}
}

// maxExpertRows caps the register tile: 16 accumulators already cover two
// FMA units of latency 4 twice over, and each further row is one more
// stream of A broadcasts. On 32 registers, measured on a Zen 5 against
// OpenBLAS: 8 rows 0.98, 12 rows 0.96, 14 rows (all the file holds) 0.88.
const maxExpertRows = 8

// tiles are the expert's tile sizes and its auto_unroll_max_step: blocks
// of ib rows, register tiles of i2 rows (the last one of a block partial
// when i2 does not divide ib) and j2 columns, j1 register tiles across a
// block, k tiles of k.
type tiles struct{ ib, i2, j1, j2, k, unroll int }

func gemmDAG(n int) (*te.DAG, error) {
	a := te.Placeholder("A", n, n)
	b := te.Placeholder("B", n, n)
	c, err := te.MatMul("C", a, b)
	if err != nil {
		return nil, err
	}
	return te.NewDAG(c)
}

// expert is the schedule a performance engineer would write for a CPU GEMM,
// expressed in steps only: a local accumulator block of ib × j.1·j.2
// computed as (SSRSRS, j.1 outside i.1) i.0 j.0 k.0 j.1 i.1 k.1 i.2 j.2,
// where i.2 × j.2 is the register tile; B's k.1 × j.2 panel copied into a
// contiguous local buffer at j.1 (as OpenBLAS packs B: read in place,
// successive k rows of B lie 4·n bytes apart, all in the same L1 sets),
// the output copy tiled to follow the block, the blocks fused and
// parallel, the lanes vectorized, and the register tile unrolled.
func expert(d *te.DAG, t tiles) (*schedule.State, error) {
	s := schedule.NewState(d)
	b := slices.IndexFunc(s.Stages, func(st *schedule.Stage) bool { return st.Tensor.Name == "B" })
	c := s.StageOf(d.Outputs[0])
	// After cache_write, C.local takes C's index and C moves one down;
	// after cache_read, B.local is inserted after B, and both move again.
	bl, cl, out := b+1, c+1, c+2
	return schedule.Replay(s, []schedule.Step{
		&schedule.CacheWrite{Stage: c, Scope: tir.Local},
		&schedule.CacheRead{Stage: b, Scope: tir.Local, Readers: []int{c}},
		&schedule.Split{Stage: cl, Iter: 0, Lengths: []int{t.ib}},       // step 2: i.0, i
		&schedule.Split{Stage: cl, Iter: 1, Lengths: []int{t.i2}},       // i.0, i.1, i.2
		&schedule.Split{Stage: cl, Iter: 3, Lengths: []int{t.j1, t.j2}}, // step 4
		&schedule.Split{Stage: cl, Iter: 6, Lengths: []int{t.k}},
		&schedule.Reorder{Stage: cl, Order: []int{0, 3, 6, 4, 1, 7, 2, 5}},
		&schedule.FollowSplit{Stage: out, Iter: 0, SrcStep: 2, NParts: 2},
		&schedule.FollowSplit{Stage: out, Iter: 2, SrcStep: 4, NParts: 2},
		&schedule.Reorder{Stage: out, Order: []int{0, 2, 1, 3}},
		&schedule.ComputeAt{Stage: cl, TargetStage: out, TargetIter: 1},
		&schedule.ComputeAt{Stage: bl, TargetStage: cl, TargetIter: 3},
		&schedule.Fuse{Stage: out, Iters: []int{0, 1}},
		&schedule.Annotate{Stage: out, Iter: 0, Ann: schedule.Parallel},
		&schedule.Annotate{Stage: out, Iter: 2, Ann: schedule.Vectorize},
		&schedule.Annotate{Stage: cl, Iter: 7, Ann: schedule.Vectorize},
		&schedule.Annotate{Stage: bl, Iter: 1, Ann: schedule.Vectorize},
		&schedule.Pragma{Stage: cl, Iter: 0, Key: schedule.PragmaAutoUnroll, Value: t.unroll},
	})
}

func run(n, threads, rounds int, withNaive bool, t tiles, m benchutil.Machine, dump string) error {
	ctx := context.Background()
	d, err := gemmDAG(n)
	if err != nil {
		return err
	}
	args := measure.Args(d)
	ex, err := expert(d, t)
	if err != nil {
		return fmt.Errorf("expert schedule: %w", err)
	}
	names := []string{"expert"}
	states := []*schedule.State{ex}
	if withNaive {
		names = append(names, "naive")
		states = append(states, schedule.NewState(d))
	}
	var progs []measure.Program
	for _, s := range states {
		p, err := benchutil.Lower(s, m.Machine)
		if err != nil {
			return err
		}
		progs = append(progs, p)
	}
	b := m.Builder
	ks, err := benchutil.Build(ctx, b, names, progs, args)
	if err != nil {
		return err
	}
	asm, err := b.Assembly(ctx, measure.Source{Code: progs[0].Code})
	if err != nil {
		return err
	}
	if dump != "" {
		if err := os.WriteFile(dump+".c", []byte(progs[0].Code), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(dump+".s", []byte(asm), 0o644); err != nil {
			return err
		}
	}
	// The kernel's multiply-adds, as the machine has them: a vector FMA
	// (on a machine with FMA), else a packed multiply.
	op, what := "vfmadd", "vector FMA"
	if !m.FMA {
		op, what = "mulps", "packed multiply"
	}
	fmas := 0
	for _, line := range strings.Split(asm, "\n") {
		if strings.Contains(line, op) && strings.Contains(line, "mm") {
			fmas++
		}
	}
	if fmas == 0 {
		return fmt.Errorf("the expert kernel's assembly has no %s instructions", what)
	}
	blasB := &measure.Builder{Flags: append(measure.DefaultFlags(), "-Wl,--no-as-needed", "-lopenblas")}
	blas, err := benchutil.Build(ctx, blasB, []string{"openblas"}, []measure.Program{{Code: benchutil.OpenBLASGEMM(n)}}, args)
	if err != nil {
		return fmt.Errorf("%w (is libopenblas-dev installed?)", err)
	}
	ks = append(ks, blas[0])

	// Every contender must compute the same product as OpenBLAS.
	checker := &measure.Runner{Opts: measure.RunOptions{Threads: threads, Number: 1, Repeat: 1, MinRepeatMs: -1, Check: true, Timeout: 120e9}}
	defer checker.Close()
	var outs [][]float32
	for _, k := range ks {
		res := checker.Run(ctx, []measure.Job{k.Job()})[0]
		if res.Kind != measure.None {
			return fmt.Errorf("%s: %v: %s", k.Name, res.Kind, res.Msg)
		}
		outs = append(outs, res.Outputs[0])
	}
	for i := range ks[:len(ks)-1] {
		if ok, msg := measure.Compare(outs[i], outs[len(outs)-1], 1e-3, 1e-3); !ok {
			return fmt.Errorf("%s differs from OpenBLAS: %s", ks[i].Name, msg)
		}
	}

	flops := 2 * float64(n) * float64(n) * float64(n)
	fmt.Printf("gemm %d×%d×%d float32, %d thread(s), %d alternating rounds, each kernel in its own process\n", n, n, n, threads, rounds)
	fmt.Printf("expert tile ib,i2,j1,j2,k = %d,%d,%d,%d,%d, unroll %d\n", t.ib, t.i2, t.j1, t.j2, t.k, t.unroll)
	fmt.Printf("expert %s instructions in assembly = %d\n", what, fmas)
	r := &measure.Runner{Opts: measure.RunOptions{Threads: threads, Repeat: 3, MinRepeatMs: 200, Timeout: 600e9}}
	defer r.Close()
	timed := ks
	if withNaive {
		// The naive loop takes seconds per call: time it in one round only.
		nt, err := benchutil.Alternate(ctx, &measure.Runner{Opts: measure.RunOptions{Threads: threads, Number: 1, Repeat: 1, MinRepeatMs: -1, Timeout: 600e9}}, ks[1:2], 1)
		if err != nil {
			return err
		}
		fmt.Printf("naive GFLOP/s = %.2f = %s\n", flops/nt["naive"][0]/1e9, m.Share(flops/nt["naive"][0]/1e9, threads))
		timed = []benchutil.Kernel{ks[0], ks[2]}
	}
	tm, err := benchutil.Alternate(ctx, r, timed, rounds)
	if err != nil {
		return err
	}
	benchutil.Report(flops, tm, timed, "expert", "openblas", "github.com/tessera-ml/tessera/openblas", m, threads)
	return nil
}
