/* tessera_model.h: what a generated model.c gives the runtime (runtime.c).
 * Internal to a built library: not part of the ABI, which is tessera.h.
 *
 * The build generates, per model, the kernels, an executor (tsm_execute:
 * every kernel call in plan order, on float32 buffers) and one constant
 * tsr_model describing the model. runtime.c, the same for every model,
 * implements tessera.h on top of it: opening and checking the weights,
 * typed tensors, the workspace pool, threads and profiling.
 */
#ifndef TESSERA_MODEL_H
#define TESSERA_MODEL_H

#include "tessera.h"

#define TSR_HIDDEN __attribute__((visibility("hidden")))

/* An input or output of the model. The executor takes and gives every
   tensor as float32 (integer and bool values exact within ±2^24); the
   runtime converts from and to dtype, and refuses an integer it cannot
   carry exactly (TESSERA_VALUE_OUT_OF_RANGE). */
typedef struct tsr_tensor_desc {
  const char *name;
  tessera_dtype dtype;
  int32_t rank;
  const int64_t *shape; /* -1 at the leading dimension of a batched tensor, -2 where the dimension given at run time is */
  uint64_t elems;       /* of a batched tensor: one sample's; at the largest value of the dimension given at run time */
  int32_t batched;      /* the leading dimension is the model's batch */
} tsr_tensor_desc;

typedef struct tsr_model_desc {
  int32_t num_inputs, num_outputs;
  const tsr_tensor_desc *inputs, *outputs;
  /* The weights payload: its size and FNV-1a checksum (assemble/weights.go),
     and, for a --single-file build, the payload itself. */
  uint64_t weights_bytes, weights_checksum;
  const unsigned char *embedded_weights;
  const char *weights_magic; /* the 8 bytes a weights file starts with */
  uint64_t arena_bytes;      /* the intermediate tensors of one run */
  int32_t num_steps;
  const char *const *step_names;
  const char *target;
  /* cpu_check returns the first processor extension the library was
     compiled for that this processor lacks, or NULL. It is compiled for
     the architecture's base level. */
  const char *(*cpu_check)(void);
  /* execute runs the model: in and out are float32 buffers of the
     inputs' and outputs' elements, w the weights payload, arena
     arena_bytes of scratch, batch the run's batch (1 in a model of static
     shapes), dim the value of the dimension given at run time (its largest
     in a model without one). With profile set, it adds the seconds of each
     step to profile[step]. It returns 0, TSR_VALUE_OUT_OF_RANGE after
     tsr_error (a run-time index outside its axis: tsr_check_indices), or
     a kernel's non-zero code. */
  int (*execute)(const float *const *in, float *const *out, float *w, float *arena, double *profile, int64_t batch, int64_t dim);
  /* A GPU build's device: setup, called once by tessera_open with the
     weights, finds the device, builds the kernels, makes the buffers and
     uploads the weights; it returns 0, or non-zero after tsr_error. The
     device state belongs to the library, so its runs take turns (serial)
     and it cannot time its steps (no_profile says why). NULL, 0 and NULL
     on the CPU. */
  int (*setup)(const float *w);
  int serial;
  const char *no_profile;
  /* A model built over a dynamic batch: its name and range (a run's batch
     is the leading dimension of its batched tensors). NULL, 0, 0 for a
     model of static shapes. */
  const char *batch_name;
  int64_t batch_lo, batch_hi;
  /* A model built over a dimension given at run time (a sequence length):
     its name and range; NULL, 0, 0 for a model without one. */
  const char *dim_name;
  int64_t dim_lo, dim_hi;
} tsr_model_desc;

extern TSR_HIDDEN const tsr_model_desc tsr_model;

/* tsr_error sets the message of this thread's failing call (printf
   format): for the device code, whose functions return -1. */
TSR_HIDDEN void tsr_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The executor's return code for a value the model cannot take: the
   runtime reports it as TESSERA_VALUE_OUT_OF_RANGE. */
#define TSR_VALUE_OUT_OF_RANGE (-1000)

/* tsr_check_indices checks the n indices at p (float32 values holding
   integers, as the kernels read them) before a kernel reads at them:
   index j must lie in [lo[j % k], hi[j % k]] (k bounds: one for every
   index, or one per position along the indices' last axis, GatherND's and
   ScatterND's tuples). It returns 0, or TSR_VALUE_OUT_OF_RANGE after
   tsr_error naming what (the node and its indices) and the first index
   outside its bounds. */
TSR_HIDDEN int tsr_check_indices(const float *p, int64_t n, int k, const int64_t *lo, const int64_t *hi, const char *what);

#endif
