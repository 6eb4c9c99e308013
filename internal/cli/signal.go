package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// InterruptedError is returned by a command that a signal stopped after
// it committed what it had done; the exit status is 128 + the signal.
type InterruptedError struct {
	Signal syscall.Signal
	Msg    string // what was kept, and how to go on
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("interrupted by %s: %s", signalName(e.Signal), e.Msg)
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT (Ctrl-C)"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// Signals catches the first SIGINT or SIGTERM of a command that must
// commit what it did before it stops.
type Signals struct {
	ch     chan os.Signal
	done   chan struct{}
	cancel context.CancelFunc
	once   sync.Once
	mu     sync.Mutex
	got    syscall.Signal
}

// NotifySignals returns a context canceled by the first SIGINT or
// SIGTERM, and the Signals that say which came. Stop restores the
// default handling.
func NotifySignals() (context.Context, *Signals) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Signals{ch: make(chan os.Signal, 1), done: make(chan struct{}), cancel: cancel}
	signal.Notify(s.ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-s.ch:
			s.mu.Lock()
			s.got = sig.(syscall.Signal)
			s.mu.Unlock()
			cancel()
		case <-s.done:
		}
	}()
	return ctx, s
}

// Caught returns the signal that came, 0 while none did.
func (s *Signals) Caught() syscall.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got
}

// Interrupted returns an InterruptedError saying msg where a signal came,
// else err.
func (s *Signals) Interrupted(err error, msg string) error {
	if sig := s.Caught(); sig != 0 {
		return &InterruptedError{Signal: sig, Msg: msg}
	}
	return err
}

// Stop restores the default handling of the signals and cancels the
// context.
func (s *Signals) Stop() {
	s.once.Do(func() {
		signal.Stop(s.ch)
		close(s.done)
		s.cancel()
	})
}
