package measure

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// testCache is the build cache shared by the tests (the harness is built once).
var testCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tessera-measure-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testCache = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func testBuilder() *Builder { return &Builder{CacheDir: testCache} }

func testRunner(t *testing.T, opts RunOptions) *Runner {
	t.Helper()
	r := &Runner{Opts: opts, Builder: testBuilder()}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// mustBuild compiles code and returns the library path.
func mustBuild(t *testing.T, code string) string {
	t.Helper()
	got := testBuilder().Build(context.Background(), []Source{{Code: code}})[0]
	if got.Kind != None {
		t.Fatalf("build: %s: %s", got.Kind, got.Msg)
	}
	return got.Path
}

// callsEnv names the file spinSrc counts its calls in.
const callsEnv = "TESSERA_TEST_CALLS"

// Hand-written kernels with the generated code's ABI.
const (
	addSrc = `
int add(float *const *args) {
	const float *a = args[0], *b = args[1];
	float *c = args[2];
	for (int i = 0; i < 1000; i++)
		c[i] = a[i] + b[i];
	return 0;
}
`
	segvSrc = `
int segv(float *const *args) {
	/* volatile twice: the compiler may neither assume p is null nor drop
	   the store */
	volatile float *volatile p = 0;
	*p = 1.0f;
	return 0;
}
`
	hangSrc = `
int hang(float *const *args) {
	volatile int spin = 1;
	while (spin)
		;
	return 0;
}
`
	brokenSrc = `
int broken(float *const *args) {
	return undefined_variable;
}
`
	// misc exports several kernels from one translation unit.
	miscSrc = `
#include <stdio.h>
#include <stdlib.h>
int fail7(float *const *args) { return 7; }
int aborts(float *const *args) { abort(); }
int noisy(float *const *args) {
	printf("kernel output without newline");
	args[0][0] = 42.0f;
	return 0;
}
/* accumulate adds its input into its output: only the first call on zeroed
   outputs gives out == in. */
int accumulate(float *const *args) {
	for (int i = 0; i < 64; i++)
		args[1][i] += args[0][i];
	return 0;
}
`
	// spinSrc busy-waits at least 1 ms per call and, when the environment
	// names a file in callsEnv, appends one byte to it per call, so a test
	// counts the calls the harness made (file size) whatever the load.
	spinSrc = `
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int spin(float *const *args) {
	const char *path = getenv("` + callsEnv + `");
	if (path) {
		int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
		if (fd < 0)
			return 1;
		int ok = write(fd, "x", 1) == 1;
		close(fd);
		if (!ok)
			return 2;
	}
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 1000000L);
	return 0;
}
`
	threadsSrc = `
#include <omp.h>
int threads(float *const *args) {
	float *out = args[0];
	out[0] = (float)omp_get_max_threads();
	int n = 0;
	#pragma omp parallel
	{
		#pragma omp atomic
		n++;
	}
	out[1] = (float)n;
	return 0;
}
`
	fmaSrc = `
typedef float v16 __attribute__((vector_size(64)));
int fma16(float *const *args) {
	const v16 *a = (const v16 *)args[0], *b = (const v16 *)args[1];
	v16 *c = (v16 *)args[2];
	for (int i = 0; i < 64; i++)
		c[i] += a[i] * b[i];
	return 0;
}
`
)
