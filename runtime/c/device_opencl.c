/* device_opencl.c: the device runtime of an OpenCL model: the ICD loader
   (libOpenCL.so.1) loaded at run time, the few OpenCL types and constants
   declared here (no headers needed).
   Included by a GPU model's generated model.c after the kernel source
   (tsm_kernel_source, tsm_kernel_names, TSM_NUM_KERNELS, TSM_NUM_DBUFS,
   tsm_dbuf_bytes) and tessera_model.h (tsr_error). */
/* ---- device runtime: OpenCL, loaded at run time ---- */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
typedef int32_t tsm_cl_int;
typedef struct tsm_cl_obj *tsm_cl_h;
static struct {
  tsm_cl_int (*GetPlatformIDs)(uint32_t, tsm_cl_h *, uint32_t *);
  tsm_cl_int (*GetDeviceIDs)(tsm_cl_h, uint64_t, uint32_t, tsm_cl_h *, uint32_t *);
  tsm_cl_h (*CreateContext)(const intptr_t *, uint32_t, const tsm_cl_h *, void *, void *, tsm_cl_int *);
  tsm_cl_h (*CreateCommandQueue)(tsm_cl_h, tsm_cl_h, uint64_t, tsm_cl_int *);
  tsm_cl_h (*CreateProgramWithSource)(tsm_cl_h, uint32_t, const char **, const size_t *, tsm_cl_int *);
  tsm_cl_int (*BuildProgram)(tsm_cl_h, uint32_t, const tsm_cl_h *, const char *, void *, void *);
  tsm_cl_int (*GetProgramBuildInfo)(tsm_cl_h, tsm_cl_h, uint32_t, size_t, void *, size_t *);
  tsm_cl_h (*CreateKernel)(tsm_cl_h, const char *, tsm_cl_int *);
  tsm_cl_int (*SetKernelArg)(tsm_cl_h, uint32_t, size_t, const void *);
  tsm_cl_h (*CreateBuffer)(tsm_cl_h, uint64_t, size_t, void *, tsm_cl_int *);
  tsm_cl_int (*EnqueueWriteBuffer)(tsm_cl_h, tsm_cl_h, uint32_t, size_t, size_t, const void *, uint32_t, const void *, void *);
  tsm_cl_int (*EnqueueReadBuffer)(tsm_cl_h, tsm_cl_h, uint32_t, size_t, size_t, void *, uint32_t, const void *, void *);
  tsm_cl_int (*EnqueueNDRangeKernel)(tsm_cl_h, tsm_cl_h, uint32_t, const size_t *, const size_t *, const size_t *, uint32_t, const void *, void *);
  tsm_cl_int (*Finish)(tsm_cl_h);
} tsm_cl;
static tsm_cl_h tsm_cl_dev, tsm_cl_ctx, tsm_cl_queue, tsm_cl_prog;
static tsm_cl_h tsm_cl_kernels[TSM_NUM_KERNELS];
static tsm_cl_h tsm_cl_bufs[TSM_NUM_DBUFS];
static int tsm_dev_ready;

static int tsm_dev_init(void) {
  if (tsm_dev_ready)
    return 0;
  void *h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    tsr_error("no OpenCL driver: %s", dlerror());
    return -1;
  }
  const char *names[] = {"clGetPlatformIDs", "clGetDeviceIDs", "clCreateContext", "clCreateCommandQueue",
    "clCreateProgramWithSource", "clBuildProgram", "clGetProgramBuildInfo", "clCreateKernel", "clSetKernelArg",
    "clCreateBuffer", "clEnqueueWriteBuffer", "clEnqueueReadBuffer", "clEnqueueNDRangeKernel", "clFinish"};
  void **slots = (void **)&tsm_cl;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!(slots[i] = dlsym(h, names[i]))) {
      tsr_error("no OpenCL driver: libOpenCL.so.1 lacks %s", names[i]);
      return -1;
    }
  tsm_cl_h ps[16];
  uint32_t np = 0;
  if (tsm_cl.GetPlatformIDs(16, ps, &np) != 0 || np == 0) {
    tsr_error("no OpenCL device: no platform is installed");
    return -1;
  }
  const char *want = getenv("TESSERA_DEVICE");
  long wanted = want && *want ? strtol(want, NULL, 10) : -1, seen = 0;
  int found = 0;
  for (int pass = 0; pass < 2 && !found; pass++) {
    seen = 0;
    for (uint32_t p = 0; p < np && p < 16 && !found; p++) {
      tsm_cl_h ds[16];
      uint32_t nd = 0;
      uint64_t type = wanted >= 0 || pass == 1 ? 0xFFFFFFFFu : (1u << 2);
      if (tsm_cl.GetDeviceIDs(ps[p], type, 16, ds, &nd) != 0)
        continue;
      for (uint32_t d = 0; d < nd && d < 16 && !found; d++, seen++)
        if (wanted < 0 || seen == wanted) {
          tsm_cl_dev = ds[d];
          found = 1;
        }
    }
    if (wanted >= 0)
      break;
  }
  if (!found) {
    tsr_error("no OpenCL device");
    return -1;
  }
  tsm_cl_int rc;
  tsm_cl_ctx = tsm_cl.CreateContext(NULL, 1, &tsm_cl_dev, NULL, NULL, &rc);
  if (rc == 0)
    tsm_cl_queue = tsm_cl.CreateCommandQueue(tsm_cl_ctx, tsm_cl_dev, 0, &rc);
  if (rc != 0) {
    tsr_error("OpenCL context: error %d", (int)rc);
    return -1;
  }
  const char *src = tsm_kernel_source;
  size_t len = sizeof tsm_kernel_source - 1;
  tsm_cl_prog = tsm_cl.CreateProgramWithSource(tsm_cl_ctx, 1, &src, &len, &rc);
  if (rc == 0)
    rc = tsm_cl.BuildProgram(tsm_cl_prog, 1, &tsm_cl_dev, "-cl-std=CL1.2", NULL, NULL);
  if (rc != 0) {
    char log[400] = {0};
    tsm_cl.GetProgramBuildInfo(tsm_cl_prog, tsm_cl_dev, 0x1183, sizeof log - 1, log, NULL);
    tsr_error("the kernels do not build (OpenCL error %d): %s", (int)rc, log);
    return -1;
  }
  for (int k = 0; k < TSM_NUM_KERNELS; k++)
    if (tsm_kernel_names[k] && !(tsm_cl_kernels[k] = tsm_cl.CreateKernel(tsm_cl_prog, tsm_kernel_names[k], &rc))) {
      tsr_error("no kernel %s: OpenCL error %d", tsm_kernel_names[k], (int)rc);
      return -1;
    }
  for (int b = 0; b < TSM_NUM_DBUFS; b++)
    if (!(tsm_cl_bufs[b] = tsm_cl.CreateBuffer(tsm_cl_ctx, 1, tsm_dbuf_bytes[b], NULL, &rc))) {
      tsr_error("out of device memory (%llu bytes): OpenCL error %d", (unsigned long long)tsm_dbuf_bytes[b], (int)rc);
      return -1;
    }
  tsm_dev_ready = 1;
  return 0;
}

static int tsm_dev_upload(int b, const float *host, size_t bytes) {
  tsm_cl_int rc = tsm_cl.EnqueueWriteBuffer(tsm_cl_queue, tsm_cl_bufs[b], 1, 0, bytes, host, 0, NULL, NULL);
  if (rc != 0)
    tsr_error("upload: OpenCL error %d", (int)rc);
  return rc;
}

static int tsm_dev_download(float *host, int b, size_t bytes) {
  tsm_cl_int rc = tsm_cl.EnqueueReadBuffer(tsm_cl_queue, tsm_cl_bufs[b], 1, 0, bytes, host, 0, NULL, NULL);
  if (rc != 0)
    tsr_error("download: OpenCL error %d", (int)rc);
  return rc;
}

static int tsm_dev_launch(int k, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, int nargs, const int *args) {
  for (int a = 0; a < nargs; a++) {
    tsm_cl_int rc = tsm_cl.SetKernelArg(tsm_cl_kernels[k], (uint32_t)a, sizeof(tsm_cl_h), &tsm_cl_bufs[args[a]]);
    if (rc != 0) {
      tsr_error("kernel %s argument %d: OpenCL error %d", tsm_kernel_names[k], a, (int)rc);
      return rc;
    }
  }
  size_t local[3] = {bx, by, bz}, global[3] = {(size_t)gx * bx, (size_t)gy * by, (size_t)gz * bz};
  tsm_cl_int rc = tsm_cl.EnqueueNDRangeKernel(tsm_cl_queue, tsm_cl_kernels[k], 3, NULL, global, local, 0, NULL, NULL);
  if (rc != 0)
    tsr_error("launch of %s: OpenCL error %d", tsm_kernel_names[k], (int)rc);
  return rc;
}

static int tsm_dev_finish(void) {
  tsm_cl_int rc = tsm_cl.Finish(tsm_cl_queue);
  if (rc != 0)
    tsr_error("OpenCL: error %d", (int)rc);
  return rc;
}
