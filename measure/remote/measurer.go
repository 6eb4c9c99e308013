package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/measure"
)

// Options configure the tuner's side.
type Options struct {
	// Target is the target key of the workers that measure (Workers lists
	// the keys present).
	Target string
	// Run names this tuning run's jobs and results; empty: random.
	Run     string
	Verify  bool               // workers check outputs against the reference evaluator
	Timing  measure.RunOptions // the timing protocol (Threads is the worker's)
	Codegen codegen.COptions
	// AckWait is how long a job may go without a heartbeat before it is
	// redelivered (0: 30s); MaxDeliver how many deliveries a job gets
	// before it is recorded as a failure (0: 3).
	AckWait    time.Duration
	MaxDeliver int
	// NoWorker is how long a batch waits while no worker of Target is
	// present before Measure fails (0: 60s).
	NoWorker time.Duration
}

func (o Options) withDefaults() Options {
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	if o.MaxDeliver <= 0 {
		o.MaxDeliver = 3
	}
	if o.NoWorker <= 0 {
		o.NoWorker = 60 * time.Second
	}
	return o
}

// Stats counts what the engine's fault handling did.
type Stats struct {
	Jobs        int // published
	Duplicates  int // results dropped because their job had one already (or was not this run's)
	Redelivered int // results of a job's second or later delivery
	Abandoned   int // jobs recorded as failures after MaxDeliver deliveries
}

// Measurer measures candidates on the workers of one target key; it is a
// search.Measurer. One Measure call at a time.
type Measurer struct {
	opts     Options
	js       jetstream.JetStream
	jobs     jetstream.Stream
	results  jetstream.Stream
	kv       jetstream.KeyValue
	consume  jetstream.ConsumeContext
	advisory *nats.Subscription
	enc      measure.InputEncoder

	in   chan Result // results of this run, in arrival order
	lost chan string // job ids given up after MaxDeliver
	done chan struct{}

	mu    sync.Mutex
	times measure.Times
	stats Stats

	nc *nats.Conn // closed by Close where Open made it
}

// NewMeasurer prepares a run: the streams and bucket (Setup), the target
// key's consumer, and subscriptions to the run's results and to the
// max-deliveries advisories of the consumer.
func NewMeasurer(ctx context.Context, nc *nats.Conn, opts Options) (*Measurer, error) {
	opts = opts.withDefaults()
	if opts.Target == "" {
		return nil, errors.New("remote: no target key")
	}
	if opts.Run == "" {
		var b [6]byte
		rand.Read(b[:])
		opts.Run = "r" + hex.EncodeToString(b[:])
	}
	if !validToken(opts.Run) {
		return nil, fmt.Errorf("remote: run id %q is not a subject token", opts.Run)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	if err := Setup(ctx, js); err != nil {
		return nil, err
	}
	m := &Measurer{opts: opts, js: js, in: make(chan Result, 1024), lost: make(chan string, 64), done: make(chan struct{})}
	if m.jobs, err = js.Stream(ctx, JobsStream); err != nil {
		return nil, fmt.Errorf("remote: stream %s: %w", JobsStream, err)
	}
	if m.results, err = js.Stream(ctx, ResultsStream); err != nil {
		return nil, fmt.Errorf("remote: stream %s: %w", ResultsStream, err)
	}
	if m.kv, err = js.KeyValue(ctx, WorkersBucket); err != nil {
		return nil, fmt.Errorf("remote: bucket %s: %w", WorkersBucket, err)
	}
	if _, err := m.jobs.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       ConsumerName(opts.Target),
		Description:   "jobs of target " + opts.Target,
		FilterSubject: jobsPrefix + KeyID(opts.Target) + ".>",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       opts.AckWait,
		MaxDeliver:    opts.MaxDeliver,
		MaxAckPending: -1,
	}); err != nil {
		return nil, fmt.Errorf("remote: consumer %s of stream %s: %w", ConsumerName(opts.Target), JobsStream, err)
	}
	if m.advisory, err = nc.Subscribe(advisorySubject(opts.Target), m.onAdvisory); err != nil {
		return nil, fmt.Errorf("remote: max-deliveries advisories: %w", err)
	}
	rc, err := m.results.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{resultsSubject(opts.Run)}})
	if err != nil {
		m.advisory.Unsubscribe()
		return nil, fmt.Errorf("remote: results of run %s: %w", opts.Run, err)
	}
	if m.consume, err = rc.Consume(m.onResult); err != nil {
		m.advisory.Unsubscribe()
		return nil, fmt.Errorf("remote: results of run %s: %w", opts.Run, err)
	}
	return m, nil
}

// Run returns the run id.
func (m *Measurer) Run() string { return m.opts.Run }

// Times returns the workers' times summed over the results: compile and
// run time of each candidate (not wall time: workers overlap).
func (m *Measurer) Times() measure.Times {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.times
}

// Stats returns what the fault handling did so far.
func (m *Measurer) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

func (m *Measurer) onResult(msg jetstream.Msg) {
	msg.Ack()
	var r Result
	if err := json.Unmarshal(msg.Data(), &r); err != nil {
		r = Result{Infra: "undecodable result: " + err.Error()}
	}
	select {
	case m.in <- r:
	case <-m.done:
	}
}

// onAdvisory turns a max-deliveries advisory into a lost job: the message
// is read for its job id and deleted, so the work queue does not keep it.
func (m *Measurer) onAdvisory(msg *nats.Msg) {
	var adv struct {
		StreamSeq uint64 `json:"stream_seq"`
	}
	if json.Unmarshal(msg.Data, &adv) != nil || adv.StreamSeq == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := m.jobs.GetMsg(ctx, adv.StreamSeq)
	if err != nil {
		return // acked meanwhile: its result is on the way
	}
	var job Job
	if json.Unmarshal(raw.Data, &job) != nil || job.Run != m.opts.Run {
		return // another run's: its tuner handles it
	}
	m.jobs.DeleteMsg(ctx, adv.StreamSeq)
	select {
	case m.lost <- job.ID:
	case <-m.done:
	}
}

// Measure publishes one job per input and waits for their results. An
// error (no worker of the target key for NoWorker, the connection lost,
// ctx ended) is the batch's: its jobs are purged and no result is returned.
func (m *Measurer) Measure(ctx context.Context, inputs []measure.Input) ([]measure.Result, error) {
	byID := map[string][]int{}
	var order []string
	for i, in := range inputs {
		data, err := m.enc.Encode(in)
		if err != nil {
			return nil, fmt.Errorf("remote: %w", err)
		}
		var wire struct {
			Workload string          `json:"workload"`
			Steps    json.RawMessage `json:"steps"`
		}
		if err := json.Unmarshal(data, &wire); err != nil {
			return nil, fmt.Errorf("remote: %w", err)
		}
		id := jobID(m.opts.Run, wire.Workload, wire.Steps)
		if _, dup := byID[id]; !dup {
			order = append(order, id)
			job := Job{ID: id, Run: m.opts.Run, Target: m.opts.Target, Input: data, Verify: m.opts.Verify, Timing: m.opts.Timing, Codegen: m.opts.Codegen}
			body, err := json.Marshal(job)
			if err != nil {
				return nil, fmt.Errorf("remote: %w", err)
			}
			if _, err := m.js.Publish(ctx, jobsSubject(m.opts.Target, m.opts.Run), body, jetstream.WithMsgID(id), jetstream.WithExpectStream(JobsStream)); err != nil {
				m.purge()
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, fmt.Errorf("remote: publish job to stream %s: %w", JobsStream, err)
			}
		}
		byID[id] = append(byID[id], i)
	}
	m.mu.Lock()
	m.stats.Jobs += len(order)
	m.mu.Unlock()

	out := make([]measure.Result, len(inputs))
	got := map[string]bool{} // job ids answered
	pending := len(order)
	seen := time.Now() // a worker of the target was last present
	check := time.NewTicker(min(m.opts.NoWorker/4, 2*time.Second))
	defer check.Stop()
	if m.present(ctx) {
		seen = time.Now()
	}
	for pending > 0 {
		select {
		case <-ctx.Done():
			m.purge()
			return nil, ctx.Err()
		case r := <-m.in:
			idx, ok := byID[r.Job]
			if !ok || got[r.Job] {
				m.count(func(s *Stats) { s.Duplicates++ })
				continue
			}
			if r.Infra != "" {
				m.purge()
				return nil, fmt.Errorf("remote: worker %s could not measure job %s: %s", r.Worker, r.Job, r.Infra)
			}
			res := measure.Result{Costs: r.Costs, Kind: r.Kind, Msg: r.Msg, Number: r.Number, RunTime: r.Run, BuildTime: r.Build}
			if res.Kind == measure.None && len(res.Costs) == 0 {
				res.Kind, res.Msg = measure.RuntimeError, "worker "+r.Worker+" sent no costs"
			}
			for _, i := range idx {
				out[i] = res
			}
			got[r.Job] = true
			pending--
			seen = time.Now()
			m.count(func(s *Stats) {
				if r.Delivery > 1 {
					s.Redelivered++
				}
			})
			m.mu.Lock()
			m.times.Build += r.Build
			m.times.Run += r.Run
			m.times.Candidates += len(idx)
			if r.Compiled {
				m.times.Compiled++
			}
			m.mu.Unlock()
		case id := <-m.lost:
			idx, ok := byID[id]
			if !ok || got[id] {
				continue
			}
			msg := fmt.Sprintf("no result after %d deliveries to workers of this target (AckWait %v each): the candidate may hang or kill its worker", m.opts.MaxDeliver, m.opts.AckWait)
			for _, i := range idx {
				out[i] = measure.Result{Kind: measure.RuntimeError, Msg: msg}
			}
			got[id] = true
			pending--
			m.count(func(s *Stats) { s.Abandoned++ })
		case <-check.C:
			if m.present(ctx) {
				seen = time.Now()
			} else if time.Since(seen) > m.opts.NoWorker {
				m.purge()
				return nil, fmt.Errorf("remote: no worker of target key %q took jobs from stream %s for %v (start `tune worker` on a host of that target; workers announce themselves in bucket %s)",
					m.opts.Target, JobsStream, m.opts.NoWorker.Round(time.Second), WorkersBucket)
			}
		}
	}
	return out, nil
}

func (m *Measurer) count(f func(*Stats)) {
	m.mu.Lock()
	f(&m.stats)
	m.mu.Unlock()
}

// present reports whether a worker of the target key is present.
func (m *Measurer) present(ctx context.Context) bool {
	ps, err := presentIn(ctx, m.kv, KeyID(m.opts.Target)+".*")
	return err == nil && len(ps) > 0
}

// purge removes the run's jobs that are still queued or held.
func (m *Measurer) purge() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.jobs.Purge(ctx, jetstream.WithPurgeSubject(jobsSubject(m.opts.Target, m.opts.Run))); err != nil {
		return fmt.Errorf("remote: purge the jobs of run %s: %w", m.opts.Run, err)
	}
	return nil
}

// Close purges the run's jobs and results, stops its subscriptions and
// closes the connection Open made.
func (m *Measurer) Close() error {
	close(m.done)
	m.consume.Stop()
	m.advisory.Unsubscribe()
	err := m.purge()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if perr := m.results.Purge(ctx, jetstream.WithPurgeSubject(resultsSubject(m.opts.Run))); perr != nil && err == nil {
		err = fmt.Errorf("remote: purge the results of run %s: %w", m.opts.Run, perr)
	}
	if m.nc != nil {
		m.nc.Close()
	}
	return err
}
