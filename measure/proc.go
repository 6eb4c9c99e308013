package measure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// outcome says how a child process ended.
type outcome uint8

const (
	exited   outcome = iota // ran to completion; err is nil or an *exec.ExitError
	timedOut                // killed at its own deadline
	canceled                // killed because the caller's context ended
)

// groupCommand prepares a command that runs in a process group of its own; the
// whole group (compiler drivers fork cc1, as and ld) is killed when timeout
// passes or ctx ends. The caller runs cmd, then calls cancel.
func groupCommand(ctx context.Context, timeout time.Duration, name string, args ...string) (*exec.Cmd, context.Context, context.CancelFunc) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	cmd := exec.CommandContext(tctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	DieWithParent(cmd)
	cmd.Cancel = func() error {
		// Setpgid made the child the leader of a group with its own pid.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 2 * time.Second
	return cmd, tctx, cancel
}

// classify tells why a command run by groupCommand ended, given the error of Run.
func classify(ctx, tctx context.Context, err error) outcome {
	if err == nil {
		return exited
	}
	if ctx.Err() != nil {
		return canceled
	}
	if errors.Is(tctx.Err(), context.DeadlineExceeded) {
		return timedOut
	}
	return exited
}

// headBuffer keeps the first max bytes written to it and counts the rest.
type headBuffer struct {
	max     int
	buf     bytes.Buffer
	dropped int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	room := h.max - h.buf.Len()
	if room < 0 {
		room = 0
	}
	if len(p) <= room {
		h.buf.Write(p)
	} else {
		h.buf.Write(p[:room])
		h.dropped += len(p) - room
	}
	return len(p), nil
}

func (h *headBuffer) String() string {
	s := strings.TrimSpace(h.buf.String())
	if h.dropped > 0 {
		s += fmt.Sprintf("\n... (%d more bytes)", h.dropped)
	}
	return s
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// lastLines returns up to n trailing non-empty lines, joined by "\n".
func (t *tailBuffer) lastLines(n int) string {
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGSEGV: "SIGSEGV",
	syscall.SIGBUS:  "SIGBUS",
	syscall.SIGILL:  "SIGILL",
	syscall.SIGFPE:  "SIGFPE",
	syscall.SIGABRT: "SIGABRT",
	syscall.SIGTRAP: "SIGTRAP",
	syscall.SIGSYS:  "SIGSYS",
	syscall.SIGKILL: "SIGKILL",
	syscall.SIGTERM: "SIGTERM",
	syscall.SIGXCPU: "SIGXCPU",
}

// signalName returns e.g. "SIGSEGV (segmentation fault)".
func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return fmt.Sprintf("%s (%v)", n, s)
	}
	return fmt.Sprintf("signal %d (%v)", int(s), s)
}
