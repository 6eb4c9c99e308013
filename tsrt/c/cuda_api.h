/* cuda_api.h: CUDA as Tessera's GPU paths use it, loaded at run time. The
 * driver (libcuda.so.1) and NVRTC are opened with dlopen, and the few
 * types, constants and entry points used are declared here, so nothing
 * needs CUDA's headers or links against it. Included by the CUDA
 * measurement runner (harness_cuda.c) and by a built CUDA model's device
 * runtime (device_cuda.c): both open the same device the same way and
 * compile their kernels the same way.
 *
 * The driver's versioned symbols are called by their exact names
 * (cuMemAlloc_v2, ...): the unversioned names of cuda.h are macros, and
 * CUDA 13 changed the signatures behind some of them (cuCtxCreate,
 * cuMemAdvise, ...), which is why the context is the device's primary
 * context. The device is the first GPU, or the TESSERA_DEVICE-th. Kernels
 * are compiled by NVRTC for the device's own architecture (a CUBIN), or,
 * when NVRTC does not know it, as PTX for the newest architecture NVRTC
 * knows below it, which the driver compiles. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct _nvrtcProgram *nvrtcProgram;
typedef int nvrtcResult;

#define CUDA_SUCCESS 0
#define CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK 1
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK 8
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE 38
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1

/* The stream and graph entry points a built model uses to launch its
   kernels as one CUDA graph (device_cuda.c); optional: each is NULL where
   the driver lacks it (a driver older than CUDA 11.4), and the model then
   launches its kernels one by one. */
static struct {
  CUresult (*StreamCreate)(CUstream *, unsigned);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*StreamBeginCapture)(CUstream, int);
  CUresult (*StreamEndCapture)(CUstream, CUgraph *);
  CUresult (*GraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*GraphLaunch)(CUgraphExec, CUstream);
  CUresult (*GraphDestroy)(CUgraph);
} tsr_cug;

static const char *const tsr_cug_names[] = {"cuStreamCreate", "cuStreamSynchronize", "cuStreamBeginCapture_v2",
  "cuStreamEndCapture", "cuGraphInstantiateWithFlags", "cuGraphLaunch", "cuGraphDestroy"};

/* The driver's entry points, in the order of tsr_cu_names. */
static struct {
  CUresult (*Init)(unsigned);
  CUresult (*DriverGetVersion)(int *);
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DeviceGetName)(char *, int, CUdevice);
  CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxSynchronize)(void);
  CUresult (*ModuleLoadData)(CUmodule *, const void *);
  CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **);
  CUresult (*EventCreate)(CUevent *, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*GetErrorName)(CUresult, const char **);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*EventElapsedTime)(float *, CUevent, CUevent); /* cuEventElapsedTime_v2 where present */
} tsr_cu;

static const char *const tsr_cu_names[] = {"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet",
  "cuDeviceGetName", "cuDeviceGetAttribute", "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent", "cuCtxSynchronize",
  "cuModuleLoadData", "cuModuleGetFunction", "cuMemAlloc_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemsetD8_v2",
  "cuLaunchKernel", "cuEventCreate", "cuEventRecord", "cuEventSynchronize", "cuGetErrorName", "cuMemFree_v2",
  "cuModuleUnload"};

/* NVRTC's entry points, in the order of tsr_rtc_names. */
static struct {
  nvrtcResult (*Version)(int *, int *);
  nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetPTX)(nvrtcProgram, char *);
  nvrtcResult (*DestroyProgram)(nvrtcProgram *);
  nvrtcResult (*GetNumSupportedArchs)(int *);
  nvrtcResult (*GetSupportedArchs)(int *);
} tsr_rtc;

static const char *const tsr_rtc_names[] = {"nvrtcVersion", "nvrtcCreateProgram", "nvrtcCompileProgram",
  "nvrtcGetProgramLogSize", "nvrtcGetProgramLog", "nvrtcGetCUBINSize", "nvrtcGetCUBIN", "nvrtcGetPTXSize", "nvrtcGetPTX",
  "nvrtcDestroyProgram", "nvrtcGetNumSupportedArchs", "nvrtcGetSupportedArchs"};

/* The device tsr_cuda_open chose, its primary context (current on the
   calling thread) and its compute capability. */
static CUdevice tsr_cu_device;
static CUcontext tsr_cu_context;
static int tsr_cu_cc_major, tsr_cu_cc_minor;

static int tsr_cu_fail(char *err, size_t n, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  vsnprintf(err, n, format, ap);
  va_end(ap);
  return -1;
}

/* tsr_cu_errname names a driver error code. */
static const char *tsr_cu_errname(CUresult rc) {
  const char *s = NULL;
  if (tsr_cu.GetErrorName && tsr_cu.GetErrorName(rc, &s) == CUDA_SUCCESS && s)
    return s;
  return "unknown error";
}

/* tsr_nvrtc_open loads NVRTC: $TESSERA_NVRTC, else the newest of the
   sonames it knows. It returns 0, or -1 with the reason ("no NVRTC") in err. */
static int tsr_nvrtc_open(char *err, size_t n) {
  const char *rlibs[] = {getenv("TESSERA_NVRTC"), "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"};
  void *r = NULL;
  const char *rlib = NULL;
  for (size_t i = 0; i < sizeof rlibs / sizeof rlibs[0] && !r; i++)
    if (rlibs[i] && *rlibs[i])
      r = dlopen(rlib = rlibs[i], RTLD_NOW | RTLD_LOCAL);
  if (!r)
    return tsr_cu_fail(err, n, "no NVRTC: none of libnvrtc.so.13, .12, .11.2 loads (set TESSERA_NVRTC to its path)");
  void **rslots = (void **)&tsr_rtc;
  for (size_t i = 0; i < sizeof tsr_rtc_names / sizeof tsr_rtc_names[0]; i++)
    if (!(rslots[i] = dlsym(r, tsr_rtc_names[i])))
      return tsr_cu_fail(err, n, "no NVRTC: %s lacks %s", rlib, tsr_rtc_names[i]);
  return 0;
}

/* tsr_cuda_open_compiler makes what compiling needs without the driver:
   NVRTC, and the compute capability from arch ("sm_90", as the probe says
   it), so that a compile starts no CUDA context. */
static int tsr_cuda_open_compiler(const char *arch, char *err, size_t n) {
  int cc = 0; /* sm_90: 9.0, sm_100: 10.0 (the minor is one digit) */
  if (sscanf(arch, "sm_%d", &cc) != 1 || cc < 10)
    return tsr_cu_fail(err, n, "bad architecture %s (want sm_XY)", arch);
  tsr_cu_cc_major = cc / 10;
  tsr_cu_cc_minor = cc % 10;
  return tsr_nvrtc_open(err, n);
}

/* tsr_cuda_open loads the driver and NVRTC, picks the device and makes its
   primary context current. It returns 0, or -1 with the reason in err,
   which starts "no CUDA driver", "no NVRTC" or "no CUDA device". */
static int tsr_cuda_open(char *err, size_t n) {
  const char *lib = "libcuda.so.1";
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return tsr_cu_fail(err, n, "no CUDA driver: %s", dlerror());
  void **slots = (void **)&tsr_cu;
  size_t nnames = sizeof tsr_cu_names / sizeof tsr_cu_names[0];
  for (size_t i = 0; i < nnames; i++)
    if (!(slots[i] = dlsym(h, tsr_cu_names[i])))
      return tsr_cu_fail(err, n, "no CUDA driver: %s lacks %s (a driver older than CUDA 11?)", lib, tsr_cu_names[i]);
  if (!(slots[nnames] = dlsym(h, "cuEventElapsedTime_v2")) && !(slots[nnames] = dlsym(h, "cuEventElapsedTime")))
    return tsr_cu_fail(err, n, "no CUDA driver: %s lacks cuEventElapsedTime", lib);
  void **gslots = (void **)&tsr_cug;
  for (size_t i = 0; i < sizeof tsr_cug_names / sizeof tsr_cug_names[0]; i++)
    gslots[i] = dlsym(h, tsr_cug_names[i]);

  if (tsr_nvrtc_open(err, n) != 0)
    return -1;

  CUresult rc = tsr_cu.Init(0);
  if (rc != CUDA_SUCCESS)
    return tsr_cu_fail(err, n, "no CUDA device: cuInit: %s", tsr_cu_errname(rc));
  int count = 0;
  if (tsr_cu.DeviceGetCount(&count) != CUDA_SUCCESS || count == 0)
    return tsr_cu_fail(err, n, "no CUDA device: the driver lists none");
  const char *want = getenv("TESSERA_DEVICE");
  int index = want && *want ? atoi(want) : 0;
  if (index < 0 || index >= count)
    return tsr_cu_fail(err, n, "no CUDA device: TESSERA_DEVICE=%d, but there are %d devices", index, count);
  if ((rc = tsr_cu.DeviceGet(&tsr_cu_device, index)) != CUDA_SUCCESS)
    return tsr_cu_fail(err, n, "no CUDA device: cuDeviceGet: %s", tsr_cu_errname(rc));
  if ((rc = tsr_cu.DevicePrimaryCtxRetain(&tsr_cu_context, tsr_cu_device)) != CUDA_SUCCESS)
    return tsr_cu_fail(err, n, "no CUDA device: cuDevicePrimaryCtxRetain: %s", tsr_cu_errname(rc));
  if ((rc = tsr_cu.CtxSetCurrent(tsr_cu_context)) != CUDA_SUCCESS)
    return tsr_cu_fail(err, n, "no CUDA device: cuCtxSetCurrent: %s", tsr_cu_errname(rc));
  tsr_cu.DeviceGetAttribute(&tsr_cu_cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, tsr_cu_device);
  tsr_cu.DeviceGetAttribute(&tsr_cu_cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, tsr_cu_device);
  return 0;
}

/* tsr_cuda_arch writes the --gpu-architecture option: the device's own (a
   CUBIN, *cubin = 1) when NVRTC knows it, else the newest virtual
   architecture NVRTC knows below it (PTX, *cubin = 0). -1: NVRTC knows no
   architecture up to the device's. */
static int tsr_cuda_arch(char *opt, size_t n, int *cubin) {
  int want = tsr_cu_cc_major * 10 + tsr_cu_cc_minor, best = 0, count = 0;
  tsr_rtc.GetNumSupportedArchs(&count);
  int *archs = calloc((size_t)count + 1, sizeof *archs);
  if (archs && count > 0 && tsr_rtc.GetSupportedArchs(archs) == 0)
    for (int i = 0; i < count; i++) {
      if (archs[i] == want) {
        snprintf(opt, n, "--gpu-architecture=sm_%d", want);
        *cubin = 1;
        free(archs);
        return 0;
      }
      if (archs[i] < want && archs[i] > best)
        best = archs[i];
    }
  free(archs);
  if (best == 0)
    return -1;
  snprintf(opt, n, "--gpu-architecture=compute_%d", best);
  *cubin = 0;
  return 0;
}

/* tsr_cuda_compile compiles CUDA C++ src (named name in messages) for the
   device: *bin (malloc'ed, *size bytes) is a CUBIN or PTX, which
   cuModuleLoadData takes either way. It returns 0; -1 with the error and
   as much of NVRTC's log as err holds; -2 when NVRTC knows no
   architecture up to the device's. */
static int tsr_cuda_compile(const char *src, const char *name, char **bin, size_t *size, char *err, size_t n) {
  char arch[64];
  int cubin = 0;
  if (tsr_cuda_arch(arch, sizeof arch, &cubin) != 0) {
    tsr_cu_fail(err, n, "no NVRTC for this GPU: NVRTC knows no architecture up to sm_%d%d", tsr_cu_cc_major, tsr_cu_cc_minor);
    return -2;
  }
  nvrtcProgram p;
  if (tsr_rtc.CreateProgram(&p, src, name, 0, NULL, NULL) != 0)
    return tsr_cu_fail(err, n, "nvrtcCreateProgram failed");
  const char *opts[] = {arch, "--std=c++17", "-default-device"};
  int rc = tsr_rtc.CompileProgram(p, 3, opts);
  if (rc != 0) {
    size_t ln = 0;
    char *log = NULL;
    if (tsr_rtc.GetProgramLogSize(p, &ln) == 0 && (log = malloc(ln + 1)) && tsr_rtc.GetProgramLog(p, log) == 0)
      log[ln] = 0;
    else if (log)
      log[0] = 0;
    tsr_cu_fail(err, n, "the program does not build: NVRTC error %d (%s)%s%s", rc, arch, log && *log ? ": " : "", log ? log : "");
    free(log);
    tsr_rtc.DestroyProgram(&p);
    return -1;
  }
  size_t got = 0;
  char *out = NULL;
  int ok = cubin ? tsr_rtc.GetCUBINSize(p, &got) == 0 && (out = malloc(got + 1)) && tsr_rtc.GetCUBIN(p, out) == 0
                 : tsr_rtc.GetPTXSize(p, &got) == 0 && (out = malloc(got + 1)) && tsr_rtc.GetPTX(p, out) == 0;
  tsr_rtc.DestroyProgram(&p);
  if (!ok) {
    free(out);
    return tsr_cu_fail(err, n, "NVRTC: getting the %s failed", cubin ? "CUBIN" : "PTX");
  }
  *bin = out;
  *size = got;
  return 0;
}
