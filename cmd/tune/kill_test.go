package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/records"
)

// TestKillAndResume kills a tuning process with SIGKILL after it committed
// a round, restarts the same command, and checks that no committed record
// was lost, nothing was measured twice, and the run ends with the
// requested number of trials.
func TestKillAndResume(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tune")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "t.db")
	args := []string{tiny, "--trials", "16", "--per-round", "4", "--population", testPopulation, "--db", db, "--threads", "1"}

	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	committed := 0
	sc := bufio.NewScanner(stderr)
	deadline := time.AfterFunc(5*time.Minute, func() { cmd.Process.Kill() })
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "committed 8/") {
			committed = 8
			cmd.Process.Signal(syscall.SIGKILL)
			break
		}
	}
	deadline.Stop()
	cmd.Wait()
	if committed == 0 {
		t.Fatal("the tuner never reported a committed round")
	}

	s, err := records.Open(db)
	if err != nil {
		t.Fatalf("database after SIGKILL: %v", err)
	}
	n, err := s.Count()
	s.Close()
	if err != nil || n < committed {
		t.Fatalf("%d records after SIGKILL (%v), %d were committed", n, err, committed)
	}

	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("restart: %v\n%s", err, out)
	}
	s, err = records.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seen := map[string]bool{}
	total := 0
	s.ForEach(func(r records.Record) error {
		total++
		if k := r.WorkloadKey + string(r.Steps); seen[k] {
			t.Errorf("a schedule of %s was measured twice", r.WorkloadKey)
		} else {
			seen[k] = true
		}
		return nil
	})
	if total != 16 {
		t.Errorf("%d records after the restart, want the 16 requested\n%s", total, out)
	}
	if !strings.Contains(string(out), "from earlier runs") {
		t.Errorf("restart does not report the earlier trials:\n%s", out)
	}
	os.Remove(bin)
}
