package machine

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A Zen 3's flags (AVX2 and FMA, no AVX-512), a Zen 5's (AVX-512) and an
// arm64 host's Features, as /proc/cpuinfo prints them.
const (
	zen3Flags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl nonstop_tsc cpuid extd_apicid aperfmperf rapl pni pclmulqdq monitor ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand lahf_lm cmp_legacy svm extapic cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw ibs skinit wdt tce topoext perfctr_core perfctr_nb bpext perfctr_llc mwaitx cpb cat_l3 cdp_l3 hw_pstate ssbd mba ibrs ibpb stibp vmmcall fsgsbase bmi1 avx2 smep bmi2 erms invpcid cqm rdt_a rdseed adx smap clflushopt clwb sha_ni xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local clzero irperf xsaveerptr rdpru wbnoinvd arat npt lbrv svm_lock nrip_save tsc_scale vmcb_clean flushbyasid decodeassists pausefilter pfthreshold v_vmsave_vmload vgif v_spec_ctrl umip pku ospke vaes vpclmulqdq rdpid overflow_recov succor smca fsrm"
	zen5Flags = "fpu vme de pse tsc msr pae mce cx8 apic sep pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx mmxext lm constant_tsc rep_good nopl xtopology tsc_reliable nonstop_tsc cpuid extd_apicid tsc_known_freq pni pclmulqdq ssse3 fma cx16 sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm cr8_legacy misalignsse 3dnowprefetch topoext pti vmmcall bmi1 avx2 bmi2 erms avx512f avx512dq adx avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 avx_vnni avx512_bf16 clzero xsaveerptr arat avx512vbmi avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq movdiri movdir64b fsrm avx512_vp2intersect"
	neoverse  = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs"
)

func cpuinfo(arch, model, flags string) []byte {
	if arch == "arm64" {
		return []byte("processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: " + flags + "\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n\nprocessor\t: 1\n")
	}
	return []byte("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: " + model + "\nflags\t\t: " + flags + "\n\nprocessor\t: 1\n")
}

func TestParseCPUInfo(t *testing.T) {
	for _, c := range []struct {
		name, arch, flags string
		level             string
		bytes, regs       int
		fma               bool
		has, lacks        []string
	}{
		{"zen3", "amd64", zen3Flags, "x86-64-v3", 32, 16, true, []string{"avx2", "fma", "bmi2"}, []string{"avx512f"}},
		{"zen5", "amd64", zen5Flags, "x86-64-v4", 64, 32, true, []string{"avx512f", "avx512vl", "avx512vnni"}, nil},
		{"sse", "amd64", "fpu sse sse2 pni ssse3 sse4_1 sse4_2 popcnt", "x86-64-v2", 16, 16, false, []string{"sse4.2"}, []string{"avx"}},
		{"neoverse", "arm64", neoverse, "armv8-a", 16, 32, true, []string{"neon", "dotprod"}, []string{"sve"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := parseCPUInfo(cpuinfo(c.arch, "AMD EPYC", c.flags), c.arch)
			if err != nil {
				t.Fatal(err)
			}
			if m.Level != c.level || m.VectorBytes != c.bytes || m.VectorRegs != c.regs || m.FMA != c.fma {
				t.Errorf("got %s, want %s with %d-byte vectors × %d, FMA %v", m, c.level, c.bytes, c.regs, c.fma)
			}
			// Native x86 code is tuned generic, not for the processor as
			// the compiler takes it (nativeTune); the tuning is part of the key.
			if tune := map[string]string{"amd64": "generic"}[c.arch]; m.Tune != tune || (tune != "" && !strings.Contains(m.Key(), "-mtune="+tune)) {
				t.Errorf("tune %q (key %q), want %q", m.Tune, m.Key(), tune)
			}
			for _, f := range c.has {
				if !m.Has(f) {
					t.Errorf("lacks %s: %v", f, m.Features)
				}
			}
			for _, f := range c.lacks {
				if m.Has(f) {
					t.Errorf("has %s", f)
				}
			}
			// What the host runs: its own level and those below.
			for _, name := range Levels() {
				l, _ := Level(name)
				if l.Arch != c.arch {
					continue
				}
				runs := len(l.Missing(m)) == 0
				want := slices.Index(Levels(), name) <= slices.Index(Levels(), c.level)
				if runs != want {
					t.Errorf("%s runs %s: %v, want %v (missing %v)", c.name, name, runs, want, l.Missing(m))
				}
			}
		})
	}
	for _, bad := range [][]byte{[]byte("processor\t: 0\n"), []byte("flags\t: fpu vme\n")} {
		if _, err := parseCPUInfo(bad, "amd64"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestLevels(t *testing.T) {
	for _, c := range []struct {
		name        string
		bits, regs  int
		arch, march string
	}{
		{"x86-64-v2", 128, 16, "amd64", "x86-64-v2"},
		{"x86-64-v3", 256, 16, "amd64", "x86-64-v3"},
		{"x86-64-v4", 512, 32, "amd64", "x86-64-v4"},
		{"armv8-a", 128, 32, "arm64", "armv8-a"},
	} {
		m, err := Level(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if m.VectorBits() != c.bits || m.VectorRegs != c.regs || m.Arch != c.arch || m.March != c.march || m.Lanes() != c.bits/32 {
			t.Errorf("%s: %s", c.name, m)
		}
		if !strings.Contains(m.Key(), c.name) {
			t.Errorf("%s: key %q does not name it", c.name, m.Key())
		}
		// A target key holds the machine key; records are read back by it.
		k, ok := ParseKey("cpu threads=1 | cc 12 | -O3 | " + m.Key())
		if !ok || k.Name != m.Name || k.March != m.March || k.Tune != m.Tune || k.Level != m.Level ||
			k.VectorBytes != m.VectorBytes || k.VectorRegs != m.VectorRegs || k.Arch != m.Arch {
			t.Errorf("%s: ParseKey(%q) = %+v, %v", c.name, m.Key(), k, ok)
		}
	}
	n, err := parseCPUInfo(cpuinfo("amd64", "AMD EPYC", zen5Flags), "amd64")
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := ParseKey(n.Key()); !ok || k.Tune != "generic" || k.VectorBytes != 64 || k.VectorRegs != 32 {
		t.Errorf("ParseKey(%q) = %+v, %v", n.Key(), k, ok)
	}
	if _, ok := ParseKey("cpu threads=1 | cc 12 | -O3"); ok {
		t.Error("ParseKey of a key without a machine: ok")
	}
	if _, err := Level("x86-64-v9"); err == nil {
		t.Error("x86-64-v9: no error")
	}
	v3, _ := Level("x86-64-v3")
	v4, _ := Level("x86-64-v4")
	if miss := v4.Missing(v3); !slices.Contains(miss, "avx512f") {
		t.Errorf("v4 on a v3 host: missing %v, want avx512f among them", miss)
	}
	if v3.Key() == v4.Key() {
		t.Error("two levels share a key")
	}
}

// TestResolveMarch asks the compiler about -march names (skipped without
// one): znver3 is AVX2 with 16 registers, skylake-avx512 AVX-512.
func TestResolveMarch(t *testing.T) {
	for _, c := range []struct{ name, level string }{{"znver3", "x86-64-v3"}, {"skylake-avx512", "x86-64-v4"}, {"haswell", "x86-64-v3"}} {
		m, err := Resolve(c.name, []string{"cc"})
		if err != nil {
			t.Skipf("the compiler does not know %s: %v", c.name, err)
		}
		if m.Level != c.level || m.March != c.name {
			t.Errorf("%s: %s", c.name, m)
		}
	}
	if _, err := Resolve("no-such-cpu", []string{"cc"}); err == nil {
		t.Error("no-such-cpu: no error")
	}
	if _, err := Resolve("-O0", []string{"cc"}); err == nil {
		t.Error("a flag as a cpu name: no error")
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"48K": 48 << 10, "1024K": 1 << 20, "32M": 32 << 20, "": 0, "x": 0} {
		if got := parseSize(in); got != want {
			t.Errorf("%q: %d, want %d", in, got, want)
		}
	}
}

func FuzzParseCPUInfo(f *testing.F) {
	f.Add(cpuinfo("amd64", "AMD EPYC", zen3Flags), "amd64")
	f.Add(cpuinfo("arm64", "", neoverse), "arm64")
	f.Fuzz(func(t *testing.T, data []byte, arch string) {
		m, err := parseCPUInfo(data, arch)
		if err == nil && (m.Level == "" || m.VectorBytes <= 0 || m.VectorRegs <= 0) {
			t.Fatalf("no error but an incomplete machine: %+v", m)
		}
	})
}

// machineConstants are how a lane, vector or register count, a cache line
// or a cache size written as a constant looks in Go or in the C it prints.
var machineConstants = []*regexp.Regexp{
	regexp.MustCompile(`vector_size\(\d`),
	regexp.MustCompile(`\b(MaxVectorLanes|VectorBits|VectorBytes|VectorRegs|Lanes|vectorTile|rowTile)\s*(:|=|:=)\s*\d`),
	regexp.MustCompile(`-march=native`),
	regexp.MustCompile(`\b((?i:cache_?line)\w*|L1D?|L2|L3)\s*(:|=|:=)\s*\d`),
}

// TestNoMachineConstants checks the repository's Go code outside this
// package (tests excepted) for a lane, vector width, register count,
// cache line or cache size of its own: machine facts come from the machine
// model. GPU files are exempt (a GPU's vector width, float4, is the
// device's, not the CPU's), and so is measure/builder.go, where
// -march=native is the placeholder March replaces.
func TestNoMachineConstants(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	exempt := func(rel string) bool {
		return strings.HasPrefix(rel, "backend/machine/") || strings.Contains(filepath.Base(rel), "gpu") ||
			rel == "measure/builder.go" || strings.HasPrefix(rel, "testdata/")
	}
	n := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || exempt(rel) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		for i, line := range strings.Split(string(data), "\n") {
			for _, re := range machineConstants {
				if re.MatchString(line) {
					t.Errorf("%s:%d: a machine constant outside the machine model: %s", rel, i+1, strings.TrimSpace(line))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Fatalf("read %d Go files: is %s the repository?", n, root)
	}
}

// The default schedules tile against the machine's L2, and against 2 MiB
// where it is unknown (a machine of another architecture).
func TestScheduleL2(t *testing.T) {
	if got := (Machine{L2: 512 << 10}).ScheduleL2(); got != 512<<10 {
		t.Errorf("a 512 KiB L2: ScheduleL2 = %d", got)
	}
	if got := (Machine{}).ScheduleL2(); got != 2<<20 {
		t.Errorf("an unknown L2: ScheduleL2 = %d, want 2 MiB", got)
	}
}
