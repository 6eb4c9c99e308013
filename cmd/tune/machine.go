package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"tessera/measure"
	"tessera/target"
	"tessera/target/machine"
)

// machineUsage is the help of the command, before its flags.
const machineUsage = "usage: tune machine [--cpu NAME] [--peak]\n\nPrints the machine model the cpu target compiles for (ISA level, vector\nwidth, registers, caches, cores), the target key's machine part, and which\nportable levels this machine runs.\n\n"

// runMachine is `tune machine [--cpu NAME] [--peak]`: the machine model the
// cpu target compiles for, and the levels this host runs.
func runMachine(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tune machine", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cpu := fs.String("cpu", cpuDefault(), cpuFlagHelp)
	peak := fs.Bool("peak", false, "also measure one core's FMA peak for it (cached per machine)")
	setUsage(fs, machineUsage)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		fmt.Fprintln(stderr, "tune machine: no arguments (run 'tune machine -h')")
		return errUsage
	}
	b := &measure.Builder{}
	m, err := cpuMachine(*cpu, b, false)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, m)
	fmt.Fprintf(stdout, "features: %s\n", strings.Join(m.Features, " "))
	fmt.Fprintf(stdout, "key: %s\n", m.Key())
	run, skipped := machine.RunnableLevels(target.NativeMachine())
	var names []string
	for _, l := range run {
		names = append(names, l.Name)
	}
	fmt.Fprintf(stdout, "this machine runs: %s\n", strings.Join(names, " "))
	for _, name := range machine.Levels() {
		if miss, ok := skipped[name]; ok {
			fmt.Fprintf(stdout, "this machine lacks for %s: %s\n", name, strings.Join(miss, " "))
		}
	}
	if *peak {
		p, err := target.MeasurePeak(context.Background(), b, m)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "peak: %s\n", p)
	}
	return nil
}
