package cli

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure/remote"
)

// TestModelFlags: the model flags as frontend.Load and partition.Extract
// take them.
func TestModelFlags(t *testing.T) {
	for _, c := range []struct {
		args                          []string
		inputs, names, freeze, noPass string
		ranges                        string
		winograd                      bool
	}{
		{nil, "map[]", "map[]", "", "", "", true},
		{[]string{"--input", "x=1,3,8,8", "--no-pass", "cse,dce", "--winograd=false"}, "map[x:[1 3 8 8]]", "map[]", "", "cse,dce", "", false},
		{[]string{"--input", "ids=N,128", "--range", "N=1..8", "--freeze", "sr=16000"}, "map[ids:[-1 128]]", "map[ids:[N ]]", "sr=16000", "", "N=1..8", true},
	} {
		var m Model
		if _, err := Parse(NewFlagSet("t", io.Discard, &m), c.args); err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		lo := m.LoadOptions("")
		got := []string{fmt.Sprint(lo.Inputs), fmt.Sprint(lo.DimNames), Values(lo.Freeze).String(), Names(lo.NoPass).String(), m.Ranges.String()}
		want := []string{c.inputs, c.names, c.freeze, c.noPass, c.ranges}
		if strings.Join(got, "|") != strings.Join(want, "|") || m.Partition().Alternatives != c.winograd {
			t.Errorf("%q: %q, alternatives %v; want %q, %v", c.args, got, m.Partition().Alternatives, want, c.winograd)
		}
	}
}

// TestLoadOptionsIntegerTarget: with --integer, a CPU whose dot-product
// instruction sums u8×s8 groups exactly (AVX-VNNI: alderlake; AVX-512
// VNNI: sapphirerapids) loads with ExactDots; AVX2 (x86-64-v3),
// AVX-512 without VNNI (x86-64-v4), a GPU target ("") or no --integer do
// not. A CPU without a vector byte lookup (AVX2, AVX-512 without VBMI)
// loads with ScalarTables; one with AVX512_VBMI, a GPU target or no
// --integer does not.
func TestLoadOptionsIntegerTarget(t *testing.T) {
	for _, c := range []struct {
		integer             bool
		cpu                 string
		exact, scalarTables bool
	}{
		{true, "alderlake", true, true},
		{true, "sapphirerapids", true, false},
		{true, "x86-64-v3", false, true},
		{true, "x86-64-v4", false, true},
		{true, "", false, false},
		{false, "alderlake", false, false},
		{false, "x86-64-v3", false, false},
	} {
		m := Model{Integer: c.integer}
		o := m.LoadOptions(c.cpu)
		if o.ExactDots != c.exact || o.ScalarTables != c.scalarTables {
			t.Errorf("--integer=%v --cpu %q: ExactDots %v, ScalarTables %v; want %v, %v", c.integer, c.cpu, o.ExactDots, o.ScalarTables, c.exact, c.scalarTables)
		}
	}
}

// TestRegisterTarget: --target, --cpu and --threads fill a backend.Config,
// with their defaults; no --threads where its help is empty. --db and the
// NATS flags register where their commands say.
func TestRegisterTarget(t *testing.T) {
	for _, c := range []struct {
		threads string // the help of --threads
		args    []string
		want    backend.Config
		err     bool
	}{
		{"threads", nil, backend.Config{Name: "cpu", CPU: backend.DefaultCPU(), Threads: runtime.NumCPU()}, false},
		{"threads", []string{"--target", "opencl", "--cpu", "x86-64-v3", "--threads", "3"}, backend.Config{Name: "opencl", CPU: "x86-64-v3", Threads: 3}, false},
		{"", nil, backend.Config{Name: "cpu", CPU: backend.DefaultCPU()}, false},
		{"", []string{"--threads", "3"}, backend.Config{}, true},
	} {
		var cfg backend.Config
		fs := NewFlagSet("t", io.Discard, nil)
		RegisterTarget(fs, &cfg, "target to test", "the cpu", c.threads)
		_, err := Parse(fs, c.args)
		if (err != nil) != c.err || !c.err && (cfg.Name != c.want.Name || cfg.CPU != c.want.CPU || cfg.Threads != c.want.Threads) {
			t.Errorf("threads help %q, %q: %+v, %v; want %+v (error %v)", c.threads, c.args, cfg, err, c.want, c.err)
		}
		if c.err {
			continue
		}
		if got := fs.Lookup("target").Usage; got != "target to test: "+strings.Join(backend.Names, ", ") {
			t.Errorf("--target's help %q", got)
		}
	}
	var db string
	var d remote.DialOptions
	fs := NewFlagSet("t", io.Discard, nil)
	RegisterDB(fs, &db, " (from tune)")
	RegisterNATS(fs, &d, "the `URL`")
	if _, err := Parse(fs, []string{"--nats", "nats://h:4222", "--nats-ca", "ca.pem"}); err != nil || db != "tuning.db" || d.URL != "nats://h:4222" || d.Auth.CA != "ca.pem" ||
		fs.Lookup("db").Usage != "records database `FILE` (from tune)" {
		t.Errorf("--db %q, --nats %q, --nats-ca %q, %v", db, d.URL, d.Auth.CA, err)
	}
}

// TestLoadOptionsPrecision: --precision bf16 loads with BF16 and nothing
// against it for a CPU with bf16 dot products (AVX512_BF16: cooperlake,
// sapphirerapids); for one without (x86-64-v3, x86-64-v4) and for a GPU
// target ("") BF16Refused says why, which frontend.Load reports; float32
// (the default) loads without BF16; a precision of neither is a flag
// error.
func TestLoadOptionsPrecision(t *testing.T) {
	for _, c := range []struct {
		precision, cpu string
		bf16           bool
		refused        string
	}{
		{"bf16", "cooperlake", true, ""},
		{"bf16", "sapphirerapids", true, ""},
		{"bf16", "x86-64-v3", true, "--cpu x86-64-v3 has no bf16 dot-product instructions"},
		{"bf16", "x86-64-v4", true, "--cpu x86-64-v4 has no bf16 dot-product instructions"},
		{"bf16", "", true, "it is for CPU targets"},
		{"float32", "x86-64-v3", false, ""},
		{"", "sapphirerapids", false, ""},
	} {
		var m Model
		args := []string{}
		if c.precision != "" {
			args = []string{"--precision", c.precision}
		}
		if _, err := Parse(NewFlagSet("t", io.Discard, &m), args); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		lo := m.LoadOptions(c.cpu)
		if lo.BF16 != c.bf16 || !strings.Contains(lo.BF16Refused, c.refused) || (c.refused == "") != (lo.BF16Refused == "" || !c.bf16) {
			t.Errorf("--precision %q --cpu %q: BF16 %v, refused %q; want %v, %q", c.precision, c.cpu, lo.BF16, lo.BF16Refused, c.bf16, c.refused)
		}
	}
	var m Model
	var out strings.Builder
	if _, err := Parse(NewFlagSet("t", &out, &m), []string{"--precision", "fp8"}); err == nil || !strings.Contains(out.String(), "want one of float32, bf16") {
		t.Errorf("--precision fp8: %v, %q; want a flag error naming the precisions", err, out.String())
	}
}
