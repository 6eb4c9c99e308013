/* device_cuda.c: the device runtime of a CUDA model: the driver
   (libcuda.so.1) and NVRTC loaded at run time, the exact versioned driver
   symbols, the primary context, the kernels compiled by NVRTC for the
   device's own architecture at tessera_create.
   Included by a GPU model's generated model.c after the kernel source
   (tsm_kernel_source, tsm_kernel_names, TSM_NUM_KERNELS, TSM_NUM_DBUFS,
   tsm_dbuf_bytes) and tessera_model.h (tsr_error). */
/* ---- device runtime: CUDA driver and NVRTC, loaded at run time ---- */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef unsigned long long tsm_cu_ptr;
typedef struct tsm_cu_obj *tsm_cu_h;
static struct {
  int (*Init)(unsigned);
  int (*DeviceGet)(int *, int);
  int (*DeviceGetAttribute)(int *, int, int);
  int (*DevicePrimaryCtxRetain)(tsm_cu_h *, int);
  int (*CtxSetCurrent)(tsm_cu_h);
  int (*CtxSynchronize)(void);
  int (*ModuleLoadData)(tsm_cu_h *, const void *);
  int (*ModuleGetFunction)(tsm_cu_h *, tsm_cu_h, const char *);
  int (*MemAlloc)(tsm_cu_ptr *, size_t);
  int (*MemcpyHtoD)(tsm_cu_ptr, const void *, size_t);
  int (*MemcpyDtoH)(void *, tsm_cu_ptr, size_t);
  int (*LaunchKernel)(tsm_cu_h, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, tsm_cu_h, void **, void **);
} tsm_cu;
static struct {
  int (*CreateProgram)(tsm_cu_h *, const char *, const char *, int, const char *const *, const char *const *);
  int (*CompileProgram)(tsm_cu_h, int, const char *const *);
  int (*GetPTXSize)(tsm_cu_h, size_t *);
  int (*GetPTX)(tsm_cu_h, char *);
  int (*GetProgramLog)(tsm_cu_h, char *);
  int (*GetProgramLogSize)(tsm_cu_h, size_t *);
} tsm_rtc;
static tsm_cu_h tsm_cu_fns[TSM_NUM_KERNELS];
static tsm_cu_ptr tsm_cu_bufs[TSM_NUM_DBUFS];
static int tsm_dev_ready;

static int tsm_dev_init(void) {
  if (tsm_dev_ready)
    return 0;
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    tsr_error("no CUDA driver: %s", dlerror());
    return -1;
  }
  const char *names[] = {"cuInit", "cuDeviceGet", "cuDeviceGetAttribute", "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent",
    "cuCtxSynchronize", "cuModuleLoadData", "cuModuleGetFunction", "cuMemAlloc_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2",
    "cuLaunchKernel"};
  void **slots = (void **)&tsm_cu;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!(slots[i] = dlsym(h, names[i]))) {
      tsr_error("no CUDA driver: libcuda.so.1 lacks %s", names[i]);
      return -1;
    }
  const char *libs[] = {getenv("TESSERA_NVRTC"), "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"};
  void *r = NULL;
  for (size_t i = 0; i < sizeof libs / sizeof libs[0] && !r; i++)
    if (libs[i] && *libs[i])
      r = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
  if (!r) {
    tsr_error("no NVRTC (set TESSERA_NVRTC to its path)");
    return -1;
  }
  const char *rnames[] = {"nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcGetPTXSize", "nvrtcGetPTX", "nvrtcGetProgramLog", "nvrtcGetProgramLogSize"};
  void **rslots = (void **)&tsm_rtc;
  for (size_t i = 0; i < sizeof rnames / sizeof rnames[0]; i++)
    if (!(rslots[i] = dlsym(r, rnames[i]))) {
      tsr_error("NVRTC lacks %s", rnames[i]);
      return -1;
    }
  const char *want = getenv("TESSERA_DEVICE");
  int dev = 0, major = 0, minor = 0;
  tsm_cu_h ctx, mod, prog;
  if (tsm_cu.Init(0) != 0 || tsm_cu.DeviceGet(&dev, want && *want ? atoi(want) : 0) != 0 ||
      tsm_cu.DevicePrimaryCtxRetain(&ctx, dev) != 0 || tsm_cu.CtxSetCurrent(ctx) != 0) {
    tsr_error("no CUDA device");
    return -1;
  }
  tsm_cu.DeviceGetAttribute(&major, 75, dev);
  tsm_cu.DeviceGetAttribute(&minor, 76, dev);
  char arch[64];
  snprintf(arch, sizeof arch, "--gpu-architecture=compute_%d%d", major, minor);
  const char *opts[] = {arch, "--std=c++17"};
  if (tsm_rtc.CreateProgram(&prog, tsm_kernel_source, "model.cu", 0, NULL, NULL) != 0) {
    tsr_error("nvrtcCreateProgram failed");
    return -1;
  }
  if (tsm_rtc.CompileProgram(prog, 2, opts) != 0) {
    char log[400] = {0};
    size_t n = 0;
    tsm_rtc.GetProgramLogSize(prog, &n);
    char *full = malloc(n + 1);
    if (full && tsm_rtc.GetProgramLog(prog, full) == 0)
      snprintf(log, sizeof log, "%s", full);
    free(full);
    tsr_error("the kernels do not build (NVRTC, %s): %s", arch, log);
    return -1;
  }
  size_t n = 0;
  tsm_rtc.GetPTXSize(prog, &n);
  char *ptx = malloc(n + 1);
  if (!ptx || tsm_rtc.GetPTX(prog, ptx) != 0 || tsm_cu.ModuleLoadData(&mod, ptx) != 0) {
    tsr_error("loading the kernels failed");
    free(ptx);
    return -1;
  }
  free(ptx);
  for (int k = 0; k < TSM_NUM_KERNELS; k++)
    if (tsm_kernel_names[k] && tsm_cu.ModuleGetFunction(&tsm_cu_fns[k], mod, tsm_kernel_names[k]) != 0) {
      tsr_error("no kernel %s", tsm_kernel_names[k]);
      return -1;
    }
  for (int b = 0; b < TSM_NUM_DBUFS; b++)
    if (tsm_cu.MemAlloc(&tsm_cu_bufs[b], tsm_dbuf_bytes[b]) != 0) {
      tsr_error("out of device memory (%llu bytes)", (unsigned long long)tsm_dbuf_bytes[b]);
      return -1;
    }
  tsm_dev_ready = 1;
  return 0;
}

static int tsm_dev_upload(int b, const float *host, size_t bytes) {
  int rc = tsm_cu.MemcpyHtoD(tsm_cu_bufs[b], host, bytes);
  if (rc != 0)
    tsr_error("upload: CUDA error %d", rc);
  return rc;
}

static int tsm_dev_download(float *host, int b, size_t bytes) {
  int rc = tsm_cu.MemcpyDtoH(host, tsm_cu_bufs[b], bytes);
  if (rc != 0)
    tsr_error("download: CUDA error %d", rc);
  return rc;
}

static int tsm_dev_launch(int k, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, int nargs, const int *args) {
  void *params[64];
  for (int a = 0; a < nargs && a < 64; a++)
    params[a] = &tsm_cu_bufs[args[a]];
  int rc = tsm_cu.LaunchKernel(tsm_cu_fns[k], gx, gy, gz, bx, by, bz, 0, NULL, params, NULL);
  if (rc != 0)
    tsr_error("launch of %s: CUDA error %d", tsm_kernel_names[k], rc);
  return rc;
}

static int tsm_dev_finish(void) {
  int rc = tsm_cu.CtxSynchronize();
  if (rc != 0)
    tsr_error("CUDA: error %d", rc);
  return rc;
}
