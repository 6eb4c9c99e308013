/* harness_opencl.c: the OpenCL part of the GPU runner (see harness_gpu.c). It loads
 * libOpenCL.so.1 (the ICD loader) at run time and declares the few types
 * and constants it uses itself, so it needs no OpenCL headers. The device is
 * the first GPU of the first platform that has one, else the first device of
 * any kind (PoCL's CPU device on a machine without a GPU); TESSERA_DEVICE=N
 * picks the N-th device over all platforms instead. The OpenCL programs are
 * built with the driver's compiler; "compile" checks that a source builds
 * and keeps the source as the program "run" builds again (drivers cache
 * their builds). */

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
} cl;

static cl_platform_id plat;
static cl_device_id dev;
static cl_context ctx;
static cl_command_queue queue;
static cl_program program;
static cl_kernel *kernels;
static cl_mem flush_buf;
static size_t flush_bytes;

static void *sym(void *h, const char *name) {
	void *p = dlsym(h, name);
	if (!p)
		die(EXIT_NODEV, "no OpenCL driver: libOpenCL.so.1 lacks %s", name);
	return p;
}

static void check(cl_int rc, const char *what) {
	if (rc != CL_SUCCESS)
		die(EXIT_RUN, "%s failed: OpenCL error %d", what, (int)rc);
}

static void api_init(void) {
	runner_name = "tessera-opencl";
	void *h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		die(EXIT_NODEV, "no OpenCL driver: %s", dlerror());
	*(void **)&cl.GetPlatformIDs = sym(h, "clGetPlatformIDs");
	*(void **)&cl.GetPlatformInfo = sym(h, "clGetPlatformInfo");
	*(void **)&cl.GetDeviceIDs = sym(h, "clGetDeviceIDs");
	*(void **)&cl.GetDeviceInfo = sym(h, "clGetDeviceInfo");
	*(void **)&cl.CreateContext = sym(h, "clCreateContext");
	*(void **)&cl.CreateCommandQueue = sym(h, "clCreateCommandQueue");
	*(void **)&cl.CreateProgramWithSource = sym(h, "clCreateProgramWithSource");
	*(void **)&cl.BuildProgram = sym(h, "clBuildProgram");
	*(void **)&cl.GetProgramBuildInfo = sym(h, "clGetProgramBuildInfo");
	*(void **)&cl.CreateKernel = sym(h, "clCreateKernel");
	*(void **)&cl.SetKernelArg = sym(h, "clSetKernelArg");
	*(void **)&cl.CreateBuffer = sym(h, "clCreateBuffer");
	*(void **)&cl.EnqueueWriteBuffer = sym(h, "clEnqueueWriteBuffer");
	*(void **)&cl.EnqueueReadBuffer = sym(h, "clEnqueueReadBuffer");
	*(void **)&cl.EnqueueFillBuffer = sym(h, "clEnqueueFillBuffer");
	*(void **)&cl.EnqueueNDRangeKernel = sym(h, "clEnqueueNDRangeKernel");
	*(void **)&cl.Finish = sym(h, "clFinish");
	*(void **)&cl.GetEventProfilingInfo = sym(h, "clGetEventProfilingInfo");
	*(void **)&cl.ReleaseEvent = sym(h, "clReleaseEvent");

	cl_uint np = 0;
	cl_platform_id ps[16];
	if (cl.GetPlatformIDs(16, ps, &np) != CL_SUCCESS || np == 0)
		die(EXIT_NODEV, "no OpenCL device: no platform is installed (an ICD such as pocl-opencl-icd)");
	if (np > 16)
		np = 16;
	const char *want = getenv("TESSERA_DEVICE");
	long wanted = want && *want ? strtol(want, NULL, 10) : -1;
	int found = 0, seen = 0;
	for (int pass = 0; pass < 2 && !found; pass++) {
		seen = 0;
		for (cl_uint p = 0; p < np && !found; p++) {
			cl_device_id ds[16];
			cl_uint nd = 0;
			cl_bitfield type = wanted >= 0 || pass == 1 ? CL_DEVICE_TYPE_ALL : CL_DEVICE_TYPE_GPU;
			if (cl.GetDeviceIDs(ps[p], type, 16, ds, &nd) != CL_SUCCESS)
				continue;
			for (cl_uint d = 0; d < nd && d < 16; d++, seen++) {
				if (wanted < 0 || seen == wanted) {
					plat = ps[p];
					dev = ds[d];
					found = 1;
					break;
				}
			}
		}
		if (wanted >= 0)
			break;
	}
	if (!found && wanted >= 0)
		die(EXIT_NODEV, "no OpenCL device: TESSERA_DEVICE=%ld, but there are %d devices", wanted, seen);
	if (!found)
		die(EXIT_NODEV, "no OpenCL device: the platforms list none");
	cl_int rc;
	ctx = cl.CreateContext(NULL, 1, &dev, NULL, NULL, &rc);
	if (rc != CL_SUCCESS)
		die(EXIT_NODEV, "no OpenCL device: clCreateContext: error %d", (int)rc);
	queue = cl.CreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &rc);
	if (rc != CL_SUCCESS)
		die(EXIT_NODEV, "no OpenCL device: clCreateCommandQueue: error %d", (int)rc);
}

static void info_string(cl_uint what, int device, char *buf, size_t n) {
	size_t got = 0;
	cl_int rc = device ? cl.GetDeviceInfo(dev, what, n - 1, buf, &got) : cl.GetPlatformInfo(plat, what, n - 1, buf, &got);
	if (rc != CL_SUCCESS)
		got = 0;
	buf[got < n ? got : n - 1] = 0;
	for (char *c = buf; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
}

static void api_probe(void) {
	char name[256], driver[256], cver[256], pname[256], pver[256], dver[256];
	info_string(CL_DEVICE_NAME, 1, name, sizeof name);
	info_string(CL_DRIVER_VERSION, 1, driver, sizeof driver);
	info_string(CL_DEVICE_OPENCL_C_VERSION, 1, cver, sizeof cver);
	info_string(CL_DEVICE_VERSION, 1, dver, sizeof dver);
	info_string(CL_PLATFORM_NAME, 0, pname, sizeof pname);
	info_string(CL_PLATFORM_VERSION, 0, pver, sizeof pver);
	size_t wg = 0;
	cl_ulong local = 0, type = 0;
	cl.GetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
	cl.GetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
	cl.GetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
	printf("tessera device %s\n", name);
	printf("tessera driver %s (%s, %s)\n", driver, pname, pver);
	printf("tessera compiler %s\n", cver);
	printf("tessera arch %s%s\n", dver, (type & CL_DEVICE_TYPE_GPU) ? " gpu" : " not-gpu");
	printf("tessera max_threads %zu\n", wg);
	printf("tessera shared_bytes %llu\n", (unsigned long long)local);
}

static void build(const char *src, size_t len) {
	cl_int rc;
	program = cl.CreateProgramWithSource(ctx, 1, &src, &len, &rc);
	check(rc, "clCreateProgramWithSource");
	rc = cl.BuildProgram(program, 1, &dev, "-cl-std=CL1.2", NULL, NULL);
	if (rc != CL_SUCCESS) {
		size_t n = 0;
		cl.GetProgramBuildInfo(program, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
		char *log = malloc(n + 1);
		if (log && cl.GetProgramBuildInfo(program, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL) == CL_SUCCESS) {
			log[n] = 0;
			fprintf(stderr, "%s\n", log);
		}
		die(EXIT_BUILD, "the program does not build: OpenCL error %d", (int)rc);
	}
}

static void api_compile(const char *src, size_t len, const char *out) {
	build(src, len);
	write_file(out, src, len);
}

static void api_load(const char *prog, size_t len, launch_t *ls, int nl) {
	build(prog, len);
	kernels = calloc((size_t)nl, sizeof *kernels);
	if (!kernels)
		die(EXIT_SETUP, "out of memory");
	for (int l = 0; l < nl; l++) {
		cl_int rc;
		kernels[l] = cl.CreateKernel(program, ls[l].name, &rc);
		if (rc != CL_SUCCESS)
			die(EXIT_RUN, "no kernel %s: OpenCL error %d", ls[l].name, (int)rc);
	}
}

static void *api_alloc(size_t bytes) {
	cl_int rc;
	cl_mem m = cl.CreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &rc);
	check(rc, "clCreateBuffer");
	return m;
}

static void api_upload(void *d, const float *host, size_t bytes) {
	if (bytes)
		check(cl.EnqueueWriteBuffer(queue, (cl_mem)d, 1, 0, bytes, host, 0, NULL, NULL), "clEnqueueWriteBuffer");
}

static void api_download(float *host, void *d, size_t bytes) {
	if (bytes)
		check(cl.EnqueueReadBuffer(queue, (cl_mem)d, 1, 0, bytes, host, 0, NULL, NULL), "clEnqueueReadBuffer");
}

static void api_fill(void *d, unsigned char byte, size_t bytes) {
	if (bytes >= 4)
		check(cl.EnqueueFillBuffer(queue, (cl_mem)d, &byte, 1, 0, bytes / 4 * 4, 0, NULL, NULL), "clEnqueueFillBuffer");
	check(cl.Finish(queue), "clFinish");
}

/* api_time enqueues number calls and returns the device time from the start
 * of the first launch to the end of the last. */
static double api_time(launch_t *ls, int nl, void **bufs, long long number) {
	cl_event first = NULL, last = NULL;
	for (long long n = 0; n < number; n++) {
		for (int l = 0; l < nl; l++) {
			for (int a = 0; a < ls[l].nargs; a++)
				check(cl.SetKernelArg(kernels[l], (cl_uint)a, sizeof(cl_mem), &bufs[ls[l].args[a]]), "clSetKernelArg");
			size_t local[3], global[3];
			for (int d = 0; d < 3; d++) {
				local[d] = ls[l].block[d];
				global[d] = (size_t)ls[l].grid[d] * ls[l].block[d];
			}
			int edge_first = n == 0 && l == 0, edge_last = n == number - 1 && l == nl - 1;
			cl_event ev = NULL;
			cl_int rc = cl.EnqueueNDRangeKernel(queue, kernels[l], 3, NULL, global, local, 0, NULL, (edge_first || edge_last) ? &ev : NULL);
			if (rc != CL_SUCCESS)
				die(EXIT_RUN, "launch of %s failed: OpenCL error %d", ls[l].name, (int)rc);
			if (edge_first)
				first = ev;
			if (edge_last) {
				if (last && last != first)
					cl.ReleaseEvent(last);
				last = ev;
			}
		}
	}
	check(cl.Finish(queue), "clFinish");
	cl_ulong start = 0, end = 0;
	check(cl.GetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL), "clGetEventProfilingInfo");
	check(cl.GetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL), "clGetEventProfilingInfo");
	cl.ReleaseEvent(first);
	if (last != first)
		cl.ReleaseEvent(last);
	return end > start ? (double)(end - start) * 1e-9 : 0;
}

static void api_flush(void) {
	if (!flush_buf) {
		cl_ulong cache = 0;
		cl.GetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof cache, &cache, NULL);
		flush_bytes = (size_t)(cache ? 2 * cache : 64u << 20);
		flush_buf = api_alloc(flush_bytes);
	}
	api_fill(flush_buf, 0, flush_bytes);
}
