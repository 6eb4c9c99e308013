package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/measure/remote/natstest"
	"github.com/tessera-ml/tessera/records"
)

// recordLines lists a database's records as "workload steps error", in
// the order they were committed.
func recordLines(t *testing.T, db string) ([]string, map[string]bool) {
	t.Helper()
	s, err := records.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var lines []string
	targets := map[string]bool{}
	s.ForEach(func(r records.Record) error {
		lines = append(lines, r.WorkloadKey+" "+string(r.Steps)+" "+r.Error)
		targets[r.Target] = true
		return nil
	})
	return lines, targets
}

// workerProc is a `tune worker` child process whose log lines are read.
type workerProc struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	jobs  chan string // "measuring" lines
}

func startWorkerProc(t *testing.T, bin, url, pwFile, name string) *workerProc {
	t.Helper()
	cmd := exec.Command(bin, "worker", "--nats", url, "--nats-password-file", pwFile, "--threads", "1", "--name", name)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &workerProc{cmd: cmd, jobs: make(chan string, 1024)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			w.mu.Unlock()
			if strings.Contains(sc.Text(), ": measuring") {
				w.jobs <- sc.Text()
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	})
	return w
}

func (w *workerProc) log() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}

// TestTuneThroughWorkers tunes the tiny model through two `tune worker`
// processes on an embedded NATS server, kills one of them (SIGKILL, by its
// pid) in the middle of a job, and checks that the job was redelivered,
// that the run measured exactly its budget without losing or duplicating
// a record, and that its records (workloads, steps, error kinds) are those
// of a local run with the same seed. Then a tuner without credentials is
// refused, and one asking for a target key no worker has gets the clear
// error.
func TestTuneThroughWorkers(t *testing.T) {
	srv := natstest.Start(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "tune")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	pw := filepath.Join(dir, "worker.pw")
	if err := os.WriteFile(pw, []byte("worker:"+srv.Worker.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startWorkerProc(t, bin, srv.URL, pw, "wa")
	b := startWorkerProc(t, bin, srv.URL, pw, "wb")

	// Kill worker a in the middle of its second job.
	killed := make(chan string, 1)
	go func() {
		<-a.jobs
		job := <-a.jobs
		a.cmd.Process.Signal(syscall.SIGKILL)
		killed <- job
	}()
	t.Setenv("TESSERA_NATS_USER", srv.Tuner.User)
	t.Setenv("TESSERA_NATS_PASSWORD", srv.Tuner.Password)
	common := []string{tiny, "--trials", "16", "--per-round", "4", "--threads", "1", "--seed", "7"}
	remoteDB := filepath.Join(dir, "remote.db")
	var out, errs bytes.Buffer
	args := append(append([]string{}, common...), "--db", remoteDB, "--nats", srv.URL, "--ack-wait", "2s", "--worker-wait", "30s")
	if st := run(args, &out, &errs); st != 0 {
		t.Fatalf("status %d\n%s\n%s\nworker a:\n%s\nworker b:\n%s", st, out.String(), errs.String(), a.log(), b.log())
	}
	var job string
	select {
	case job = <-killed:
	default:
		t.Fatalf("worker a never took a second job\n%s\nworker b:\n%s", a.log(), b.log())
	}
	id := strings.Fields(job)[2]
	if !strings.Contains(b.log(), "job "+id+" delivery 2: measuring") {
		t.Errorf("job %s was not redelivered to worker b:\n%s", id, b.log())
	}
	m := regexp.MustCompile(`remote: 16 jobs, (\d+) results of a redelivered job`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no remote summary:\n%s", out.String())
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 {
		t.Errorf("no redelivered result counted:\n%s", out.String())
	}
	got, targets := recordLines(t, remoteDB)
	if len(got) != 16 {
		t.Fatalf("%d records, want exactly the 16 of the budget\n%s", len(got), out.String())
	}
	seen := map[string]bool{}
	for _, l := range got {
		if seen[l] {
			t.Errorf("a record twice: %s", l)
		}
		seen[l] = true
	}
	for k := range targets {
		if !strings.HasPrefix(k, "cpu threads=1 ") {
			t.Errorf("records of target %q, want the workers' key", k)
		}
	}

	// The same run measured here gives the same records.
	localDB := filepath.Join(dir, "local.db")
	out.Reset()
	if st := run(append(append([]string{}, common...), "--db", localDB), &out, &errs); st != 0 {
		t.Fatalf("local run: status %d\n%s", st, errs.String())
	}
	want, _ := recordLines(t, localDB)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records through the workers differ from a local run's:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// No credentials: refused. A target key nobody serves: a clear error.
	t.Setenv("TESSERA_NATS_USER", "")
	errs.Reset()
	if st := run(append(append([]string{}, common...), "--db", filepath.Join(dir, "x.db"), "--nats", srv.URL), &out, &errs); st == 0 || !strings.Contains(strings.ToLower(errs.String()), "authorization") {
		t.Errorf("a tuner without credentials: status %d\n%s", st, errs.String())
	}
	t.Setenv("TESSERA_NATS_USER", srv.Tuner.User)
	errs.Reset()
	args = append(append([]string{}, common...), "--db", filepath.Join(dir, "y.db"), "--nats", srv.URL, "--worker-key", "threads=64", "--worker-wait", "1s")
	if st := run(args, &out, &errs); st == 0 || !strings.Contains(errs.String(), `no worker of a cpu target key containing "threads=64"`) || !strings.Contains(errs.String(), "TESSERA_JOBS") {
		t.Errorf("a target key without workers: status %d\n%s", st, errs.String())
	}
}
