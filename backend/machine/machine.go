// Package machine is the cpu target's machine model: what Tessera knows of
// the processor it compiles for. A Machine names the ISA level and its
// extensions, the vector width, the number of vector registers, the caches
// and the cores, and the -march the compiler gets. Everything that depends
// on the machine reads it from here — the C printer's vector types, the
// register tiles of the default schedules, the sketch's vector lanes, the
// benchmarks' peers — so that no other package carries a lane or register
// count of its own (TestNoMachineConstants checks the tree for them).
//
// A Machine is found by Resolve: "native" is this host, detected from
// /proc/cpuinfo and sysfs; "x86-64-v2", "x86-64-v3", "x86-64-v4" and
// "armv8-a" are the portable levels (the psABI's); any other name is a
// compiler -march name (znver3, skylake-avx512, ...), whose extensions the
// compiler itself reports. Ansor's HardwareParams and TVM's -mcpu/-mattr are
// the same idea.
package machine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Machine is one processor as the cpu target sees it. The zero value is not
// a machine: make one with Resolve, Native or Level.
type Machine struct {
	// Name is the name it was asked by: "native", a level, or a -march name.
	Name string
	// Arch is the GOARCH of the code: "amd64" or "arm64".
	Arch string
	// March is the compiler's -march value.
	March string
	// Tune is the compiler's -mtune value; "" leaves the compiler's choice
	// (for an x86-64 level, generic; for a -march name, that processor).
	Tune string
	// Level is the highest portable ISA level the features reach:
	// "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4" or "armv8-a".
	Level string
	// Features are the ISA extensions, sorted, in the compiler's spelling
	// (those of __builtin_cpu_supports on x86: "avx2", "fma", "avx512f").
	Features []string
	// VectorBytes is the width of one vector register.
	VectorBytes int
	// VectorRegs is the number of vector registers.
	VectorRegs int
	// FMA says whether the ISA has fused multiply-add.
	FMA bool
	// Cores is the number of cores the process may use.
	Cores int
	// L1D and L2 are one core's data caches, L3 the shared one, in bytes;
	// 0 where unknown.
	L1D, L2, L3 int
	// Model is the host's processor (model name, family and model), for a
	// machine that runs here; "" for one named only.
	Model string
}

// defaultScheduleL2 is the L2 the default schedules assume where the
// machine's is unknown (a machine of another architecture than the host,
// or a host that hides its caches): the most a core's L2 holds on the
// machines we know (512 KiB to 2 MiB), so that a weight streams only when
// it outgrows any of them.
const defaultScheduleL2 = 2 << 20

// ScheduleL2 returns the size in bytes of one core's L2 as the default
// schedules see it: a stage that streams a weight larger than this orders
// its tiles so that each panel of the weight is read from memory once
// (sketch's streamsWeights). It is the machine's L2, or defaultScheduleL2
// where that is unknown.
//
// Measured against the 2 MiB bound it replaces, untuned, one thread, on
// an AMD EPYC Zen 3 (512 KiB L2): ResNet-18 and the BERT layer build the
// same kernels (so do ResNet-50, MobileNetV2 and DenseNet-121); the BERT
// encoder's FFN (1 MiB weights) streams, and the encoder ran 2.66-2.81 ms
// against 2.72-2.86 (medians of 100 runs, 5 rounds alternating);
// Inception v3 changes 9 kernels, from 0.82× to 1.3× (a Winograd
// convolution at 35×35 the slower), and ran the same, medians 121.8-124.5
// ms against 121.0-124.1 (6 rounds). A weight that only fills the L2 does
// not stream: on a Zen 5 (1 MiB L2) the text encoder's 1 MiB weights ran
// 7% slower streamed.
func (m Machine) ScheduleL2() int {
	if m.L2 > 0 {
		return m.L2
	}
	return defaultScheduleL2
}

// cacheLine is the line of the data caches of every processor the
// machine model knows: x86-64's, and the armv8-a cores'.
const cacheLine = 64

// CacheLine returns the size in bytes of one line of the machine's data
// caches, the unit in which the cost model's features count the memory a
// program touches. It follows from the architecture alone, so a machine
// read back from a records key (ParseKey) has the line its records were
// measured with; the zero Machine of a GPU target gives the same 64
// bytes, which its features count in too.
func (m Machine) CacheLine() int { return cacheLine }

// Lanes returns the float32 lanes of one vector register.
func (m Machine) Lanes() int { return m.VectorBytes / 4 }

// VectorBits returns the width of one vector register in bits.
func (m Machine) VectorBits() int { return m.VectorBytes * 8 }

// Has reports whether the machine has extension f.
func (m Machine) Has(f string) bool { return slices.Contains(m.Features, f) }

// Key is the part of a target key that says what the code was compiled for:
// a record measured for one machine is never replayed as measured on
// another.
func (m Machine) Key() string {
	k := fmt.Sprintf("machine %s %s %s %d-bit×%d", m.Name, strings.Join(m.Flags(), " "), m.Level, m.VectorBits(), m.VectorRegs)
	if m.Model != "" {
		k += " " + m.Model
	}
	return k
}

// keyRE matches what Key writes, up to the vector registers.
var keyRE = regexp.MustCompile(`machine (\S+) -march=(\S+)(?: -mtune=(\S+))? (\S+) (\d+)-bit×(\d+)`)

// ParseKey reads back the machine a key names (a Key, or a target key
// that holds one): its name, -march, -mtune, level, vector width and
// registers, the facts records are measured under. It reports false when
// s holds no machine key.
func ParseKey(s string) (Machine, bool) {
	g := keyRE.FindStringSubmatch(s)
	if g == nil {
		return Machine{}, false
	}
	bits, err1 := strconv.Atoi(g[5])
	regs, err2 := strconv.Atoi(g[6])
	if err1 != nil || err2 != nil || bits%8 != 0 {
		return Machine{}, false
	}
	arch := "amd64"
	if strings.HasPrefix(g[4], "armv") {
		arch = "arm64"
	}
	return Machine{Name: g[1], Arch: arch, March: g[2], Tune: g[3], Level: g[4], VectorBytes: bits / 8, VectorRegs: regs}, true
}

// Flags are the compiler flags that select the machine: -march, and
// -mtune where it has one.
func (m Machine) Flags() []string {
	if m.Tune == "" {
		return []string{"-march=" + m.March}
	}
	return []string{"-march=" + m.March, "-mtune=" + m.Tune}
}

// String is the run header's line: what the code is compiled for and what
// the machine has.
func (m Machine) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cpu %s (%s, %s): %d-bit vectors × %d registers", m.Name, strings.Join(m.Flags(), " "), m.Level, m.VectorBits(), m.VectorRegs)
	if m.FMA {
		b.WriteString(", FMA")
	}
	if m.Cores > 0 {
		fmt.Fprintf(&b, ", %d cores", m.Cores)
	}
	if m.L1D > 0 || m.L2 > 0 || m.L3 > 0 {
		fmt.Fprintf(&b, ", L1d %s L2 %s L3 %s", size(m.L1D), size(m.L2), size(m.L3))
	}
	if m.Model != "" {
		fmt.Fprintf(&b, "; %s", m.Model)
	}
	return b.String()
}

func size(n int) string {
	switch {
	case n == 0:
		return "?"
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	default:
		return fmt.Sprintf("%dK", n>>10)
	}
}

// Missing returns the features of m that host lacks (none: m's code runs
// on host).
func (m Machine) Missing(host Machine) []string {
	if m.Arch != host.Arch {
		return []string{"arch " + m.Arch}
	}
	var out []string
	for _, f := range m.Features {
		if !host.Has(f) {
			out = append(out, f)
		}
	}
	return out
}

// level is one portable ISA level: its features (added to the previous
// level's) and its registers.
type level struct {
	name, arch  string
	adds        []string
	vectorBytes int
	regs        int
	fma         bool
}

// levels are the portable levels, lowest first per architecture. x86: the
// x86-64 psABI's micro-architecture levels; arm64: the base NEON level.
var levels = []level{
	{"x86-64", "amd64", []string{"sse", "sse2"}, 16, 16, false},
	{"x86-64-v2", "amd64", []string{"sse3", "ssse3", "sse4.1", "sse4.2", "popcnt"}, 16, 16, false},
	{"x86-64-v3", "amd64", []string{"avx", "avx2", "fma", "bmi", "bmi2", "f16c", "movbe"}, 32, 16, true},
	{"x86-64-v4", "amd64", []string{"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}, 64, 32, true},
	{"armv8-a", "arm64", []string{"neon"}, 16, 32, true},
}

// Levels are the portable level names, lowest first.
func Levels() []string {
	out := make([]string, len(levels))
	for i, l := range levels {
		out[i] = l.name
	}
	return out
}

// Level returns the portable level name on this host's caches and cores
// (a level is what a build for a fleet asks for; it still runs here).
func Level(name string) (Machine, error) {
	i := slices.IndexFunc(levels, func(l level) bool { return l.name == name })
	if i < 0 {
		return Machine{}, fmt.Errorf("cpu %q: %w (levels: %s)", name, ErrUnknown, strings.Join(Levels(), ", "))
	}
	l := levels[i]
	var feats []string
	for _, p := range levels[:i+1] {
		if p.arch == l.arch {
			feats = append(feats, p.adds...)
		}
	}
	slices.Sort(feats)
	m := Machine{Name: name, Arch: l.arch, March: name, Level: name, Features: feats,
		VectorBytes: l.vectorBytes, VectorRegs: l.regs, FMA: l.fma}
	m.onHost()
	return m, nil
}

// fromFeatures fills the level, vector width, registers and FMA of m from
// its features: the highest level all of whose features m has.
func (m *Machine) fromFeatures() {
	m.Level = ""
	have := map[string]bool{}
	for _, f := range m.Features {
		have[f] = true
	}
	for _, l := range levels {
		if l.arch != m.Arch {
			continue
		}
		if !allIn(l.adds, have) {
			break
		}
		m.Level, m.VectorBytes, m.VectorRegs, m.FMA = l.name, l.vectorBytes, l.regs, l.fma
	}
	// Extensions beyond a level still widen what the code may use: AVX
	// without the rest of v3 has 256-bit registers, AVX-512F 32 of 512 bits.
	if m.Arch == "amd64" {
		if have["avx"] && m.VectorBytes < 32 {
			m.VectorBytes = 32
		}
		if have["avx512f"] {
			m.VectorBytes, m.VectorRegs = 64, 32
		}
		m.FMA = m.FMA || have["fma"]
	}
}

func allIn(fs []string, have map[string]bool) bool {
	for _, f := range fs {
		if !have[f] {
			return false
		}
	}
	return true
}

// ErrUnknown is returned for a cpu name that is neither native, a level
// nor a name the compiler knows.
var ErrUnknown = errors.New("unknown cpu")

// Resolve returns the machine a --cpu value names. cc is the C compiler
// command (argv), asked what a -march name enables; it is not run for
// native or a level.
func Resolve(name string, cc []string) (Machine, error) {
	switch {
	case name == "" || name == "native":
		return Native()
	case slices.ContainsFunc(levels, func(l level) bool { return l.name == name }):
		return Level(name)
	}
	return fromCompiler(name, cc)
}

// Native returns this host: its features from /proc/cpuinfo, caches from
// sysfs, cores from the scheduler, and -march=native.
func Native() (Machine, error) {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return Machine{}, fmt.Errorf("cpu native: %w", err)
	}
	m, err := parseCPUInfo(data, runtime.GOARCH)
	if err != nil {
		return Machine{}, fmt.Errorf("cpu native: /proc/cpuinfo: %w", err)
	}
	m.onHost()
	return m, nil
}

// nativeTune is the -mtune of native x86 code. -march=native alone would
// also tune for the host's processor, as the compiler knows it: GCC 12
// takes a Zen 5 for a Zen 3, and its AMD tunings fold vector loads into
// FMAs, so a register tile's B operand is loaded once per FMA instead of
// once per k step. That makes the tile's inner loop load-bound: measured
// on a Zen 5 with bench/gemm, the packed expert reached 0.53-0.64 of
// OpenBLAS tuned for znver3 and 0.92-0.96 tuned generic (the same -march,
// the same instructions available). The generic tuning is what every
// x86-64 level gets too.
const nativeTune = "generic"

// cpuinfoFlags maps /proc/cpuinfo's x86 flag names to the compiler's.
var cpuinfoFlags = map[string]string{
	"sse": "sse", "sse2": "sse2", "pni": "sse3", "ssse3": "ssse3", "sse4_1": "sse4.1", "sse4_2": "sse4.2",
	"popcnt": "popcnt", "avx": "avx", "avx2": "avx2", "fma": "fma", "bmi1": "bmi", "bmi2": "bmi2",
	"f16c": "f16c", "movbe": "movbe", "avx512f": "avx512f", "avx512bw": "avx512bw", "avx512cd": "avx512cd",
	"avx512dq": "avx512dq", "avx512vl": "avx512vl", "avx512_vnni": "avx512vnni", "avx_vnni": "avxvnni",
	"avx512_bf16": "avx512bf16", "avx512ifma": "avx512ifma", "avx512vbmi": "avx512vbmi",
}

// armFeatures maps /proc/cpuinfo's arm64 Features to ours.
var armFeatures = map[string]string{"asimd": "neon", "fphp": "fp16", "asimddp": "dotprod", "sve": "sve", "sve2": "sve2", "bf16": "bf16"}

// parseCPUInfo reads the first processor of a /proc/cpuinfo.
func parseCPUInfo(data []byte, arch string) (Machine, error) {
	m := Machine{Name: "native", Arch: arch, March: "native"}
	fields := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" && len(fields) > 0 {
			break // the first processor only
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	// The line listing the features, and how its names map to ours.
	line, names := "flags", cpuinfoFlags
	switch arch {
	case "amd64":
		m.Model = fmt.Sprintf("%s (family %s model %s)", fields["model name"], fields["cpu family"], fields["model"])
		m.Tune = nativeTune
	case "arm64":
		line, names = "Features", armFeatures
		m.Model = fmt.Sprintf("arm64 (implementer %s part %s)", fields["CPU implementer"], fields["CPU part"])
	default:
		return m, fmt.Errorf("architecture %s has no machine model", arch)
	}
	list, ok := fields[line]
	if !ok {
		return m, fmt.Errorf("no %s line", line)
	}
	for _, f := range strings.Fields(list) {
		if c, ok := names[f]; ok {
			m.Features = append(m.Features, c)
		}
	}
	slices.Sort(m.Features)
	m.Features = slices.Compact(m.Features)
	m.fromFeatures()
	if m.Level == "" {
		return m, fmt.Errorf("features %v reach no level", m.Features)
	}
	return m, nil
}

// onHost fills the cores and caches of a machine of this host's
// architecture from the host: its code runs here.
func (m *Machine) onHost() {
	if m.Arch != runtime.GOARCH {
		return
	}
	m.Cores = runtime.NumCPU()
	m.L1D, m.L2, m.L3 = caches("/sys/devices/system/cpu/cpu0/cache")
}

// caches reads the data and unified caches of one cpu from sysfs, or,
// where a container hides it, from glibc (getconf, which reads CPUID).
func caches(dir string) (l1d, l2, l3 int) {
	entries, _ := filepath.Glob(filepath.Join(dir, "index*"))
	if len(entries) == 0 {
		return getconfCaches()
	}
	for _, e := range entries {
		read := func(f string) string {
			b, _ := os.ReadFile(filepath.Join(e, f))
			return strings.TrimSpace(string(b))
		}
		if read("type") == "Instruction" {
			continue
		}
		n := parseSize(read("size"))
		switch read("level") {
		case "1":
			l1d = n
		case "2":
			l2 = n
		case "3":
			l3 = n
		}
	}
	return l1d, l2, l3
}

// getconfCaches asks glibc's getconf for the cache sizes; 0 where unknown.
func getconfCaches() (l1d, l2, l3 int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "getconf", "-a").Output()
	if err != nil {
		return 0, 0, 0
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 0 {
			continue
		}
		switch f[0] {
		case "LEVEL1_DCACHE_SIZE":
			l1d = n
		case "LEVEL2_CACHE_SIZE":
			l2 = n
		case "LEVEL3_CACHE_SIZE":
			l3 = n
		}
	}
	return l1d, l2, l3
}

// parseSize reads sysfs's "48K", "1024K", "32M"; 0 when unreadable.
func parseSize(s string) int {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return n * mult
}

// compilerMacros maps the compiler's predefined macros to features.
var compilerMacros = map[string]string{
	"__SSE__": "sse", "__SSE2__": "sse2", "__SSE3__": "sse3", "__SSSE3__": "ssse3", "__SSE4_1__": "sse4.1",
	"__SSE4_2__": "sse4.2", "__POPCNT__": "popcnt", "__AVX__": "avx", "__AVX2__": "avx2", "__FMA__": "fma",
	"__BMI__": "bmi", "__BMI2__": "bmi2", "__F16C__": "f16c", "__MOVBE__": "movbe", "__AVX512F__": "avx512f",
	"__AVX512BW__": "avx512bw", "__AVX512CD__": "avx512cd", "__AVX512DQ__": "avx512dq", "__AVX512VL__": "avx512vl",
	"__AVX512VNNI__": "avx512vnni", "__AVXVNNI__": "avxvnni", "__AVX512BF16__": "avx512bf16",
	"__AVX512IFMA__": "avx512ifma", "__AVX512VBMI__": "avx512vbmi",
	"__ARM_NEON": "neon", "__ARM_FEATURE_SVE": "sve", "__ARM_FEATURE_DOTPROD": "dotprod",
	"__ARM_FEATURE_BF16_VECTOR_ARITHMETIC": "bf16",
}

// fromCompiler asks the compiler what -march=name enables.
func fromCompiler(name string, cc []string) (Machine, error) {
	if strings.ContainsAny(name, " \t=") || strings.HasPrefix(name, "-") {
		return Machine{}, fmt.Errorf("cpu %q: %w", name, ErrUnknown)
	}
	if len(cc) == 0 {
		cc = []string{"cc"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	args := append(slices.Clone(cc[1:]), "-march="+name, "-dM", "-E", "-x", "c", os.DevNull)
	out, err := exec.CommandContext(ctx, cc[0], args...).CombinedOutput()
	if err != nil {
		return Machine{}, fmt.Errorf("cpu %q: %w (levels: %s; %s -march=%s: %s)", name, ErrUnknown,
			strings.Join(Levels(), ", "), cc[0], name, firstLine(out))
	}
	m := Machine{Name: name, March: name, Arch: "amd64"}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "#define" {
			continue
		}
		if f[1] == "__aarch64__" {
			m.Arch = "arm64"
		}
		if c, ok := compilerMacros[f[1]]; ok {
			m.Features = append(m.Features, c)
		}
	}
	slices.Sort(m.Features)
	m.Features = slices.Compact(m.Features)
	m.fromFeatures()
	if m.Level == "" {
		return Machine{}, fmt.Errorf("cpu %q: features %v reach no level Tessera knows", name, m.Features)
	}
	m.onHost()
	return m, nil
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

// RunnableLevels returns the portable levels of host's architecture that
// host can run, lowest first, and those it cannot with the features it
// lacks: a test matrix runs the first and says it skipped the second.
func RunnableLevels(host Machine) (run []Machine, skipped map[string][]string) {
	skipped = map[string][]string{}
	for _, l := range levels {
		if l.arch != host.Arch || l.name == "x86-64" {
			continue
		}
		m, err := Level(l.name)
		if err != nil {
			continue
		}
		if miss := m.Missing(host); len(miss) > 0 {
			skipped[l.name] = miss
			continue
		}
		run = append(run, m)
	}
	return run, skipped
}

// Report is what tune machine shows of a machine model and the host
// (WriteReport; tune machine --json). Cache sizes are bytes, 0 where
// unknown.
type Report struct {
	Name        string   `json:"name"`
	Arch        string   `json:"arch"`
	Flags       []string `json:"flags"` // -march, -mtune
	Level       string   `json:"level"`
	Features    []string `json:"features"`
	VectorBits  int      `json:"vector_bits"`
	VectorRegs  int      `json:"vector_regs"`
	FMA         bool     `json:"fma"`
	Cores       int      `json:"cores"`
	L1DBytes    int      `json:"l1d_bytes"`
	L2Bytes     int      `json:"l2_bytes"`
	L3Bytes     int      `json:"l3_bytes"`
	Model       string   `json:"model,omitempty"` // the host's processor, for a machine that runs here
	Key         string   `json:"key"`
	Description string   `json:"description"` // String's line
	// Runs are the portable levels the host runs; Lacks, per level it
	// does not, the extensions it lacks.
	Runs  []string            `json:"host_runs"`
	Lacks map[string][]string `json:"host_lacks,omitempty"`
}

// Report returns m's report, with the levels host runs.
func (m Machine) Report(host Machine) Report {
	r := Report{Name: m.Name, Arch: m.Arch, Flags: m.Flags(), Level: m.Level, Features: m.Features, VectorBits: m.VectorBits(), VectorRegs: m.VectorRegs,
		FMA: m.FMA, Cores: m.Cores, L1DBytes: m.L1D, L2Bytes: m.L2, L3Bytes: m.L3, Model: m.Model, Key: m.Key(), Description: m.String(), Runs: []string{}}
	run, skipped := RunnableLevels(host)
	for _, l := range run {
		r.Runs = append(r.Runs, l.Name)
	}
	if len(skipped) > 0 {
		r.Lacks = skipped
	}
	return r
}

// WriteReport writes m (String), its features and its key, then which
// portable levels host runs and what host lacks for each of the others
// (tune machine).
func (m Machine) WriteReport(w io.Writer, host Machine) { m.Report(host).Write(w) }

// Write writes the report as tune machine prints it.
func (r Report) Write(w io.Writer) {
	fmt.Fprintln(w, r.Description)
	fmt.Fprintf(w, "features: %s\n", strings.Join(r.Features, " "))
	fmt.Fprintf(w, "key: %s\n", r.Key)
	fmt.Fprintf(w, "this machine runs: %s\n", strings.Join(r.Runs, " "))
	for _, name := range Levels() {
		if miss, ok := r.Lacks[name]; ok {
			fmt.Fprintf(w, "this machine lacks for %s: %s\n", name, strings.Join(miss, " "))
		}
	}
}

// LoadCheck is one ISA extension a library checks for when it is loaded:
// the compiler's macro that says the code may use it, and its name for
// __builtin_cpu_supports (x86).
type LoadCheck struct{ Macro, Feature string }

// LoadChecks are the extensions a built library checks, in level order:
// each that its -march enabled must be on the processor loading it, or
// tessera_open refuses with the name of the one missing (never SIGILL).
var LoadChecks = []LoadCheck{
	{"__SSE3__", "sse3"}, {"__SSSE3__", "ssse3"}, {"__SSE4_1__", "sse4.1"}, {"__SSE4_2__", "sse4.2"},
	{"__POPCNT__", "popcnt"}, {"__AVX__", "avx"}, {"__AVX2__", "avx2"}, {"__FMA__", "fma"},
	{"__BMI__", "bmi"}, {"__BMI2__", "bmi2"}, {"__AVX512F__", "avx512f"}, {"__AVX512BW__", "avx512bw"},
	{"__AVX512CD__", "avx512cd"}, {"__AVX512DQ__", "avx512dq"}, {"__AVX512VL__", "avx512vl"},
	{"__AVX512VNNI__", "avx512vnni"}, {"__AVX512BF16__", "avx512bf16"}, {"__AVX512IFMA__", "avx512ifma"},
	{"__AVX512VBMI__", "avx512vbmi"},
}
