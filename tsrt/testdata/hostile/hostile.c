/* hostile.c: the C side of the runtime's hostile suite (tsrt/hostile_test.go).
 * Built with -fsanitize=address,undefined; loads models through tessera_load.h.
 *
 *   hostile load PATH            check, load, open and run the model at PATH (a build
 *                                folder or a library) on fixed inputs
 *   hostile calls DIR            every misuse of the API on the model of DIR (the
 *                                suite's two-input model: ids, mask → emb, next)
 *   hostile hammer DIR THREADS   THREADS threads run and profile one model while
 *                                another closes it
 *
 * Output lines: "start NAME" before each case, then "case NAME GOT WANT [MESSAGE]";
 * load prints "case load GOT - HASH MESSAGE", HASH the SHA-256 of the outputs'
 * bytes (the parent compares it with the intact model's). A case whose call
 * returned TESSERA_OK with outputs other than the reference prints GOT "WRONG".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tessera.h"
#include "tessera_load.h"

static tessera_api api;

/* sname names a status before the library is loaded (tessera_status_name is
   the library's). */
static const char *sname(tessera_status st) {
  static const char *names[] = {"TESSERA_OK", "TESSERA_INVALID_ARGUMENT", "TESSERA_SHAPE_MISMATCH", "TESSERA_DTYPE_MISMATCH",
                                "TESSERA_BAD_WEIGHTS", "TESSERA_ABI_MISMATCH", "TESSERA_UNSUPPORTED_CPU", "TESSERA_OUT_OF_MEMORY",
                                "TESSERA_KERNEL_FAILED", "TESSERA_DEVICE_ERROR", "TESSERA_VALUE_OUT_OF_RANGE", "TESSERA_NOT_FOUND",
                                "TESSERA_BAD_LIBRARY"};
  return st >= 0 && st < (int)(sizeof names / sizeof names[0]) ? names[st] : "TESSERA_UNKNOWN_STATUS";
}

static size_t dtype_size(tessera_dtype t) {
  switch (t) {
  case TESSERA_FLOAT32: case TESSERA_INT32: case TESSERA_UINT32: return 4;
  case TESSERA_INT64: return 8;
  case TESSERA_UINT16: case TESSERA_INT16: case TESSERA_FLOAT16: return 2;
  case TESSERA_UINT8: case TESSERA_INT8: case TESSERA_BOOL: return 1;
  }
  return 0;
}

/* One side of a model's tensors at their declared shapes, data allocated and
   filled the suite's way: element i of an input is (i % 7) / 7 (float) or
   i % 5 (integers). */
typedef struct {
  int n;
  tessera_tensor t[8];
  size_t bytes[8];
} side;

static void fill(tessera_model *m, int input, side *s) {
  memset(s, 0, sizeof *s);
  s->n = input ? api.num_inputs(m) : api.num_outputs(m);
  for (int i = 0; i < s->n && i < 8; i++) {
    tessera_tensor *t = &s->t[i];
    const int64_t *shape;
    const char *name;
    (input ? api.input_info : api.output_info)(m, i, &name, &t->dtype, &t->rank, &shape);
    t->shape = shape;
    size_t n = 1;
    for (int k = 0; k < t->rank; k++)
      n *= (size_t)shape[k];
    s->bytes[i] = n * dtype_size(t->dtype);
    t->data = calloc(1, s->bytes[i] + 8);
    for (size_t j = 0; input && j < n; j++)
      switch (t->dtype) {
      case TESSERA_FLOAT32: ((float *)t->data)[j] = (float)(j % 7) / 7.0f; break;
      case TESSERA_INT64: ((int64_t *)t->data)[j] = (int64_t)(j % 5); break;
      case TESSERA_INT32: ((int32_t *)t->data)[j] = (int32_t)(j % 5); break;
      default: ((unsigned char *)t->data)[j * dtype_size(t->dtype)] = (unsigned char)(j % 2); break;
      }
  }
}

static void unfill(side *s) {
  for (int i = 0; i < s->n && i < 8; i++)
    free(s->t[i].data);
}

static void hash(const side *s, char hex[65]) {
  tessera_sha256_ h;
  tessera_sha256_init_(&h);
  for (int i = 0; i < s->n; i++)
    tessera_sha256_add_(&h, s->t[i].data, s->bytes[i]);
  tessera_sha256_hex_(&h, hex);
}

static void clean(char *msg) {
  for (char *p = msg; *p; p++)
    if (*p == '\n')
      *p = ' ';
}

static int load(const char *path) {
  char why[2048] = "";
  printf("start load\n");
  fflush(stdout);
  tessera_status st = tessera_load(path, &api, why, sizeof why);
  if (st != TESSERA_OK) {
    clean(why);
    printf("case load %s - - %s\n", sname(st), why);
    return 0;
  }
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  struct stat ps;
  if (stat(path, &ps) == 0 && !S_ISDIR(ps.st_mode)) {
    char *slash = strrchr(dir, '/');
    if (slash)
      *slash = 0;
    else
      snprintf(dir, sizeof dir, ".");
  }
  tessera_model *m;
  if ((st = api.open(TESSERA_ABI_VERSION, dir, &m)) != TESSERA_OK) {
    snprintf(why, sizeof why, "%s", api.last_error());
    clean(why);
    printf("case load %s - - %s\n", sname(st), why);
    return 0;
  }
  side in, out;
  fill(m, 1, &in);
  fill(m, 0, &out);
  st = api.run(m, in.t, in.n, out.t, out.n);
  char hex[65] = "-";
  if (st == TESSERA_OK)
    hash(&out, hex);
  snprintf(why, sizeof why, "%s", st == TESSERA_OK ? "" : api.last_error());
  clean(why);
  printf("case load %s - %s %s\n", sname(st), hex, why);
  unfill(&in);
  unfill(&out);
  api.close(m);
  return 0;
}

/* The calls table. */
static int failures;

static void report(const char *name, const char *got, tessera_status want) {
  char why[1024];
  snprintf(why, sizeof why, "%s", strcmp(got, "TESSERA_OK") == 0 ? "" : api.last_error());
  clean(why);
  printf("case %s %s %s %s\n", name, got, sname(want), why);
  fflush(stdout);
}

#define CASE(name, call, want)                                                                                         \
  do {                                                                                                                 \
    printf("start %s\n", name);                                                                                        \
    fflush(stdout);                                                                                                    \
    report(name, sname(call), want);                                                                                   \
  } while (0)

/* CASE_NULL: a call that returns 0 or NULL for a bad argument. */
#define CASE_ZERO(name, expr)                                                                                          \
  do {                                                                                                                 \
    printf("start %s\n", name);                                                                                        \
    fflush(stdout);                                                                                                    \
    report(name, (expr) ? "TESSERA_OK" : sname(TESSERA_INVALID_ARGUMENT), TESSERA_INVALID_ARGUMENT);                   \
  } while (0)

/* run_check runs with in/out and reports OK only if the outputs are want_hex. */
/* run_check runs with in/out (named: tessera_run_named) and reports OK only
   if the outputs, hashed in the model's order from check (the same
   buffers as out), are want_hex. */
static void run_check(const char *name, tessera_model *m, side *in, side *out, side *check, const char *want_hex, int named) {
  printf("start %s\n", name);
  fflush(stdout);
  for (int i = 0; i < check->n; i++)
    memset(check->t[i].data, 0, check->bytes[i]);
  tessera_status st = named ? api.run_named(m, in->t, in->n, out->t, out->n) : api.run(m, in->t, in->n, out->t, out->n);
  if (st == TESSERA_OK) {
    char hex[65];
    hash(check, hex);
    report(name, strcmp(hex, want_hex) == 0 ? "TESSERA_OK" : "WRONG", TESSERA_OK);
  } else {
    report(name, sname(st), TESSERA_OK);
  }
}

static int calls(const char *dir) {
  char why[2048];
  if (tessera_load(dir, &api, why, sizeof why) != TESSERA_OK) {
    fprintf(stderr, "%s\n", why);
    return 2;
  }
  tessera_model *m = NULL, *m2 = NULL;
  if (api.open(TESSERA_ABI_VERSION, dir, &m) != TESSERA_OK || api.num_inputs(m) != 2 || api.num_outputs(m) != 2) {
    fprintf(stderr, "open %s: %s\n", dir, api.last_error());
    return 2;
  }
  side in, out;
  fill(m, 1, &in);
  fill(m, 0, &out);
  int64_t *ids = in.t[0].data, *mask = in.t[1].data;
  for (int j = 0; j < 8; j++)
    mask[j] = j % 2;
  if (api.run(m, in.t, 2, out.t, 2) != TESSERA_OK) {
    fprintf(stderr, "run: %s\n", api.last_error());
    return 2;
  }
  char ref[65];
  hash(&out, ref);
  const int64_t *next = out.t[1].data;
  for (int j = 0; j < 8; j++)
    if (next[j] != ids[j] - mask[j] + 1) {
      fprintf(stderr, "next[%d] = %lld, want %lld\n", j, (long long)next[j], (long long)(ids[j] - mask[j] + 1));
      return 2;
    }

  char missing[4200], empty[] = "/tmp/tessera-hostile-XXXXXX", weights_as_file[4200];
  snprintf(missing, sizeof missing, "%s/nothing-here", dir);
  snprintf(weights_as_file, sizeof weights_as_file, "%s/manifest.json", dir);
  if (!mkdtemp(empty))
    return 2;
  CASE("open_another_abi", api.open(TESSERA_ABI_VERSION + 1, dir, &m2), TESSERA_ABI_MISMATCH);
  CASE("open_null_out", api.open(TESSERA_ABI_VERSION, dir, NULL), TESSERA_INVALID_ARGUMENT);
  CASE("open_missing_folder", api.open(TESSERA_ABI_VERSION, missing, &m2), TESSERA_NOT_FOUND);
  CASE("open_folder_without_weights", api.open(TESSERA_ABI_VERSION, empty, &m2), TESSERA_NOT_FOUND);
  CASE("open_a_json_file_as_weights", api.open(TESSERA_ABI_VERSION, weights_as_file, &m2), TESSERA_BAD_WEIGHTS);
  CASE("open_null_path", api.open(TESSERA_ABI_VERSION, NULL, &m2), TESSERA_INVALID_ARGUMENT);
  rmdir(empty);

  /* NULL model. */
  const char *name;
  tessera_dtype dt;
  int32_t rank;
  const int64_t *shape;
  int64_t lo, hi;
  double steps[256];
  CASE("null_model_input_info", api.input_info(NULL, 0, &name, &dt, &rank, &shape), TESSERA_INVALID_ARGUMENT);
  CASE("null_model_output_info", api.output_info(NULL, 0, &name, &dt, &rank, &shape), TESSERA_INVALID_ARGUMENT);
  CASE("null_model_run", api.run(NULL, in.t, 2, out.t, 2), TESSERA_INVALID_ARGUMENT);
  CASE("null_model_run_named", api.run_named(NULL, in.t, 2, out.t, 2), TESSERA_INVALID_ARGUMENT);
  CASE("null_model_threads", api.set_num_threads(NULL, 1), TESSERA_INVALID_ARGUMENT);
  CASE("null_model_profile", api.profile(NULL, steps, 256), TESSERA_INVALID_ARGUMENT);
  CASE("null_model_batch_range", api.batch_range(NULL, &name, &lo, &hi), TESSERA_INVALID_ARGUMENT);
  CASE("null_model_dim_range", api.dim_range(NULL, &name, &lo, &hi), TESSERA_INVALID_ARGUMENT);
  CASE_ZERO("null_model_num_inputs", api.num_inputs(NULL));
  CASE_ZERO("null_model_num_outputs", api.num_outputs(NULL));
  CASE_ZERO("null_model_num_steps", api.num_steps(NULL));
  CASE_ZERO("null_model_step_name", api.step_name(NULL, 0));
  CASE_ZERO("null_model_target", api.target(NULL));
  api.close(NULL);

  /* A pointer tessera_open never returned: zeroed memory. */
  void *fake = calloc(1, 4096);
  CASE("fake_model_run", api.run((tessera_model *)fake, in.t, 2, out.t, 2), TESSERA_INVALID_ARGUMENT);
  CASE("fake_model_input_info", api.input_info((tessera_model *)fake, 0, &name, &dt, &rank, &shape), TESSERA_INVALID_ARGUMENT);
  CASE("fake_model_profile", api.profile((tessera_model *)fake, steps, 256), TESSERA_INVALID_ARGUMENT);
  api.close((tessera_model *)fake);
  free(fake);

  /* Indices. */
  CASE("input_info_-1", api.input_info(m, -1, &name, &dt, &rank, &shape), TESSERA_INVALID_ARGUMENT);
  CASE("input_info_2", api.input_info(m, 2, &name, &dt, &rank, &shape), TESSERA_INVALID_ARGUMENT);
  CASE("input_info_max", api.input_info(m, INT32_MAX, &name, &dt, &rank, &shape), TESSERA_INVALID_ARGUMENT);
  CASE("output_info_-1", api.output_info(m, -1, &name, &dt, &rank, &shape), TESSERA_INVALID_ARGUMENT);
  CASE("output_info_2", api.output_info(m, 2, &name, &dt, &rank, &shape), TESSERA_INVALID_ARGUMENT);
  CASE("output_info_min", api.output_info(m, INT32_MIN, &name, &dt, &rank, &shape), TESSERA_INVALID_ARGUMENT);
  CASE("input_info_null_outs", api.input_info(m, 1, NULL, NULL, NULL, NULL), TESSERA_OK);
  CASE("batch_range_null_outs", api.batch_range(m, NULL, NULL, NULL), TESSERA_OK);
  CASE("dim_range_null_outs", api.dim_range(m, NULL, NULL, NULL), TESSERA_OK);
  CASE_ZERO("step_name_-1", api.step_name(m, -1));
  CASE_ZERO("step_name_past_end", api.step_name(m, api.num_steps(m)));
  CASE("threads_-1", api.set_num_threads(m, -1), TESSERA_INVALID_ARGUMENT);
  CASE("threads_max", api.set_num_threads(m, INT32_MAX), TESSERA_INVALID_ARGUMENT);
  CASE("threads_1", api.set_num_threads(m, 1), TESSERA_OK);

  /* Counts and NULLs. */
  CASE("run_1_input", api.run(m, in.t, 1, out.t, 2), TESSERA_INVALID_ARGUMENT);
  CASE("run_3_inputs", api.run(m, in.t, 3, out.t, 2), TESSERA_INVALID_ARGUMENT);
  CASE("run_-1_inputs", api.run(m, in.t, -1, out.t, 2), TESSERA_INVALID_ARGUMENT);
  CASE("run_max_outputs", api.run(m, in.t, 2, out.t, INT32_MAX), TESSERA_INVALID_ARGUMENT);
  CASE("run_0_0", api.run(m, NULL, 0, NULL, 0), TESSERA_INVALID_ARGUMENT);
  CASE("run_null_inputs", api.run(m, NULL, 2, out.t, 2), TESSERA_INVALID_ARGUMENT);
  CASE("run_null_outputs", api.run(m, in.t, 2, NULL, 2), TESSERA_INVALID_ARGUMENT);
  tessera_tensor t;
  side bad;
#define WITH(sd, k, field, value, case_name, want)                                                                     \
  do {                                                                                                                 \
    bad = sd;                                                                                                          \
    t = bad.t[k];                                                                                                      \
    t.field = value;                                                                                                   \
    bad.t[k] = t;                                                                                                      \
    CASE(case_name, (&sd == &in ? api.run(m, bad.t, 2, out.t, 2) : api.run(m, in.t, 2, bad.t, 2)), want);              \
  } while (0)
  WITH(in, 0, data, NULL, "input_data_null", TESSERA_INVALID_ARGUMENT);
  WITH(out, 1, data, NULL, "output_data_null", TESSERA_INVALID_ARGUMENT);
  WITH(in, 1, shape, NULL, "input_shape_null", TESSERA_SHAPE_MISMATCH);
  static const tessera_dtype dtypes[] = {TESSERA_FLOAT32, TESSERA_UINT8, TESSERA_INT8, TESSERA_UINT16, TESSERA_INT16, TESSERA_INT32,
                                         TESSERA_BOOL, TESSERA_FLOAT16, TESSERA_UINT32, (tessera_dtype)0, (tessera_dtype)99,
                                         (tessera_dtype)-1};
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
    char cn[64];
    snprintf(cn, sizeof cn, "input_dtype_%d", (int)dtypes[i]);
    WITH(in, 0, dtype, dtypes[i], cn, TESSERA_DTYPE_MISMATCH);
  }
  WITH(out, 0, dtype, TESSERA_INT64, "output_dtype_int64", TESSERA_DTYPE_MISMATCH);
  WITH(out, 1, dtype, TESSERA_FLOAT32, "output_dtype_float32", TESSERA_DTYPE_MISMATCH);
  static const int64_t shape5[5] = {2, 4, 1, 1, 1};
  for (int r = 0; r <= 5; r++) {
    if (r == 2)
      continue;
    char cn[64];
    snprintf(cn, sizeof cn, "input_rank_%d", r);
    bad = in;
    bad.t[0].rank = r;
    bad.t[0].shape = shape5;
    CASE(cn, api.run(m, bad.t, 2, out.t, 2), TESSERA_SHAPE_MISMATCH);
  }
  WITH(in, 0, rank, -1, "input_rank_-1", TESSERA_SHAPE_MISMATCH);
  static const int64_t shapes[][2] = {{3, 4}, {2, 5}, {0, 4}, {2, -1}, {INT64_MAX, 4}, {INT64_MIN, 4}, {2, INT64_MAX}, {1, 8}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    char cn[64];
    snprintf(cn, sizeof cn, "input_shape_%zu", i);
    WITH(in, 1, shape, shapes[i], cn, TESSERA_SHAPE_MISMATCH);
    snprintf(cn, sizeof cn, "output_shape_%zu", i);
    WITH(out, 1, shape, shapes[i], cn, TESSERA_SHAPE_MISMATCH);
  }

  /* Names. */
  const char *in_name[2], *out_name[2];
  api.input_info(m, 0, &in_name[0], NULL, NULL, NULL);
  api.input_info(m, 1, &in_name[1], NULL, NULL, NULL);
  api.output_info(m, 0, &out_name[0], NULL, NULL, NULL);
  api.output_info(m, 1, &out_name[1], NULL, NULL, NULL);
  side named_in = in, named_out = out;
  for (int i = 0; i < 2; i++)
    named_in.t[i].name = in_name[i], named_out.t[i].name = out_name[i];
  run_check("names_right", m, &named_in, &named_out, &out, ref, 0);
  bad = named_in;
  bad.t[0].name = in_name[1], bad.t[1].name = in_name[0];
  CASE("names_swapped", api.run(m, bad.t, 2, out.t, 2), TESSERA_INVALID_ARGUMENT);
  bad = named_in;
  bad.t[0].name = "idz";
  CASE("name_misspelt", api.run(m, bad.t, 2, out.t, 2), TESSERA_INVALID_ARGUMENT);
  bad = named_out;
  bad.t[1].name = out_name[0];
  CASE("output_name_wrong", api.run(m, in.t, 2, bad.t, 2), TESSERA_INVALID_ARGUMENT);
  side rev_in = named_in, rev_out = named_out;
  rev_in.t[0] = named_in.t[1], rev_in.t[1] = named_in.t[0];
  rev_out.t[0] = named_out.t[1], rev_out.t[1] = named_out.t[0];
  run_check("run_named_reversed", m, &rev_in, &rev_out, &out, ref, 1);
  bad = rev_in;
  bad.t[0].name = "nope";
  CASE("run_named_unknown", api.run_named(m, bad.t, 2, out.t, 2), TESSERA_INVALID_ARGUMENT);
  bad = named_in;
  bad.t[1].name = bad.t[0].name;
  CASE("run_named_twice", api.run_named(m, bad.t, 2, named_out.t, 2), TESSERA_INVALID_ARGUMENT);
  CASE("run_named_no_names", api.run_named(m, in.t, 2, out.t, 2), TESSERA_INVALID_ARGUMENT);
  CASE("run_named_1_input", api.run_named(m, named_in.t, 1, named_out.t, 2), TESSERA_INVALID_ARGUMENT);
  CASE("run_named_null_inputs", api.run_named(m, NULL, 2, named_out.t, 2), TESSERA_INVALID_ARGUMENT);

  /* Values: integers float32 would round, indices outside their axis. */
  static const struct {
    const char *name;
    int which; /* 0: ids, 1: mask */
    int64_t v;
    tessera_status want;
  } values[] = {
      {"mask_2^24", 1, 16777216, TESSERA_OK},
      {"mask_2^24+1", 1, 16777217, TESSERA_VALUE_OUT_OF_RANGE},
      {"mask_-2^24-1", 1, -16777217, TESSERA_VALUE_OUT_OF_RANGE},
      {"mask_2^31+7", 1, 2147483655LL, TESSERA_VALUE_OUT_OF_RANGE},
      {"mask_int64_max", 1, INT64_MAX, TESSERA_VALUE_OUT_OF_RANGE},
      {"mask_int64_min", 1, INT64_MIN, TESSERA_VALUE_OUT_OF_RANGE},
      {"next_2^24+1", 1, -16777216, TESSERA_VALUE_OUT_OF_RANGE}, /* next = ids - mask + 1 = 2^24 + 1 + ids */
      {"ids_999", 0, 999, TESSERA_OK},
      {"ids_-1000", 0, -1000, TESSERA_OK},
      {"ids_1000", 0, 1000, TESSERA_VALUE_OUT_OF_RANGE},
      {"ids_5000", 0, 5000, TESSERA_VALUE_OUT_OF_RANGE},
      {"ids_-1001", 0, -1001, TESSERA_VALUE_OUT_OF_RANGE},
      {"ids_2^24", 0, 16777216, TESSERA_VALUE_OUT_OF_RANGE},
  };
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    int64_t *p = values[i].which ? mask : ids, keep = p[7];
    if (values[i].which == 1 && values[i].v == -16777216)
      ids[7] = 0;
    p[7] = values[i].v;
    printf("start %s\n", values[i].name);
    fflush(stdout);
    tessera_status st = api.run(m, in.t, 2, out.t, 2);
    const char *got = sname(st);
    /* An OK run must give what the model means. */
    if (st == TESSERA_OK && values[i].which == 1 && ((int64_t *)out.t[1].data)[7] != ids[7] - mask[7] + 1)
      got = "WRONG";
    report(values[i].name, got, values[i].want);
    p[7] = keep;
    ids[7] = 7 % 5;
  }

  /* Profiling. */
  int32_t nsteps = api.num_steps(m);
  CASE("profile_0", api.profile(m, steps, 0), TESSERA_INVALID_ARGUMENT);
  CASE("profile_short", api.profile(m, steps, nsteps - 1), TESSERA_INVALID_ARGUMENT);
  CASE("profile_-5", api.profile(m, steps, -5), TESSERA_INVALID_ARGUMENT);
  CASE("profile_null", api.profile(m, NULL, 0), TESSERA_OK);
  memset(steps, 0, sizeof steps);
  CASE("profile", api.profile(m, steps, nsteps), TESSERA_OK);
  run_check("profiled_run", m, &in, &out, &out, ref, 0);
  double sum = 0;
  for (int i = 0; i < nsteps; i++)
    sum += steps[i];
  printf("start profile_timed\n");
  report("profile_timed", sum > 0 ? "TESSERA_OK" : "WRONG", TESSERA_OK);
  CASE("profile_off", api.profile(m, NULL, 0), TESSERA_OK);

  /* A closed model. */
  api.close(m);
  CASE("closed_run", api.run(m, in.t, 2, out.t, 2), TESSERA_INVALID_ARGUMENT);
  CASE("closed_run_named", api.run_named(m, named_in.t, 2, named_out.t, 2), TESSERA_INVALID_ARGUMENT);
  CASE("closed_input_info", api.input_info(m, 0, &name, &dt, &rank, &shape), TESSERA_INVALID_ARGUMENT);
  CASE("closed_output_info", api.output_info(m, 0, &name, &dt, &rank, &shape), TESSERA_INVALID_ARGUMENT);
  CASE("closed_profile", api.profile(m, steps, nsteps), TESSERA_INVALID_ARGUMENT);
  CASE("closed_threads", api.set_num_threads(m, 1), TESSERA_INVALID_ARGUMENT);
  CASE("closed_batch_range", api.batch_range(m, &name, &lo, &hi), TESSERA_INVALID_ARGUMENT);
  CASE("closed_dim_range", api.dim_range(m, &name, &lo, &hi), TESSERA_INVALID_ARGUMENT);
  CASE_ZERO("closed_num_inputs", api.num_inputs(m));
  CASE_ZERO("closed_num_steps", api.num_steps(m));
  CASE_ZERO("closed_step_name", api.step_name(m, 0));
  CASE_ZERO("closed_target", api.target(m));
  api.close(m);
  unfill(&in);
  unfill(&out);
  return failures;
}

/* hammer: THREADS threads run and profile one model; the main thread closes
   it while they do. Every run before the close gives the reference
   outputs; every call after it is TESSERA_INVALID_ARGUMENT. */
typedef struct {
  tessera_model *m;
  const char *ref;
  side in, out; /* filled by the main thread while the model is open: a
                   thread that starts late, after the close, finds no
                   inputs to ask the model for */
  int closed_seen, wrong, runs;
  int after; /* calls after the close was seen */
} worker;

static void *close_model(void *m) {
  api.close(m);
  return NULL;
}

/* fill_hammer fills a hammer worker's inputs and outputs (the ids and
   their mask of 0s and 1s). */
static void fill_hammer(tessera_model *m, side *in, side *out) {
  fill(m, 1, in);
  fill(m, 0, out);
  int64_t *mask = in->t[1].data;
  for (int j = 0; j < 8; j++)
    mask[j] = j % 2;
}

static void *work(void *arg) {
  worker *w = arg;
  side in = w->in, out = w->out;
  double steps[256];
  int32_t n = api.num_steps(w->m);
  for (int i = 0; w->after < 200; i++) {
    tessera_status st;
    if (i % 7 == 3)
      st = api.profile(w->m, i % 2 ? steps : NULL, n > 0 ? n : 256);
    else {
      memset(out.t[0].data, 0, out.bytes[0]);
      st = api.run(w->m, in.t, 2, out.t, 2);
      if (st == TESSERA_OK) {
        char hex[65];
        hash(&out, hex);
        w->wrong += strcmp(hex, w->ref) != 0;
        w->runs++;
      }
    }
    if (st != TESSERA_OK) {
      if (st != TESSERA_INVALID_ARGUMENT || !strstr(api.last_error(), "closed"))
        w->wrong++;
      w->closed_seen = 1;
    }
    if (w->closed_seen)
      w->after++;
    if (!w->closed_seen && i > 100000)
      break; /* never closed: the main thread failed */
  }
  unfill(&in);
  unfill(&out);
  return NULL;
}

static int hammer(const char *dir, int threads) {
  char why[2048];
  if (tessera_load(dir, &api, why, sizeof why) != TESSERA_OK) {
    fprintf(stderr, "%s\n", why);
    return 2;
  }
  for (int round = 0; round < 3; round++) {
    tessera_model *m;
    if (api.open(TESSERA_ABI_VERSION, dir, &m) != TESSERA_OK) {
      fprintf(stderr, "%s\n", api.last_error());
      return 2;
    }
    api.set_num_threads(m, 1);
    side in, out;
    fill_hammer(m, &in, &out);
    api.run(m, in.t, 2, out.t, 2);
    char ref[65];
    hash(&out, ref);
    unfill(&in);
    unfill(&out);
    char name[32];
    snprintf(name, sizeof name, "hammer_%d", round);
    printf("start %s\n", name);
    fflush(stdout);
    pthread_t tid[64];
    worker ws[64];
    if (threads > 64)
      threads = 64;
    for (int i = 0; i < threads; i++) {
      ws[i] = (worker){.m = m, .ref = ref};
      fill_hammer(m, &ws[i].in, &ws[i].out);
    }
    for (int i = 0; i < threads; i++)
      pthread_create(&tid[i], NULL, work, &ws[i]);
    usleep(100000 + 50000 * round);
    if (round == 2) { /* two threads close at once */
      pthread_t c;
      pthread_create(&c, NULL, close_model, m);
      api.close(m);
      pthread_join(c, NULL);
    } else {
      api.close(m);
    }
    int wrong = 0, runs = 0, saw = 0;
    for (int i = 0; i < threads; i++) {
      pthread_join(tid[i], NULL);
      wrong += ws[i].wrong;
      runs += ws[i].runs;
      saw += ws[i].closed_seen;
    }
    printf("case %s %s TESSERA_OK %d threads, %d runs, %d saw the close, %d wrong\n", name,
           wrong || saw != threads ? "WRONG" : "TESSERA_OK", threads, runs, saw, wrong);
    fflush(stdout);
  }
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 3 && strcmp(argv[1], "load") == 0)
    return load(argv[2]);
  if (argc == 3 && strcmp(argv[1], "calls") == 0)
    return calls(argv[2]);
  if (argc == 4 && strcmp(argv[1], "hammer") == 0)
    return hammer(argv[2], atoi(argv[3]));
  fprintf(stderr, "usage: hostile load PATH | calls DIR | hammer DIR THREADS\n");
  return 2;
}
