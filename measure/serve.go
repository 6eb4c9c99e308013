package measure

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A GPU runner child serves jobs one after another (RUNNER serve): the
// driver and its context are opened once, not once a candidate, which on
// an H200 was most of a measurement (about 0.3 s a child). A job the child
// fails ends it with run's exit status, and the next job starts another;
// a job past its deadline, or a canceled one, kills it.

// gpuServer is one serving runner child.
type gpuServer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string   // stdout, a line at a time; closed at its end
	exited chan struct{} // closed once the child has been waited for
	err    error         // Wait's error, set before exited closes

	mu     sync.Mutex
	stderr tailBuffer // the current job's
}

func (s *gpuServer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.Write(p)
}

// startServer starts the runner's serve mode.
func startServer(harness string, env []string) (*gpuServer, error) {
	cmd := exec.Command(harness, "serve")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	DieWithParent(cmd)
	cmd.Env = env
	s := &gpuServer{cmd: cmd, lines: make(chan string, 64), exited: make(chan struct{}), stderr: tailBuffer{max: 8 << 10}}
	cmd.Stderr = s
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start harness: %w", err)
	}
	s.stdin = stdin
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		s.err = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// kill ends the child and its process group and waits for it.
func (s *gpuServer) kill() {
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	s.stdin.Close()
	for range s.lines { // drain, so the reader reaches Wait
	}
	<-s.exited
}

// runServed runs one job (run's arguments after "run") on the Runner's
// serving child, starting one when there is none.
func (r *Runner) runServed(ctx context.Context, opts RunOptions, args []string) (res Result) {
	start := time.Now()
	defer func() { res.RunTime = time.Since(start) }()
	if r.server == nil {
		s, err := startServer(r.harness, childEnv(opts.Threads))
		if err != nil {
			return Result{Kind: RuntimeError, Msg: err.Error()}
		}
		r.server = s
	}
	s := r.server
	s.mu.Lock()
	s.stderr.buf = s.stderr.buf[:0]
	s.mu.Unlock()
	stderr := func() *tailBuffer {
		s.mu.Lock()
		defer s.mu.Unlock()
		return &tailBuffer{max: s.stderr.max, buf: append([]byte(nil), s.stderr.buf...)}
	}
	// The child reads the whole line before it runs the job, so a write
	// does not block on a busy child (a pipe holds 64 KiB).
	if _, err := io.WriteString(s.stdin, strings.Join(args, "\t")+"\n"); err != nil {
		<-s.exited
		r.server = nil
		return Result{Kind: RuntimeError, Msg: withTail(exitReason(s.err), stderr())}
	}
	timer := time.NewTimer(opts.Timeout)
	defer timer.Stop()
	var out strings.Builder
	for {
		select {
		case line, ok := <-s.lines:
			if !ok { // the child ended the job by exiting: it failed
				<-s.exited
				r.server = nil
				return Result{Kind: RuntimeError, Msg: withTail(exitReason(s.err), stderr())}
			}
			if line == "tessera end" {
				costs, number, err := parseHarness(out.String(), opts.Repeat)
				if err != nil {
					return Result{Kind: RuntimeError, Msg: withTail(err.Error(), stderr())}
				}
				return Result{Costs: costs, Number: number}
			}
			out.WriteString(line)
			out.WriteByte('\n')
		case <-timer.C:
			s.kill()
			r.server = nil
			return Result{Kind: RunTimeout, Msg: withTail(fmt.Sprintf("killed after %v", opts.Timeout), stderr())}
		case <-ctx.Done():
			s.kill()
			r.server = nil
			return Result{Kind: RuntimeError, Msg: canceledMsg + ": " + ctx.Err().Error()}
		}
	}
}

// stopServer ends the serving child, if any.
func (r *Runner) stopServer() {
	if r.server != nil {
		r.server.stdin.Close()
		select {
		case <-r.server.exited:
		case <-time.After(2 * time.Second):
			r.server.kill()
		}
		r.server = nil
	}
}
