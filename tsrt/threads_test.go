//go:build linux

package tsrt

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// TestRunnerThreads: calls made one after another, each from a goroutine
// of its own on a thread of its own (locked and never unlocked, so that
// the thread ends with the goroutine: as a Go program's calls land on
// whatever thread the scheduler picks), all run on one OS thread; four
// calls in flight at once run on four, later calls reuse those, and no
// more than GOMAXPROCS stay idle. OpenMP keeps a pool of workers per
// calling thread, so the threads that call the library must not grow with
// the calls (threads.go).
func TestRunnerThreads(t *testing.T) {
	tid := func() int {
		var id int
		done := make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread()
			onRunner(func() { id = syscall.Gettid() })
		}()
		<-done
		return id
	}
	first := tid()
	for i := range 200 {
		if id := tid(); id != first {
			t.Fatalf("call %d ran on thread %d, the first on %d", i+1, id, first)
		}
	}
	var mu sync.Mutex
	seen := map[int]bool{}
	var started, wg sync.WaitGroup
	release := make(chan struct{})
	started.Add(4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			onRunner(func() {
				mu.Lock()
				seen[syscall.Gettid()] = true
				mu.Unlock()
				started.Done()
				<-release
			})
		}()
	}
	started.Wait()
	close(release)
	wg.Wait()
	if len(seen) != 4 {
		t.Fatalf("4 calls in flight ran on %d threads, want 4", len(seen))
	}
	for i := range 100 {
		if id := tid(); !seen[id] {
			t.Fatalf("call %d after the concurrent ones ran on a new thread %d", i+1, id)
		}
	}
	runners.Lock()
	idle := len(runners.idle)
	runners.Unlock()
	if most := runtime.GOMAXPROCS(0); idle > most {
		t.Errorf("%d runners idle, want at most GOMAXPROCS = %d", idle, most)
	}
}

// TestCallArgumentsOnMovedStack: a pointer passed to library.call points at
// the caller's variable even when the garbage collector shrinks the parked
// caller's stack while the runner is in C. The call is libc's waitid on a
// child that exits only when the test closes its stdin, after collecting
// a few times; waitid then writes the child's pid into the caller's
// siginfo. Without go:uintptrescapes on call the siginfo stayed on the
// caller's stack, which moved, and the write went to the old one.
func TestCallArgumentsOnMovedStack(t *testing.T) {
	libc, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Skipf("no libc.so.6: %v", err)
	}
	waitid, err := purego.Dlsym(libc, "waitid")
	if err != nil {
		t.Fatal(err)
	}
	l := &library{}
	for round := range 3 {
		cmd := exec.Command("cat")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		type result struct {
			pid int32
			err error
		}
		done := make(chan result)
		go func() {
			growStack(1 << 12) // a large stack that the collector halves once the frames return
			const pPID, wExited, wNoWait = 1, 4, 0x01000000
			var info [128]byte // siginfo_t: si_pid at offset 16 on Linux
			err := l.call(waitid, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info)), wExited|wNoWait)
			done <- result{*(*int32)(unsafe.Pointer(&info[16])), err}
		}()
		time.Sleep(50 * time.Millisecond) // the goroutine is parked, its runner in waitid
		for range 8 {
			runtime.GC()
		}
		stdin.Close()
		r := <-done
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		if r.err != nil {
			t.Fatalf("round %d: waitid: %v", round, r.err)
		}
		if int(r.pid) != pid {
			t.Fatalf("round %d: waitid wrote pid %d into the caller's siginfo, want %d: the argument was left on a stack that moved", round, r.pid, pid)
		}
	}
}

// growStack recurses n frames deep, each with a 256-byte local, so that the
// goroutine's stack grows.
//
//go:noinline
func growStack(n int) byte {
	var pad [256]byte
	pad[n%256] = byte(n)
	if n == 0 {
		return pad[0]
	}
	return growStack(n-1) + pad[(n+1)%256]
}
