package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"

	"tessera/graph"
	"tessera/graph/onnx"
	"tessera/internal/cli"
	"tessera/measure/remote"
	"tessera/partition"
	"tessera/target/machine"
)

// The flags several commands share: those of a model (modelFlags), of a
// NATS server (natsFlags), and --cpu's help.

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
	fs.Var(m.inputs, "input", "bind graph input `name=d0,d1,...` to a static shape (repeatable)")
	fs.Var(m.freeze, "freeze", "freeze graph input `name=v0,v1,...` to these values, a constant of the compiled model (a sample rate an If branches on; repeatable)")
	fs.Var(m.noPass, "no-pass", "disable graph pass `NAME` (repeatable; passes: "+strings.Join(graph.PassNames(), ", ")+")")
	fs.BoolVar(&m.winograd, "winograd", true, "give 3×3 stride-1 convolutions a Winograd alternative task (tuned like any task; the build keeps the faster; --winograd=false: direct only)")
}

// loadOptions are the options of onnx.Load the flags give.
func (m *modelFlags) loadOptions() onnx.LoadOptions {
	return onnx.LoadOptions{Inputs: m.inputs, Freeze: m.freeze, NoPass: m.noPass}
}

// loadModel reads the model at path as the flags say (onnx.Load).
func loadModel(path string, mf modelFlags) (*onnx.Loaded, error) {
	return onnx.Load(path, mf.loadOptions())
}

// modelTasks loads a model and returns its tasks.
func modelTasks(path string, mf modelFlags) ([]*partition.Task, error) {
	l, err := loadModel(path, mf)
	if err != nil {
		return nil, err
	}
	plan, err := partition.Extract(l.Graph, partition.Options{Winograd: mf.winograd})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return plan.Tasks, nil
}

// natsFlags are the flags of the commands that talk to a NATS server: the
// URL and where the credentials are (files or the environment; never the
// command line itself).
type natsFlags struct {
	url   string
	files remote.AuthFiles
}

func (n *natsFlags) register(fs *flag.FlagSet, urlHelp string) {
	fs.StringVar(&n.url, "nats", "", urlHelp)
	fs.StringVar(&n.files.Password, "nats-password-file", "", "`FILE` with user:password on its first line (else $"+remote.EnvUser+" and $"+remote.EnvPassword+")")
	fs.StringVar(&n.files.NKey, "nats-nkey", "", "`FILE` with an NKey user seed (else $"+remote.EnvNKey+")")
	fs.StringVar(&n.files.Creds, "nats-creds", "", "JWT user credentials `FILE`")
	fs.StringVar(&n.files.CA, "nats-ca", "", "CA certificate `FILE` that verifies the server (turns TLS on)")
	fs.StringVar(&n.files.Cert, "nats-cert", "", "client certificate `FILE` (with --nats-key)")
	fs.StringVar(&n.files.Key, "nats-key", "", "client key `FILE` (with --nats-cert)")
}

// connect connects as name with the credentials the flags name.
func (n *natsFlags) connect(name string) (*nats.Conn, error) {
	auth, err := remote.LoadAuth(n.files, os.Getenv)
	if err != nil {
		return nil, err
	}
	nc, err := remote.Connect(n.url, auth, name)
	if err != nil {
		return nil, fmt.Errorf("--nats: %w", err)
	}
	return nc, nil
}
