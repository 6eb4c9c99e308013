/* runner.c: runs a model built by tessera's `tune build`, for package build.
 *
 * usage: runner LIB WEIGHTS IN_FILE OUT_FILE WARMUP REPEAT [profile]
 *        runner --describe LIB
 *   LIB      the model's shared library (libmodel.so)
 *   WEIGHTS  its weights file
 *   IN_FILE  every input, back to back in input order, as raw native float32
 *   OUT_FILE where the outputs of the first run go, back to back, raw float32;
 *            "-" means: do not write them
 *
 * The model runs once (its outputs are those written), then WARMUP more
 * times untimed, then REPEAT times, each timed on its own.
 *
 * stdout: one "tessera time SECONDS" per timed run, then "tessera done".
 * With "profile" the library times every step of its executor over the
 * timed runs (tessera_profile), and one "tessera step I SECONDS" line per
 * step, the mean over the timed runs, comes before "tessera done".
 *
 * --describe prints what the library says of its inputs and outputs, one
 * "tessera input ELEMS HEXNAME" or "tessera output ELEMS HEXNAME" line
 * each, in order (HEXNAME: the name's bytes in hex, "-" for an empty
 * name), then "tessera done"; the model is not created.
 * exit status: 0 ok; 2 a setup error (library, weights, input file);
 * 3 tessera_run failed. The message is on stderr.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct tessera_model tessera_model;

static void die(int status, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	fputs("runner: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(status);
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long long parse_count(const char *s, const char *what) {
	char *end;
	long long v = strtoll(s, &end, 10);
	if (*s == 0 || *end != 0 || v < 0)
		die(2, "bad %s %s", what, s);
	return v;
}

static void *sym(void *lib, const char *name) {
	void *p = dlsym(lib, name);
	if (!p)
		die(2, "the library has no %s: not a model built by tune build", name);
	return p;
}

static float *alloc_floats(size_t n) {
	float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64 + 64);
	if (!p)
		die(2, "out of memory");
	return p;
}

static void describe(const char *what, int n, const char *(*name)(int), size_t (*elems)(int)) {
	for (int i = 0; i < n; i++) {
		const unsigned char *s = (const unsigned char *)name(i);
		printf("tessera %s %zu ", what, elems(i));
		if (!s || !*s)
			putchar('-');
		for (; s && *s; s++)
			printf("%02x", *s);
		putchar('\n');
	}
}

int main(int argc, char **argv) {
	if (argc == 3 && strcmp(argv[1], "--describe") == 0) {
		void *lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
		if (!lib)
			die(2, "%s", dlerror());
		int (*num_inputs)(void) = sym(lib, "tessera_num_inputs");
		int (*num_outputs)(void) = sym(lib, "tessera_num_outputs");
		const char *(*input_name)(int) = sym(lib, "tessera_input_name");
		const char *(*output_name)(int) = sym(lib, "tessera_output_name");
		size_t (*input_elems)(int) = sym(lib, "tessera_input_elems");
		size_t (*output_elems)(int) = sym(lib, "tessera_output_elems");
		describe("input", num_inputs(), input_name, input_elems);
		describe("output", num_outputs(), output_name, output_elems);
		printf("tessera done\n");
		return 0;
	}
	int profile = argc == 8 && strcmp(argv[7], "profile") == 0;
	if (argc != 7 && !profile)
		die(2, "usage: runner LIB WEIGHTS IN_FILE OUT_FILE WARMUP REPEAT [profile]");
	const char *lib_path = argv[1], *weights = argv[2], *in_path = argv[3], *out_path = argv[4];
	long long warmup = parse_count(argv[5], "warm-up count");
	long long repeat = parse_count(argv[6], "repetition count");

	void *lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		die(2, "%s", dlerror());
	tessera_model *(*create)(const char *) = sym(lib, "tessera_create");
	int (*run)(tessera_model *, const float *const *, float *const *) = sym(lib, "tessera_run");
	void (*destroy)(tessera_model *) = sym(lib, "tessera_destroy");
	const char *(*last_error)(void) = sym(lib, "tessera_last_error");
	int (*num_inputs)(void) = sym(lib, "tessera_num_inputs");
	int (*num_outputs)(void) = sym(lib, "tessera_num_outputs");
	size_t (*input_elems)(int) = sym(lib, "tessera_input_elems");
	size_t (*output_elems)(int) = sym(lib, "tessera_output_elems");

	tessera_model *m = create(weights);
	if (!m)
		die(2, "%s", last_error());

	int nin = num_inputs(), nout = num_outputs();
	float **in = calloc((size_t)nin + 1, sizeof *in);
	float **out = calloc((size_t)nout + 1, sizeof *out);
	if (!in || !out)
		die(2, "out of memory");
	size_t want = 0;
	for (int i = 0; i < nin; i++)
		want += input_elems(i) * sizeof(float);
	FILE *f = fopen(in_path, "rb");
	if (!f)
		die(2, "input file %s: cannot open", in_path);
	fseek(f, 0, SEEK_END);
	long have = ftell(f);
	fseek(f, 0, SEEK_SET);
	if (have < 0 || (size_t)have != want)
		die(2, "input file %s has %ld bytes, the model's %d inputs take %zu", in_path, have, nin, want);
	for (int i = 0; i < nin; i++) {
		size_t n = input_elems(i);
		in[i] = alloc_floats(n);
		if (fread(in[i], sizeof(float), n, f) != n)
			die(2, "input file %s: short read", in_path);
	}
	fclose(f);
	for (int i = 0; i < nout; i++) {
		size_t n = output_elems(i);
		out[i] = alloc_floats(n);
		memset(out[i], 0, n * sizeof(float));
	}

	if (run(m, (const float *const *)in, out) != 0)
		die(3, "%s", last_error());
	if (strcmp(out_path, "-") != 0) {
		FILE *o = fopen(out_path, "wb");
		if (!o)
			die(2, "output file %s: cannot create", out_path);
		for (int i = 0; i < nout; i++) {
			size_t n = output_elems(i);
			if (fwrite(out[i], sizeof(float), n, o) != n)
				die(2, "output file %s: short write", out_path);
		}
		if (fclose(o) != 0)
			die(2, "output file %s: write failed", out_path);
	}
	for (long long r = 0; r < warmup; r++)
		if (run(m, (const float *const *)in, out) != 0)
			die(3, "%s", last_error());
	double *steps = NULL;
	int nsteps = 0;
	if (profile) {
		int (*num_steps)(void) = dlsym(lib, "tessera_num_steps");
		int (*set_profile)(double *) = dlsym(lib, "tessera_profile");
		if (!num_steps || !set_profile)
			die(2, "the library cannot time its steps (built before tessera_profile: rebuild it)");
		nsteps = num_steps();
		if (!(steps = calloc((size_t)nsteps + 1, sizeof *steps)))
			die(2, "out of memory");
		if (set_profile(steps) != 0)
			die(2, "%s", last_error());
	}
	for (long long r = 0; r < repeat; r++) {
		double t0 = now();
		if (run(m, (const float *const *)in, out) != 0)
			die(3, "%s", last_error());
		printf("tessera time %.9e\n", now() - t0);
	}
	for (int i = 0; i < nsteps; i++)
		printf("tessera step %d %.9e\n", i, steps[i] / (double)repeat);
	printf("tessera done\n");
	fflush(stdout);
	destroy(m);
	return 0;
}
