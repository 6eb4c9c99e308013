//go:build linux

package runtime

import (
	goruntime "runtime"
	"sync"
	"syscall"
	"testing"
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
			goruntime.LockOSThread()
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
	if most := goruntime.GOMAXPROCS(0); idle > most {
		t.Errorf("%d runners idle, want at most GOMAXPROCS = %d", idle, most)
	}
}
