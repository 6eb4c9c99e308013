package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"tessera/codegen"
	"tessera/measure"
	"tessera/measure/remote"
	"tessera/schedule"
	"tessera/target"
)

// runWorker is `tune worker --nats URL`: a device host that measures the
// jobs of its own target key (package measure/remote).
func runWorker(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tune worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var nf natsFlags
	nf.register(fs, "NATS server `URL` (nats://host:4222, tls://...); required")
	targetName := fs.String("target", "cpu", "target this host measures: "+strings.Join(target.Names, ", "))
	threads := fs.Int("threads", runtime.NumCPU(), "threads of every measured kernel (part of the target key)")
	cpu := fs.String("cpu", cpuDefault(), cpuFlagHelp)
	concurrency := fs.Int("concurrency", 1, "jobs held at a time: their builds run in parallel, their timing runs take turns")
	name := fs.String("name", "", "worker name in results and presence (default host-pid)")
	maxMemory := bytesFlag(measure.DefaultMaxMemory)
	fs.Var(&maxMemory, "max-memory", "the most memory measuring one task may take on this host, e.g. 8GiB")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: tune worker --nats URL [flags]\n\nTakes the measurement jobs of this machine's target key from the NATS\nJetStream stream %s, builds and runs them, and publishes the results.\nCredentials come from files or the environment.\n\n", remote.JobsStream)
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || nf.url == "" {
		fmt.Fprintln(stderr, "tune worker: want --nats URL and no arguments (run 'tune worker -h')")
		return errUsage
	}
	if *threads <= 0 || *concurrency <= 0 {
		return errors.New("--threads and --concurrency must be positive")
	}
	host := &measure.Builder{}
	tg, err := newTarget(*targetName, *cpu, *threads, runOptions(*threads, 10*time.Second), host, true)
	if err != nil {
		return err
	}
	defer tg.Close()
	gen := func(cg codegen.COptions) (func(*schedule.State) (measure.Program, error), error) {
		if cg == (codegen.COptions{}) {
			return tg.Generate, nil
		}
		if tg.Name != "cpu" {
			return nil, fmt.Errorf("codegen options %+v for target %s", cg, tg.Name)
		}
		return target.CPU(target.CPUConfig{Threads: *threads, Builder: host, Codegen: cg, Machine: tg.Machine}).Generate, nil
	}
	nc, err := nf.connect("tessera worker")
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stdout, "worker pid %d: target key %s (id %s), concurrency %d, jobs from %s on %s\n",
		os.Getpid(), tg.Key(), remote.KeyID(tg.Key()), *concurrency, remote.JobsStream, nf.url)
	return remote.RunWorker(ctx, nc, remote.WorkerConfig{
		Target:      tg.Key(),
		Measurer:    remote.Measurers(gen, tg.Builder, tg.Runner, *threads, int64(maxMemory)),
		Concurrency: *concurrency,
		Name:        *name,
		Log:         stderr,
	})
}
