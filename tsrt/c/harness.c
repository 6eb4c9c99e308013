/* harness.c: times one kernel of a shared library for package measure.
 *
 * usage: harness LIB ENTRY NUMBER REPEAT MIN_REPEAT_MS BUDGET_MS CUTOFF_US FLUSH IN_FILE OUT_FILE ARG...
 *   ARG is i<SIZE> (an input: SIZE floats read from IN_FILE, in arg order),
 *   w<SIZE> (an input that is a constant of the model: its weights) or
 *   o<SIZE> (an output: zeroed) or s<SIZE> (the kernel's workspace, SIZE
 *   floats after its parameters: neither read nor written out).
 *   OUT_FILE "-" means: do not write outputs.
 *
 * The kernel is called once on zeroed outputs (the warm-up, and the call whose
 * outputs are written to OUT_FILE as raw native floats in arg order). Then
 * NUMBER grows until one repetition of NUMBER calls lasts MIN_REPEAT_MS (it
 * is 1 when the warm-up call alone lasted that long); that repetition is the
 * first of REPEAT. When BUDGET_MS is not 0, no further repetition starts once
 * the timed calls have run that long: a kernel 100 times slower than the goal
 * is timed once, not REPEAT times, which is all a search needs to know of it.
 * When CUTOFF_US is not 0 and the warm-up call lasted longer than that, one
 * more call is timed and is the only repetition: a search that passes a
 * multiple of its best cost learns that the candidate is slow, in two calls.
 * When FLUSH is 1, every repetition is one call, and the weights (w args)
 * are evicted from the caches before it, as in a model where the other
 * kernels' weights went through the caches since this one last ran; the
 * activations stay where the warm-up left them (a model's previous kernel
 * has just written them).
 *
 * stdout, after the kernel's own output: "tessera number N", up to REPEAT lines
 * "tessera cost SECONDS_PER_CALL", then "tessera done".
 * exit status: 0 ok; 2 setup error; 3 the kernel returned non-zero; the
 * message is on stderr.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"

typedef int (*kernel_fn)(float *const *args);

static void die(int status, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	fputs("harness: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(status);
}

/* The clock: wall time, or with TESSERA_CLOCK=cpu in the environment the
 * process's CPU time, which compares one-thread kernels on a loaded machine
 * (a development aid: reported figures are wall time). */
static clockid_t clock_id = CLOCK_MONOTONIC;

static double now(void) {
	struct timespec ts;
	clock_gettime(clock_id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long long parse_int(const char *s, const char *what) {
	char *end;
	long long v = strtoll(s, &end, 10);
	if (*s == 0 || *end != 0 || v < 0)
		die(2, "bad %s %s", what, s);
	return v;
}

/* evict writes back and evicts the n bytes at p from every cache level. */
static void evict(const void *p, size_t n) {
#if defined(__x86_64__) || defined(__i386__)
	for (size_t o = 0; o < n; o += 64)
		__builtin_ia32_clflush((const char *)p + o);
	__builtin_ia32_mfence();
#else
	/* No cache-line flush here: write over more memory than any cache
	 * holds (64 MiB), which evicts everything. */
	static char *scratch;
	enum { scratch_bytes = 64 << 20 };
	(void)p;
	(void)n;
	if (!scratch && !(scratch = malloc(scratch_bytes)))
		die(2, "out of memory");
	for (size_t o = 0; o < scratch_bytes; o += 64)
		scratch[o]++;
#endif
}

/* evict_weights evicts every weight argument (a w arg) from the caches. */
static void evict_weights(float *const *bufs, const size_t *sizes, const char *is_weight, int nargs) {
	for (int i = 0; i < nargs; i++)
		if (is_weight[i])
			evict(bufs[i], sizes[i] * sizeof(float));
}

/* rep calls f number times and returns the wall time in seconds, or exits if
 * a call fails. */
static double rep(kernel_fn f, float *const *args, long long number) {
	double t0 = now();
	for (long long i = 0; i < number; i++) {
		int rc = f(args);
		if (rc != 0)
			die(3, "kernel returned %d", rc);
	}
	return now() - t0;
}

/* call is what the timing protocol (timing.h) times: the kernel on its
 * arguments. */
struct call {
	kernel_fn f;
	float *const *args;
	const size_t *sizes;
	const char *is_weight;
	int nargs;
};

static double call_rep(void *p, long long number) {
	struct call *c = p;
	return rep(c->f, c->args, number);
}

static void call_flush(void *p) {
	struct call *c = p;
	evict_weights(c->args, c->sizes, c->is_weight, c->nargs);
}

int main(int argc, char **argv) {
	if (argc < 11)
		die(2, "usage: harness LIB ENTRY NUMBER REPEAT MIN_REPEAT_MS BUDGET_MS CUTOFF_US FLUSH IN_FILE OUT_FILE ARG...");
	const char *lib = argv[1], *entry = argv[2], *in_path = argv[9], *out_path = argv[10];
	const char *clk = getenv("TESSERA_CLOCK");
	if (clk && strcmp(clk, "cpu") == 0)
		clock_id = CLOCK_PROCESS_CPUTIME_ID;
	long long number = parse_int(argv[3], "number");
	long long repeat = parse_int(argv[4], "repeat");
	double min_s = (double)parse_int(argv[5], "min_repeat_ms") / 1e3;
	double budget_s = (double)parse_int(argv[6], "budget_ms") / 1e3;
	double cutoff_s = (double)parse_int(argv[7], "cutoff_us") / 1e6;
	int flush = parse_int(argv[8], "flush") != 0;
	if (number < 1)
		number = 1;
	if (repeat < 1)
		repeat = 1;

	int nargs = argc - 11;
	float **bufs = calloc((size_t)nargs + 1, sizeof *bufs);
	size_t *sizes = calloc((size_t)nargs + 1, sizeof *sizes);
	char *is_out = calloc((size_t)nargs + 1, 1);
	char *is_weight = calloc((size_t)nargs + 1, 1);
	char *is_ws = calloc((size_t)nargs + 1, 1);
	if (!bufs || !sizes || !is_out || !is_weight || !is_ws)
		die(2, "out of memory");
	for (int i = 0; i < nargs; i++) {
		const char *a = argv[11 + i];
		if (a[0] != 'i' && a[0] != 'o' && a[0] != 'w' && a[0] != 's')
			die(2, "bad arg %s", a);
		is_out[i] = a[0] == 'o';
		is_weight[i] = a[0] == 'w';
		is_ws[i] = a[0] == 's';
		sizes[i] = (size_t)parse_int(a + 1, "arg size");
		size_t bytes = (sizes[i] * sizeof(float) + 63) / 64 * 64;
		if (bytes == 0)
			bytes = 64;
		bufs[i] = aligned_alloc(64, bytes);
		if (!bufs[i])
			die(2, "cannot allocate %zu bytes for arg %d", bytes, i);
		memset(bufs[i], 0, bytes);
	}

	FILE *in = fopen(in_path, "rb");
	if (!in)
		die(2, "open %s failed", in_path);
	for (int i = 0; i < nargs; i++)
		if (!is_out[i] && !is_ws[i] && fread(bufs[i], sizeof(float), sizes[i], in) != sizes[i])
			die(2, "input file too short for arg %d", i);
	if (fgetc(in) != EOF)
		die(2, "input file longer than the inputs");
	fclose(in);

	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		die(2, "dlopen: %s", dlerror());
	kernel_fn f = (kernel_fn)dlsym(h, entry);
	if (!f)
		die(2, "dlsym %s: %s", entry, dlerror());

	double warm = now();
	int rc = f(bufs);
	warm = now() - warm;
	if (rc != 0)
		die(3, "kernel returned %d on the first call", rc);
	int slow = cutoff_s > 0 && warm > cutoff_s;
	if (min_s > 0 && warm >= min_s)
		number = 1;
	if (strcmp(out_path, "-") != 0) {
		FILE *out = fopen(out_path, "wb");
		if (!out)
			die(2, "open %s failed", out_path);
		for (int i = 0; i < nargs; i++)
			if (is_out[i] && fwrite(bufs[i], sizeof(float), sizes[i], out) != sizes[i])
				die(2, "write %s failed", out_path);
		if (fclose(out) != 0)
			die(2, "write %s failed", out_path);
	}

	struct call c = {f, bufs, sizes, is_weight, nargs};
	timing t = {number, repeat, min_s, budget_s, slow, flush};
	if (time_and_report(t, call_rep, call_flush, &c) != 0)
		die(2, "out of memory");
	return 0;
}
