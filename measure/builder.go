package measure

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Source is one C translation unit exporting one or more kernels.
type Source struct {
	Code string
	// Files are written next to the source before it is compiled (headers
	// and sources it includes), by name; they are part of the cache key.
	Files map[string]string
}

// key returns what identifies the source in the cache, with id (the
// compiler's identity and flags).
func (s Source) key(id string) string {
	parts := []string{id, s.Code}
	for _, name := range slices.Sorted(maps.Keys(s.Files)) {
		parts = append(parts, name, s.Files[name])
	}
	return cacheKey(parts...)
}

// Builder compiles sources into shared libraries, several at a time, through
// a cache keyed by sha256(compiler identity, flags, source). The zero value is
// ready to use and safe for concurrent use; fields must not change while a
// method is running, and a Builder must not be copied after first use.
//
// A source is compiled as `CC Flags -o out kernel.c -lm` in a scratch
// directory, so diagnostics name "kernel.c".
type Builder struct {
	CC       string        // compiler command, may carry arguments ("ccache gcc"); empty means $CC, else "cc"
	Flags    []string      // nil means DefaultFlags() with March
	March    string        // the -march of DefaultFlags (the cpu target's machine model); empty means native
	Tune     string        // the -mtune added to DefaultFlags; empty means the compiler's choice for March
	Timeout  time.Duration // per build; 0 means 15s
	Parallel int           // concurrent compiler processes; 0 means runtime.NumCPU()
	CacheDir string        // empty means os.UserCacheDir()/tessera/build

	mu          sync.Mutex
	compilerFor string       // the compiler command compiler belongs to
	compiler    CompilerInfo // its path and `--version` line
}

// DefaultFlags returns the flags of the cpu target. -ffast-math is left out:
// it changes results, and the runner is also a correctness check.
//
// -O2, not -O3: the code generator writes its own vectors and unrolls its
// own loops, so -O3's loop passes (unswitching, peeling, unroll-and-jam,
// predictive commoning, partial PRE) find little left to do but cost a
// quarter of the compile time of a tuning candidate. Measured on a Zen 5
// with GCC 12, on 40 ResNet-18 candidates of a x86-64-v3 tuning run: 0.64
// to 0.66 s of compiler CPU time each at -O2 against 0.84 to 0.89 at -O3;
// the tuned ResNet-18 (records measured at -O3) ran 16.97 ms against
// 17.03 ms (medians of 5 alternating processes), the untuned one 18.4
// against 18.3, bench/gemm's expert 0.98 and 0.87 of OpenBLAS natively and
// at x86-64-v3 against 0.96 and 0.89, bench/conv's Winograd 1.95 of oneDNN
// against 1.99 and its default direct schedule 0.83 against 0.61.
func DefaultFlags() []string {
	return []string{"-O2", "-march=native", "-fopenmp", "-fPIC", "-shared", "-std=gnu11"}
}

const (
	defaultBuildTimeout = 15 * time.Second
	compileMsgMax       = 2 << 10 // bytes of compiler stderr kept in Built.Msg
)

func (b *Builder) command() []string {
	cc := b.CC
	if cc == "" {
		cc = os.Getenv("CC")
	}
	argv := strings.Fields(cc)
	if len(argv) == 0 {
		argv = []string{"cc"}
	}
	return argv
}

func (b *Builder) flags() []string {
	if b.Flags == nil {
		f := DefaultFlags()
		if b.March != "" {
			f[slices.Index(f, "-march=native")] = "-march=" + b.March
		}
		if b.Tune != "" {
			f = append(f, "-mtune="+b.Tune)
		}
		return append(f, b.compilerWorkarounds()...)
	}
	return slices.Clone(b.Flags)
}

// Command returns the compiler command as argv ($CC, else cc, when CC is
// empty).
func (b *Builder) Command() []string { return b.command() }

// compilerWorkarounds returns flags that avoid known miscompilations of the
// compiler in use, all seen with Debian's GCC 12.2.0 at -O3 (the flags
// before DefaultFlags took -O2; they stay, the loop vectorizer runs at -O2
// too) and checked by TestGCCWorkarounds:
//   - loop if-conversion turns a conditional load in a vectorized loop
//     (`x = c ? A[i - k] : v`, our padding) into wrong code with AVX2 or
//     AVX-512 (measure/testdata/gcc12-ifconvert.c);
//   - the loop vectorizer sums a guarded reduction wrongly once the inner
//     loops are unrolled (measure/testdata/gcc12-condreduce.c; a split
//     reduction axis with its guard, as random schedules make);
//   - with OpenMP, loop distribution moves a zeroing loop of a parallel
//     loop's body after the sums it should precede
//     (measure/testdata/gcc12-loopdist.c; a random Einsum schedule).
//
// The code generator writes vectorized loops as explicit vector code (its
// own if-conversion included), so GCC's loop vectorizer and if-conversion
// add little; SLP vectorization stays on.
func (b *Builder) compilerWorkarounds() []string {
	// GCC's --version line reads "gcc (Debian 12.2.0-14) 12.2.0", or "cc (...)"
	// when called as cc.
	v := b.compilerVersion()
	if strings.Contains(v, "clang") || !(strings.Contains(v, "cc (") || strings.Contains(v, "GCC")) {
		return nil
	}
	return []string{"-fno-tree-loop-if-convert", "-fno-tree-loop-vectorize", "-fno-tree-loop-distribution"}
}

func (b *Builder) timeout() time.Duration {
	if b.Timeout <= 0 {
		return defaultBuildTimeout
	}
	return b.Timeout
}

func (b *Builder) parallel() int {
	if b.Parallel <= 0 {
		return runtime.NumCPU()
	}
	return b.Parallel
}

// cacheDir returns the cache directory, creating it.
func (b *Builder) cacheDir() (string, error) {
	dir := b.CacheDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "tessera", "build")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("measure: build cache: %w", err)
	}
	sweepScratch(dir)
	return dir, nil
}

// CompilerID identifies what a build depends on besides the source: the
// compiler command, its resolved path and `--version` line, the host CPU (for
// -march=native) and the flags. It is part of every cache key.
func (b *Builder) CompilerID() string {
	return b.compilerVersion() + " | " + strings.Join(b.flags(), " ")
}

// TargetKey is the target of every record measured with this builder at
// the given thread count: the target name, the threads and CompilerID. The
// tuner writes records under it and the model builder looks records up by
// it, so both must call this one function: a record measured with other
// threads, another compiler, other flags or on another CPU model is never
// taken as measured here.
func (b *Builder) TargetKey(target string, threads int) string {
	return fmt.Sprintf("%s threads=%d | %s", target, threads, b.CompilerID())
}

// CompilerInfo is the C compiler a Builder runs: its command ($CC, else cc,
// where Builder.CC is empty), the path the command's first word resolves
// to, and the first line of its `--version`.
type CompilerInfo struct {
	Command []string
	Path    string // "not found" where the command is not on PATH
	Version string // "unknown version" where `--version` failed
}

// CompilerInfo resolves the builder's compiler and asks its version, once
// per compiler command.
func (b *Builder) CompilerInfo() CompilerInfo {
	argv := b.command()
	key := strings.Join(argv, "\x00")
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.compilerFor == key && b.compiler.Version != "" {
		return b.compiler
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		path = "not found"
	}
	line := "unknown version"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, argv[0], append(argv[1:], "--version")...).Output()
	if err == nil {
		line, _, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	}
	b.compilerFor = key
	b.compiler = CompilerInfo{Command: argv, Path: path, Version: line}
	return b.compiler
}

// compilerVersion returns the flag-independent part of CompilerID: the
// compiler's command, path and version line, and the host.
func (b *Builder) compilerVersion() string {
	c := b.CompilerInfo()
	return fmt.Sprintf("%s [%s] %s | host %s/%s %s", strings.Join(c.Command, " "), c.Path, c.Version,
		runtime.GOOS, runtime.GOARCH, cpuModel())
}

// cpuModel returns the "model name" of /proc/cpuinfo, or "" where there is none.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func cacheKey(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Build compiles srcs and returns one Built per source, in order. It never
// fails as a whole: a failure of one source is recorded in its Built. Equal
// sources are compiled once. When ctx ends, builds not yet finished come back
// as BuildTimeout with a Msg starting with "canceled".
//
// A source is compiled and linked by one compiler command. Keeping its
// object file too (for a model's build, Objects) would take a second
// command or -save-temps: on a Zen 5 under load, 20-30% more compiler
// time for a small kernel, paid by every tuning candidate for the sake of
// one build's first compile.
func (b *Builder) Build(ctx context.Context, srcs []Source) []Built {
	return b.buildAll(ctx, srcs, ".so", append(b.flags(), "-o", "out", "kernel.c", "-lm"))
}

// Objects compiles srcs to object files (the flags of Build, with -c),
// through the same cache (KEY.o beside Build's KEY.so): a model's kernels
// are compiled once for all its builds. One Built per source, in order;
// Path is the object.
func (b *Builder) Objects(ctx context.Context, srcs []Source) []Built {
	return b.buildAll(ctx, srcs, ".o", append(b.flags(), "-c", "-o", "out", "kernel.c"))
}

// buildAll compiles every source with the compiler arguments args (which
// write "out" from "kernel.c") into the cache as KEY+ext.
func (b *Builder) buildAll(ctx context.Context, srcs []Source, ext string, args []string) []Built {
	dir, err := b.cacheDir()
	if err != nil {
		out := make([]Built, len(srcs))
		for i := range out {
			out[i] = Built{Kind: CompileError, Msg: err.Error(), Infra: true}
		}
		return out
	}
	id := b.CompilerID()
	return buildEach(ctx, srcs, b.parallel(), func(src Source) string { return src.key(id) },
		func(key string, src Source) Built {
			return b.compile(ctx, b.timeout(), filepath.Join(dir, key+ext), "kernel.c", src, args)
		})
}

// Link links objects into the shared library dst with the flags of Build
// and extra (linker options, such as a version script), unless dst exists
// already: it is written beside dst and renamed onto it.
func (b *Builder) Link(ctx context.Context, dst string, objects, extra []string) Built {
	start := time.Now()
	if fi, err := os.Stat(dst); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
		return Built{Path: dst, Cached: true, Time: time.Since(start)}
	}
	argv := append(b.command(), b.flags()...)
	argv = append(append(append(argv, "-o", "out"), objects...), extra...)
	argv = append(argv, "-lm")
	built := compileFile(ctx, b.timeout(), dst, "", Source{}, argv, func(err error) bool {
		var ee *exec.ExitError
		return errors.As(err, &ee)
	})
	built.Time = time.Since(start)
	return built
}

// buildEach runs build for every source, parallel at a time, once per
// distinct cache key (a duplicate gets the result of the first, Cached).
// When ctx ends, builds not yet started come back as BuildTimeout with a
// Msg starting with "canceled".
func buildEach(ctx context.Context, srcs []Source, parallel int, keyOf func(Source) string, build func(key string, src Source) Built) []Built {
	out := make([]Built, len(srcs))
	firstOf := make(map[string]int) // cache key → index of the source that builds it
	dupOf := make([]int, len(srcs))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, src := range srcs {
		key := keyOf(src)
		if j, ok := firstOf[key]; ok {
			dupOf[i] = j
			continue
		}
		firstOf[key], dupOf[i] = i, -1
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
			}
			if err := ctx.Err(); err != nil {
				out[i] = Built{Kind: BuildTimeout, Msg: canceledMsg + ": " + err.Error()}
				return
			}
			out[i] = build(key, src)
		})
	}
	wg.Wait()
	for i, j := range dupOf {
		if j >= 0 {
			out[i] = out[j]
			out[i].Cached = out[j].Kind == None
		}
	}
	return out
}

// compile produces dst unless it exists already: it writes code to srcName in
// a scratch directory next to dst, runs the compiler there with args (which
// must write "out"), and renames out to dst, so that concurrent builders, in
// this process or others, never see a partial file.
func (b *Builder) compile(ctx context.Context, timeout time.Duration, dst, srcName string, src Source, args []string) Built {
	return compileFile(ctx, timeout, dst, srcName, src, append(b.command(), args...), func(err error) bool {
		var ee *exec.ExitError
		return errors.As(err, &ee) // the compiler ran and refused the source
	})
}

// compileFile is compile with the whole command line argv, run in the
// scratch directory; sourceFault reports whether the command's failure is
// the source's (else the machine's: Built.Infra).
func compileFile(ctx context.Context, timeout time.Duration, dst, srcName string, src Source, argv []string, sourceFault func(error) bool) Built {
	start := time.Now()
	if fi, err := os.Stat(dst); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
		return Built{Path: dst, Cached: true, Time: time.Since(start)}
	}
	fail := func(err error) Built {
		return Built{Kind: CompileError, Msg: err.Error(), Time: time.Since(start), Infra: true}
	}
	scratch, err := os.MkdirTemp(filepath.Dir(dst), "tmp-")
	if err != nil {
		return fail(fmt.Errorf("measure: scratch dir: %w", err))
	}
	defer os.RemoveAll(scratch)
	if srcName != "" { // "": a link, of files outside the scratch directory
		if err := os.WriteFile(filepath.Join(scratch, srcName), []byte(src.Code), 0o644); err != nil {
			return fail(fmt.Errorf("measure: write source: %w", err))
		}
	}
	for name, data := range src.Files {
		if name != filepath.Base(name) || name == srcName || name == "out" {
			return fail(fmt.Errorf("measure: source file name %q: not a plain file name", name))
		}
		if err := os.WriteFile(filepath.Join(scratch, name), []byte(data), 0o644); err != nil {
			return fail(fmt.Errorf("measure: write %s: %w", name, err))
		}
	}

	var stderr *headBuffer
	// A compiler killed at its deadline while the machine is loaded (load
	// average above the CPU count: other runs share the cores) gets one
	// more try with twice the time, so that a schedule is not recorded as
	// one that does not compile because of the others.
	for try := 0; ; try++ {
		cmd, tctx, cancel := groupCommand(ctx, timeout, argv[0], argv[1:]...)
		cmd.Dir = scratch
		stderr = &headBuffer{max: compileMsgMax}
		cmd.Stdout, cmd.Stderr = stderr, stderr
		err = cmd.Run()
		kind := classify(ctx, tctx, err)
		cancel()
		elapsed := time.Since(start)
		switch kind {
		case canceled:
			return Built{Kind: BuildTimeout, Msg: canceledMsg + ": " + ctx.Err().Error(), Time: elapsed}
		case timedOut:
			load, ok := loadAverage()
			if try == 0 && ok && load > float64(runtime.NumCPU()) {
				timeout *= 2
				continue
			}
			msg := fmt.Sprintf("compiler killed after %v", timeout)
			if ok {
				msg += fmt.Sprintf(" (load average %.1f on %d CPUs)", load, runtime.NumCPU())
			}
			return Built{Kind: BuildTimeout, Msg: msg, Time: elapsed}
		}
		break
	}
	elapsed := time.Since(start)
	if err != nil {
		msg := stderr.String()
		source := sourceFault(err)
		if !source || msg == "" {
			msg = strings.TrimSpace(fmt.Sprintf("%s: %v\n%s", argv[0], err, msg))
		}
		return Built{Kind: CompileError, Msg: msg, Time: elapsed, Infra: !source}
	}
	if err := os.Rename(filepath.Join(scratch, "out"), dst); err != nil {
		return fail(fmt.Errorf("measure: store build: %w", err))
	}
	return Built{Path: dst, Time: time.Since(start)}
}

// loadAverage returns the 1-minute load average (Linux), ok false where
// it cannot be read.
func loadAverage() (float64, bool) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}

// BuildProgram compiles a stand-alone C program (a harness or runner that
// a Go process drives as a child) into the build cache, once per compiler,
// flags and source, and returns the executable's path. name prefixes the
// cached file; flags are the complete compiler flags before "-o", and libs
// come after the source ("-ldl").
func (b *Builder) BuildProgram(ctx context.Context, name string, src Source, flags, libs []string) (string, error) {
	dir, err := b.cacheDir()
	if err != nil {
		return "", err
	}
	key := src.key(cacheKey(name, b.compilerVersion(), strings.Join(flags, " "), strings.Join(libs, " ")))
	args := append(append(slices.Clone(flags), "-o", "out", name+".c"), libs...)
	built := b.compile(ctx, programTimeout, filepath.Join(dir, name+"-"+key), name+".c", src, args)
	if built.Kind != None {
		return "", fmt.Errorf("measure: build %s: %s: %s", name, built.Kind, built.Msg)
	}
	return built.Path, nil
}

// programTimeout bounds the compilation of a program by BuildProgram.
const programTimeout = 60 * time.Second

// Assembly returns the assembly the compiler emits for src with the same
// flags as Build (less -shared), for inspecting what the code generator got.
func (b *Builder) Assembly(ctx context.Context, src Source) (string, error) {
	scratch, err := os.MkdirTemp("", "tessera-asm-")
	if err != nil {
		return "", fmt.Errorf("measure: scratch dir: %w", err)
	}
	defer os.RemoveAll(scratch)
	if err := os.WriteFile(filepath.Join(scratch, "kernel.c"), []byte(src.Code), 0o644); err != nil {
		return "", fmt.Errorf("measure: write source: %w", err)
	}
	args := slices.DeleteFunc(b.flags(), func(f string) bool { return f == "-shared" })
	args = append(args, "-S", "-o", "-", "kernel.c")
	argv := b.command()
	cmd, tctx, cancel := groupCommand(ctx, b.timeout(), argv[0], append(argv[1:], args...)...)
	defer cancel()
	cmd.Dir = scratch
	var stdout bytes.Buffer
	stderr := &headBuffer{max: compileMsgMax}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	err = cmd.Run()
	switch classify(ctx, tctx, err) {
	case canceled:
		return "", fmt.Errorf("measure: assembly: %w", ctx.Err())
	case timedOut:
		return "", fmt.Errorf("measure: assembly: compiler killed after %v", b.timeout())
	}
	if err != nil {
		return "", fmt.Errorf("measure: assembly: %w: %s", err, stderr.String())
	}
	return stdout.String(), nil
}
