package main

import (
	"flag"
	"strings"

	"tessera/graph"
	"tessera/graph/onnx"
	"tessera/internal/cli"
	"tessera/measure/remote"
	"tessera/partition"
	"tessera/target/machine"
	"tessera/tuning"
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
	winograd bool
}

func (m *modelFlags) Register(fs *flag.FlagSet) {
	m.inputs, m.freeze, m.noPass = cli.Shapes{}, cli.Values{}, cli.Names{}
	fs.Var(m.inputs, "input", "bind graph input `name=d0,d1,...` to a static shape (repeatable); a dimension the model leaves dynamic may be named instead (N), for tune inspect --range")
	fs.Var(m.freeze, "freeze", "freeze graph input `name=v0,v1,...` to these values, a constant of the compiled model (a sample rate an If branches on; repeatable)")
	fs.Var(m.noPass, "no-pass", "disable graph pass `NAME` (repeatable; passes: "+strings.Join(graph.PassNames(), ", ")+")")
	fs.BoolVar(&m.winograd, "winograd", true, "give 3×3 stride-1 convolutions a Winograd alternative task (tuned like any task; the build keeps the faster; --winograd=false: direct only)")
}

// loadOptions are the options of onnx.Load the flags give.
func (m *modelFlags) loadOptions() onnx.LoadOptions {
	return onnx.LoadOptions{Inputs: m.inputs.Dims(), DimNames: m.inputs.Names(), Freeze: m.freeze, NoPass: m.noPass}
}

// load loads the model at path as the flags say and extracts its tasks
// (tuning.LoadModel).
func (m *modelFlags) load(path string) (*onnx.Loaded, *partition.Plan, error) {
	return tuning.LoadModel(path, m.loadOptions(), partition.Options{Alternatives: m.winograd})
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
