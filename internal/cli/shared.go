package cli

import (
	"flag"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/measure/remote"
	"github.com/tessera-ml/tessera/partition"
)

// The flags several commands share: those of a model (Model), of the
// target they compile for (RegisterTarget), of a records database
// (RegisterDB) and of a NATS server (RegisterNATS), and --cpu's help.

// CPUHelp is the help of --cpu (backend.Config.CPU).
var CPUHelp = "the processor to compile for: native (this machine), a portable level (" +
	strings.Join(machine.Levels(), ", ") + ") or a compiler -march `NAME` (znver3, skylake-avx512, ...); part of the target key; the default is $TESSERA_CPU where set"

// Model are the flags of every command that reads a model: how to load
// it (LoadOptions) and partition it (Partition), and the ranges of its
// dynamic dimensions.
type Model struct {
	Inputs    Shapes
	Freeze    Values
	NoPass    Names
	Ranges    Ranges
	Winograd  bool
	Integer   bool
	Precision string
}

// Precisions are the values of --precision.
var Precisions = []string{"float32", "bf16"}

// Register registers --input, --range, --freeze, --no-pass, --integer,
// --precision and --winograd.
func (m *Model) Register(fs *flag.FlagSet) {
	m.Inputs, m.Freeze, m.NoPass, m.Ranges = Shapes{}, Values{}, Names{}, Ranges{}
	fs.Var(m.Inputs, "input", "bind graph input `name=d0,d1,...` to a static shape (repeatable); a dimension the model leaves dynamic may be named instead (N), for --range")
	fs.Var(m.Ranges, "range", "the values `NAME=lo..hi` of the inputs' dynamic dimension NAME (repeatable): tune and build the model over them — a dynamic batch whose samples every group computes apart (tuned at 1, run per sample), and one other dimension whose value the kernels take at run time (a sequence length: tuned at three values of its range, built at every value); tune inspect prints the tasks over any ranges")
	fs.Var(m.Freeze, "freeze", "freeze graph input `name=v0,v1,...` to these values, a constant of the compiled model (a sample rate an If branches on; repeatable)")
	fs.Var(m.NoPass, "no-pass", "disable graph pass `NAME` (repeatable; passes: "+strings.Join(frontend.PassNames(), ", ")+")")
	fs.BoolVar(&m.Integer, "integer", false, "run quantized convolutions and matmuls (QLinearConv, QLinearMatMul, and a QDQ model's) on integer kernels: uint8 activations, exact sums; experimental: where the CPU sums four u8×s8 products in one instruction (VNNI, aarch64's sdot: --cpu decides), exact groups for any weights; on CPUs without, faster than the float form with 7-bit weights (tune quantize --reduce-range), slower with full-range ones")
	m.Precision = "float32"
	fs.Func("precision", "the arithmetic of float convolutions and matrix products: float32, or bf16 (opt-in, for CPUs with bf16 dot products: AVX512_BF16, aarch64 BF16): operands rounded to bfloat16 (weights stored so, at half the bytes), products summed in float32; the build prints the largest difference from float32 on a sample input (default float32)", func(v string) error {
		if !slices.Contains(Precisions, v) {
			return fmt.Errorf("want one of %s", strings.Join(Precisions, ", "))
		}
		m.Precision = v
		return nil
	})
	fs.BoolVar(&m.Winograd, "winograd", true, "give 3×3 stride-1 convolutions a Winograd alternative task, dilated ones by phases (tuned like any task; the build keeps the faster; --winograd=false: direct only)")
}

// LoadOptions are the options of frontend.Load the flags give, for code
// compiled for the CPU cpu names (a --cpu value; "" for a GPU target):
// with --integer, whether its dot-product instructions sum u8×s8 groups
// exactly (ExactDots); with --precision bf16, why the target cannot take
// it, if it cannot (BF16Refused: a GPU target, a CPU without bf16 dot
// products), which frontend.Load reports.
func (m *Model) LoadOptions(cpu string) frontend.LoadOptions {
	o := frontend.LoadOptions{Inputs: m.Inputs.Dims(), DimNames: m.Inputs.Names(), Freeze: m.Freeze, NoPass: m.NoPass, Integer: m.Integer, BF16: m.Precision == "bf16"}
	if !m.Integer && !o.BF16 {
		return o
	}
	if cpu == "" {
		o.BF16Refused = "it is for CPU targets (a GPU target computes in float32)"
		return o
	}
	// A --cpu that does not resolve is the target's error to report.
	mach, err := backend.ResolveMachine(cpu, &measure.Builder{})
	if err != nil {
		o.BF16Refused = fmt.Sprintf("--cpu %s: %v", cpu, err)
		return o
	}
	o.ExactDots = m.Integer && ExactDots(mach)
	o.ScalarTables = m.Integer && !VectorTables(mach)
	if !BF16Dots(mach) {
		o.BF16Refused = fmt.Sprintf("--cpu %s has no bf16 dot-product instructions (x86: AVX512_BF16, as on Zen 4, Zen 5 and Sapphire Rapids; aarch64: BF16); on it bf16 would only be slower than float32: leave --precision at float32, or name a CPU that has them", cpu)
	}
	return o
}

// HostLoadOptions are LoadOptions for the CPU a cpu target compiles for
// by default (backend.DefaultCPU): for the commands that read records
// (tune costmodel, tune records plot), whose target is a key.
func (m *Model) HostLoadOptions() frontend.LoadOptions { return m.LoadOptions(backend.DefaultCPU()) }

// BF16Dots reports whether machine m multiplies pairs of bfloat16 values
// and sums them into float32 lanes in one instruction: x86's AVX512_BF16
// (vdpbf16ps), aarch64's BF16 (bfdot).
func BF16Dots(m machine.Machine) bool { return m.Has("avx512bf16") || m.Has("bf16") }

// ExactDots reports whether machine m sums four u8×s8 products into an
// int32 lane exactly in one instruction: x86's VNNI (vpdpbusd, AVX-VNNI
// or AVX-512 VNNI with VL), aarch64's dot product (sdot; usdot with
// I8MM).
func ExactDots(m machine.Machine) bool {
	return m.Has("avxvnni") || m.Has("avx512vnni") && m.Has("avx512vl") || m.Has("dotprod")
}

// VectorTables reports whether machine m looks bytes up in a 256-byte
// table held in vector registers, as the kernels' tsr_gatherb does with
// x86's AVX512_VBMI (vpermi2b, with AVX512BW and VL). Elsewhere a lookup
// is a gather (AVX2) or one load per byte.
func VectorTables(m machine.Machine) bool {
	return m.Has("avx512vbmi") && m.Has("avx512bw") && m.Has("avx512vl")
}

// CPUOf returns the --cpu of target c, or "" for a GPU target.
func CPUOf(c backend.Config) string {
	if c.Name != "" && c.Name != "cpu" {
		return ""
	}
	return c.CPU
}

// Partition are the options of partition.Extract the flags give: the
// Winograd alternatives unless --winograd=false.
func (m *Model) Partition() partition.Options {
	return partition.Options{Alternatives: m.Winograd}
}

// RegisterTarget registers the flags that fill c, the target a command
// compiles for: --target (cpu unless given; its help is target, then the
// targets' names), --cpu (backend.DefaultCPU unless given; help cpu,
// CPUHelp or what a command says of it) and, unless threads is "",
// --threads (runtime.NumCPU unless given; help threads).
func RegisterTarget(fs *flag.FlagSet, c *backend.Config, target, cpu, threads string) {
	fs.StringVar(&c.Name, "target", "cpu", target+": "+strings.Join(backend.Names, ", "))
	fs.StringVar(&c.CPU, "cpu", backend.DefaultCPU(), cpu)
	if threads != "" {
		fs.IntVar(&c.Threads, "threads", runtime.NumCPU(), threads)
	}
}

// RegisterDB registers --db, a records database (tuning.db unless
// given), whose help may say more after "records database FILE".
func RegisterDB(fs *flag.FlagSet, db *string, more string) {
	fs.StringVar(db, "db", "tuning.db", "records database `FILE`"+more)
}

// RegisterNATS registers the flags of a command that talks to a NATS
// server: its URL (--nats, whose help is urlHelp) and where the
// credentials are (files or the environment; never the command line).
func RegisterNATS(fs *flag.FlagSet, d *remote.DialOptions, urlHelp string) {
	fs.StringVar(&d.URL, "nats", "", urlHelp)
	fs.StringVar(&d.Auth.Password, "nats-password-file", "", "`FILE` with user:password on its first line (else $"+remote.EnvUser+" and $"+remote.EnvPassword+")")
	fs.StringVar(&d.Auth.NKey, "nats-nkey", "", "`FILE` with an NKey user seed (else $"+remote.EnvNKey+")")
	fs.StringVar(&d.Auth.Creds, "nats-creds", "", "JWT user credentials `FILE`")
	fs.StringVar(&d.Auth.CA, "nats-ca", "", "CA certificate `FILE` that verifies the server (turns TLS on)")
	fs.StringVar(&d.Auth.Cert, "nats-cert", "", "client certificate `FILE` (with --nats-key)")
	fs.StringVar(&d.Auth.Key, "nats-key", "", "client key `FILE` (with --nats-cert)")
}
