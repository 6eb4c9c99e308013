package measure

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Leftovers. A process killed by SIGKILL cannot clean up: its temporary
// directories and the scratch directories of the compiles it had running
// stay behind. The next process sweeps them: TempDir names its directory
// after its pid and removes those of processes that are gone, and the
// build cache's scratch directories older than staleScratch are removed
// when a Builder first uses the cache.

// TempDir creates a temporary directory "prefix-PID-*" and removes the
// directories of that prefix whose process is gone.
func TempDir(prefix string) (string, error) {
	sweepTemp(prefix)
	return os.MkdirTemp("", fmt.Sprintf("%s-%d-", prefix, os.Getpid()))
}

// sweepTemp removes os.TempDir()/prefix-PID-* for every PID that is not
// a running process.
func sweepTemp(prefix string) {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"-*-*"))
	for _, m := range matches {
		rest := strings.TrimPrefix(filepath.Base(m), prefix+"-")
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || !processGone(pid) {
			continue
		}
		os.RemoveAll(m)
	}
}

// staleScratch is the age past which a scratch directory of the build
// cache belongs to a compile that no longer runs: compiles are killed
// long before (Builder.Timeout, programTimeout).
const staleScratch = 10 * time.Minute

var swept sync.Map // build cache directories swept by this process

// sweepScratch removes the stale scratch directories ("tmp-*") of the
// build cache dir, once per process.
func sweepScratch(dir string) {
	if _, done := swept.LoadOrStore(dir, true); done {
		return
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "tmp-*"))
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.IsDir() && time.Since(fi.ModTime()) > staleScratch {
			os.RemoveAll(m)
		}
	}
}
