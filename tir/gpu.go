package tir

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
)

// A function lowered for a GPU (schedule.LowerGPU) is host code around
// kernels. The host part is made of Seq and Allocate of Global buffers (the
// device temporaries between kernels); every other statement at host level
// is one kernel launch. A kernel starts with a chain of ThreadBound loops,
// one per launch dimension it uses (blockIdx.x/y/z, threadIdx.x/y/z, each
// at most once, in any order); their variables are the block and thread
// indices, their extents the grid and block sizes, and the rest is the body
// every thread of every block runs. A kernel without the chain runs on one
// thread of one block. Inside a body no loop is bound to a block or thread
// index; a loop bound to "vthread" (a virtual thread) is a loop every
// thread runs, its iterations interleaved by the code generator. Shared
// buffers are allocated once per block and Local ones once per thread, and
// Barriers synchronize the threads of a block.

// Kernel is one launch of a GPU-lowered function.
type Kernel struct {
	// Grid and Block are the extents of blockIdx.x/y/z and threadIdx.x/y/z
	// (1 where a dimension is not bound).
	Grid, Block [3]int
	// BlockVars and ThreadVars are the loop variables bound to them (nil
	// where a dimension is not bound).
	BlockVars, ThreadVars [3]*Var
	Body                  Stmt
}

// Threads returns the number of threads of one block.
func (k *Kernel) Threads() int { return k.Block[0] * k.Block[1] * k.Block[2] }

// Blocks returns the number of blocks.
func (k *Kernel) Blocks() int { return k.Grid[0] * k.Grid[1] * k.Grid[2] }

// ThreadTag says what a thread-bound loop is bound to: block reports a
// blockIdx (else a threadIdx) and dim is 0, 1, 2 for x, y, z. ok is false
// for "vthread" and names it does not know.
func ThreadTag(name string) (block bool, dim int, ok bool) {
	prefix, axis, found := strings.Cut(name, ".")
	if !found || len(axis) != 1 || axis[0] < 'x' || axis[0] > 'z' {
		return false, 0, false
	}
	dim = int(axis[0] - 'x')
	switch prefix {
	case "blockIdx":
		return true, dim, true
	case "threadIdx":
		return false, dim, true
	}
	return false, 0, false
}

// Kernels splits a GPU-lowered function into its launches, in order, and
// the global temporaries the host allocates around them (in the order of
// their allocation).
func Kernels(f *PrimFunc) ([]Kernel, []*Buffer, error) {
	var ks []Kernel
	var temps []*Buffer
	var host func(s Stmt) error
	host = func(s Stmt) error {
		switch s := s.(type) {
		case nil:
			return nil
		case *Seq:
			for _, c := range s.Stmts {
				if err := host(c); err != nil {
					return err
				}
			}
			return nil
		case *Allocate:
			if s.Buf.Scope == Global {
				temps = append(temps, s.Buf)
				return host(s.Body)
			}
		}
		k, err := kernelOf(s)
		if err != nil {
			return fmt.Errorf("kernel %d: %w", len(ks), err)
		}
		ks = append(ks, k)
		return nil
	}
	if err := host(f.Body); err != nil {
		return nil, nil, fmt.Errorf("tir: %s: %w", f.Name, err)
	}
	return ks, temps, nil
}

// kernelOf reads the launch chain at the top of s.
func kernelOf(s Stmt) (Kernel, error) {
	k := Kernel{Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}}
	var pragmas []*Pragma
	for {
		if p, ok := s.(*Pragma); ok {
			pragmas = append(pragmas, p)
			s = p.Body
			continue
		}
		f, ok := s.(*For)
		if !ok || f.Kind != ThreadBound || f.Thread == "vthread" {
			break
		}
		block, dim, ok := ThreadTag(f.Thread)
		if !ok {
			return k, fmt.Errorf("loop %s bound to %q at the top of a kernel", f.Var.Name, f.Thread)
		}
		if f.Extent < 1 {
			return k, fmt.Errorf("loop %s bound to %s has extent %d", f.Var.Name, f.Thread, f.Extent)
		}
		vars, ext := &k.ThreadVars, &k.Block
		if block {
			vars, ext = &k.BlockVars, &k.Grid
		}
		if vars[dim] != nil {
			return k, fmt.Errorf("%s is bound twice", f.Thread)
		}
		vars[dim], ext[dim] = f.Var, f.Extent
		s = f.Body
	}
	for i := len(pragmas) - 1; i >= 0; i-- {
		s = &Pragma{Key: pragmas[i].Key, Value: pragmas[i].Value, Body: s}
	}
	k.Body = s
	return k, nil
}

// ThreadID names one thread of a launch.
type ThreadID struct {
	Block, Thread [3]int
}

func (t ThreadID) String() string {
	return fmt.Sprintf("block (%d,%d,%d) thread (%d,%d,%d)", t.Block[0], t.Block[1], t.Block[2], t.Thread[0], t.Thread[1], t.Thread[2])
}

// RaceError is the error RunGPU returns when two threads touch one element
// of a Global or Shared buffer without a barrier between them and one of
// them writes: a read of another thread's write, or a write over another
// thread's read or write, in one barrier phase (for Global buffers: in one
// launch, since no barrier orders the blocks).
type RaceError struct {
	Func    string
	Kernel  int    // index of the launch
	Buffer  string // the buffer's name
	Scope   Scope
	Index   []int    // the element
	Write   bool     // the second access is a write
	Thread  ThreadID // the thread of the second access
	Other   ThreadID // the thread of the first access
	Several bool     // the first access was a read by several threads (Other is unset)
	Wrote   bool     // the first access was a write
}

func (e *RaceError) Error() string {
	first := "read"
	if e.Wrote {
		first = "wrote"
	}
	who := e.Other.String()
	if e.Several {
		who = "several other threads"
	}
	second := "reads what"
	if e.Write {
		second = "writes over what"
	}
	phase := "in one barrier phase"
	if e.Scope == Global {
		phase = "in one launch"
	}
	return fmt.Sprintf("tir: run %s: race on %v buffer %s%v in kernel %d: %v %s %s %s %s",
		e.Func, e.Scope, e.Buffer, e.Index, e.Kernel, e.Thread, second, who, first, phase)
}

// RunGPU interprets f, lowered for a GPU, on args (one float32 slice per
// parameter), writing the outputs in place. The launches run in order; the
// blocks of a launch run one after another; the threads of a block take
// turns: each runs until it reaches a barrier or its end, then the next
// one, and once all of them wait at the same barrier the next phase
// begins. Shared and Local memory and the device temporaries start filled
// with NaN, so a read of an element nobody wrote shows in the results.
// Every access to a Global or Shared element is checked against the other
// threads' accesses of the same phase; a conflict is a *RaceError. Threads
// that reach different barriers, or a barrier that some threads pass while
// others return, are an error too, as is anything Run rejects.
func RunGPU(f *PrimFunc, args [][]float32) (err error) {
	if len(args) != len(f.Params) {
		return fmt.Errorf("tir: run %s: %d arguments for %d parameters", f.Name, len(args), len(f.Params))
	}
	ks, temps, err := Kernels(f)
	if err != nil {
		return err
	}
	in := &interp{slots: map[*Var]int{}, bufs: map[*Buffer]int{}}
	for i, p := range f.Params {
		if len(args[i]) != p.Size() {
			return fmt.Errorf("tir: run %s: argument %s has %d elements, want %d", f.Name, p.Name, len(args[i]), p.Size())
		}
		in.bufs[p] = len(in.mem)
		in.mem = append(in.mem, args[i])
		in.memBuf = append(in.memBuf, p)
	}
	for _, t := range temps {
		if _, ok := in.bufs[t]; ok {
			return fmt.Errorf("tir: run %s: buffer %s allocated twice", f.Name, t.Name)
		}
		n := t.Size()
		if n <= 0 || n > maxInterpAlloc {
			return fmt.Errorf("tir: run %s: allocation of %s with %d elements", f.Name, t.Name, n)
		}
		in.bufs[t] = len(in.mem)
		in.mem = append(in.mem, nanFilled(n))
		in.memBuf = append(in.memBuf, t)
	}
	compiled := make([]compiledKernel, len(ks))
	for i, k := range ks {
		in.gpu = &gpuCompile{}
		for d := range 3 {
			for _, v := range []*Var{k.BlockVars[d], k.ThreadVars[d]} {
				if v != nil {
					in.slot(v)
				}
			}
		}
		body := in.stmt(k.Body)
		if in.err != nil {
			return fmt.Errorf("tir: run %s: kernel %d: %w", f.Name, i, in.err)
		}
		compiled[i] = compiledKernel{Kernel: k, body: body, shared: in.gpu.shared, barriers: in.gpu.barriers}
	}
	in.gpu = nil
	slotBuf := in.memBuf
	defer func() {
		if r := recover(); r != nil {
			switch fault := r.(type) {
			case runFault:
				err = fmt.Errorf("tir: run %s: %s", f.Name, string(fault))
			case budgetFault:
				err = fmt.Errorf("tir: run %s: %w", f.Name, ErrBudget)
			case *RaceError:
				fault.Func = f.Name
				err = fault
			default:
				panic(r)
			}
		}
	}()
	steps := int64(maxInterpSteps)
	r := &gpuRun{in: in, slotBuf: slotBuf, steps: &steps}
	for i := range compiled {
		r.launch(i, &compiled[i])
	}
	return nil
}

func nanFilled(n int) []float32 {
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(math.NaN())
	}
	return data
}

// gpuCompile is what compiling one kernel body collects.
type gpuCompile struct {
	shared   []sharedAlloc
	barriers int // barrier statements compiled; each gets its index as id
}

type sharedAlloc struct {
	slot, size int
}

type compiledKernel struct {
	Kernel
	body     func(*frame)
	shared   []sharedAlloc
	barriers int
}

// checked reports whether accesses to b are race-checked: in a kernel
// body, every buffer but a thread's own Local ones.
func (in *interp) checked(b *Buffer) bool {
	return in.gpu != nil && b.Scope != Local
}

// gpuAllocate compiles an allocation inside a kernel body: a Shared buffer
// is allocated once per block before its threads start (the statement only
// scopes it), a Local one per thread when the thread reaches it.
func (in *interp) gpuAllocate(s *Allocate, slot int) func(*frame) {
	switch s.Buf.Scope {
	case Shared:
		in.gpu.shared = append(in.gpu.shared, sharedAlloc{slot: slot, size: s.Buf.Size()})
		return in.stmt(s.Body)
	case Global:
		in.fail("global buffer %s allocated inside a kernel", s.Buf.Name)
		return func(*frame) {}
	}
	return in.localAllocate(s, slot)
}

// localAllocate compiles an allocation whose storage is made, NaN-filled,
// every time the statement runs.
func (in *interp) localAllocate(s *Allocate, slot int) func(*frame) {
	n := s.Buf.Size()
	body := in.stmt(s.Body)
	return func(fr *frame) {
		old := fr.mem[slot]
		fr.mem[slot] = nanFilled(n)
		body(fr)
		fr.mem[slot] = old
	}
}

// cell is the race checker's record of one element in one phase: the
// thread that wrote it and the thread that read it (-1: several), as ids
// starting at 1; epoch tells which phase the record belongs to.
type cell struct {
	epoch          uint32
	writer, reader int32
}

// gpuRun is one RunGPU.
type gpuRun struct {
	in      *interp
	slotBuf []*Buffer
	steps   *int64
	epoch   uint32 // last phase number handed out

	kernel     int
	k          *compiledKernel
	shadow     [][]cell // per slot; nil for Local buffers
	launchEp   uint32   // the phase of Global buffers: the whole launch
	blockEp    uint32   // the current phase of Shared buffers
	isShared   []bool
	blockIndex [3]int
}

func (r *gpuRun) nextEpoch() uint32 {
	r.epoch++
	return r.epoch
}

// gpuThread is one thread of the block running.
type gpuThread struct {
	r      *gpuRun
	id     int32 // 1 + the thread's index in the launch
	resume chan struct{}
	events chan threadEvent
	abort  chan struct{}
}

type threadEvent struct {
	t       *gpuThread
	done    bool
	barrier int
	fault   any
}

// abortSignal unwinds a thread goroutine when its block is abandoned.
type abortSignal struct{}

func (r *gpuRun) launch(i int, k *compiledKernel) {
	r.kernel, r.k = i, k
	r.launchEp = r.nextEpoch()
	r.shadow = make([][]cell, len(r.in.mem))
	r.isShared = make([]bool, len(r.in.mem))
	for s, b := range r.slotBuf {
		if b != nil && b.Scope == Global {
			r.shadow[s] = make([]cell, len(r.in.mem[s]))
		}
	}
	for _, a := range k.shared {
		r.shadow[a.slot] = make([]cell, a.size)
		r.isShared[a.slot] = true
	}
	n := k.Threads()
	frames := make([]*frame, n)
	threads := make([]*gpuThread, n)
	for t := range frames {
		threads[t] = &gpuThread{r: r}
		frames[t] = &frame{vars: make([]int64, len(r.in.slots)), mem: make([][]float32, len(r.in.mem)), steps: r.steps, th: threads[t]}
	}
	for bz := 0; bz < k.Grid[2]; bz++ {
		for by := 0; by < k.Grid[1]; by++ {
			for bx := 0; bx < k.Grid[0]; bx++ {
				r.blockIndex = [3]int{bx, by, bz}
				r.block(frames, threads)
			}
		}
	}
}

// block runs one block: its shared memory, then its threads in turns.
func (r *gpuRun) block(frames []*frame, threads []*gpuThread) {
	k := r.k
	mem := append([][]float32(nil), r.in.mem...)
	for _, a := range k.shared {
		mem[a.slot] = nanFilled(a.size)
	}
	r.blockEp = r.nextEpoch()
	b := r.blockIndex
	blockLinear := (b[2]*k.Grid[1]+b[1])*k.Grid[0] + b[0]
	n := k.Threads()
	for t, fr := range frames {
		copy(fr.mem, mem)
		tx, ty, tz := t%k.Block[0], t/k.Block[0]%k.Block[1], t/(k.Block[0]*k.Block[1])
		for d, v := range []int{tx, ty, tz} {
			if tv := k.ThreadVars[d]; tv != nil {
				fr.vars[r.in.slots[tv]] = int64(v)
			}
			if bv := k.BlockVars[d]; bv != nil {
				fr.vars[r.in.slots[bv]] = int64(b[d])
			}
		}
		threads[t].id = int32(blockLinear*n + t + 1)
	}
	if k.barriers == 0 {
		for _, fr := range frames {
			k.body(fr)
		}
		return
	}
	r.turns(frames, threads)
}

// turns runs the threads of a block, each in a goroutine of its own but
// never two at once: a thread runs until it reaches a barrier or its end,
// then hands over to the next.
func (r *gpuRun) turns(frames []*frame, threads []*gpuThread) {
	events := make(chan threadEvent)
	abort := make(chan struct{})
	var wg sync.WaitGroup
	for t, fr := range frames {
		th := threads[t]
		th.resume, th.events, th.abort = make(chan struct{}), events, abort
		wg.Go(func() {
			defer func() {
				rec := recover()
				if _, ok := rec.(abortSignal); ok {
					return
				}
				events <- threadEvent{t: th, done: true, fault: rec}
			}()
			th.wait()
			r.k.body(fr)
		})
	}
	stop := func(fault any) {
		close(abort)
		wg.Wait()
		panic(fault)
	}
	live := threads
	for {
		var done, waiting []*gpuThread
		barrier := -1
		for _, th := range live {
			th.resume <- struct{}{}
			ev := <-events
			if ev.fault != nil {
				stop(ev.fault)
			}
			if ev.done {
				done = append(done, th)
				continue
			}
			if barrier >= 0 && ev.barrier != barrier {
				stop(runFault(fmt.Sprintf("threads of a block wait at different barriers: %v at barrier %d, %v at barrier %d",
					r.threadID(waiting[0].id), barrier, r.threadID(th.id), ev.barrier)))
			}
			barrier = ev.barrier
			waiting = append(waiting, th)
		}
		if len(waiting) == 0 {
			break
		}
		if len(done) > 0 {
			stop(runFault(fmt.Sprintf("barrier divergence: %v returned while %v waits at barrier %d",
				r.threadID(done[0].id), r.threadID(waiting[0].id), barrier)))
		}
		r.blockEp = r.nextEpoch()
		live = waiting
	}
	wg.Wait()
}

func (t *gpuThread) wait() {
	select {
	case <-t.resume:
	case <-t.abort:
		panic(abortSignal{})
	}
}

// barrier hands over to the next thread until every thread of the block
// reached barrier id.
func (t *gpuThread) barrier(id int) {
	t.events <- threadEvent{t: t, barrier: id}
	t.wait()
}

// access checks one access of a Global or Shared element against the
// accesses of other threads in the same phase, and records it.
func (t *gpuThread) access(slot int, off int64, write bool) {
	r := t.r
	ep := r.launchEp
	if r.isShared[slot] {
		ep = r.blockEp
	}
	c := &r.shadow[slot][off]
	if c.epoch != ep {
		*c = cell{epoch: ep}
	}
	id := t.id
	switch {
	case c.writer != 0 && c.writer != id:
		panic(r.race(slot, off, write, id, c.writer, true))
	case write && c.reader != 0 && c.reader != id:
		panic(r.race(slot, off, write, id, c.reader, false))
	}
	if write {
		c.writer = id
	} else if c.reader == 0 {
		c.reader = id
	} else if c.reader != id {
		c.reader = -1
	}
}

func (r *gpuRun) race(slot int, off int64, write bool, id, other int32, wrote bool) *RaceError {
	b := r.slotBuf[slot]
	idx := make([]int, len(b.Shape))
	rest := int(off)
	for d := len(b.Shape) - 1; d >= 0; d-- {
		idx[d] = rest % b.Shape[d]
		rest /= b.Shape[d]
	}
	e := &RaceError{Kernel: r.kernel, Buffer: b.Name, Scope: b.Scope, Index: idx, Write: write, Thread: r.threadID(id), Wrote: wrote}
	if other < 0 {
		e.Several = true
	} else {
		e.Other = r.threadID(other)
	}
	return e
}

// threadID decodes a thread id of the current launch.
func (r *gpuRun) threadID(id int32) ThreadID {
	k := r.k
	n := k.Threads()
	i := int(id) - 1
	bl, t := i/n, i%n
	return ThreadID{
		Block:  [3]int{bl % k.Grid[0], bl / k.Grid[0] % k.Grid[1], bl / (k.Grid[0] * k.Grid[1])},
		Thread: [3]int{t % k.Block[0], t / k.Block[0] % k.Block[1], t / (k.Block[0] * k.Block[1])},
	}
}

// IsRace reports whether err is, or wraps, a *RaceError.
func IsRace(err error) bool {
	var re *RaceError
	return errors.As(err, &re)
}
