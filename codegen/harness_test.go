package codegen

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/tir"
)

// The test harness compiles a module of kernels together with a small C
// driver into one executable per compiler, then runs each kernel in a child
// process: "prog NAME a16 b8 ..." reads every parameter (raw float32) from
// stdin, calls the kernel on the values reversed and then on the values
// read (the second call reuses the first's workspaces), and writes them all
// back after the second call. A kernel with a workspace (CSource.Workspace)
// gets one after its parameters, filled with NaN bytes before the first
// call and not cleared between the calls. Each parameter and the workspace
// live in
// its own mmap'ed region next to a PROT_NONE page, after its end ('a') or
// before its start ('b'), so that an out-of-bounds read crashes.

const driverC = `
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef int (*tsr_kernel_fn)(float *const *args);
struct tsr_entry { const char *name; tsr_kernel_fn fn; size_t workspace; };
extern const struct tsr_entry tsr_kernels[];

static float *guarded(size_t n, char mode) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t bytes = n * sizeof(float);
  size_t span = (bytes + page - 1) / page * page;
  if (span == 0) span = page;
  char *base = mmap(NULL, span + 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) { perror("mmap"); exit(3); }
  if (mprotect(base, page, PROT_NONE) || mprotect(base + page + span, page, PROT_NONE)) { perror("mprotect"); exit(3); }
  if (mode == 'b') return (float *)(base + page);
  return (float *)(base + page + span - bytes);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  tsr_kernel_fn fn = 0;
  size_t ws = 0;
  for (const struct tsr_entry *e = tsr_kernels; e->name; e++)
    if (strcmp(e->name, argv[1]) == 0) fn = e->fn, ws = e->workspace;
  if (!fn) { fprintf(stderr, "no kernel %s\n", argv[1]); return 2; }
  int n = argc - 2;
  float **args = calloc((size_t)n + 2, sizeof *args);
  size_t *sizes = calloc((size_t)n + 1, sizeof *sizes);
  for (int i = 0; i < n; i++) {
    sizes[i] = (size_t)atol(argv[2 + i] + 1);
    args[i] = guarded(sizes[i], argv[2 + i][0]);
    if (fread(args[i], sizeof(float), sizes[i], stdin) != sizes[i]) { fprintf(stderr, "short input\n"); return 3; }
  }
  /* A first call on the values reversed: the second call, whose results
     are checked, takes the workspaces the first gave back (tsr_ws_take),
     so a kernel that read a workspace before writing it would show. */
  float **first = calloc((size_t)n + 2, sizeof *first);
  for (int i = 0; i < n; i++) {
    first[i] = malloc(sizes[i] * sizeof(float) + 64);
    for (size_t j = 0; j < sizes[i]; j++) first[i][j] = args[i][sizes[i] - 1 - j];
  }
  if (ws) {
    args[n] = first[n] = guarded(ws / sizeof(float), 'a');
    memset(args[n], 0xff, ws);
  }
  int rc = fn(first);
  if (rc == 0) rc = fn(args);
  if (rc != 0) { fprintf(stderr, "kernel returned %d\n", rc); return 4; }
  for (int i = 0; i < n; i++) fwrite(args[i], sizeof(float), sizes[i], stdout);
  return 0;
}
`

type compiler struct {
	name  string
	cmd   string
	flags []string
}

var (
	compilersOnce sync.Once
	compilersList []compiler
)

// testCompilers returns the C compilers to test with: cc (gcc here) always,
// and clang when present (with GNU OpenMP, or OpenMP SIMD only).
func testCompilers(t *testing.T) []compiler {
	t.Helper()
	compilersOnce.Do(func() {
		if _, err := exec.LookPath("cc"); err == nil {
			compilersList = append(compilersList, compiler{"cc", "cc", []string{"-fopenmp"}})
		}
		if _, err := exec.LookPath("clang"); err == nil {
			dir, err := os.MkdirTemp("", "tsr-probe")
			if err == nil {
				defer os.RemoveAll(dir)
				src := filepath.Join(dir, "p.c")
				os.WriteFile(src, []byte("int main(void){int s=0;\n#pragma omp parallel for reduction(+:s)\nfor(int i=0;i<4;i++)s+=i;return s!=6;}\n"), 0o644)
				flags := []string{"-fopenmp=libgomp"}
				if exec.Command("clang", "-O1", flags[0], src, "-o", filepath.Join(dir, "p")).Run() != nil {
					flags = []string{"-fopenmp-simd"}
				}
				compilersList = append(compilersList, compiler{"clang", "clang", flags})
			}
		}
	})
	if len(compilersList) == 0 {
		t.Skip("no C compiler")
	}
	return compilersList
}

// buildProgram compiles src (a module) with the driver into an executable.
func buildProgram(t *testing.T, cc compiler, m machine.Machine, mod *CSource, names []string) string {
	t.Helper()
	dir := t.TempDir()
	src := mod.Code
	var table strings.Builder
	for _, n := range names {
		fmt.Fprintf(&table, "int %s(float *const *args);\n", n)
	}
	table.WriteString("const struct tsr_entry tsr_kernels[] = {\n")
	for i, n := range names {
		fmt.Fprintf(&table, "  {%q, %s, %d},\n", n, n, mod.Workspace[i])
	}
	table.WriteString("  {0, 0, 0},\n};\n")
	kern := filepath.Join(dir, "kernels.c")
	drv := filepath.Join(dir, "driver.c")
	if err := os.WriteFile(kern, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(drv, []byte(driverC+"\n"+table.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "prog")
	args := append([]string{"-O2", "-march=" + m.March, "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-unknown-pragmas"}, cc.flags...)
	args = append(args, kern, drv, "-o", exe, "-lm")
	out, err := exec.Command(cc.cmd, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s failed: %v\n%s\n--- source ---\n%s", cc.name, err, out, numbered(src))
	}
	if len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("%s warnings:\n%s", cc.name, out)
	}
	return exe
}

func numbered(src string) string {
	var b strings.Builder
	for i, l := range strings.Split(src, "\n") {
		fmt.Fprintf(&b, "%4d %s\n", i+1, l)
	}
	return b.String()
}

// runKernelUnder runs kernel name of exe on args (modified in place),
// under an emulator (emu: its command and arguments; nil: none).
func runKernelUnder(emu []string, exe, name string, params []*tir.Buffer, guards string, args [][]float32) error {
	cmdArgs := []string{name}
	var in bytes.Buffer
	for i, p := range params {
		mode := byte('a')
		if i < len(guards) && guards[i] != ' ' {
			mode = guards[i]
		}
		// A buffer of another type than float32 goes in its memory
		// layout (tir.PackMemory), as 32-bit words.
		cmdArgs = append(cmdArgs, fmt.Sprintf("%c%d", mode, tir.MemoryWords(p.DType, p.Size())))
		binary.Write(&in, binary.LittleEndian, tir.PackMemory(p.DType, args[i]))
	}
	if len(emu) > 0 {
		cmdArgs = append(append(append([]string{}, emu[1:]...), exe), cmdArgs...)
		exe = emu[0]
	}
	cmd := exec.Command(exe, cmdArgs...)
	cmd.Stdin = &in
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=2")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v: %s", err, errb.String())
	}
	for i, p := range params {
		words := make([]float32, tir.MemoryWords(p.DType, p.Size()))
		if err := binary.Read(&out, binary.LittleEndian, words); err != nil {
			return fmt.Errorf("reading output %d: %v", i, err)
		}
		copy(args[i], tir.UnpackMemory(p.DType, words, p.Size()))
	}
	return nil
}

// randomArgs fills the params with deterministic values in [-1, 1)
// (rounded to the buffer's type), an integer buffer's with integers over
// its type's range (int32: ±2^20), in tir's one-slot-per-element form.
func randomArgs(name string, params []*tir.Buffer) [][]float32 {
	h := fnv.New64a()
	h.Write([]byte(name))
	r := rand.New(rand.NewSource(int64(h.Sum64())))
	args := make([][]float32, len(params))
	for i, p := range params {
		args[i] = make([]float32, p.Size())
		lo, hi := p.DType.Range()
		if p.DType == tir.Int32 {
			lo, hi = -1<<20, 1<<20
		}
		for j := range args[i] {
			if p.DType.IntElem() {
				args[i][j] = tir.IntSlot(lo + r.Int63n(hi-lo+1))
				continue
			}
			args[i][j] = tir.ValueSlot(p.DType, float64(r.Float32()*2-1))
		}
	}
	return args
}

func cloneArgs(a [][]float32) [][]float32 {
	out := make([][]float32, len(a))
	for i := range a {
		out[i] = append([]float32(nil), a[i]...)
	}
	return out
}

func close32(got, want float32) bool {
	if math.IsNaN(float64(got)) || math.IsNaN(float64(want)) {
		return math.IsNaN(float64(got)) && math.IsNaN(float64(want))
	}
	if math.IsInf(float64(want), 0) {
		return got == want
	}
	d := math.Abs(float64(got) - float64(want))
	return d <= 1e-5+2e-5*math.Abs(float64(want))
}

func compareArgs(params []*tir.Buffer, got, want [][]float32) error {
	for i := range want {
		bad := 0
		var msg strings.Builder
		for j := range want[i] {
			if dt := params[i].DType; dt.IntElem() && tir.SlotInt(dt, got[i][j]) != tir.SlotInt(dt, want[i][j]) || !dt.IntElem() && !close32(got[i][j], want[i][j]) {
				if bad < 5 {
					fmt.Fprintf(&msg, " [%d] got %v want %v;", j, got[i][j], want[i][j])
				}
				bad++
			}
		}
		if bad > 0 {
			return fmt.Errorf("%s: %d of %d elements differ:%s", params[i].Name, bad, len(want[i]), msg.String())
		}
	}
	return nil
}

// ---- IR construction helpers ----

func gbuf(name string, shape ...int) *tir.Buffer {
	return &tir.Buffer{Name: name, DType: tir.Float32, Shape: shape}
}

func lbuf(name string, shape ...int) *tir.Buffer {
	return &tir.Buffer{Name: name, DType: tir.Float32, Shape: shape, Scope: tir.Local}
}

func ld(b *tir.Buffer, idx ...tir.Expr) tir.Expr { return &tir.Load{Buf: b, Indices: idx} }

func st(b *tir.Buffer, val tir.Expr, idx ...tir.Expr) tir.Stmt {
	return &tir.Store{Buf: b, Indices: idx, Value: val}
}

func loop(v *tir.Var, n int, kind tir.ForKind, body ...tir.Stmt) tir.Stmt {
	return &tir.For{Var: v, Extent: n, Kind: kind, Body: tir.SeqOf(body...)}
}

func c(v int64) tir.Expr    { return tir.Const(v) }
func fc(v float64) tir.Expr { return tir.F32(v) }

func add(xs ...tir.Expr) tir.Expr {
	e := xs[0]
	for _, x := range xs[1:] {
		e = tir.AddE(e, x)
	}
	return e
}

func mul(a, b tir.Expr) tir.Expr             { return tir.MulE(a, b) }
func toF(x tir.Expr) tir.Expr                { return &tir.Cast{To: tir.Float32, X: x} }
func lt(a, b tir.Expr) tir.Expr              { return tir.Cmp(tir.LT, a, b) }
func ge(a, b tir.Expr) tir.Expr              { return tir.Cmp(tir.GE, a, b) }
func and(a, b tir.Expr) tir.Expr             { return tir.AndE(a, b) }
func sel(cd, t, f tir.Expr) tir.Expr         { return tir.SelectE(cd, t, f) }
func fn(name string, a ...tir.Expr) tir.Expr { return tir.CallE(name, a...) }
func vars(names ...string) []*tir.Var {
	out := make([]*tir.Var, len(names))
	for i, n := range names {
		out[i] = tir.NewVar(n)
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testLevels returns the ISA levels the codegen tests compile and run
// at: every portable level this machine runs (x86-64-v2, -v3, -v4), so
// that an AVX-512 machine catches what fails on AVX2; a level it lacks is
// logged as skipped.
func testLevels(t *testing.T) []machine.Machine {
	t.Helper()
	host, err := machine.Native()
	if err != nil {
		t.Fatalf("machine model: %v", err)
	}
	run, skipped := machine.RunnableLevels(host)
	for name, miss := range skipped {
		t.Logf("%s skipped: this machine lacks %s", name, strings.Join(miss, " "))
	}
	if len(run) == 0 {
		t.Fatalf("no ISA level runs on %s", host)
	}
	return run
}
