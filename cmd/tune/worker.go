package main

import (
	"errors"
	"flag"
	"io"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/internal/cli"
	"github.com/tessera-ml/tessera/measure/remote"
)

// workerUsage is the help of the command, before its flags.
var workerUsage = "usage: tune worker --nats URL [flags]\n\nTakes the measurement jobs of this machine's target key from the NATS\nJetStream stream " +
	remote.JobsStream + ", builds and runs them, and publishes the results.\nCredentials come from files or the environment.\n\n"

// workerFlags are the flags of `tune worker`.
type workerFlags struct {
	nats      remote.DialOptions
	cfg       remote.WorkerConfig
	target    backend.Config
	maxMemory *cli.Bytes
}

func (w *workerFlags) Register(fs *flag.FlagSet) {
	cli.RegisterNATS(fs, &w.nats, "NATS server `URL` (nats://host:4222, tls://...); required")
	cli.RegisterTarget(fs, &w.target, "target this host measures", cli.CPUHelp, "threads of every measured kernel (part of the target key)")
	fs.IntVar(&w.cfg.Concurrency, "concurrency", 1, "jobs held at a time: their builds run in parallel, their timing runs take turns")
	fs.StringVar(&w.cfg.Name, "name", "", "worker name in results and presence (default host-pid)")
	w.maxMemory = cli.MaxMemory(fs, "the most memory measuring one task may take on this host, e.g. 8GiB")
	cli.SetUsage(fs, workerUsage)
}

// runWorker is `tune worker --nats URL`: a device host that measures the
// jobs of its own target key (remote.ServeTarget).
func runWorker(args []string, stdout, stderr io.Writer) error {
	var wf workerFlags
	pos, err := cli.Parse(cli.NewFlagSet("tune worker", stderr, &wf), args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || wf.nats.URL == "" {
		return cli.Usagef(stderr, "tune worker: want --nats URL and no arguments (run 'tune worker -h')")
	}
	if wf.target.Threads <= 0 || wf.cfg.Concurrency <= 0 {
		return errors.New("--threads and --concurrency must be positive")
	}
	ctx, sigs := cli.NotifySignals()
	defer sigs.Stop()
	wf.cfg.Log = stderr
	return remote.ServeTarget(ctx, stdout, wf.nats, wf.cfg, wf.target, int64(*wf.maxMemory))
}
