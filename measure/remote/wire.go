package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/measure"
)

// Names of the engine's objects.
const (
	JobsStream    = "TESSERA_JOBS"
	ResultsStream = "TESSERA_RESULTS"
	WorkersBucket = "tessera_workers"

	jobsPrefix    = "tessera.jobs."
	resultsPrefix = "tessera.results."
)

// Job is one candidate to measure, with everything a worker needs: it
// carries no reference to the model.
type Job struct {
	ID     string          `json:"id"`     // run/workload/hash of the steps
	Run    string          `json:"run"`    // the tuner's run id: results go to tessera.results.<run>
	Target string          `json:"target"` // the target key it must be measured on
	Input  json.RawMessage `json:"input"`  // measure.Input's wire form: the DAG, the steps, the cutoff
	Verify bool            `json:"verify,omitempty"`
	// Timing is the timing protocol; the worker's own thread count (part
	// of its target key) replaces Threads.
	Timing  measure.RunOptions `json:"timing"`
	Codegen codegen.COptions   `json:"codegen"`
}

// Result is a worker's answer to a job.
type Result struct {
	Job      string            `json:"job"`
	Worker   string            `json:"worker"`
	Target   string            `json:"target"`   // the worker's target key
	Delivery int               `json:"delivery"` // the job's delivery count when this worker took it
	Kind     measure.ErrorKind `json:"kind"`
	Msg      string            `json:"msg,omitempty"`
	Costs    []float64         `json:"costs,omitempty"`
	Number   int               `json:"number,omitempty"`
	Build    time.Duration     `json:"build_ns"`
	Run      time.Duration     `json:"run_ns"`
	Compiled bool              `json:"compiled,omitempty"` // the worker ran its compiler (no cache hit)
	// Infra is set when the worker could not measure the job at all (it
	// does not decode, it is for another target): an error of the tuner's
	// batch, never the candidate's failure.
	Infra string `json:"infra,omitempty"`
}

// Presence is what a worker announces in the workers bucket.
type Presence struct {
	Worker      string    `json:"worker"`
	Target      string    `json:"target"`
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	Concurrency int       `json:"concurrency"`
	Started     time.Time `json:"started"`
}

// KeyID returns the subject token of a target key: the target's name and
// 16 hex digits of its hash ("cpu-3f2a...").
func KeyID(key string) string {
	name, _, _ := strings.Cut(strings.TrimSpace(key), " ")
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, name)
	if clean == "" {
		clean = "target"
	}
	h := sha256.Sum256([]byte(key))
	return clean + "-" + hex.EncodeToString(h[:8])
}

// ConsumerName is the durable consumer of a target key's jobs.
func ConsumerName(key string) string { return "w-" + KeyID(key) }

func jobsSubject(key, run string) string { return jobsPrefix + KeyID(key) + "." + run }
func resultsSubject(run string) string   { return resultsPrefix + run }
func advisorySubject(key string) string {
	return "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + JobsStream + "." + ConsumerName(key)
}

// jobID names a job: the run, the workload and a hash of the steps.
func jobID(run, workload string, steps []byte) string {
	h := sha256.Sum256(steps)
	return run + "/" + workload + "/" + hex.EncodeToString(h[:12])
}

// validToken reports whether s can be one token of a subject.
func validToken(s string) bool {
	return s != "" && !strings.ContainsAny(s, ". *>\t\r\n")
}

// Config of the engine's objects.
const (
	resultsMaxAge = time.Hour
	workersTTL    = 15 * time.Second
	dupWindow     = 2 * time.Minute
)

// Setup creates (or updates) the streams and the workers bucket. The
// tuner calls it; workers have no right to.
func Setup(ctx context.Context, js jetstream.JetStream) error {
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        JobsStream,
		Description: "tessera measurement jobs, one durable pull consumer per target key",
		Subjects:    []string{jobsPrefix + ">"},
		Retention:   jetstream.WorkQueuePolicy,
		Duplicates:  dupWindow,
	}); err != nil {
		return fmt.Errorf("remote: stream %s: %w", JobsStream, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        ResultsStream,
		Description: "tessera measurement results, one subject per tuning run",
		Subjects:    []string{resultsPrefix + ">"},
		MaxAge:      resultsMaxAge,
	}); err != nil {
		return fmt.Errorf("remote: stream %s: %w", ResultsStream, err)
	}
	if _, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      WorkersBucket,
		Description: "tessera workers present, by target key id",
		TTL:         workersTTL,
	}); err != nil {
		return fmt.Errorf("remote: bucket %s: %w", WorkersBucket, err)
	}
	return nil
}

// Workers lists the workers present now (those that refreshed their entry
// within the bucket's TTL).
func Workers(ctx context.Context, js jetstream.JetStream) ([]Presence, error) {
	kv, err := js.KeyValue(ctx, WorkersBucket)
	if err != nil {
		return nil, fmt.Errorf("remote: bucket %s: %w", WorkersBucket, err)
	}
	return presentIn(ctx, kv, ">")
}

func presentIn(ctx context.Context, kv jetstream.KeyValue, filter string) ([]Presence, error) {
	lister, err := kv.ListKeysFiltered(ctx, filter)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("remote: list workers: %w", err)
	}
	var out []Presence
	for k := range lister.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue // expired meanwhile
		}
		var p Presence
		if json.Unmarshal(e.Value(), &p) == nil && time.Since(e.Created()) < workersTTL {
			out = append(out, p)
		}
	}
	return out, nil
}
