package main

import (
	"context"
	"io"

	"tessera/internal/cli"
	"tessera/target"
)

// machineUsage is the help of the command, before its flags.
const machineUsage = "usage: tune machine [--cpu NAME] [--peak]\n\nPrints the machine model the cpu target compiles for (ISA level, vector\nwidth, registers, caches, cores), the target key's machine part, and which\nportable levels this machine runs.\n\n"

// runMachine is `tune machine [--cpu NAME] [--peak]`: the machine model the
// cpu target compiles for, and the levels this host runs.
func runMachine(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("tune machine", stderr, nil)
	cpu := fs.String("cpu", target.DefaultCPU(), cpuFlagHelp)
	peak := fs.Bool("peak", false, "also measure one core's FMA peak for it (cached per machine)")
	cli.SetUsage(fs, machineUsage)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return cli.Usagef(stderr, "tune machine: no arguments (run 'tune machine -h')")
	}
	return target.WriteMachine(context.Background(), stdout, *cpu, *peak)
}
