package main

import (
	"context"
	"io"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/internal/cli"
)

// machineUsage is the help of the command, before its flags.
const machineUsage = "usage: tune machine [--cpu NAME] [--peak] [--json]\n\nPrints the machine model the cpu target compiles for (ISA level, vector\nwidth, registers, caches, cores), the target key's machine part, and which\nportable levels this machine runs.\n\n"

// runMachine is `tune machine [--cpu NAME] [--peak] [--json]`: the machine
// model the cpu target compiles for, and the levels this host runs
// (target.Machine).
func runMachine(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("tune machine", stderr, nil)
	cpu := fs.String("cpu", backend.DefaultCPU(), cli.CPUHelp)
	peak := fs.Bool("peak", false, "also measure one core's FMA peak for it (cached per machine)")
	asJSON := fs.Bool("json", false, "print the report as one JSON document")
	cli.SetUsage(fs, machineUsage)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return cli.Usagef(stderr, "tune machine: no arguments (run 'tune machine -h')")
	}
	r, err := backend.Machine(context.Background(), *cpu, *peak)
	if err != nil {
		return err
	}
	return cli.WriteReport(stdout, r, *asJSON)
}
