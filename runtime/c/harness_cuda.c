/* harness_cuda.c: the CUDA part of the GPU runner (see harness_gpu.c). It loads the
 * driver (libcuda.so.1) and NVRTC at run time and declares the few types
 * and constants it uses itself, so it needs no CUDA headers. It calls the
 * driver's versioned symbols by their exact names (cuMemAlloc_v2, ...): the
 * unversioned names of cuda.h are macros, and CUDA 13 changed the
 * signatures behind some of them (cuCtxCreate, cuMemAdvise, ...), which is
 * why the context is the device's primary context. The device is the first
 * GPU, or the TESSERA_DEVICE-th. Programs are compiled by NVRTC for the
 * device's own architecture (a CUBIN; PTX for the newest architecture NVRTC
 * knows when it does not know the device's), and timed with CUDA events. */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef struct _nvrtcProgram *nvrtcProgram;
typedef int nvrtcResult;

#define CUDA_SUCCESS 0
#define CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK 1
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK 8
#define CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE 38
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

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
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);                  /* cuMemAlloc_v2 */
	CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);    /* cuMemcpyHtoD_v2 */
	CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);          /* cuMemcpyDtoH_v2 */
	CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);     /* cuMemsetD8_v2 */
	CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
	                         unsigned, CUstream, void **, void **);
	CUresult (*EventCreate)(CUevent *, unsigned);
	CUresult (*EventRecord)(CUevent, CUstream);
	CUresult (*EventSynchronize)(CUevent);
	CUresult (*EventElapsedTime)(float *, CUevent, CUevent);     /* cuEventElapsedTime_v2 where present */
	CUresult (*GetErrorName)(CUresult, const char **);
} cu;

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
} rtc;

static CUdevice dev;
static CUcontext cuctx;
static CUmodule module;
static CUfunction *functions;
static CUevent ev_start, ev_end;
static CUdeviceptr flush_buf;
static size_t flush_bytes;
static int cc_major, cc_minor;

static const char *errname(CUresult rc) {
	const char *s = NULL;
	if (cu.GetErrorName && cu.GetErrorName(rc, &s) == CUDA_SUCCESS && s)
		return s;
	return "unknown error";
}

static void check(CUresult rc, const char *what) {
	if (rc != CUDA_SUCCESS)
		die(EXIT_RUN, "%s failed: %s (%d)", what, errname(rc), rc);
}

static void *need(void *h, const char *name, const char *lib) {
	void *p = dlsym(h, name);
	if (!p)
		die(EXIT_NODEV, "no CUDA driver: %s lacks %s (a driver older than CUDA 11?)", lib, name);
	return p;
}

static void load_nvrtc(void) {
	const char *names[] = {getenv("TESSERA_NVRTC"), "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"};
	void *h = NULL;
	const char *lib = NULL;
	for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) {
		if (names[i] && *names[i]) {
			h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
			lib = names[i];
		}
	}
	if (!h)
		die(EXIT_NODEV, "no NVRTC: none of libnvrtc.so.13, .12, .11.2 loads (set TESSERA_NVRTC to its path)");
	*(void **)&rtc.Version = need(h, "nvrtcVersion", lib);
	*(void **)&rtc.CreateProgram = need(h, "nvrtcCreateProgram", lib);
	*(void **)&rtc.CompileProgram = need(h, "nvrtcCompileProgram", lib);
	*(void **)&rtc.GetProgramLogSize = need(h, "nvrtcGetProgramLogSize", lib);
	*(void **)&rtc.GetProgramLog = need(h, "nvrtcGetProgramLog", lib);
	*(void **)&rtc.GetCUBINSize = need(h, "nvrtcGetCUBINSize", lib);
	*(void **)&rtc.GetCUBIN = need(h, "nvrtcGetCUBIN", lib);
	*(void **)&rtc.GetPTXSize = need(h, "nvrtcGetPTXSize", lib);
	*(void **)&rtc.GetPTX = need(h, "nvrtcGetPTX", lib);
	*(void **)&rtc.DestroyProgram = need(h, "nvrtcDestroyProgram", lib);
	*(void **)&rtc.GetNumSupportedArchs = need(h, "nvrtcGetNumSupportedArchs", lib);
	*(void **)&rtc.GetSupportedArchs = need(h, "nvrtcGetSupportedArchs", lib);
}

static void api_init(void) {
	runner_name = "tessera-cuda";
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		die(EXIT_NODEV, "no CUDA driver: %s", dlerror());
	const char *lib = "libcuda.so.1";
	*(void **)&cu.Init = need(h, "cuInit", lib);
	*(void **)&cu.DriverGetVersion = need(h, "cuDriverGetVersion", lib);
	*(void **)&cu.DeviceGetCount = need(h, "cuDeviceGetCount", lib);
	*(void **)&cu.DeviceGet = need(h, "cuDeviceGet", lib);
	*(void **)&cu.DeviceGetName = need(h, "cuDeviceGetName", lib);
	*(void **)&cu.DeviceGetAttribute = need(h, "cuDeviceGetAttribute", lib);
	*(void **)&cu.DevicePrimaryCtxRetain = need(h, "cuDevicePrimaryCtxRetain", lib);
	*(void **)&cu.CtxSetCurrent = need(h, "cuCtxSetCurrent", lib);
	*(void **)&cu.CtxSynchronize = need(h, "cuCtxSynchronize", lib);
	*(void **)&cu.ModuleLoadData = need(h, "cuModuleLoadData", lib);
	*(void **)&cu.ModuleGetFunction = need(h, "cuModuleGetFunction", lib);
	*(void **)&cu.MemAlloc = need(h, "cuMemAlloc_v2", lib);
	*(void **)&cu.MemcpyHtoD = need(h, "cuMemcpyHtoD_v2", lib);
	*(void **)&cu.MemcpyDtoH = need(h, "cuMemcpyDtoH_v2", lib);
	*(void **)&cu.MemsetD8 = need(h, "cuMemsetD8_v2", lib);
	*(void **)&cu.LaunchKernel = need(h, "cuLaunchKernel", lib);
	*(void **)&cu.EventCreate = need(h, "cuEventCreate", lib);
	*(void **)&cu.EventRecord = need(h, "cuEventRecord", lib);
	*(void **)&cu.EventSynchronize = need(h, "cuEventSynchronize", lib);
	*(void **)&cu.EventElapsedTime = dlsym(h, "cuEventElapsedTime_v2");
	if (!cu.EventElapsedTime)
		*(void **)&cu.EventElapsedTime = need(h, "cuEventElapsedTime", lib);
	*(void **)&cu.GetErrorName = need(h, "cuGetErrorName", lib);

	CUresult rc = cu.Init(0);
	if (rc != CUDA_SUCCESS)
		die(EXIT_NODEV, "no CUDA device: cuInit: %s", errname(rc));
	int n = 0;
	if (cu.DeviceGetCount(&n) != CUDA_SUCCESS || n == 0)
		die(EXIT_NODEV, "no CUDA device: the driver lists none");
	const char *want = getenv("TESSERA_DEVICE");
	int index = want && *want ? atoi(want) : 0;
	if (index < 0 || index >= n)
		die(EXIT_NODEV, "no CUDA device: TESSERA_DEVICE=%d, but there are %d devices", index, n);
	if ((rc = cu.DeviceGet(&dev, index)) != CUDA_SUCCESS)
		die(EXIT_NODEV, "no CUDA device: cuDeviceGet: %s", errname(rc));
	if ((rc = cu.DevicePrimaryCtxRetain(&cuctx, dev)) != CUDA_SUCCESS)
		die(EXIT_NODEV, "no CUDA device: cuDevicePrimaryCtxRetain: %s", errname(rc));
	check(cu.CtxSetCurrent(cuctx), "cuCtxSetCurrent");
	cu.DeviceGetAttribute(&cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
	cu.DeviceGetAttribute(&cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
	load_nvrtc();
}

static void api_probe(void) {
	char name[256] = {0};
	cu.DeviceGetName(name, sizeof name - 1, dev);
	int drv = 0, rmaj = 0, rmin = 0, threads = 0, shared = 0;
	cu.DriverGetVersion(&drv);
	rtc.Version(&rmaj, &rmin);
	cu.DeviceGetAttribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev);
	cu.DeviceGetAttribute(&shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, dev);
	printf("tessera device %s\n", name);
	printf("tessera driver CUDA %d.%d\n", drv / 1000, drv % 1000 / 10);
	printf("tessera compiler NVRTC %d.%d\n", rmaj, rmin);
	printf("tessera arch sm_%d%d gpu\n", cc_major, cc_minor);
	printf("tessera max_threads %d\n", threads);
	printf("tessera shared_bytes %d\n", shared);
}

/* arch_option picks --gpu-architecture: the device's own (a CUBIN) when
 * NVRTC knows it, else the newest virtual architecture NVRTC knows below it
 * (PTX the driver compiles). *cubin says which. */
static void arch_option(char *opt, size_t n, int *cubin) {
	int want = cc_major * 10 + cc_minor, best = 0, count = 0;
	rtc.GetNumSupportedArchs(&count);
	int *archs = calloc((size_t)count + 1, sizeof *archs);
	if (archs && count > 0 && rtc.GetSupportedArchs(archs) == 0) {
		for (int i = 0; i < count; i++) {
			if (archs[i] == want) {
				snprintf(opt, n, "--gpu-architecture=sm_%d", want);
				*cubin = 1;
				free(archs);
				return;
			}
			if (archs[i] < want && archs[i] > best)
				best = archs[i];
		}
	}
	free(archs);
	if (best == 0)
		die(EXIT_NODEV, "no NVRTC for this GPU: NVRTC knows no architecture up to sm_%d", want);
	snprintf(opt, n, "--gpu-architecture=compute_%d", best);
	*cubin = 0;
}

static void api_compile(const char *src, size_t len, const char *out) {
	(void)len;
	char arch[64];
	int cubin = 0;
	arch_option(arch, sizeof arch, &cubin);
	nvrtcProgram p;
	if (rtc.CreateProgram(&p, src, "kernels.cu", 0, NULL, NULL) != 0)
		die(EXIT_RUN, "nvrtcCreateProgram failed");
	const char *opts[] = {arch, "--std=c++17", "-default-device"};
	int rc = rtc.CompileProgram(p, 3, opts);
	if (rc != 0) {
		size_t n = 0;
		rtc.GetProgramLogSize(p, &n);
		char *log = malloc(n + 1);
		if (log && rtc.GetProgramLog(p, log) == 0) {
			log[n] = 0;
			fprintf(stderr, "%s\n", log);
		}
		die(EXIT_BUILD, "the program does not build: NVRTC error %d (%s)", rc, arch);
	}
	size_t n = 0;
	char *bin;
	if (cubin) {
		rtc.GetCUBINSize(p, &n);
		bin = malloc(n + 1);
		if (!bin || rtc.GetCUBIN(p, bin) != 0)
			die(EXIT_RUN, "nvrtcGetCUBIN failed");
	} else {
		rtc.GetPTXSize(p, &n);
		bin = malloc(n + 1);
		if (!bin || rtc.GetPTX(p, bin) != 0)
			die(EXIT_RUN, "nvrtcGetPTX failed");
	}
	write_file(out, bin, n);
	rtc.DestroyProgram(&p);
}

static void api_load(const char *prog, size_t len, launch_t *ls, int nl) {
	(void)len;
	check(cu.ModuleLoadData(&module, prog), "cuModuleLoadData");
	functions = calloc((size_t)nl, sizeof *functions);
	if (!functions)
		die(EXIT_SETUP, "out of memory");
	for (int l = 0; l < nl; l++) {
		CUresult rc = cu.ModuleGetFunction(&functions[l], module, ls[l].name);
		if (rc != CUDA_SUCCESS)
			die(EXIT_RUN, "no kernel %s: %s", ls[l].name, errname(rc));
	}
	check(cu.EventCreate(&ev_start, 0), "cuEventCreate");
	check(cu.EventCreate(&ev_end, 0), "cuEventCreate");
}

static void *api_alloc(size_t bytes) {
	CUdeviceptr p = 0;
	check(cu.MemAlloc(&p, bytes), "cuMemAlloc_v2");
	return (void *)(uintptr_t)p;
}

static void api_upload(void *d, const float *host, size_t bytes) {
	if (bytes)
		check(cu.MemcpyHtoD((CUdeviceptr)(uintptr_t)d, host, bytes), "cuMemcpyHtoD_v2");
}

static void api_download(float *host, void *d, size_t bytes) {
	if (bytes)
		check(cu.MemcpyDtoH(host, (CUdeviceptr)(uintptr_t)d, bytes), "cuMemcpyDtoH_v2");
}

static void api_fill(void *d, unsigned char byte, size_t bytes) {
	if (bytes)
		check(cu.MemsetD8((CUdeviceptr)(uintptr_t)d, byte, bytes), "cuMemsetD8_v2");
	check(cu.CtxSynchronize(), "cuCtxSynchronize");
}

static double api_time(launch_t *ls, int nl, void **bufs, long long number) {
	void *params[64];
	CUdeviceptr values[64];
	check(cu.EventRecord(ev_start, NULL), "cuEventRecord");
	for (long long n = 0; n < number; n++) {
		for (int l = 0; l < nl; l++) {
			for (int a = 0; a < ls[l].nargs; a++) {
				values[a] = (CUdeviceptr)(uintptr_t)bufs[ls[l].args[a]];
				params[a] = &values[a];
			}
			CUresult rc = cu.LaunchKernel(functions[l], ls[l].grid[0], ls[l].grid[1], ls[l].grid[2],
			                              ls[l].block[0], ls[l].block[1], ls[l].block[2], 0, NULL, params, NULL);
			if (rc != CUDA_SUCCESS)
				die(EXIT_RUN, "launch of %s failed: %s", ls[l].name, errname(rc));
		}
	}
	check(cu.EventRecord(ev_end, NULL), "cuEventRecord");
	check(cu.EventSynchronize(ev_end), "cuEventSynchronize");
	float ms = 0;
	check(cu.EventElapsedTime(&ms, ev_start, ev_end), "cuEventElapsedTime");
	return (double)ms * 1e-3;
}

static void api_flush(void) {
	if (!flush_buf) {
		int l2 = 0;
		cu.DeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
		flush_bytes = l2 > 0 ? 2 * (size_t)l2 : 64u << 20;
		flush_buf = (CUdeviceptr)(uintptr_t)api_alloc(flush_bytes);
	}
	api_fill((void *)(uintptr_t)flush_buf, 0, flush_bytes);
}
