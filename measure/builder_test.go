package measure

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestBuildCache(t *testing.T) {
	dir := t.TempDir()
	b := &Builder{CacheDir: dir}
	ctx := context.Background()

	first := b.Build(ctx, []Source{{Code: addSrc}})[0]
	if first.Kind != None || first.Cached {
		t.Fatalf("first build: %+v", first)
	}
	if filepath.Dir(first.Path) != dir {
		t.Errorf("library %s is not in the cache dir %s", first.Path, dir)
	}
	second := b.Build(ctx, []Source{{Code: addSrc}})[0]
	if second.Kind != None || !second.Cached || second.Path != first.Path {
		t.Fatalf("second build: %+v, first %+v", second, first)
	}
	if second.Time > first.Time/2 || second.Time > 50*time.Millisecond {
		t.Errorf("cached build took %v, compile %v", second.Time, first.Time)
	}

	other := &Builder{CacheDir: dir, Flags: []string{"-O2", "-fPIC", "-shared", "-std=gnu11"}}
	if other.CompilerID() == b.CompilerID() {
		t.Errorf("different flags, same compiler id %q", b.CompilerID())
	}
	tuned := &Builder{CacheDir: dir, Tune: "generic"}
	if id := tuned.CompilerID(); id == b.CompilerID() || !strings.Contains(id, "-march=native") || !strings.Contains(id, "-mtune=generic") {
		t.Errorf("with Tune: compiler id %q", id)
	}
	third := other.Build(ctx, []Source{{Code: addSrc}})[0]
	if third.Kind != None || third.Cached || third.Path == first.Path {
		t.Fatalf("build with other flags: %+v, first %+v", third, first)
	}

	// Nothing but the libraries is left behind.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 2 || !slices.Contains(names, filepath.Base(first.Path)) {
		t.Errorf("cache holds %v, want the two libraries", names)
	}
	// Objects: compiled once, then from the cache, beside the library.
	obj := b.Objects(ctx, []Source{{Code: addSrc}})[0]
	again := b.Objects(ctx, []Source{{Code: addSrc}})[0]
	if obj.Kind != None || obj.Cached || !again.Cached || obj.Path != strings.TrimSuffix(first.Path, ".so")+".o" || again.Path != obj.Path {
		t.Errorf("Objects: %+v, then %+v", obj, again)
	}
}

func TestBuildBatch(t *testing.T) {
	b := &Builder{CacheDir: t.TempDir(), Parallel: 2}
	srcs := []Source{{Code: addSrc}, {Code: brokenSrc}, {Code: addSrc}, {Code: spinSrc}}
	got := b.Build(context.Background(), srcs)
	if len(got) != len(srcs) {
		t.Fatalf("got %d results for %d sources", len(got), len(srcs))
	}
	if got[0].Kind != None || got[2].Kind != None || got[3].Kind != None {
		t.Fatalf("builds: %+v", got)
	}
	if got[0].Path != got[2].Path || got[0].Path == got[3].Path {
		t.Errorf("paths %q %q %q: equal sources must share one library, others not", got[0].Path, got[2].Path, got[3].Path)
	}
	if !got[2].Cached {
		t.Error("the duplicate source was not reported as cached")
	}
	if got[1].Kind != CompileError || got[1].Path != "" {
		t.Errorf("broken source: %+v", got[1])
	}
	if !strings.Contains(got[1].Msg, "undefined_variable") || !strings.Contains(got[1].Msg, "kernel.c:") {
		t.Errorf("compile error message %q does not point at the error", got[1].Msg)
	}
}

// Builders in separate processes share a cache; goroutines with their own
// Builder stand in for them here.
func TestBuildConcurrentBuilders(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	got := make([]Built, 4)
	for i := range got {
		wg.Go(func() {
			got[i] = (&Builder{CacheDir: dir}).Build(context.Background(), []Source{{Code: threadsSrc}})[0]
		})
	}
	wg.Wait()
	for i, g := range got {
		if g.Kind != None || g.Path != got[0].Path {
			t.Errorf("builder %d: %+v", i, g)
		}
	}
}

func TestCompileErrorMessageIsTrimmed(t *testing.T) {
	var src strings.Builder
	for range 500 {
		src.WriteString("int f(void) { return undefined_variable; }\n")
	}
	got := testBuilder().Build(context.Background(), []Source{{Code: src.String()}})[0]
	if got.Kind != CompileError {
		t.Fatalf("got %+v", got)
	}
	if len(got.Msg) > compileMsgMax+100 || !strings.Contains(got.Msg, "more bytes") {
		t.Errorf("message of %d bytes, ends %q", len(got.Msg), got.Msg[max(0, len(got.Msg)-80):])
	}
}

// slowSrc expands to 4^7 statements: seconds of compiling.
const slowSrc = `
#define A(x) x x x x
#define B(x) A(A(A(x)))
#define C(x) B(B(A(x)))
float slow(float x) { C(x = x * 1.0001f + 1.0f;) return x; }
`

func TestBuildTimeout(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		src     string
	}{
		{"tiny deadline", time.Millisecond, addSrc},
		{"slow source", 300 * time.Millisecond, slowSrc},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			b := &Builder{CacheDir: dir, Timeout: tt.timeout}
			start := time.Now()
			got := b.Build(context.Background(), []Source{{Code: tt.src}})[0]
			if got.Kind != BuildTimeout || got.Path != "" {
				t.Fatalf("got %+v", got)
			}
			if el := time.Since(start); el > tt.timeout+3*time.Second {
				t.Errorf("build returned after %v", el)
			}
			// The whole process group died: no compiler still works in the cache.
			if left := processesUnder(t, dir); len(left) > 0 {
				t.Errorf("compiler processes left running: %v", left)
			}
		})
	}
}

// processesUnder lists the pids whose working directory is inside dir.
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cwd")
	if err != nil || len(procs) == 0 {
		t.Log("no /proc: process check skipped")
		return nil
	}
	var pids []string
	for _, p := range procs {
		cwd, err := os.Readlink(p)
		if err == nil && strings.HasPrefix(cwd, dir+"/") {
			pids = append(pids, strings.Split(p, "/")[2])
		}
	}
	return pids
}

func TestBuildCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := &Builder{CacheDir: t.TempDir()}
	for i, got := range b.Build(ctx, []Source{{Code: addSrc}, {Code: spinSrc}}) {
		if got.Kind != BuildTimeout || !strings.HasPrefix(got.Msg, "canceled") {
			t.Errorf("source %d: %+v", i, got)
		}
	}
}

func TestBuildMissingCompiler(t *testing.T) {
	b := &Builder{CacheDir: t.TempDir(), CC: "/nonexistent/cc"}
	got := b.Build(context.Background(), []Source{{Code: addSrc}})[0]
	if got.Kind != CompileError || !strings.Contains(got.Msg, "/nonexistent/cc") {
		t.Errorf("got %+v", got)
	}
}

func TestAssemblyHasVectorFMA(t *testing.T) {
	cpuinfo, err := os.ReadFile("/proc/cpuinfo")
	if err != nil || !strings.Contains(string(cpuinfo), " fma ") {
		t.Skip("no FMA on this CPU")
	}
	asm, err := testBuilder().Assembly(context.Background(), Source{Code: fmaSrc})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(asm, "fma16") || !strings.Contains(asm, "vfmadd") {
		t.Errorf("no vector FMA in the assembly of fma16:\n%s", asm)
	}
	if strings.Contains(string(cpuinfo), " avx512f ") && !strings.Contains(asm, "zmm") {
		t.Errorf("AVX-512 CPU but no zmm register in:\n%s", asm)
	}
	if _, err := testBuilder().Assembly(context.Background(), Source{Code: brokenSrc}); err == nil ||
		!strings.Contains(err.Error(), "undefined_variable") {
		t.Errorf("assembly of a broken source: err = %v", err)
	}
}
