package remote

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure"
)

// Dial connects to the NATS server at url as name, with the credentials
// of files, else of the environment (LoadAuth, Connect).
func Dial(url string, files AuthFiles, name string) (*nats.Conn, error) {
	auth, err := LoadAuth(files, os.Getenv)
	if err != nil {
		return nil, err
	}
	nc, err := Connect(url, auth, name)
	if err != nil {
		return nil, fmt.Errorf("--nats: %w", err)
	}
	return nc, nil
}

// DialOptions say where a tuner's Measurer finds its workers.
type DialOptions struct {
	URL  string    // the NATS server
	Auth AuthFiles // its credentials (else the environment's)
	// WorkerKey picks the workers' target key when workers of several
	// keys are up: the key, or a part of it that names one (FindTarget).
	WorkerKey string
	// Options configure the Measurer; Target is left empty: it is the
	// key of the workers found. NoWorker is also how long Open waits for
	// a first worker.
	Options
}

// Open connects to the server, waits for a worker of target name (FindTarget)
// and returns a Measurer of that worker's target key that owns the
// connection: Close closes it too.
func Open(ctx context.Context, name string, o DialOptions) (*Measurer, error) {
	nc, err := Dial(o.URL, o.Auth, "tessera tuner")
	if err != nil {
		return nil, err
	}
	opts := o.Options.withDefaults()
	if opts.Target, err = FindTarget(ctx, nc, name, o.WorkerKey, opts.NoWorker, o.URL); err != nil {
		nc.Close()
		return nil, err
	}
	m, err := NewMeasurer(ctx, nc, opts)
	if err != nil {
		nc.Close()
		return nil, err
	}
	m.nc = nc
	return m, nil
}

// Key returns the target key of the workers that measure.
func (m *Measurer) Key() string { return m.opts.Target }

// Summary is one line on what the fault handling did, for the end of a run.
func (m *Measurer) Summary() string {
	st := m.Stats()
	return fmt.Sprintf("remote: %d jobs, %d results of a redelivered job, %d duplicate results dropped, %d jobs abandoned after %d deliveries",
		st.Jobs, st.Redelivered, st.Duplicates, st.Abandoned, m.opts.MaxDeliver)
}

// Serve connects to the server of d and works as a worker (RunWorker)
// until ctx ends.
func Serve(ctx context.Context, d DialOptions, cfg WorkerConfig) error {
	nc, err := Dial(d.URL, d.Auth, "tessera worker")
	if err != nil {
		return err
	}
	defer nc.Close()
	return RunWorker(ctx, nc, cfg)
}

// ServeTarget works as a worker (Serve) of the target tc names on this
// machine (tune worker): it makes the target (backend.New, measuring with
// the search's timing protocol), says on w what it serves (its pid, the
// target's key, cfg's concurrency, the stream and d's server), and takes
// the jobs of the target's key, built and run by the target (Measurers,
// a candidate's tensors within maxMemory bytes), until ctx ends. cfg's
// Target and Measurer are set here.
func ServeTarget(ctx context.Context, w io.Writer, d DialOptions, cfg WorkerConfig, tc backend.Config, maxMemory int64) error {
	tc.Run, tc.Host, tc.Measures = measure.SearchRunOptions(tc.Threads), &measure.Builder{}, true
	tg, err := backend.New(tc)
	if err != nil {
		return err
	}
	defer tg.Close()
	cfg.Target = tg.Key()
	cfg.Measurer = Measurers(tg.Generator, tg.Builder, tg.Runner, tc.Threads, maxMemory)
	fmt.Fprintf(w, "worker pid %d: target key %s (id %s), concurrency %d, jobs from %s on %s\n",
		os.Getpid(), cfg.Target, KeyID(cfg.Target), cfg.Concurrency, JobsStream, d.URL)
	return Serve(ctx, d, cfg)
}
