package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
)

// WorkerConfig configures a worker.
type WorkerConfig struct {
	// Target is this machine's target key: the worker takes the jobs of
	// this key only.
	Target string
	// Measurer returns the measurer for a job's options. The measurers
	// must share one Runner, so that no two timing runs overlap; they may
	// be cached (a Measurer keeps the reference outputs of its DAGs).
	Measurer func(verify bool, timing measure.RunOptions, cg codegen.COptions) (*measure.Measurer, error)
	// Concurrency is how many jobs the worker holds at a time (each builds
	// in parallel; runs take turns); 0 means 1.
	Concurrency int
	// Name identifies the worker in results and presence; empty means
	// host-pid.
	Name string
	// Log gets one line per job taken and per result; nil means none.
	Log io.Writer
}

// fetchWait bounds one fetch request, so that a stopping worker stops
// soon and a deleted consumer is noticed.
const fetchWait = 3 * time.Second

// worker is one running worker.
type worker struct {
	cfg  WorkerConfig
	js   jetstream.JetStream
	dec  measure.InputDecoder
	logm sync.Mutex
}

// RunWorker takes the jobs of cfg.Target from the jobs stream, measures
// them and publishes the results, until ctx ends (nil) or the worker
// cannot measure at all (the error). It waits for the stream and its
// target's consumer, which a tuner creates.
func RunWorker(ctx context.Context, nc *nats.Conn, cfg WorkerConfig) error {
	if cfg.Target == "" || cfg.Measurer == nil {
		return errors.New("remote: a worker needs a target key and a Measurer")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.Name == "" {
		host, _ := os.Hostname()
		cfg.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	cfg.Name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, cfg.Name)
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	w := &worker{cfg: cfg, js: js}
	kv, err := w.bucket(ctx)
	if err != nil || ctx.Err() != nil {
		return err
	}
	stopPresence := w.announce(kv)
	defer stopPresence()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for slot := range cfg.Concurrency {
		wg.Go(func() {
			if err := w.serve(ctx, slot); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func (w *worker) logf(format string, args ...any) {
	if w.cfg.Log == nil {
		return
	}
	w.logm.Lock()
	defer w.logm.Unlock()
	fmt.Fprintf(w.cfg.Log, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// bucket waits for the workers bucket.
func (w *worker) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	for said := false; ; said = true {
		kv, err := w.js.KeyValue(ctx, WorkersBucket)
		if err == nil {
			return kv, nil
		}
		if !errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, fmt.Errorf("remote: bucket %s: %w", WorkersBucket, err)
		}
		if !said {
			w.logf("waiting for bucket %s and stream %s (a tuner creates them)", WorkersBucket, JobsStream)
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(time.Second):
		}
	}
}

// announce puts the worker's presence now and every third of the TTL, and
// returns the function that withdraws it.
func (w *worker) announce(kv jetstream.KeyValue) func() {
	host, _ := os.Hostname()
	p, _ := json.Marshal(Presence{Worker: w.cfg.Name, Target: w.cfg.Target, Host: host, PID: os.Getpid(), Concurrency: w.cfg.Concurrency, Started: time.Now().UTC()})
	key := KeyID(w.cfg.Target) + "." + w.cfg.Name
	put := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := kv.Put(ctx, key, p); err != nil {
			w.logf("announce: %v", err)
		}
	}
	put()
	stop := every(workersTTL/3, put)
	return func() {
		stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		kv.Delete(ctx, key)
	}
}

// consumer waits for the target key's consumer.
func (w *worker) consumer(ctx context.Context) (jetstream.Consumer, error) {
	for said := false; ; said = true {
		c, err := w.js.Consumer(ctx, JobsStream, ConsumerName(w.cfg.Target))
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		if !errors.Is(err, jetstream.ErrConsumerNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("remote: consumer %s of stream %s: %w", ConsumerName(w.cfg.Target), JobsStream, err)
		}
		if !said {
			w.logf("waiting for a tuner of target key %q (consumer %s)", w.cfg.Target, ConsumerName(w.cfg.Target))
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(time.Second):
		}
	}
}

// serve is one slot: it fetches one job at a time and measures it.
func (w *worker) serve(ctx context.Context, slot int) error {
	var c jetstream.Consumer
	for ctx.Err() == nil {
		if c == nil {
			var err error
			if c, err = w.consumer(ctx); err != nil || c == nil {
				return err
			}
		}
		fctx, cancel := context.WithTimeout(ctx, fetchWait)
		msg, err := c.Next(jetstream.FetchContext(fctx))
		cancel()
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return nil
			case errors.Is(err, nats.ErrTimeout), errors.Is(err, jetstream.ErrNoMessages), errors.Is(err, context.DeadlineExceeded):
			case errors.Is(err, jetstream.ErrConsumerDeleted), errors.Is(err, jetstream.ErrConsumerNotFound):
				c = nil
			default:
				w.logf("slot %d: fetch: %v", slot, err)
				c = nil
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		ackWait := c.CachedInfo().Config.AckWait
		if err := w.handle(ctx, msg, ackWait); err != nil {
			return err
		}
	}
	return nil
}

// handle measures one job and publishes its result, then acks it. A job
// that cannot be measured anywhere (it does not decode) is answered with
// an infrastructure result and terminated; a worker that cannot measure at
// all gives the job back and stops with the error.
func (w *worker) handle(ctx context.Context, msg jetstream.Msg, ackWait time.Duration) (err error) {
	delivery := 1
	if md, err := msg.Metadata(); err == nil {
		delivery = int(md.NumDelivered)
	}
	var job Job
	if err := json.Unmarshal(msg.Data(), &job); err != nil || !validToken(job.Run) {
		w.logf("dropping a job that does not decode: %v", err)
		msg.Term()
		return nil
	}
	res := Result{Job: job.ID, Worker: w.cfg.Name, Target: w.cfg.Target, Delivery: delivery}
	refuse := func(why string) error {
		res.Infra = why
		w.logf("job %s: refused: %s", job.ID, why)
		if w.publish(ctx, job, res) == nil {
			msg.Term()
		}
		return nil
	}
	if job.Target != w.cfg.Target {
		return refuse(fmt.Sprintf("the job is for target key %q, this worker is %q", job.Target, w.cfg.Target))
	}
	in, err := w.dec.Decode(job.Input)
	if err != nil {
		return refuse(err.Error())
	}
	m, err := w.cfg.Measurer(job.Verify, job.Timing, job.Codegen)
	if err != nil {
		return refuse(err.Error())
	}
	w.logf("job %s delivery %d: measuring", job.ID, delivery)

	stopBeat := every(max(ackWait/3, 100*time.Millisecond), func() { msg.InProgress() })
	results, err := measureOne(ctx, m, in)
	stopBeat()
	if errors.Is(err, errPanic) || errors.Is(err, measure.ErrTooLarge) {
		return refuse(err.Error())
	}
	if err != nil {
		msg.Nak() // another worker takes it now
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("remote: worker %s cannot measure: %w", w.cfg.Name, err)
	}
	r := results[0]
	res.Kind, res.Msg, res.Costs, res.Number = r.Kind, r.Msg, r.Costs, r.Number
	res.Build, res.Run, res.Compiled = r.BuildTime, r.RunTime, r.BuildTime > 0 && !r.Cached
	if err := w.publish(ctx, job, res); err != nil {
		msg.Nak()
		w.logf("job %s: %v", job.ID, err)
		return nil
	}
	if err := msg.DoubleAck(ctx); err != nil && ctx.Err() == nil {
		w.logf("job %s: ack: %v (the tuner may have purged it)", job.ID, err)
	}
	w.logf("job %s: %v %.4g ms (build %v, run %v)", job.ID, r.Kind, 1e3*r.Median(), r.BuildTime.Round(time.Millisecond), r.RunTime.Round(time.Millisecond))
	return nil
}

// every calls f every d until the returned function is called; that
// function returns once f no longer runs.
func every(d time.Duration, f func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				f()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// errPanic is returned by measureOne when measuring the job panicked: the
// job is refused, and the worker goes on.
var errPanic = errors.New("panic while measuring")

// measureOne measures one input, turning a panic into errPanic.
func measureOne(ctx context.Context, m *measure.Measurer, in measure.Input) (res []measure.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errPanic, r)
		}
	}()
	res, err = m.Measure(ctx, []measure.Input{in})
	if err == nil && len(res) != 1 {
		err = fmt.Errorf("%d results for one input", len(res))
	}
	return res, err
}

func (w *worker) publish(ctx context.Context, job Job, res Result) error {
	body, err := json.Marshal(res)
	if err != nil {
		return err
	}
	if _, err := w.js.Publish(ctx, resultsSubject(job.Run), body); err != nil {
		return fmt.Errorf("publish the result to stream %s: %w", ResultsStream, err)
	}
	return nil
}

// Measurers returns a WorkerConfig.Measurer that keeps one Measurer per
// distinct job options, all with the builder b and the runner r (so runs
// never overlap), the worker's thread count and its memory limit
// (measure.Measurer.MaxMemory). gen returns the code
// generator of a job's codegen options (a target's Generate).
func Measurers(gen func(codegen.COptions) (func(*schedule.State) (measure.Program, error), error), b measure.Compiler, r *measure.Runner, threads int, maxMemory int64) func(bool, measure.RunOptions, codegen.COptions) (*measure.Measurer, error) {
	type key struct {
		verify bool
		timing measure.RunOptions
		cg     codegen.COptions
	}
	var mu sync.Mutex
	cache := map[key]*measure.Measurer{}
	return func(verify bool, timing measure.RunOptions, cg codegen.COptions) (*measure.Measurer, error) {
		timing.Threads, timing.Check = threads, false
		k := key{verify, timing, cg}
		mu.Lock()
		defer mu.Unlock()
		if m, ok := cache[k]; ok {
			return m, nil
		}
		g, err := gen(cg)
		if err != nil {
			return nil, err
		}
		if len(cache) >= 16 {
			clear(cache)
		}
		m := &measure.Measurer{Generate: g, Builder: b, Runner: r, Verify: verify, Run: &timing, MaxMemory: maxMemory}
		cache[k] = m
		return m, nil
	}
}
