package build

import (
	"fmt"
	"strconv"
	"strings"
	"text/template"

	"tessera/target"
	"tessera/target/machine"
	"tessera/tir"
)

// The C of a built model: one translation unit.
//
//	Target.Module(every task's kernel)     the kernels, "int tessera_kernelN(float *const *args)"
//	apiDecls                               the API, as model.h declares it
//	runtime (template below)               model state, weights loading, tessera_run
//	tsm_execute                            one call per group, in plan order, with the
//	                                       addresses of its buffers as constants
//
// tsm_execute is straight-line code: no op table, no per-op dispatch, no
// allocation; the buffer addresses are the caller's pointers plus offsets
// fixed at build time into the weights and the arena.

// apiDecls is the model's C API; model.h and model.c both carry it, so
// the compiler checks the definitions against it.
const apiDecls = `typedef struct tessera_model tessera_model;

/* tessera_create loads the weights file written next to the library
   (weights.bin) and allocates the arena of intermediate tensors. It returns
   NULL on failure (a missing, truncated or corrupt file, or the weights of
   another build) and tessera_last_error says why. */
tessera_model *tessera_create(const char *weights_path);

/* tessera_run runs the model once: inputs[i] points at input i and
   outputs[i] at output i, dense row-major float32 arrays of the sizes
   tessera_input_elems and tessera_output_elems give (the shapes are in
   the manifest and in the comment above). Output buffers must not overlap
   each other or the inputs. It returns 0, or non-zero with
   tessera_last_error set. A model is not reentrant: one tessera_run at a
   time per model (create one model per concurrent caller). */
int tessera_run(tessera_model *model, const float *const *inputs, float *const *outputs);

/* tessera_destroy frees the model; NULL is ignored. */
void tessera_destroy(tessera_model *model);

/* tessera_set_num_threads sets the OpenMP threads of the kernels (by
   default OMP_NUM_THREADS, else every core). */
void tessera_set_num_threads(int threads);

/* tessera_profile makes every later tessera_run add the seconds each step
   of the executor (one kernel call) takes to seconds[step], an array of
   tessera_num_steps() doubles; NULL stops it. It returns 0, or -1 with
   tessera_last_error set where the build cannot time its steps (a GPU
   build). */
int tessera_profile(double *seconds);
int tessera_num_steps(void);

/* tessera_last_error describes the last failure of this thread. */
const char *tessera_last_error(void);

int tessera_num_inputs(void);
int tessera_num_outputs(void);
const char *tessera_input_name(int i);  /* NULL when i is out of range */
const char *tessera_output_name(int i);
size_t tessera_input_elems(int i);      /* 0 when i is out of range */
size_t tessera_output_elems(int i);
`

// runtimeTmpl is the part of model.c between the kernels and tsm_execute.
var runtimeTmpl = template.Must(template.New("runtime").Parse(`
/* ---- the model API (tessera/build) ---- */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the weights file is little-endian"
#endif

#define TSM_API __attribute__((visibility("default")))
#if defined(__x86_64__)
#define TSM_BASE __attribute__((target("arch=x86-64"), noinline))
#else
#define TSM_BASE __attribute__((noinline))
#endif
#define TSM_NUM_INPUTS {{.NumInputs}}
#define TSM_NUM_OUTPUTS {{.NumOutputs}}
#define TSM_WEIGHTS_BYTES {{.WeightsBytes}}ULL
#define TSM_WEIGHTS_CHECKSUM 0x{{.Checksum}}ULL
#define TSM_ARENA_BYTES {{.ArenaBytes}}ULL

{{.API}}
struct tessera_model {
  float *weights; /* the payload of the weights file */
  float *arena;   /* the intermediate tensors, placed by the memory plan */
};

static const char *const tsm_input_names[] = { {{- .InputNames}} };
static const size_t tsm_input_elems[] = { {{- .InputElems}} };
static const char *const tsm_output_names[] = { {{- .OutputNames}} };
static const size_t tsm_output_elems[] = { {{- .OutputElems}} };

static _Thread_local char tsm_error[512];

static void tsm_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tsm_error, sizeof tsm_error, fmt, ap);
  va_end(ap);
}

TSM_API const char *tessera_last_error(void) { return tsm_error; }
TSM_API int tessera_num_inputs(void) { return TSM_NUM_INPUTS; }
TSM_API int tessera_num_outputs(void) { return TSM_NUM_OUTPUTS; }
TSM_API const char *tessera_input_name(int i) { return i >= 0 && i < TSM_NUM_INPUTS ? tsm_input_names[i] : NULL; }
TSM_API const char *tessera_output_name(int i) { return i >= 0 && i < TSM_NUM_OUTPUTS ? tsm_output_names[i] : NULL; }
TSM_API size_t tessera_input_elems(int i) { return i >= 0 && i < TSM_NUM_INPUTS ? tsm_input_elems[i] : 0; }
TSM_API size_t tessera_output_elems(int i) { return i >= 0 && i < TSM_NUM_OUTPUTS ? tsm_output_elems[i] : 0; }
TSM_API void tessera_set_num_threads(int threads) {
  if (threads > 0)
    omp_set_num_threads(threads);
}

/* tsm_checksum is FNV-1a over little-endian 64-bit words, as build/weights.go. */
static uint64_t tsm_checksum(const unsigned char *p, uint64_t n) {
  uint64_t h = 14695981039346656037ULL;
  for (uint64_t i = 0; i + 8 <= n; i += 8) {
    uint64_t v;
    memcpy(&v, p + i, 8);
    h ^= v;
    h *= 1099511628211ULL;
  }
  return h;
}

static void *tsm_alloc64(uint64_t bytes) {
  return aligned_alloc(64, bytes == 0 ? 64 : (bytes + 63) / 64 * 64);
}

TSM_API void tessera_destroy(tessera_model *m) {
  if (!m)
    return;
  free(m->weights);
  free(m->arena);
  free(m);
}

{{.CPUCheck}}
static tessera_model *tsm_create(const char *path);

/* tessera_create is compiled for the architecture's base level, like
   tsm_cpu_check: the processor's features are checked before any code
   compiled for the library's -march runs. */
TSM_API TSM_BASE tessera_model *tessera_create(const char *path) {
  const char *missing = tsm_cpu_check();
  if (missing) {
    snprintf(tsm_error, sizeof tsm_error, "this processor lacks %s, which this library was compiled to use (tune build --cpu LEVEL builds for an older one)", missing);
    return NULL;
  }
  return tsm_create(path);
}

static tessera_model *tsm_create(const char *path) {
  tsm_error[0] = 0;
  unsigned char hdr[64];
  uint64_t n, sum;
  FILE *f = NULL;
  tessera_model *m = calloc(1, sizeof *m);
  if (!m) {
    tsm_fail("out of memory");
    return NULL;
  }
  if (!path) {
    tsm_fail("no weights file given");
    goto fail;
  }
  if (!(f = fopen(path, "rb"))) {
    tsm_fail("weights %s: %s", path, strerror(errno));
    goto fail;
  }
  if (fread(hdr, 1, sizeof hdr, f) != sizeof hdr || memcmp(hdr, "{{.Magic}}", 8) != 0) {
    tsm_fail("weights %s: not a tessera weights file (no {{.Magic}} header)", path);
    goto fail;
  }
  memcpy(&n, hdr + 8, 8);
  memcpy(&sum, hdr + 16, 8);
  if (n != TSM_WEIGHTS_BYTES || sum != TSM_WEIGHTS_CHECKSUM) {
    tsm_fail("weights %s: %llu bytes with checksum %016llx, this library was built with %llu bytes with checksum %016llx (the weights of another build?)",
             path, (unsigned long long)n, (unsigned long long)sum, (unsigned long long)TSM_WEIGHTS_BYTES, (unsigned long long)TSM_WEIGHTS_CHECKSUM);
    goto fail;
  }
  if (!(m->weights = tsm_alloc64(n)) || !(m->arena = tsm_alloc64(TSM_ARENA_BYTES))) {
    tsm_fail("out of memory (%llu bytes of weights, %llu of arena)", (unsigned long long)n, (unsigned long long)TSM_ARENA_BYTES);
    goto fail;
  }
  if (fread(m->weights, 1, n, f) != n) {
    tsm_fail("weights %s: truncated (fewer than the %llu bytes its header announces)", path, (unsigned long long)n);
    goto fail;
  }
  if (fgetc(f) != EOF) {
    tsm_fail("weights %s: bytes after the %llu its header announces", path, (unsigned long long)n);
    goto fail;
  }
  if (tsm_checksum((const unsigned char *)m->weights, n) != sum) {
    tsm_fail("weights %s: corrupt (the data does not match the header's checksum)", path);
    goto fail;
  }
  fclose(f);
{{.DeviceSetup}}  return m;
fail:
  if (f)
    fclose(f);
  tessera_destroy(m);
  return NULL;
}

static int tsm_execute(const float *const *in, float *const *out, float *w, float *a);

TSM_API int tessera_run(tessera_model *m, const float *const *inputs, float *const *outputs) {
  if (!m) {
    tsm_fail("tessera_run: no model");
    return -1;
  }
  for (int i = 0; i < TSM_NUM_INPUTS; i++)
    if (!inputs || !inputs[i]) {
      tsm_fail("tessera_run: input %d (%s) is NULL", i, tsm_input_names[i]);
      return -1;
    }
  for (int i = 0; i < TSM_NUM_OUTPUTS; i++)
    if (!outputs || !outputs[i]) {
      tsm_fail("tessera_run: output %d (%s) is NULL", i, tsm_output_names[i]);
      return -1;
    }
  int rc = tsm_execute(inputs, outputs, m->weights, m->arena);
  if (rc != 0)
    tsm_fail("tessera_run: a kernel returned %d", rc);
  return rc;
}
`))

// cSource returns model.c: the kernels, the runtime and the executor.
func cSource(p *program, kernels []kernel, tg *target.Target) (string, error) {
	if tg.GPU() {
		return gpuSource(p, kernels, tg)
	}
	fs := make([]*tir.PrimFunc, len(kernels))
	for i, k := range kernels {
		fs[i] = k.f
	}
	mod, err := tg.Module(fs)
	if err != nil {
		return "", fmt.Errorf("build: %w", err)
	}
	var b strings.Builder
	b.WriteString("/* Generated by tessera/build: the kernels of every task, the model API and the executor. */\n")
	b.WriteString(mod.Code)
	err = runtimeTmpl.Execute(&b, runtimeData(p, "", p.mem.Peak))
	if err != nil {
		return "", err
	}
	b.WriteString(executorC(p))
	return b.String(), nil
}

// runtimeData fills runtimeTmpl: setup is C run by tessera_create once
// the weights are read (a GPU model's device setup), arena the bytes of
// the host arena.
func runtimeData(p *program, setup string, arena int64) map[string]any {
	names := func(ts []TensorInfo) (string, string) {
		var ns, es []string
		for _, t := range ts {
			ns = append(ns, strconv.Quote(t.Name))
			es = append(es, strconv.Itoa(t.Elems()))
		}
		// A trailing sentinel keeps the arrays non-empty.
		return strings.Join(append(ns, "NULL"), ", "), strings.Join(append(es, "0"), ", ")
	}
	in, inElems := names(p.inputs)
	out, outElems := names(p.outputs)
	return map[string]any{
		"NumInputs": len(p.inputs), "NumOutputs": len(p.outputs),
		"WeightsBytes": len(p.weights.payload), "Checksum": fmt.Sprintf("%016x", checksum(p.weights.payload)),
		"ArenaBytes": arena, "API": apiDecls, "Magic": weightsMagic,
		"InputNames": in, "InputElems": inElems, "OutputNames": out, "OutputElems": outElems,
		"DeviceSetup": setup, "CPUCheck": cpuCheck(),
	}
}

// executorC returns tsm_execute.
func executorC(p *program) string {
	var b strings.Builder
	b.WriteString("\n/* tsm_execute runs every kernel in plan order: w is the weights payload, a the arena. */\n")
	fmt.Fprintf(&b, "static double *tsm_profile;\n\nTSM_API int tessera_num_steps(void) { return %d; }\n", len(p.calls))
	b.WriteString("TSM_API int tessera_profile(double *seconds) {\n  tsm_profile = seconds;\n  return 0;\n}\n\n")
	b.WriteString("static int tsm_execute(const float *const *in, float *const *out, float *w, float *a) {\n")
	b.WriteString("  int rc;\n  double t0 = 0;\n  (void)in; (void)out; (void)w; (void)a; (void)rc; (void)t0;\n")
	for s, c := range p.calls {
		fmt.Fprintf(&b, "  /* step %d: group %d, %s */\n", s, c.group.ID, cComment(c.group.Ops()))
		args := make([]string, len(c.args))
		for i, pl := range c.args {
			args[i] = pl.cExpr()
		}
		fmt.Fprintf(&b, "  {\n    float *const args[] = {%s};\n", strings.Join(args, ", "))
		b.WriteString("    if (tsm_profile)\n      t0 = omp_get_wtime();\n")
		fmt.Fprintf(&b, "    if ((rc = %s(args)) != 0)\n      return rc;\n", kernelName(c.task))
		fmt.Fprintf(&b, "    if (tsm_profile)\n      tsm_profile[%d] += omp_get_wtime() - t0;\n  }\n", s)
	}
	for _, c := range p.copies {
		fmt.Fprintf(&b, "  memcpy(out[%d], %s, %d * sizeof(float));\n", c.dst, c.src.cExpr(), c.src.elems)
	}
	b.WriteString("  return 0;\n}\n")
	return b.String()
}

// cComment makes s safe inside a C comment.
func cComment(s string) string { return strings.ReplaceAll(s, "*/", "* /") }

// cHeader returns model.h: the API, and the model's inputs and outputs in a
// comment.
func cHeader(m *Manifest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "/* model.h: the C API of %s (graph %q), built by tessera's `tune build`.\n", cComment(m.Model), cComment(m.Graph))
	b.WriteString(" *\n * Link against " + m.Library + " and load " + m.Weights.File + " with tessera_create.\n *\n")
	for _, side := range []struct {
		what string
		ts   []TensorInfo
	}{{"inputs", m.Inputs}, {"outputs", m.Outputs}} {
		fmt.Fprintf(&b, " * %s (float32, dense row-major):\n", side.what)
		for i, t := range side.ts {
			fmt.Fprintf(&b, " *   %d  %s  (%d elements)\n", i, cComment(t.String()), t.Elems())
		}
	}
	fmt.Fprintf(&b, " *\n * memory: an arena of %d bytes for %d intermediate tensors of %d bytes in all,\n * and %d bytes of weights.\n */\n",
		m.Memory.ArenaBytes, m.Memory.Intermediates, m.Memory.IntermediatesBytes, m.Weights.Bytes)
	b.WriteString("#ifndef TESSERA_MODEL_H\n#define TESSERA_MODEL_H\n\n#include <stddef.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n")
	fmt.Fprintf(&b, "#define TESSERA_NUM_INPUTS %d\n#define TESSERA_NUM_OUTPUTS %d\n\n", len(m.Inputs), len(m.Outputs))
	b.WriteString(apiDecls)
	b.WriteString("\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n")
	return b.String()
}

// cpuCheck is the C of tsm_cpu_check: for every extension of
// machine.LoadChecks the compiler was allowed to use (its macro defined),
// whether the processor loading the library has it. It returns the first
// one missing, or NULL; compiled for the base level (TSM_BASE), it runs on
// any processor of the architecture.
func cpuCheck() string {
	var b strings.Builder
	b.WriteString("static TSM_BASE const char *tsm_cpu_check(void) {\n#if defined(__x86_64__)\n  __builtin_cpu_init();\n")
	for _, c := range machine.LoadChecks {
		fmt.Fprintf(&b, "#ifdef %s\n  if (!__builtin_cpu_supports(%q))\n    return %q;\n#endif\n", c.Macro, c.Feature, c.Feature)
	}
	b.WriteString("#endif\n  return NULL;\n}\n")
	return b.String()
}
