/* harness_gpu.c: the part of the GPU runners (harness_opencl.c, harness_cuda.c) that does not
 * depend on the driver API: the command line, the data files and the timing
 * protocol. A runner is this file followed by one API file, compiled by the
 * host C compiler; the API file loads its driver at run time (dlopen), so
 * the runner builds on any machine and says plainly when there is no device.
 *
 * usage: RUNNER probe
 *        RUNNER compile SRC OUT [ARCH]
 *        RUNNER run PROGRAM NUMBER REPEAT MIN_REPEAT_MS BUDGET_MS CUTOFF_US FLUSH IN_FILE OUT_FILE ARG... -- TEMP... -- LAUNCH...
 *        RUNNER serve
 *
 * probe prints the device: "tessera device NAME", "tessera driver VERSION",
 * "tessera compiler VERSION", "tessera arch ARCH", "tessera max_threads N",
 * "tessera shared_bytes N", "tessera processors N" (multiprocessors or
 * compute units).
 * compile builds the source file SRC for the device and writes what run
 * loads to OUT (the program for OpenCL, the CUBIN or PTX for CUDA). With
 * ARCH (the probe's arch), CUDA compiles for it without starting a CUDA
 * context: NVRTC alone (a context costs a compile most of its time when
 * many compile at once); OpenCL's compiler needs its device either way.
 * run loads PROGRAM (an output of compile) and times its launches, by the
 * protocol of harness.c: one call on zeroed outputs (its outputs are written
 * to OUT_FILE unless it is "-"), NUMBER grown until a repetition lasts
 * MIN_REPEAT_MS, REPEAT repetitions, none started after BUDGET_MS of timed
 * calls, one timed call only when the first lasted longer than CUTOFF_US. A
 * call is every launch in order; the device's own timer (events) times it.
 * FLUSH 1 clears the device's last-level cache before every timed call,
 * which then is one call per repetition.
 *   ARG: i<SIZE> (an input of SIZE floats read from IN_FILE) or o<SIZE>
 *   TEMP: <SIZE> (a device temporary, filled with NaN)
 *   LAUNCH: NAME:GX,GY,GZ:BX,BY,BZ:A,A,... (a kernel, its grid and block,
 *           and its arguments as indices into the ARGs then the TEMPs)
 *
 * serve opens the device once and then runs jobs read from stdin, one a
 * line: the arguments of run after "run", separated by tabs. After each
 * job it prints "tessera end" (and flushes); a job that fails ends the
 * runner with the status run would have exited with, so a caller starts a
 * new one for the next job. Opening the driver and its context once
 * instead of once a candidate is most of a GPU measurement's cost.
 *
 * stdout: "tessera number N", up to REPEAT lines "tessera cost SECONDS", "tessera done".
 * exit status: 0 ok; 1 no device, driver or runtime compiler (one line on
 * stderr says which); 2 bad usage or data; 3 a launch failed; 4 the program
 * does not build (the build log follows on stderr).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timing.h"

#define EXIT_NODEV 1
#define EXIT_SETUP 2
#define EXIT_RUN 3
#define EXIT_BUILD 4

static const char *runner_name = "runner";

static void die(int status, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", runner_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(status);
}

static long long parse_int(const char *s, const char *what) {
	char *end;
	long long v = strtoll(s, &end, 10);
	if (*s == 0 || *end != 0 || v < 0)
		die(EXIT_SETUP, "bad %s %s", what, s);
	return v;
}

static char *read_file(const char *path, size_t *len) {
	FILE *f = fopen(path, "rb");
	if (!f)
		die(EXIT_SETUP, "open %s failed", path);
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		if (!buf)
			die(EXIT_SETUP, "out of memory");
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		cap *= 2;
		buf = realloc(buf, cap + 1);
	}
	fclose(f);
	buf[n] = 0;
	*len = n;
	return buf;
}

static void write_file(const char *path, const void *data, size_t len) {
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
		die(EXIT_SETUP, "write %s failed", path);
}

typedef struct {
	char name[128];
	unsigned grid[3], block[3];
	int nargs;
	int args[64];
} launch_t;

static void parse_launch(const char *s, launch_t *l) {
	memset(l, 0, sizeof *l);
	const char *c = strchr(s, ':');
	if (!c || (size_t)(c - s) >= sizeof l->name)
		die(EXIT_SETUP, "bad launch %s", s);
	memcpy(l->name, s, (size_t)(c - s));
	if (sscanf(c + 1, "%u,%u,%u:%u,%u,%u:", &l->grid[0], &l->grid[1], &l->grid[2], &l->block[0], &l->block[1], &l->block[2]) != 6)
		die(EXIT_SETUP, "bad launch %s", s);
	const char *a = strchr(c + 1, ':');
	a = a ? strchr(a + 1, ':') : NULL;
	if (!a)
		die(EXIT_SETUP, "bad launch %s", s);
	for (a++; *a;) {
		char *end;
		long v = strtol(a, &end, 10);
		if (end == a || v < 0 || l->nargs == 64)
			die(EXIT_SETUP, "bad launch arguments in %s", s);
		l->args[l->nargs++] = (int)v;
		a = *end == ',' ? end + 1 : end;
		if (*end != ',' && *end != 0)
			die(EXIT_SETUP, "bad launch arguments in %s", s);
	}
}

/* The API part provides these. */
static void api_init(void);                                   /* exits EXIT_NODEV without a device */
static void api_init_compiler(const char *arch);              /* what compile needs; arch may be NULL */
static void api_probe(void);                                  /* prints the probe lines */
static void api_compile(const char *src, size_t len, const char *out);
static void api_load(const char *program, size_t len, launch_t *ls, int nl);
static void *api_alloc(size_t bytes);
static void api_upload(void *dev, const float *host, size_t bytes);
static void api_download(float *host, void *dev, size_t bytes);
static void api_fill(void *dev, unsigned char byte, size_t bytes);
static double api_time(launch_t *ls, int nl, void **bufs, long long number); /* seconds for number calls */
static void api_flush(void);                                  /* clears the last-level cache */
static void api_release(void **bufs, int nbufs, int nl);      /* frees a job's buffers and program */

/* launches is what the timing protocol (timing.h) times: every launch of
 * the candidate, in order. */
struct launches {
	launch_t *ls;
	int nl;
	void **bufs;
};

static double launches_rep(void *p, long long number) {
	struct launches *c = p;
	return api_time(c->ls, c->nl, c->bufs, number);
}

static void launches_flush(void *p) {
	(void)p;
	api_flush();
}

static void run_job(int argc, char **argv);
static int serve(void);

int main(int argc, char **argv) {
	if (argc < 2)
		die(EXIT_SETUP, "usage: %s probe | compile SRC OUT [ARCH] | run ...", argv[0]);
	if (strcmp(argv[1], "probe") == 0) {
		api_init();
		api_probe();
		return 0;
	}
	if (strcmp(argv[1], "compile") == 0) {
		if (argc != 4 && argc != 5)
			die(EXIT_SETUP, "usage: %s compile SRC OUT [ARCH]", argv[0]);
		size_t len;
		char *src = read_file(argv[2], &len);
		api_init_compiler(argc == 5 ? argv[4] : NULL);
		api_compile(src, len, argv[3]);
		return 0;
	}
	if (strcmp(argv[1], "serve") == 0) {
		api_init();
		return serve();
	}
	if (strcmp(argv[1], "run") != 0)
		die(EXIT_SETUP, "usage: %s probe | compile SRC OUT [ARCH] | run ... | serve", argv[0]);
	api_init();
	run_job(argc, argv);
	return 0;
}

/* run_job runs one job: argv is run's command line. */
static void run_job(int argc, char **argv) {
	if (argc < 11)
		die(EXIT_SETUP, "usage: %s run PROGRAM NUMBER REPEAT MIN_REPEAT_MS BUDGET_MS CUTOFF_US FLUSH IN_FILE OUT_FILE ARG... -- TEMP... -- LAUNCH...", argv[0]);
	const char *prog_path = argv[2], *in_path = argv[9], *out_path = argv[10];
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

	int i = 11, nargs = 0, ntemps = 0, nl = 0;
	int first_arg = i;
	while (i < argc && strcmp(argv[i], "--") != 0)
		i++, nargs++;
	int first_temp = ++i;
	while (i < argc && strcmp(argv[i], "--") != 0)
		i++, ntemps++;
	int first_launch = ++i;
	nl = argc - first_launch;
	if (nl <= 0)
		die(EXIT_SETUP, "no launches");
	int nbufs = nargs + ntemps;
	size_t *sizes = calloc((size_t)nbufs + 1, sizeof *sizes);
	char *is_out = calloc((size_t)nbufs + 1, 1);
	void **bufs = calloc((size_t)nbufs + 1, sizeof *bufs);
	float **host = calloc((size_t)nbufs + 1, sizeof *host);
	launch_t *ls = calloc((size_t)nl, sizeof *ls);
	if (!sizes || !is_out || !bufs || !host || !ls)
		die(EXIT_SETUP, "out of memory");
	for (int a = 0; a < nargs; a++) {
		const char *s = argv[first_arg + a];
		if (s[0] != 'i' && s[0] != 'o')
			die(EXIT_SETUP, "bad arg %s", s);
		is_out[a] = s[0] == 'o';
		sizes[a] = (size_t)parse_int(s + 1, "arg size");
	}
	for (int t = 0; t < ntemps; t++)
		sizes[nargs + t] = (size_t)parse_int(argv[first_temp + t], "temp size");
	for (int l = 0; l < nl; l++) {
		parse_launch(argv[first_launch + l], &ls[l]);
		for (int a = 0; a < ls[l].nargs; a++)
			if (ls[l].args[a] >= nbufs)
				die(EXIT_SETUP, "launch %s: argument %d out of range", ls[l].name, ls[l].args[a]);
	}

	FILE *in = fopen(in_path, "rb");
	if (!in)
		die(EXIT_SETUP, "open %s failed", in_path);
	for (int a = 0; a < nargs; a++) {
		host[a] = malloc(sizes[a] * sizeof(float) + 4);
		if (!host[a])
			die(EXIT_SETUP, "out of memory");
		if (!is_out[a] && fread(host[a], sizeof(float), sizes[a], in) != sizes[a])
			die(EXIT_SETUP, "input file too short for arg %d", a);
	}
	if (fgetc(in) != EOF)
		die(EXIT_SETUP, "input file longer than the inputs");
	fclose(in);

	size_t plen;
	char *prog = read_file(prog_path, &plen);
	api_load(prog, plen, ls, nl);
	for (int b = 0; b < nbufs; b++) {
		size_t bytes = sizes[b] * sizeof(float);
		bufs[b] = api_alloc(bytes ? bytes : 4);
		if (b < nargs && !is_out[b])
			api_upload(bufs[b], host[b], bytes);
		else
			api_fill(bufs[b], b < nargs ? 0 : 0xff, bytes); /* outputs zeroed, temps NaN */
	}

	double warm = api_time(ls, nl, bufs, 1);
	int slow = cutoff_s > 0 && warm > cutoff_s;
	if (min_s > 0 && warm >= min_s)
		number = 1;
	if (strcmp(out_path, "-") != 0) {
		FILE *out = fopen(out_path, "wb");
		if (!out)
			die(EXIT_SETUP, "open %s failed", out_path);
		for (int a = 0; a < nargs; a++) {
			if (!is_out[a])
				continue;
			api_download(host[a], bufs[a], sizes[a] * sizeof(float));
			if (fwrite(host[a], sizeof(float), sizes[a], out) != sizes[a])
				die(EXIT_SETUP, "write %s failed", out_path);
		}
		if (fclose(out) != 0)
			die(EXIT_SETUP, "write %s failed", out_path);
	}

	struct launches c = {ls, nl, bufs};
	timing t = {number, repeat, min_s, budget_s, slow, flush};
	if (time_and_report(t, launches_rep, launches_flush, &c) != 0)
		die(EXIT_SETUP, "out of memory");
	api_release(bufs, nbufs, nl);
	for (int a = 0; a < nargs; a++)
		free(host[a]);
	free(prog);
	free(sizes);
	free(is_out);
	free(bufs);
	free(host);
	free(ls);
}

/* serve runs the jobs of stdin (see the top of this file). */
static int serve(void) {
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, stdin)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = 0;
		if (n == 0)
			continue;
		int argc = 2;
		for (char *p = line; *p; p++)
			argc += *p == '\t';
		argc++;
		char **argv = calloc((size_t)argc + 1, sizeof *argv);
		if (!argv)
			die(EXIT_SETUP, "out of memory");
		argv[0] = (char *)runner_name;
		argv[1] = "run";
		int k = 2;
		for (char *p = line, *tok; (tok = strsep(&p, "\t")) != NULL;)
			argv[k++] = tok;
		run_job(k, argv);
		free(argv);
		printf("tessera end\n");
		fflush(stdout);
	}
	free(line);
	return 0;
}
