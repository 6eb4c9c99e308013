/* opencl_api.h: OpenCL as Tessera's GPU paths use it, loaded at run time.
 * The ICD loader (libOpenCL.so.1) is opened with dlopen, and the few
 * types, constants and entry points used are declared here, so nothing
 * needs OpenCL's headers or links against it. Included by the OpenCL
 * measurement runner (harness_opencl.c) and by a built OpenCL model's
 * device runtime (device_opencl.c): both open the same device the same
 * way and build their programs with the same options.
 *
 * The device is the first GPU of the first platform that has one, else the
 * first device of any kind (PoCL's CPU device on a machine without a GPU);
 * TESSERA_DEVICE=N picks the N-th device over all platforms instead. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef cl_ulong cl_bitfield;
typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
typedef struct _cl_event *cl_event;

#define CL_SUCCESS 0
#define CL_DEVICE_TYPE_GPU (1 << 2)
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFF
#define CL_DEVICE_TYPE 0x1000
#define CL_DEVICE_MAX_COMPUTE_UNITS 0x1002
#define CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define CL_DEVICE_GLOBAL_MEM_CACHE_SIZE 0x101E
#define CL_DEVICE_LOCAL_MEM_SIZE 0x1023
#define CL_DEVICE_NAME 0x102B
#define CL_DRIVER_VERSION 0x102D
#define CL_DEVICE_VERSION 0x102F
#define CL_DEVICE_OPENCL_C_VERSION 0x103D
#define CL_PLATFORM_VERSION 0x0901
#define CL_PLATFORM_NAME 0x0902
#define CL_PROGRAM_BUILD_LOG 0x1183
#define CL_MEM_READ_WRITE (1 << 0)
#define CL_QUEUE_PROFILING_ENABLE (1 << 1)
#define CL_PROFILING_COMMAND_START 0x1282
#define CL_PROFILING_COMMAND_END 0x1283

/* The entry points, in the order of tsr_cl_names. */
static struct {
  cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
  cl_int (*GetPlatformInfo)(cl_platform_id, cl_uint, size_t, void *, size_t *);
  cl_int (*GetDeviceIDs)(cl_platform_id, cl_bitfield, cl_uint, cl_device_id *, cl_uint *);
  cl_int (*GetDeviceInfo)(cl_device_id, cl_uint, size_t, void *, size_t *);
  cl_context (*CreateContext)(const intptr_t *, cl_uint, const cl_device_id *, void *, void *, cl_int *);
  cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id, cl_bitfield, cl_int *);
  cl_program (*CreateProgramWithSource)(cl_context, cl_uint, const char **, const size_t *, cl_int *);
  cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *, void *, void *);
  cl_int (*GetProgramBuildInfo)(cl_program, cl_device_id, cl_uint, size_t, void *, size_t *);
  cl_kernel (*CreateKernel)(cl_program, const char *, cl_int *);
  cl_int (*SetKernelArg)(cl_kernel, cl_uint, size_t, const void *);
  cl_mem (*CreateBuffer)(cl_context, cl_bitfield, size_t, void *, cl_int *);
  cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_uint, size_t, size_t, const void *, cl_uint, const cl_event *, cl_event *);
  cl_int (*EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_uint, size_t, size_t, void *, cl_uint, const cl_event *, cl_event *);
  cl_int (*EnqueueFillBuffer)(cl_command_queue, cl_mem, const void *, size_t, size_t, size_t, cl_uint, const cl_event *, cl_event *);
  cl_int (*EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *, const size_t *, cl_uint, const cl_event *, cl_event *);
  cl_int (*Finish)(cl_command_queue);
  cl_int (*GetEventProfilingInfo)(cl_event, cl_uint, size_t, void *, size_t *);
  cl_int (*ReleaseEvent)(cl_event);
  cl_int (*ReleaseMemObject)(cl_mem);
  cl_int (*ReleaseKernel)(cl_kernel);
  cl_int (*ReleaseProgram)(cl_program);
} tsr_cl;

static const char *const tsr_cl_names[] = {"clGetPlatformIDs", "clGetPlatformInfo", "clGetDeviceIDs", "clGetDeviceInfo",
  "clCreateContext", "clCreateCommandQueue", "clCreateProgramWithSource", "clBuildProgram", "clGetProgramBuildInfo",
  "clCreateKernel", "clSetKernelArg", "clCreateBuffer", "clEnqueueWriteBuffer", "clEnqueueReadBuffer",
  "clEnqueueFillBuffer", "clEnqueueNDRangeKernel", "clFinish", "clGetEventProfilingInfo", "clReleaseEvent",
  "clReleaseMemObject", "clReleaseKernel", "clReleaseProgram"};

/* The device tsr_cl_open chose, its context and its queue. */
static cl_platform_id tsr_cl_platform;
static cl_device_id tsr_cl_device;
static cl_context tsr_cl_context;
static cl_command_queue tsr_cl_queue;

static int tsr_cl_fail(char *err, size_t n, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  vsnprintf(err, n, format, ap);
  va_end(ap);
  return -1;
}

/* tsr_cl_open loads the driver, picks the device and makes a context and a
   command queue on it (with profiling when asked). It returns 0, or -1 with
   the reason in err, which starts "no OpenCL driver" or "no OpenCL device". */
static int tsr_cl_open(int profiling, char *err, size_t n) {
  void *h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    h = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return tsr_cl_fail(err, n, "no OpenCL driver: %s", dlerror());
  void **slots = (void **)&tsr_cl;
  for (size_t i = 0; i < sizeof tsr_cl_names / sizeof tsr_cl_names[0]; i++)
    if (!(slots[i] = dlsym(h, tsr_cl_names[i])))
      return tsr_cl_fail(err, n, "no OpenCL driver: libOpenCL.so.1 lacks %s", tsr_cl_names[i]);

  cl_platform_id ps[16];
  cl_uint np = 0;
  if (tsr_cl.GetPlatformIDs(16, ps, &np) != CL_SUCCESS || np == 0)
    return tsr_cl_fail(err, n, "no OpenCL device: no platform is installed (an ICD such as pocl-opencl-icd)");
  if (np > 16)
    np = 16;
  const char *want = getenv("TESSERA_DEVICE");
  long wanted = want && *want ? strtol(want, NULL, 10) : -1, seen = 0;
  int found = 0;
  for (int pass = 0; pass < 2 && !found; pass++) {
    seen = 0;
    for (cl_uint p = 0; p < np && !found; p++) {
      cl_device_id ds[16];
      cl_uint nd = 0;
      cl_bitfield type = wanted >= 0 || pass == 1 ? CL_DEVICE_TYPE_ALL : CL_DEVICE_TYPE_GPU;
      if (tsr_cl.GetDeviceIDs(ps[p], type, 16, ds, &nd) != CL_SUCCESS)
        continue;
      for (cl_uint d = 0; d < nd && d < 16 && !found; d++, seen++)
        if (wanted < 0 || seen == wanted) {
          tsr_cl_platform = ps[p];
          tsr_cl_device = ds[d];
          found = 1;
        }
    }
    if (wanted >= 0)
      break;
  }
  if (!found && wanted >= 0)
    return tsr_cl_fail(err, n, "no OpenCL device: TESSERA_DEVICE=%ld, but there are %ld devices", wanted, seen);
  if (!found)
    return tsr_cl_fail(err, n, "no OpenCL device: the platforms list none");
  cl_int rc;
  tsr_cl_context = tsr_cl.CreateContext(NULL, 1, &tsr_cl_device, NULL, NULL, &rc);
  if (rc != CL_SUCCESS)
    return tsr_cl_fail(err, n, "no OpenCL device: clCreateContext: error %d", (int)rc);
  tsr_cl_queue = tsr_cl.CreateCommandQueue(tsr_cl_context, tsr_cl_device, profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &rc);
  if (rc != CL_SUCCESS)
    return tsr_cl_fail(err, n, "no OpenCL device: clCreateCommandQueue: error %d", (int)rc);
  return 0;
}

/* tsr_cl_build builds an OpenCL C program for the device. It returns 0, or
   -1 with the error and as much of the build log as err holds. */
static int tsr_cl_build(const char *src, size_t len, cl_program *prog, char *err, size_t n) {
  cl_int rc;
  *prog = tsr_cl.CreateProgramWithSource(tsr_cl_context, 1, &src, &len, &rc);
  if (rc != CL_SUCCESS)
    return tsr_cl_fail(err, n, "clCreateProgramWithSource: OpenCL error %d", (int)rc);
  rc = tsr_cl.BuildProgram(*prog, 1, &tsr_cl_device, "-cl-std=CL1.2", NULL, NULL);
  if (rc == CL_SUCCESS)
    return 0;
  size_t size = 0;
  char *log = NULL;
  if (tsr_cl.GetProgramBuildInfo(*prog, tsr_cl_device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) == CL_SUCCESS && (log = malloc(size + 1)) &&
      tsr_cl.GetProgramBuildInfo(*prog, tsr_cl_device, CL_PROGRAM_BUILD_LOG, size, log, NULL) == CL_SUCCESS)
    log[size] = 0;
  else if (log)
    log[0] = 0;
  tsr_cl_fail(err, n, "the program does not build: OpenCL error %d%s%s", (int)rc, log && *log ? ": " : "", log ? log : "");
  free(log);
  return -1;
}
