package measure

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSweepLeftovers: the temporary directory of a process killed with
// SIGKILL and the stale scratch directories of the build cache are removed
// by the next process (they stayed forever); live ones are not touched.
func TestSweepLeftovers(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(os.TempDir(), fmt.Sprintf("tessera-sweeptest-%d-x", dead.Process.Pid))
	mine := filepath.Join(os.TempDir(), fmt.Sprintf("tessera-sweeptest-%d-y", os.Getpid()))
	for _, d := range []string{gone, mine} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(d)
	}
	dir, err := TempDir("tessera-sweeptest")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if !strings.HasPrefix(filepath.Base(dir), fmt.Sprintf("tessera-sweeptest-%d-", os.Getpid())) {
		t.Errorf("TempDir made %s", dir)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the directory of a dead process is still there (%v)", err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("the directory of a live process was removed: %v", err)
	}

	cache := t.TempDir()
	old, fresh := filepath.Join(cache, "tmp-old"), filepath.Join(cache, "tmp-fresh")
	for _, d := range []string{old, fresh} {
		os.MkdirAll(d, 0o755)
	}
	past := time.Now().Add(-time.Hour)
	os.Chtimes(old, past, past)
	if _, err := (&Builder{CacheDir: cache}).cacheDir(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("a stale scratch directory is still there (%v)", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh scratch directory was removed: %v", err)
	}
}

// TestChildDiesWithParent: a child started with DieWithParent does not
// outlive its parent killed by SIGKILL (compilers kept running after
// their tune was killed).
func TestChildDiesWithParent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("DieWithParent works on Linux only")
	}
	if os.Getenv("TESSERA_TEST_PARENT") == "1" {
		cmd := exec.Command("sleep", "60")
		DieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			os.Exit(3)
		}
		fmt.Println(cmd.Process.Pid)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithParent$")
	parent.Env = append(os.Environ(), "TESSERA_TEST_PARENT=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	child, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		parent.Process.Kill()
		t.Fatalf("no child pid: %q %v", line, err)
	}
	parent.Process.Signal(syscall.SIGKILL)
	parent.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		// The child is not ours to reap: it is gone, or a zombie of init.
		if syscall.Kill(child, 0) == syscall.ESRCH || isZombie(child) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(child, syscall.SIGKILL)
	t.Errorf("the child %d outlived its parent", child)
}

// isZombie reports whether pid is a zombie (Linux /proc).
func isZombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, ok := strings.Cut(string(data), ") ")
	return ok && strings.HasPrefix(rest, "Z")
}
