package tsrt

import (
	"runtime"
	"sync"
)

// The threads that call the library.
//
// OpenMP (libgomp) keeps a pool of worker threads for every thread that
// starts a parallel region. A goroutine moves between the process's
// threads from one call to the next, so a Go program running a model in a
// loop started regions from ever more threads: each got a pool of its own,
// the workers came to outnumber the cores, and libgomp then stops spinning
// between regions and puts its workers to sleep, so that every one of the
// hundreds of parallel loops of a run waited for a wake-up. MobileNetV3 at
// two threads took 4.0 ms a run in a loop of 400 (1.7 ms in short loops,
// before the pools had multiplied; 3.0 ms at one thread). Every call into
// the library is therefore made from one of a few locked threads (runners),
// the most recently idle first: one for a program that runs one model at a
// time, as many as calls in flight at once otherwise. At most GOMAXPROCS
// stay idle; a runner beyond them ends with its thread (and libgomp frees
// that thread's pool), so a burst of concurrent calls leaves no more
// threads behind than the process runs Go code on.

// runner is a goroutine locked to its OS thread that runs the calls sent to
// it.
type runner struct {
	calls chan func()
}

var runners struct {
	sync.Mutex
	idle []*runner // the most recently idle last
}

// onRunner runs f on an idle runner, starting one if none is idle, and
// returns when f has.
func onRunner(f func()) {
	runners.Lock()
	var r *runner
	if n := len(runners.idle); n > 0 {
		r = runners.idle[n-1]
		runners.idle = runners.idle[:n-1]
	}
	runners.Unlock()
	if r == nil {
		r = &runner{calls: make(chan func())}
		go func() {
			runtime.LockOSThread() // never unlocked: the thread stays this runner's
			for call := range r.calls {
				call()
			}
		}()
	}
	done := make(chan struct{})
	r.calls <- func() {
		defer close(done)
		f()
	}
	<-done
	runners.Lock()
	keep := len(runners.idle) < runtime.GOMAXPROCS(0)
	if keep {
		runners.idle = append(runners.idle, r)
	}
	runners.Unlock()
	if !keep {
		close(r.calls) // its goroutine returns still locked: the thread exits
	}
}
