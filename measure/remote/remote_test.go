package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/measure/remote"
	"github.com/tessera-ml/tessera/measure/remote/natstest"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te/tetest"
)

const testKey = "cpu threads=1 | remote test machine"

func connect(t *testing.T, url string, a remote.Auth) *nats.Conn {
	t.Helper()
	nc, err := remote.Connect(url, a, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// syncBuffer is a log several goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startWorker runs an in-process worker of testKey until the test ends.
func startWorker(t *testing.T, srv *natstest.Server, auth remote.Auth, tg *backend.Target, concurrency int) *syncBuffer {
	t.Helper()
	nc := connect(t, srv.URL, auth)
	log := &syncBuffer{}
	gen := func(codegen.COptions) (func(*schedule.State) (measure.Program, error), error) {
		return tg.Generate, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- remote.RunWorker(ctx, nc, remote.WorkerConfig{
			Target: testKey, Measurer: remote.Measurers(gen, tg.Builder, tg.Runner, 1, 0),
			Concurrency: concurrency, Name: "w" + t.Name(), Log: log,
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
		if t.Failed() {
			t.Logf("worker log:\n%s", log)
		}
	})
	return log
}

func testTarget(t *testing.T) *backend.Target {
	tg := backend.CPU(backend.CPUConfig{Threads: 1, Builder: &measure.Builder{CacheDir: t.TempDir()}, Key: testKey})
	t.Cleanup(func() { tg.Close() })
	return tg
}

func sampled(t *testing.T, name string, n int, seed uint64) []measure.Input {
	d := tetest.DAGs()[name]
	rng := rand.New(rand.NewPCG(seed, seed))
	var out []measure.Input
	seen := map[string]bool{}
	for len(out) < n {
		st, _ := schedtest.RandomLowerable(rng, schedule.NewState(d), 8)
		data, _ := schedule.MarshalSteps(st.Steps)
		if !seen[string(data)] {
			seen[string(data)] = true
			out = append(out, measure.Input{State: st})
		}
	}
	return out
}

func jobsLeft(t *testing.T, nc *nats.Conn) uint64 {
	t.Helper()
	js, _ := jetstream.New(nc)
	s, err := js.Stream(context.Background(), remote.JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func options(ackWait time.Duration, maxDeliver int) remote.Options {
	return remote.Options{Target: testKey, Verify: true, Timing: measure.RunOptions{Repeat: 2, MinRepeatMs: 1},
		AckWait: ackWait, MaxDeliver: maxDeliver, NoWorker: 20 * time.Second}
}

// A worker measures what a local Measurer measures, with the same
// outcomes, and the stream is empty afterwards.
func TestRemoteMeasuresLikeLocal(t *testing.T) {
	srv := natstest.Start(t)
	tuner := connect(t, srv.URL, srv.Tuner)
	m, err := remote.NewMeasurer(context.Background(), tuner, options(5*time.Second, 3))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tg := testTarget(t)
	startWorker(t, srv, srv.NKeyWorker, tg, 2)

	inputs := sampled(t, "matmul_bias_relu", 5, 1)
	d := inputs[0].State.DAG
	s0 := schedule.NewState(d)
	bad, err := s0.Apply(&schedule.Split{Stage: s0.StageOf(d.Outputs[0]), Iter: 0, Lengths: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	inputs = append(inputs, measure.Input{State: bad})
	got, err := m.Measure(context.Background(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := tg.Measurer(true).Measure(context.Background(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range inputs {
		if got[i].Kind != want[i].Kind || (got[i].Kind == measure.None) != (len(got[i].Costs) == 2) {
			t.Errorf("input %d: remote %v %q %v, local %v %q", i, got[i].Kind, got[i].Msg, got[i].Costs, want[i].Kind, want[i].Msg)
		}
	}
	if got[len(got)-1].Kind != measure.CompileError {
		t.Errorf("the unfilled state: %v, want compile_error", got[len(got)-1].Kind)
	}
	if s := m.Stats(); s.Jobs != 6 || s.Duplicates != 0 || s.Abandoned != 0 {
		t.Errorf("stats %+v", s)
	}
	if tm := m.Times(); tm.Candidates != 6 || tm.Build <= 0 {
		t.Errorf("times %+v", tm)
	}
	if n := jobsLeft(t, tuner); n != 0 {
		t.Errorf("%d jobs left in the stream", n)
	}
}

// hangingWorker announces itself and takes jobs, but never acknowledges
// one nor sends a heartbeat: a worker that hangs.
func hangingWorker(t *testing.T, srv *natstest.Server, stopAfter int) (taken func() []jetstream.Msg, stop func()) {
	t.Helper()
	nc := connect(t, srv.URL, srv.Worker)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithCancel(context.Background())
	kv, err := js.KeyValue(ctx, remote.WorkersBucket)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := json.Marshal(remote.Presence{Worker: "hang", Target: testKey})
	var mu sync.Mutex
	var msgs []jetstream.Msg
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			kv.Put(ctx, remote.KeyID(testKey)+".hang", p)
			mu.Lock()
			n := len(msgs)
			mu.Unlock()
			if stopAfter > 0 && n >= stopAfter {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			c, err := js.Consumer(ctx, remote.JobsStream, remote.ConsumerName(testKey))
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			msg, err := c.Next(jetstream.FetchMaxWait(200 * time.Millisecond))
			if err == nil {
				mu.Lock()
				msgs = append(msgs, msg)
				mu.Unlock()
			}
		}
	}()
	return func() []jetstream.Msg {
			mu.Lock()
			defer mu.Unlock()
			return append([]jetstream.Msg(nil), msgs...)
		}, func() {
			cancel()
			<-done
			kv.Delete(context.Background(), remote.KeyID(testKey)+".hang")
		}
}

// A job that no worker answers within MaxDeliver deliveries becomes one
// failure record (through the max-deliveries advisory), and its message
// is removed.
func TestMaxDeliverGivesOneFailure(t *testing.T) {
	srv := natstest.Start(t)
	tuner := connect(t, srv.URL, srv.Tuner)
	m, err := remote.NewMeasurer(context.Background(), tuner, options(300*time.Millisecond, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	taken, stop := hangingWorker(t, srv, 0)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := m.Measure(ctx, sampled(t, "softmax", 1, 2))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Kind != measure.RuntimeError || !strings.Contains(res[0].Msg, "no result after 2 deliveries") {
		t.Fatalf("results %+v", res)
	}
	if n := len(taken()); n != 2 {
		t.Errorf("the job was delivered %d times, want 2", n)
	}
	if s := m.Stats(); s.Abandoned != 1 {
		t.Errorf("stats %+v", s)
	}
	if n := jobsLeft(t, tuner); n != 0 {
		t.Errorf("%d jobs left in the stream", n)
	}
}

// A job held by a worker that stops answering is redelivered to another;
// the first worker's late result is dropped as a duplicate; a job
// published twice is stored once.
func TestRedeliveryAndDuplicates(t *testing.T) {
	srv := natstest.Start(t)
	tuner := connect(t, srv.URL, srv.Tuner)
	m, err := remote.NewMeasurer(context.Background(), tuner, options(500*time.Millisecond, 5))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	taken, stop := hangingWorker(t, srv, 1)
	inputs := sampled(t, "softmax", 2, 3)
	type out struct {
		res []measure.Result
		err error
	}
	first := make(chan out, 1)
	go func() {
		r, err := m.Measure(context.Background(), inputs[:1])
		first <- out{r, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(taken()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	held := taken()
	if len(held) != 1 {
		t.Fatal("the hanging worker took no job")
	}
	startWorker(t, srv, srv.Worker, testTarget(t), 1)
	r := <-first
	if r.err != nil || r.res[0].Kind != measure.None {
		t.Fatalf("after redelivery: %+v %v", r.res, r.err)
	}
	if s := m.Stats(); s.Redelivered != 1 {
		t.Errorf("stats %+v, want one redelivered result", s)
	}
	// The hanging worker wakes up and answers late.
	var job remote.Job
	if err := json.Unmarshal(held[0].Data(), &job); err != nil {
		t.Fatal(err)
	}
	late, _ := json.Marshal(remote.Result{Job: job.ID, Worker: "hang", Target: testKey, Delivery: 1, Kind: measure.RuntimeError, Msg: "late"})
	wjs, _ := jetstream.New(connect(t, srv.URL, srv.Worker))
	if _, err := wjs.Publish(context.Background(), "tessera.results."+m.Run(), late); err != nil {
		t.Fatal(err)
	}
	stop()
	res, err := m.Measure(context.Background(), inputs[1:])
	if err != nil || res[0].Kind != measure.None {
		t.Fatalf("second batch: %+v %v", res, err)
	}
	if s := m.Stats(); s.Duplicates != 1 {
		t.Errorf("stats %+v, want the late result dropped", s)
	}
	// A re-published job (same message id) is dropped by the server.
	js, _ := jetstream.New(tuner)
	for k := range 2 {
		ack, err := js.Publish(context.Background(), "tessera.jobs.nobody.r1", []byte("{}"), jetstream.WithMsgID("r1/x/y"))
		if err != nil {
			t.Fatal(err)
		}
		if ack.Duplicate != (k == 1) {
			t.Errorf("publish %d: duplicate %v", k, ack.Duplicate)
		}
	}
}

// Without a worker of the target key, a batch fails with an error naming
// the key and the stream, and leaves no job behind; so does a canceled
// batch.
func TestNoWorkerAndCancel(t *testing.T) {
	srv := natstest.Start(t)
	tuner := connect(t, srv.URL, srv.Tuner)
	opts := options(time.Second, 3)
	opts.Target, opts.NoWorker = "cpu threads=64 | a machine nobody runs", time.Second
	m, err := remote.NewMeasurer(context.Background(), tuner, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.Measure(context.Background(), sampled(t, "softmax", 3, 4))
	if err == nil || !strings.Contains(err.Error(), `"cpu threads=64 | a machine nobody runs"`) || !strings.Contains(err.Error(), remote.JobsStream) {
		t.Fatalf("error %v, want one naming the target key and the stream", err)
	}
	if n := jobsLeft(t, tuner); n != 0 {
		t.Errorf("%d jobs left after the no-worker error", n)
	}
	opts.NoWorker = time.Minute
	m2, err := remote.NewMeasurer(context.Background(), tuner, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := m2.Measure(ctx, sampled(t, "softmax", 3, 5)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("canceled batch: %v", err)
	}
	if n := jobsLeft(t, tuner); n != 0 {
		t.Errorf("%d jobs left after a canceled batch", n)
	}
}

// Clients authenticate, and a worker may only take jobs and publish
// results.
func TestAccess(t *testing.T) {
	srv := natstest.Start(t)
	if nc, err := remote.Connect(srv.URL, remote.Auth{}, "anonymous"); err == nil {
		nc.Close()
		t.Fatal("a client without credentials was let in")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("refusal: %v", err)
	}
	if _, err := remote.Connect(srv.URL, remote.Auth{User: "worker", Password: "wrong"}, "guess"); err == nil {
		t.Fatal("a wrong password was let in")
	}
	tuner := connect(t, srv.URL, srv.Tuner)
	m, err := remote.NewMeasurer(context.Background(), tuner, options(time.Second, 3))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for name, auth := range map[string]remote.Auth{"password": srv.Worker, "nkey": srv.NKeyWorker} {
		js, _ := jetstream.New(connect(t, srv.URL, auth))
		try := func(what string, f func(ctx context.Context) error) {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			if f(ctx) == nil {
				t.Errorf("%s worker %s", name, what)
			}
		}
		try("published a job", func(ctx context.Context) error {
			_, err := js.Publish(ctx, "tessera.jobs."+remote.KeyID(testKey)+".r1", []byte("{}"))
			return err
		})
		try("created a stream", func(ctx context.Context) error {
			_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "STEAL", Subjects: []string{"steal.>"}})
			return err
		})
		try("deleted the jobs stream", func(ctx context.Context) error { return js.DeleteStream(ctx, remote.JobsStream) })
		try("created a consumer", func(ctx context.Context) error {
			_, err := js.CreateOrUpdateConsumer(ctx, remote.JobsStream, jetstream.ConsumerConfig{Durable: "other", FilterSubject: "tessera.jobs.x.>"})
			return err
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := js.Consumer(ctx, remote.JobsStream, remote.ConsumerName(testKey)); err != nil {
			t.Errorf("%s worker cannot look up its consumer: %v", name, err)
		}
		cancel()
	}
}

func TestConnectRefusesPasswordInURL(t *testing.T) {
	_, err := remote.Connect("nats://tuner:secret@127.0.0.1:4222", remote.Auth{}, "x")
	if err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "carries a password") {
		t.Fatalf("error %v", err)
	}
}

func TestLoadAuth(t *testing.T) {
	dir := t.TempDir()
	pw := dir + "/pw"
	writeFile(t, pw, "worker:s3cret\n")
	env := map[string]string{remote.EnvUser: "envuser", remote.EnvPassword: "envpass"}
	getenv := func(k string) string { return env[k] }
	a, err := remote.LoadAuth(remote.AuthFiles{Password: pw}, getenv)
	if err != nil || a.User != "worker" || a.Password != "s3cret" {
		t.Errorf("file: %+v %v", a, err)
	}
	a, err = remote.LoadAuth(remote.AuthFiles{}, getenv)
	if err != nil || a.User != "envuser" || a.Password != "envpass" {
		t.Errorf("env: %+v %v", a, err)
	}
	writeFile(t, pw, "no colon\n")
	if _, err := remote.LoadAuth(remote.AuthFiles{Password: pw}, getenv); err == nil || !strings.Contains(err.Error(), "user:password") {
		t.Errorf("bad file: %v", err)
	}
	delete(env, remote.EnvPassword)
	if _, err := remote.LoadAuth(remote.AuthFiles{}, getenv); err == nil {
		t.Error("a user without a password was accepted")
	}
	if _, err := remote.LoadAuth(remote.AuthFiles{Cert: "c.pem"}, getenv); err == nil {
		t.Error("a certificate without a key was accepted")
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestServeTarget: a worker of the cpu target says what it serves, its
// target key the target's, before it connects, and a server it cannot
// reach is its error; a target it cannot make is the error of --target,
// with nothing said.
func TestServeTarget(t *testing.T) {
	tg, err := backend.New(backend.Config{Name: "cpu", CPU: "native", Threads: 1, Host: &measure.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	key := tg.Key()
	tg.Close()
	for _, c := range []struct {
		name   string
		target string
		said   string
		err    string
	}{
		{"cpu", "cpu", fmt.Sprintf("worker pid %d: target key %s (id %s), concurrency 2, jobs from %s on nats://127.0.0.1:1\n", os.Getpid(), key, remote.KeyID(key), remote.JobsStream), "--nats: "},
		{"no such target", "tpu", "", `--target "tpu"`},
	} {
		var out strings.Builder
		d := remote.DialOptions{URL: "nats://127.0.0.1:1", Auth: remote.AuthFiles{}}
		err := remote.ServeTarget(context.Background(), &out, d, remote.WorkerConfig{Concurrency: 2}, backend.Config{Name: c.target, CPU: "native", Threads: 1}, 0)
		if err == nil || !strings.Contains(err.Error(), c.err) || out.String() != c.said {
			t.Errorf("%s: %v, said %q; want an error containing %q, said %q", c.name, err, out.String(), c.err, c.said)
		}
	}
}
