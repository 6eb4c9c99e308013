package measure

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// ErrorKind says why a candidate has no valid measurement. Records store it by
// name (String / ParseErrorKind), so the names below never change.
type ErrorKind uint8

const (
	// None is returned when the candidate built, ran and was timed.
	None ErrorKind = iota
	// BuildTimeout is returned when the compiler ran past Builder.Timeout and
	// was killed, or when the build was canceled (Msg starts with "canceled").
	BuildTimeout
	// CompileError is returned when the compiler exited with an error (Msg
	// holds the start of its stderr) or could not be run at all.
	CompileError
	// RuntimeError is returned when the child crashed (signal), the kernel
	// returned non-zero, the library or symbol could not be loaded, the job was
	// invalid, or the run was canceled (Msg starts with "canceled").
	RuntimeError
	// RunTimeout is returned when the child ran past RunOptions.Timeout and was
	// killed.
	RunTimeout
	// WrongResult is returned by callers when the outputs disagree with a
	// reference (see Compare); the runner itself never returns it.
	WrongResult
)

var kindNames = [...]string{
	None:         "none",
	BuildTimeout: "build_timeout",
	CompileError: "compile_error",
	RuntimeError: "runtime_error",
	RunTimeout:   "run_timeout",
	WrongResult:  "wrong_result",
}

// String returns the stable snake_case name of k, e.g. "compile_error".
func (k ErrorKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("error_kind(%d)", uint8(k))
}

// ParseErrorKind is the inverse of ErrorKind.String.
func ParseErrorKind(s string) (ErrorKind, error) {
	for k, name := range kindNames {
		if name == s {
			return ErrorKind(k), nil
		}
	}
	return None, fmt.Errorf("measure: unknown error kind %q", s)
}

// MarshalText encodes k by its name, so JSON records read "run_timeout".
func (k ErrorKind) MarshalText() ([]byte, error) {
	if int(k) >= len(kindNames) {
		return nil, fmt.Errorf("measure: invalid error kind %d", uint8(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText decodes a name written by MarshalText.
func (k *ErrorKind) UnmarshalText(b []byte) error {
	v, err := ParseErrorKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// canceledMsg starts the message of every build or run that was stopped by
// the caller's context rather than by a failure of the candidate.
const canceledMsg = "canceled"

// Built is the outcome of compiling one Source.
type Built struct {
	Path   string        // the shared library; empty unless Kind == None
	Kind   ErrorKind     // None, CompileError or BuildTimeout
	Msg    string        // compiler diagnostics or the reason of the failure
	Time   time.Duration // wall time of the compile (or of the cache lookup)
	Cached bool          // the library came from the cache, no compiler ran
	// Infra is set when the failure is the machine's, not the source's:
	// the build cache or a scratch file could not be made, or the
	// compiler could not be started. Measurer.Measure turns it into an
	// error of the batch, never a candidate's CompileError.
	Infra bool
}

// Result is the outcome of running one Job.
type Result struct {
	Costs   []float64     // seconds per call: the mean of each repetition
	Kind    ErrorKind     // None, RuntimeError or RunTimeout
	Msg     string        // the reason of a failure, with the child's last stderr lines
	Outputs [][]float32   // with RunOptions.Check: one per output arg, from the first call
	Number  int           // calls per repetition after growing to MinRepeatMs
	RunTime time.Duration // wall time of the child process
	// BuildTime is the wall time of the candidate's compile (or of the
	// cache lookup), and Cached whether its library came from the build
	// cache; both set by Measurer.Measure.
	BuildTime time.Duration
	Cached    bool
}

// Median returns the median of r.Costs, or +Inf when there are none, so that a
// failed result never looks fast.
func (r Result) Median() float64 {
	if len(r.Costs) == 0 {
		return math.Inf(1)
	}
	c := slices.Clone(r.Costs)
	slices.Sort(c)
	n := len(c)
	if n%2 == 1 {
		return c[n/2]
	}
	return (c[n/2-1] + c[n/2]) / 2
}

// Cost returns the cost a search or a cost model uses: the median of a
// valid measurement, +Inf for a failed one.
func (r Result) Cost() float64 {
	if r.Kind != None {
		return math.Inf(1)
	}
	return r.Median()
}

// Min returns the smallest of r.Costs, or +Inf when there are none.
func (r Result) Min() float64 {
	if len(r.Costs) == 0 {
		return math.Inf(1)
	}
	return slices.Min(r.Costs)
}
