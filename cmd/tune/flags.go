package main

import (
	"flag"
	"strings"

	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/internal/cli"
	"github.com/tessera-ml/tessera/measure/remote"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tuning"
)

// The flags several commands share: those of a model (modelFlags), of a
// NATS server (registerNATS), and --cpu's help.

// cpuFlagHelp is the help of --cpu (target.Config.CPU).
var cpuFlagHelp = "the processor to compile for: native (this machine), a portable level (" +
	strings.Join(machine.Levels(), ", ") + ") or a compiler -march `NAME` (znver3, skylake-avx512, ...); part of the target key; the default is $TESSERA_CPU where set"

// modelFlags are the flags of every command that reads a model.
type modelFlags struct {
	inputs   cli.Shapes
	freeze   cli.Values
	noPass   cli.Names
	ranges   cli.Ranges
	winograd bool
}

func (m *modelFlags) Register(fs *flag.FlagSet) {
	m.inputs, m.freeze, m.noPass, m.ranges = cli.Shapes{}, cli.Values{}, cli.Names{}, cli.Ranges{}
	fs.Var(m.inputs, "input", "bind graph input `name=d0,d1,...` to a static shape (repeatable); a dimension the model leaves dynamic may be named instead (N), for --range")
	fs.Var(m.ranges, "range", "the values `NAME=lo..hi` of the inputs' dynamic dimension NAME (repeatable): tune and build the model over them — a dynamic batch whose samples every group computes apart (tuned at 1, run per sample), and one other dimension whose value the kernels take at run time (a sequence length: tuned at three values of its range, built at every value); tune inspect prints the tasks over any ranges")
	fs.Var(m.freeze, "freeze", "freeze graph input `name=v0,v1,...` to these values, a constant of the compiled model (a sample rate an If branches on; repeatable)")
	fs.Var(m.noPass, "no-pass", "disable graph pass `NAME` (repeatable; passes: "+strings.Join(frontend.PassNames(), ", ")+")")
	fs.BoolVar(&m.winograd, "winograd", true, "give 3×3 stride-1 convolutions a Winograd alternative task (tuned like any task; the build keeps the faster; --winograd=false: direct only)")
}

// loadOptions are the options of frontend.Load the flags give.
func (m *modelFlags) loadOptions() frontend.LoadOptions {
	return frontend.LoadOptions{Inputs: m.inputs.Dims(), DimNames: m.inputs.Names(), Freeze: m.freeze, NoPass: m.noPass}
}

// load loads the model at path as the flags say and extracts its tasks
// (tuning.LoadModel); over a --range, the model at batch 1 and the largest
// value of a dimension given at run time (tuning.LoadDims).
func (m *modelFlags) load(path string) (*frontend.Loaded, *partition.Plan, error) {
	if len(m.ranges) > 0 {
		l, bp, dp, err := m.loadDims(path, m.loadOptions())
		if err != nil {
			return nil, nil, err
		}
		if dp != nil {
			return l, dp.Hi().Plan, nil
		}
		return l, bp.One.Plan, nil
	}
	return tuning.LoadModel(path, m.loadOptions(), partition.Options{Alternatives: m.winograd})
}

// loadDims loads the model at path over --range (tuning.LoadDims) with
// the load options lo.
func (m *modelFlags) loadDims(path string, lo frontend.LoadOptions) (*frontend.Loaded, *partition.BatchPlan, *partition.DimPlan, error) {
	return tuning.LoadDims(path, lo, m.ranges, partition.Options{Alternatives: m.winograd})
}

// registerNATS registers the flags of a command that talks to a NATS
// server: its URL (--nats, whose help is urlHelp) and where the
// credentials are (files or the environment; never the command line).
func registerNATS(fs *flag.FlagSet, d *remote.DialOptions, urlHelp string) {
	fs.StringVar(&d.URL, "nats", "", urlHelp)
	fs.StringVar(&d.Auth.Password, "nats-password-file", "", "`FILE` with user:password on its first line (else $"+remote.EnvUser+" and $"+remote.EnvPassword+")")
	fs.StringVar(&d.Auth.NKey, "nats-nkey", "", "`FILE` with an NKey user seed (else $"+remote.EnvNKey+")")
	fs.StringVar(&d.Auth.Creds, "nats-creds", "", "JWT user credentials `FILE`")
	fs.StringVar(&d.Auth.CA, "nats-ca", "", "CA certificate `FILE` that verifies the server (turns TLS on)")
	fs.StringVar(&d.Auth.Cert, "nats-cert", "", "client certificate `FILE` (with --nats-key)")
	fs.StringVar(&d.Auth.Key, "nats-key", "", "client key `FILE` (with --nats-cert)")
}
