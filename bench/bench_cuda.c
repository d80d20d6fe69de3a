/* Raw CUDA for the `ka-bench` comparisons: the driver API and NVRTC loaded
 * with dlopen (ka-bench does not link libcuda, as libka does not), on the
 * context libka uses for the device (its retained primary context), with a
 * stream of its own made as libka makes its queues' (non-blocking).
 *
 * Without cuda.h at build time (KA_HAVE_CUDA unset) every entry point fails
 * with "built without cuda.h". */
#include "bench_cuda.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef KA_HAVE_CUDA

bench_cu *bench_cu_open(ka_device dev, char *why, size_t len) {
    (void)dev;
    snprintf(why, len, "ka-bench was built without cuda.h: no raw CUDA comparison");
    return NULL;
}
void bench_cu_close(bench_cu *c) { (void)c; }
int bench_cu_build(bench_cu *c, const char *src, const char *name, char *why, size_t len) {
    (void)c, (void)src, (void)name, (void)why, (void)len;
    return -1;
}
int bench_cu_alloc(bench_cu *c, size_t bytes, uint64_t *dptr) {
    (void)c, (void)bytes, (void)dptr;
    return -1;
}
void bench_cu_free(bench_cu *c, uint64_t dptr) { (void)c, (void)dptr; }
int bench_cu_fill32(bench_cu *c, uint64_t dptr, uint32_t v, size_t count) {
    (void)c, (void)dptr, (void)v, (void)count;
    return -1;
}
int bench_cu_read(bench_cu *c, void *dst, uint64_t src, size_t bytes) {
    (void)c, (void)dst, (void)src, (void)bytes;
    return -1;
}
double bench_cu_launch_loop(bench_cu *c, uint64_t buf, int nargs, int iters, int mode, unsigned n, unsigned local) {
    (void)c, (void)buf, (void)nargs, (void)iters, (void)mode, (void)n, (void)local;
    return 0;
}
double bench_cu_launch_diag(bench_cu *c, uint64_t buf, int nargs, int iters, int mode, unsigned n, unsigned local,
                            char *why, size_t len) {
    (void)c, (void)buf, (void)nargs, (void)iters, (void)mode, (void)n, (void)local;
    snprintf(why, len, "ka-bench was built without cuda.h: no raw CUDA comparison");
    return -1;
}
double bench_cu_saxpy(bench_cu *c, uint64_t y, uint64_t x, float a, unsigned n, unsigned local, int iters,
                      int sync_each) {
    (void)c, (void)y, (void)x, (void)a, (void)n, (void)local, (void)iters, (void)sync_each;
    return 0;
}
double bench_cu_copy(bench_cu *c, uint64_t dst, uint64_t src, size_t bytes, int iters) {
    (void)c, (void)dst, (void)src, (void)bytes, (void)iters;
    return 0;
}
int bench_cu_write(bench_cu *c, uint64_t dst, const void *src, size_t bytes) {
    (void)c, (void)dst, (void)src, (void)bytes;
    return -1;
}
int bench_cu_chain_graph(bench_cu *c, uint64_t y, uint64_t x, const float *a, int kernels, unsigned n, unsigned local,
                         char *why, size_t len) {
    (void)c, (void)y, (void)x, (void)a, (void)kernels, (void)n, (void)local;
    snprintf(why, len, "ka-bench was built without cuda.h: no raw CUDA comparison");
    return -1;
}
double bench_cu_chain_loop(bench_cu *c, uint64_t y, uint64_t x, const float *a, int kernels, unsigned n, unsigned local,
                           int iters, int graph) {
    (void)c, (void)y, (void)x, (void)a, (void)kernels, (void)n, (void)local, (void)iters, (void)graph;
    return -1;
}
int bench_cu_stencil_graph(bench_cu *c, const bench_cu_stencil *s, char *why, size_t len) {
    (void)c, (void)s;
    snprintf(why, len, "ka-bench was built without cuda.h: no raw CUDA comparison");
    return -1;
}
int bench_cu_stencil_steps(bench_cu *c, const bench_cu_stencil *s, int steps, int graph, char *why, size_t len) {
    (void)c, (void)s, (void)steps, (void)graph;
    snprintf(why, len, "ka-bench was built without cuda.h: no raw CUDA comparison");
    return -1;
}

#else

#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <stdlib.h>

#include "../src/backends/cuda/nvrtc_names.h"

/* cuda.h renames entry points by macro (cuMemAlloc -> cuMemAlloc_v2); the
 * field, its declared type and the looked-up symbol use the same spelling. */
#define CU_FNS(X)                                                                                       \
    X(cuInit) X(cuGetErrorName) X(cuDriverGetVersion) X(cuDeviceGetAttribute) X(cuCtxSetCurrent)        \
    X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate) X(cuEventDestroy)      \
    X(cuEventRecord) X(cuEventSynchronize) X(cuEventQuery) X(cuModuleLoadData) X(cuModuleUnload)        \
    X(cuModuleGetFunction) X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyDtoDAsync)            \
    X(cuMemcpyDtoH) X(cuMemsetD32Async) X(cuMemcpyHtoD)
/* Graphs (CUDA 11.4 on): looked up but not required, so the other
 * comparisons run on older drivers. */
#define CU_OPT_FNS(X)                                                                                   \
    X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch)       \
    X(cuGraphExecDestroy) X(cuGraphDestroy)
#define NVRTC_FNS(X)                                                                                     \
    X(nvrtcCreateProgram) X(nvrtcDestroyProgram) X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize)        \
    X(nvrtcGetProgramLog) X(nvrtcGetPTXSize) X(nvrtcGetPTX) X(nvrtcGetErrorString)
#define NVRTC_OPT_FNS(X) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN)

#define FIELD(name) __typeof__(&name) name;
static struct {
    CU_FNS(FIELD)
    CU_OPT_FNS(FIELD)
} cu;
static struct {
    NVRTC_FNS(FIELD)
    NVRTC_OPT_FNS(FIELD)
} rtc;
#undef FIELD
#define STR2(x) #x
#define STR(x) STR2(x)

struct bench_cu {
    CUcontext ctx;
    CUdevice dev;
    int cc_major, cc_minor;
    CUstream stream;
    CUevent ev;       /* CU_EVENT_DISABLE_TIMING: BENCH_CU_EVENT_SYNC, BENCH_CU_POLL_DEFAULT */
    CUevent ev_block; /* libka's pool flags: BENCH_CU_POLL_BLOCKING, BENCH_CU_SYNC_BLOCKING */
    CUmodule mod;
    CUfunction fn;
    CUgraph graph; /* bench_cu_chain_graph's */
    CUgraphExec graph_exec;
};

static void *sym(void *lib, const char *name, int *bad) {
    void *p = dlsym(lib, name);
    if (!p) *bad = 1;
    return p;
}

static int load(char *why, size_t len) {
    static int state; /* 0 not tried, 1 loaded, -1 failed */
    static char reason[160];
    if (state) {
        if (state < 0) snprintf(why, len, "%s", reason);
        return state > 0 ? 0 : -1;
    }
    state = -1;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(reason, sizeof reason, "libcuda.so.1 not found (no NVIDIA driver)");
        snprintf(why, len, "%s", reason);
        return -1;
    }
    int bad = 0;
    void *p;
#define GET(name) p = sym(lib, STR(name), &bad), memcpy(&cu.name, &p, sizeof p);
#define OPT(name) p = dlsym(lib, STR(name)), memcpy(&cu.name, &p, sizeof p);
    CU_FNS(GET)
    CU_OPT_FNS(OPT)
#undef GET
#undef OPT
    if (bad || cu.cuInit(0) != CUDA_SUCCESS) {
        snprintf(reason, sizeof reason, "libcuda.so.1: %s", bad ? "an entry point is missing" : "cuInit failed");
        snprintf(why, len, "%s", reason);
        return -1;
    }
    int drv = 0;
    cu.cuDriverGetVersion(&drv);
    void *rl = ka__nvrtc_open(drv / 1000); /* libka's search order */
    if (!rl) {
        snprintf(reason, sizeof reason, "libnvrtc.so not found");
        snprintf(why, len, "%s", reason);
        return -1;
    }
#define GET(name) p = sym(rl, STR(name), &bad), memcpy(&rtc.name, &p, sizeof p);
#define OPT(name) p = dlsym(rl, STR(name)), memcpy(&rtc.name, &p, sizeof p);
    NVRTC_FNS(GET)
    NVRTC_OPT_FNS(OPT)
#undef GET
#undef OPT
    if (bad) {
        snprintf(reason, sizeof reason, "libnvrtc: an entry point is missing");
        snprintf(why, len, "%s", reason);
        return -1;
    }
    state = 1;
    return 0;
}

static const char *cuname(CUresult r) {
    const char *s = NULL;
    cu.cuGetErrorName(r, &s);
    return s ? s : "CUDA_ERROR_?";
}

bench_cu *bench_cu_open(ka_device dev, char *why, size_t len) {
    const ka_device_info *di;
    ka_native_device nat = {0};
    if (ka_device_get_info(dev, &di) != KA_OK || di->backend != KA_BACKEND_CUDA) {
        snprintf(why, len, "not a CUDA device");
        return NULL;
    }
    if (load(why, len) || ka_device_get_native(dev, &nat) != KA_OK) return NULL;
    bench_cu *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->ctx = nat.context;
    c->dev = (CUdevice)(intptr_t)nat.device;
    CUresult r;
    if ((r = cu.cuCtxSetCurrent(c->ctx)) || (r = cu.cuStreamCreate(&c->stream, CU_STREAM_NON_BLOCKING)) ||
        (r = cu.cuEventCreate(&c->ev, CU_EVENT_DISABLE_TIMING)) ||
        (r = cu.cuEventCreate(&c->ev_block, CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC))) {
        snprintf(why, len, "raw CUDA set-up: %s", cuname(r));
        if (c->ev) cu.cuEventDestroy(c->ev);
        if (c->stream) cu.cuStreamDestroy(c->stream);
        free(c);
        return NULL;
    }
    cu.cuDeviceGetAttribute(&c->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev);
    cu.cuDeviceGetAttribute(&c->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev);
    return c;
}

void bench_cu_close(bench_cu *c) {
    if (!c) return;
    cu.cuCtxSetCurrent(c->ctx);
    cu.cuStreamSynchronize(c->stream);
    if (c->graph_exec) cu.cuGraphExecDestroy(c->graph_exec);
    if (c->graph) cu.cuGraphDestroy(c->graph);
    if (c->mod) cu.cuModuleUnload(c->mod);
    cu.cuEventDestroy(c->ev);
    cu.cuEventDestroy(c->ev_block);
    cu.cuStreamDestroy(c->stream);
    free(c);
}

/* NVRTC for the device's own architecture (a cubin, as libka builds), PTX
 * for the virtual one when NVRTC gives no cubin. */
int bench_cu_build(bench_cu *c, const char *src, const char *name, char *why, size_t len) {
    nvrtcProgram p;
    nvrtcResult nr = rtc.nvrtcCreateProgram(&p, src, "raw.cu", 0, NULL, NULL);
    if (nr != NVRTC_SUCCESS) {
        snprintf(why, len, "nvrtcCreateProgram: %s", rtc.nvrtcGetErrorString(nr));
        return -1;
    }
    int cubin = rtc.nvrtcGetCUBIN != NULL;
    char arch[48];
    snprintf(arch, sizeof arch, "--gpu-architecture=%s_%d%d", cubin ? "sm" : "compute", c->cc_major, c->cc_minor);
    const char *opts[] = {arch, "-std=c++17"};
    nr = rtc.nvrtcCompileProgram(p, 2, opts);
    if (nr != NVRTC_SUCCESS) {
        size_t n = 0;
        rtc.nvrtcGetProgramLogSize(p, &n);
        char *log = malloc(n + 1);
        if (log) rtc.nvrtcGetProgramLog(p, log), log[n] = 0;
        snprintf(why, len, "nvrtcCompileProgram: %s\n%s", rtc.nvrtcGetErrorString(nr), log ? log : "");
        free(log);
        rtc.nvrtcDestroyProgram(&p);
        return -1;
    }
    size_t n = 0;
    if (cubin) rtc.nvrtcGetCUBINSize(p, &n);
    else rtc.nvrtcGetPTXSize(p, &n);
    char *img = malloc(n ? n : 1);
    if (!img) return -1;
    if (cubin) rtc.nvrtcGetCUBIN(p, img);
    else rtc.nvrtcGetPTX(p, img);
    rtc.nvrtcDestroyProgram(&p);
    CUresult r;
    cu.cuCtxSetCurrent(c->ctx);
    if (c->mod) cu.cuModuleUnload(c->mod), c->mod = NULL;
    if ((r = cu.cuModuleLoadData(&c->mod, img)) || (r = cu.cuModuleGetFunction(&c->fn, c->mod, name))) {
        snprintf(why, len, "raw CUDA module: %s", cuname(r));
        free(img);
        return -1;
    }
    free(img);
    return 0;
}

int bench_cu_alloc(bench_cu *c, size_t bytes, uint64_t *dptr) {
    CUdeviceptr p = 0;
    cu.cuCtxSetCurrent(c->ctx);
    if (cu.cuMemAlloc(&p, bytes) != CUDA_SUCCESS) return -1;
    *dptr = p;
    return 0;
}

void bench_cu_free(bench_cu *c, uint64_t dptr) {
    cu.cuCtxSetCurrent(c->ctx);
    cu.cuMemFree((CUdeviceptr)dptr);
}

int bench_cu_fill32(bench_cu *c, uint64_t dptr, uint32_t v, size_t count) {
    cu.cuCtxSetCurrent(c->ctx);
    if (cu.cuMemsetD32Async((CUdeviceptr)dptr, v, count, c->stream)) return -1;
    return cu.cuStreamSynchronize(c->stream) == CUDA_SUCCESS ? 0 : -1;
}

int bench_cu_read(bench_cu *c, void *dst, uint64_t src, size_t bytes) {
    cu.cuCtxSetCurrent(c->ctx);
    cu.cuStreamSynchronize(c->stream);
    return cu.cuMemcpyDtoH(dst, (CUdeviceptr)src, bytes) == CUDA_SUCCESS ? 0 : -1;
}

typedef struct nd_t {
    unsigned long long x, y, z, w;
} nd_t;

/* ns per iteration. The parameter array is filled every launch, as a caller
 * that changes an argument each time does (the OpenCL loop's clSetKernelArg). */
__attribute__((noinline)) double bench_cu_launch_loop(bench_cu *c, uint64_t buf, int nargs, int iters, int mode,
                                                      unsigned n, unsigned local) {
    float vals[64];
    void *params[65];
    CUdeviceptr p0 = (CUdeviceptr)buf;
    nd_t nd = {n, 1, 1, 1};
    for (int i = 0; i < 64; i++) vals[i] = (float)i;
    cu.cuCtxSetCurrent(c->ctx);
    int64_t t0 = bench_now_ns();
    for (int it = 0; it < iters; it++) {
        vals[1] = (float)it; /* one argument changes every launch */
        params[0] = &nd;
        params[1] = &p0;
        for (int a = 1; a < nargs; a++) params[a + 1] = &vals[a & 63];
        cu.cuLaunchKernel(c->fn, (n + local - 1) / local, 1, 1, local, 1, 1, 0, c->stream, params, NULL);
        if (mode == BENCH_CU_EVENT_SYNC) {
            cu.cuEventRecord(c->ev, c->stream);
            cu.cuEventSynchronize(c->ev);
        } else if (mode == BENCH_CU_STREAM_SYNC) {
            cu.cuStreamSynchronize(c->stream);
        }
    }
    int64_t t1 = bench_now_ns();
    cu.cuStreamSynchronize(c->stream);
    return (double)(t1 - t0) / iters;
}

/* The loop above with a diagnostic wait, every call checked (a failed
 * cuEventQuery must not pass for a completion). */
__attribute__((noinline)) double bench_cu_launch_diag(bench_cu *c, uint64_t buf, int nargs, int iters, int mode,
                                                      unsigned n, unsigned local, char *why, size_t len) {
    float vals[64];
    void *params[65];
    CUdeviceptr p0 = (CUdeviceptr)buf;
    nd_t nd = {n, 1, 1, 1};
    const char *call = "";
    CUresult r;
    if (mode != BENCH_CU_POLL_DEFAULT && mode != BENCH_CU_POLL_BLOCKING && mode != BENCH_CU_SYNC_BLOCKING) {
        snprintf(why, len, "bench_cu_launch_diag: mode %d is not a diagnostic wait", mode);
        return -1;
    }
    const CUevent ev = mode == BENCH_CU_POLL_DEFAULT ? c->ev : c->ev_block;
    const int sync = mode == BENCH_CU_SYNC_BLOCKING;
    for (int i = 0; i < 64; i++) vals[i] = (float)i;
    if ((r = cu.cuCtxSetCurrent(c->ctx))) {
        call = "cuCtxSetCurrent";
        goto fail;
    }
    int64_t t0 = bench_now_ns();
    for (int it = 0; it < iters; it++) {
        vals[1] = (float)it;
        params[0] = &nd;
        params[1] = &p0;
        for (int a = 1; a < nargs; a++) params[a + 1] = &vals[a & 63];
        if ((r = cu.cuLaunchKernel(c->fn, (n + local - 1) / local, 1, 1, local, 1, 1, 0, c->stream, params, NULL))) {
            call = "cuLaunchKernel";
            goto fail;
        }
        if ((r = cu.cuEventRecord(ev, c->stream))) {
            call = "cuEventRecord";
            goto fail;
        }
        if (sync) {
            if ((r = cu.cuEventSynchronize(ev))) {
                call = "cuEventSynchronize";
                goto fail;
            }
        } else {
            while ((r = cu.cuEventQuery(ev)) == CUDA_ERROR_NOT_READY) {
            }
            if (r) {
                call = "cuEventQuery";
                goto fail;
            }
        }
    }
    int64_t t1 = bench_now_ns();
    if ((r = cu.cuStreamSynchronize(c->stream))) {
        call = "cuStreamSynchronize";
        goto fail;
    }
    return (double)(t1 - t0) / iters;
fail:
    snprintf(why, len, "%s: %s", call, cuname(r));
    cu.cuStreamSynchronize(c->stream);
    return -1;
}

/* saxpy launch + stream sync, ns per iteration; the function is the built "saxpy". */
double bench_cu_saxpy(bench_cu *c, uint64_t y, uint64_t x, float a, unsigned n, unsigned local, int iters,
                      int sync_each) {
    CUdeviceptr py = (CUdeviceptr)y, px = (CUdeviceptr)x;
    nd_t nd = {n, 1, 1, 1};
    void *params[] = {&nd, &py, &px, &a, &n};
    cu.cuCtxSetCurrent(c->ctx);
    int64_t t0 = bench_now_ns();
    for (int it = 0; it < iters; it++) {
        cu.cuLaunchKernel(c->fn, (n + local - 1) / local, 1, 1, local, 1, 1, 0, c->stream, params, NULL);
        if (sync_each || it == iters - 1) cu.cuStreamSynchronize(c->stream);
    }
    return (double)(bench_now_ns() - t0) / iters;
}

/* cuMemcpyDtoDAsync + cuStreamSynchronize, ns per copy. */
double bench_cu_copy(bench_cu *c, uint64_t dst, uint64_t src, size_t bytes, int iters) {
    cu.cuCtxSetCurrent(c->ctx);
    int64_t t0 = bench_now_ns();
    for (int it = 0; it < iters; it++) {
        cu.cuMemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, bytes, c->stream);
        cu.cuStreamSynchronize(c->stream);
    }
    return (double)(bench_now_ns() - t0) / iters;
}

int bench_cu_write(bench_cu *c, uint64_t dst, const void *src, size_t bytes) {
    cu.cuCtxSetCurrent(c->ctx);
    cu.cuStreamSynchronize(c->stream);
    return cu.cuMemcpyHtoD((CUdeviceptr)dst, src, bytes) == CUDA_SUCCESS ? 0 : -1;
}

/* One step of the chain on the bench's stream: the launches a capture records
 * and the raw loop makes. */
static CUresult chain_step(bench_cu *c, CUdeviceptr *y, CUdeviceptr *x, const float *a, int kernels, nd_t *nd,
                           unsigned n, unsigned local) {
    CUresult r = CUDA_SUCCESS;
    for (int j = 0; j < kernels && !r; j++) {
        void *params[] = {nd, y, x, (void *)&a[j]};
        r = cu.cuLaunchKernel(c->fn, (n + local - 1) / local, 1, 1, local, 1, 1, 0, c->stream, params, NULL);
    }
    return r;
}

/* Captures what record(c, arg) launches on the bench's stream into the raw
 * graph and instantiates it, the graph made before destroyed. Kernel
 * parameters are copied into the nodes at capture. */
static int capture(bench_cu *c, CUresult (*record)(bench_cu *, const void *), const void *arg, char *why, size_t len) {
    if (!cu.cuStreamBeginCapture || !cu.cuStreamEndCapture || !cu.cuGraphInstantiateWithFlags || !cu.cuGraphLaunch ||
        !cu.cuGraphExecDestroy || !cu.cuGraphDestroy) {
        snprintf(why, len, "the driver has no cuGraphInstantiateWithFlags (CUDA 11.4 on)");
        return -1;
    }
    const char *call = "cuCtxSetCurrent";
    CUresult r;
    if ((r = cu.cuCtxSetCurrent(c->ctx))) goto fail;
    if (c->graph_exec) cu.cuGraphExecDestroy(c->graph_exec), c->graph_exec = NULL;
    if (c->graph) cu.cuGraphDestroy(c->graph), c->graph = NULL;
    call = "cuStreamBeginCapture";
    if ((r = cu.cuStreamBeginCapture(c->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))) goto fail;
    CUresult rl = record(c, arg);
    call = "cuStreamEndCapture";
    if ((r = cu.cuStreamEndCapture(c->stream, &c->graph))) goto fail;
    call = "cuLaunchKernel (captured)";
    if ((r = rl)) goto fail;
    call = "cuGraphInstantiateWithFlags";
    if ((r = cu.cuGraphInstantiateWithFlags(&c->graph_exec, c->graph, 0))) goto fail;
    return 0;
fail:
    snprintf(why, len, "%s: %s", call, cuname(r));
    return -1;
}

typedef struct chain_args {
    uint64_t y, x;
    const float *a;
    int kernels;
    unsigned n, local;
} chain_args;

static CUresult chain_record(bench_cu *c, const void *arg) {
    const chain_args *ca = arg;
    CUdeviceptr py = (CUdeviceptr)ca->y, px = (CUdeviceptr)ca->x;
    nd_t nd = {ca->n, 1, 1, 1};
    return chain_step(c, &py, &px, ca->a, ca->kernels, &nd, ca->n, ca->local);
}

int bench_cu_chain_graph(bench_cu *c, uint64_t y, uint64_t x, const float *a, int kernels, unsigned n, unsigned local,
                         char *why, size_t len) {
    const chain_args ca = {y, x, a, kernels, n, local};
    return capture(c, chain_record, &ca, why, len);
}

__attribute__((noinline)) double bench_cu_chain_loop(bench_cu *c, uint64_t y, uint64_t x, const float *a, int kernels,
                                                     unsigned n, unsigned local, int iters, int graph) {
    CUdeviceptr py = (CUdeviceptr)y, px = (CUdeviceptr)x;
    nd_t nd = {n, 1, 1, 1};
    CUresult r = CUDA_SUCCESS;
    if (graph && !c->graph_exec) return -1;
    cu.cuCtxSetCurrent(c->ctx);
    int64_t t0 = bench_now_ns();
    for (int it = 0; it < iters && !r; it++)
        r = graph ? cu.cuGraphLaunch(c->graph_exec, c->stream) : chain_step(c, &py, &px, a, kernels, &nd, n, local);
    if (!r) r = cu.cuStreamSynchronize(c->stream);
    int64_t t1 = bench_now_ns();
    return r ? -1 : (double)(t1 - t0) / iters;
}

/* One step of the stencil from src into dst: a launch over the grid. */
static CUresult stencil_step(bench_cu *c, const bench_cu_stencil *s, uint64_t dst, uint64_t src) {
    CUdeviceptr d = (CUdeviceptr)dst, p = (CUdeviceptr)src;
    int n = s->n;
    void *params[] = {&d, &p, &n};
    unsigned bz = s->dims == 3 ? s->block[2] : 1, gz = s->dims == 3 ? ((unsigned)n + bz - 1) / bz : 1;
    return cu.cuLaunchKernel(c->fn, ((unsigned)n + s->block[0] - 1) / s->block[0],
                             ((unsigned)n + s->block[1] - 1) / s->block[1], gz, s->block[0], s->block[1], bz, 0,
                             c->stream, params, NULL);
}

static CUresult stencil_record(bench_cu *c, const void *arg) {
    const bench_cu_stencil *s = arg;
    CUresult r = stencil_step(c, s, s->b, s->a);
    return r ? r : stencil_step(c, s, s->a, s->b);
}

int bench_cu_stencil_graph(bench_cu *c, const bench_cu_stencil *s, char *why, size_t len) {
    return capture(c, stencil_record, s, why, len);
}

int bench_cu_stencil_steps(bench_cu *c, const bench_cu_stencil *s, int steps, int graph, char *why, size_t len) {
    CUresult r = CUDA_SUCCESS;
    const char *call = graph ? "cuGraphLaunch" : "cuLaunchKernel";
    if (graph && !c->graph_exec) {
        snprintf(why, len, "no raw graph captured");
        return -1;
    }
    cu.cuCtxSetCurrent(c->ctx);
    if (graph)
        for (int it = 0; it < steps / 2 && !r; it++) r = cu.cuGraphLaunch(c->graph_exec, c->stream);
    else
        for (int it = 0; it < steps && !r; it++) r = it & 1 ? stencil_step(c, s, s->a, s->b) : stencil_step(c, s, s->b, s->a);
    if (!r && (r = cu.cuStreamSynchronize(c->stream))) call = "cuStreamSynchronize";
    if (r) snprintf(why, len, "%s: %s", call, cuname(r));
    return r ? -1 : 0;
}

#endif
