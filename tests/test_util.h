/* Helpers shared by the tests. A program that defines KA_TEST_FIXTURE before
 * including this header also gets the default-device fixture (g_dev, g_q, ...)
 * and its kernels; the others keep their own globals of those names. */
#ifndef KA_TEST_UTIL_H
#define KA_TEST_UTIL_H
#include <ka.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <dlfcn.h>

#include "../src/backends/cuda/nvrtc_names.h" /* where NVRTC is looked for: as libka */

/* libka's heap calls, counted through ka_set_allocator: heap_install()
 * before the first libka object exists (libka frees with the allocator it
 * allocated with), then heap_start() ... heap_stop() around what must not
 * allocate; the counts are this program's. */
typedef struct heap_counts {
    _Atomic uint64_t allocs, frees;
    _Atomic int on;
} heap_counts;
static inline heap_counts *heap(void) {
    static heap_counts h;
    return &h;
}
static inline void *heap_alloc(size_t n, void *u) {
    (void)u;
    if (atomic_load(&heap()->on)) atomic_fetch_add(&heap()->allocs, 1);
    return malloc(n);
}
static inline void heap_free(void *p, size_t n, void *u) {
    (void)n;
    (void)u;
    if (atomic_load(&heap()->on)) atomic_fetch_add(&heap()->frees, 1);
    free(p);
}
static inline void heap_install(void) {
    static const ka_allocator a = {heap_alloc, heap_free, NULL};
    ka_set_allocator(&a);
}
static inline void heap_start(void) {
    atomic_store(&heap()->allocs, 0);
    atomic_store(&heap()->frees, 0);
    atomic_store(&heap()->on, 1);
}
/* Stops counting; the allocations and frees made since heap_start. */
static inline uint64_t heap_stop(void) {
    atomic_store(&heap()->on, 0);
    return atomic_load(&heap()->allocs) + atomic_load(&heap()->frees);
}

/* NVRTC through dlopen, for tests that compile CUDA code without a GPU:
 * false when no libnvrtc is found (the caller skips). */
typedef struct nvrtc_prog *nvrtc_prog;
typedef struct test_nvrtc {
    void *lib;
    int (*create)(nvrtc_prog *, const char *, const char *, int, const char *const *, const char *const *);
    int (*compile)(nvrtc_prog, int, const char *const *);
    int (*logsize)(nvrtc_prog, size_t *);
    int (*getlog)(nvrtc_prog, char *);
    int (*destroy)(nvrtc_prog *);
    int (*version)(int *, int *);
} test_nvrtc;
static inline bool test_nvrtc_open(test_nvrtc *n) {
    memset(n, 0, sizeof *n);
    n->lib = ka__nvrtc_open(0); /* libka's search order; no driver to ask for its version */
    if (!n->lib) return false;
    *(void **)&n->create = dlsym(n->lib, "nvrtcCreateProgram");
    *(void **)&n->compile = dlsym(n->lib, "nvrtcCompileProgram");
    *(void **)&n->logsize = dlsym(n->lib, "nvrtcGetProgramLogSize");
    *(void **)&n->getlog = dlsym(n->lib, "nvrtcGetProgramLog");
    *(void **)&n->destroy = dlsym(n->lib, "nvrtcDestroyProgram");
    *(void **)&n->version = dlsym(n->lib, "nvrtcVersion");
    return true;
}

/* Asserts KA_OK, printing the status and libka's detail message otherwise. */
#define KA_OK_OR_FAIL(call)                                                                           \
    do {                                                                                              \
        ka_status s_ = (call);                                                                        \
        if (s_ != KA_OK) fail_msg("%s -> %s\n%s", #call, ka_status_name(s_), ka_last_error());       \
    } while (0)

/* Asserts a given failure status, printing the detail if it differs. */
#define KA_EXPECT(status, call)                                                                       \
    do {                                                                                              \
        ka_status s_ = (call);                                                                        \
        if (s_ != (status))                                                                           \
            fail_msg("%s -> %s, expected %s\n%s", #call, ka_status_name(s_), ka_status_name(status),   \
                     ka_last_error());                                                                \
    } while (0)

/* Asserts that ka_last_error() contains every given substring. */
#define EXPECT_DETAIL(...)                                                                              \
    do {                                                                                                \
        const char *subs_[] = {__VA_ARGS__};                                                            \
        for (size_t i_ = 0; i_ < sizeof subs_ / sizeof subs_[0]; i_++)                                  \
            if (!strstr(ka_last_error(), subs_[i_]))                                                    \
                fail_msg("ka_last_error() lacks \"%s\":\n%s", subs_[i_], ka_last_error());              \
    } while (0)

/* ---- time ----------------------------------------------------------------- */

static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Polls an atomic counter until it reaches want or ms pass; returns its value. */
static inline uint32_t await_count(_Atomic uint32_t *c, uint32_t want, int ms) {
    int64_t until = now_ns() + (int64_t)ms * 1000000;
    while (atomic_load(c) < want && now_ns() < until) sleep_ms(1);
    return atomic_load(c);
}

/* ---- data and handles ------------------------------------------------------ */

/* Pseudo-random bytes, the same for the same seed. */
static inline void fill_bytes(uint8_t *p, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
}

/* Handles that were never valid. */
static const ka_buffer BAD_BUFFER __attribute__((unused)) = {0};
static const ka_queue BAD_QUEUE __attribute__((unused)) = {0};
static const ka_device BAD_DEVICE __attribute__((unused)) = {0};
static const ka_program BAD_PROGRAM __attribute__((unused)) = {0};
static const ka_kernel BAD_KERNEL __attribute__((unused)) = {0};

/* $KA_DEVICE set to val (NULL: unset) until env_pop restores it. */
static char *saved_env __attribute__((unused));
static inline void env_push(const char *val) {
    const char *old = getenv("KA_DEVICE");
    saved_env = old ? strdup(old) : NULL;
    if (val) setenv("KA_DEVICE", val, 1);
    else unsetenv("KA_DEVICE");
}
static inline void env_pop(void) {
    if (saved_env) setenv("KA_DEVICE", saved_env, 1);
    else unsetenv("KA_DEVICE");
    free(saved_env);
    saved_env = NULL;
}

static inline ka_buffer make_buffer(ka_device dev, size_t bytes) {
    ka_buffer b;
    KA_OK_OR_FAIL(ka_buffer_create(dev, bytes, &b));
    return b;
}

/* ---- kernels ---------------------------------------------------------------- */

/* A loop of iters dependent steps per work-item: the long kernel of the wait
 * and timing tests, under the given kernel name. */
#define KA_TEST_SPIN_KERNEL(name)                                                                     \
    "KA_KERNEL(" name ", KA_GLOBAL float *p, uint iters) {\n"                                        \
    "    if (!ka_in_range()) return;\n"                                                               \
    "    float x = p[ka_global_id(0)];\n"                                                             \
    "    for (uint i = 0; i < iters; i++) x = x * 0.999f + 0.5f;\n"                                   \
    "    p[ka_global_id(0)] = x;\n"                                                                   \
    "}\n"

#ifdef KA_TEST_FIXTURE
/* ---- the default-device fixture: one device, queues and program per group ---- */

/* The API tests' program. */
static const char *api_src =
    "KA_KERNEL(fill_idx, KA_GLOBAL uint *out, uint base) {\n"
    "    if (!ka_in_range()) return;\n"
    "    out[ka_global_linear_id()] = base + (uint)ka_global_linear_id();\n"
    "}\n"
    "KA_KERNEL(args3, KA_GLOBAL float *dst, float scale, uint count) {\n"
    "    if (!ka_in_range()) return;\n"
    "    size_t i = ka_global_id(0);\n"
    "    if (i < count) dst[i] = scale * (float)i;\n"
    "}\n"
    "KA_KERNEL(spin, KA_GLOBAL uint *out, uint iters) {\n"
    "    uint x = (uint)ka_global_id(0) + 1u;\n"
    "    for (uint i = 0; i < iters; i++) x = (x ^ (x >> 13)) * 0x5bd1e995u + i;\n"
    "    if (ka_in_range()) out[ka_global_id(0)] = x;\n"
    "}\n"
    "KA_KERNEL(with_local, KA_GLOBAL float *out, KA_LOCAL_ARG(float) tmp) {\n"
    "    tmp[ka_local_id(0)] = 1.0f;\n"
    "    ka_barrier();\n"
    "    if (ka_in_range()) out[ka_global_id(0)] = tmp[0];\n"
    "}\n"
    "KA_KERNEL_NOARGS(noargs) { }\n"
    "__kernel void plain_cl(__global int *p) { p[0] = 1; }\n";

static ka_device g_dev;
static ka_queue g_q;     /* default configuration (PoCL: small launches may run inline) */
static ka_queue g_qlong; /* every launch on the threaded device: the long kernel runs asynchronously */
/* PoCL runs small launches inline on its `basic` device, in the calling
 * thread; the long kernel must run asynchronously for the wait tests. */
static const ka_queue_config async_cfg = {.event_capacity = 0, .spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF};
static ka_program g_prog;
static const ka_device_info *g_info;
/* Iterations of `spin` for one work-item to run about 300 ms (calibrated). */
static uint32_t g_spin_iters;

/* The default device, its info, a default queue and src built on it. */
static inline int fixture_open(const char *src) {
    if (ka_device_open(NULL, &g_dev) != KA_OK) {
        fprintf(stderr, "no default device: %s\n", ka_last_error());
        return -1;
    }
    if (ka_device_get_info(g_dev, &g_info) != KA_OK || ka_queue_create(g_dev, NULL, &g_q) != KA_OK) {
        fprintf(stderr, "setup: %s\n", ka_last_error());
        return -1;
    }
    if (ka_program_build(g_dev, src, NULL, &g_prog) != KA_OK) {
        fprintf(stderr, "build: %s\n", ka_last_error());
        return -1;
    }
    return 0;
}

static inline void fixture_close(void) {
    ka_program_release(g_prog);
    ka_queue_release(g_q);
    ka_status st = ka_device_close(g_dev);
    if (st != KA_OK) fprintf(stderr, "teardown: ka_device_close: %s %s\n", ka_status_name(st), ka_last_error());
}

static inline double run_spin_ms(uint32_t iters) {
    ka_kernel k;
    ka_buffer b;
    if (ka_kernel_get(g_prog, "spin", NULL, &k) != KA_OK) return -1;
    if (ka_buffer_create(g_dev, 64, &b) != KA_OK) return -1;
    ka_arg a[] = {ka_arg_buffer(b), ka_arg_u32(iters)};
    int64_t t0 = now_ns();
    ka_status st = ka_launch(g_qlong, k, &(ka_range){.dims = 1, .size = {1}}, a, 2, NULL);
    if (st == KA_OK) st = ka_queue_finish(g_qlong);
    int64_t t1 = now_ns();
    ka_buffer_release(b);
    return st == KA_OK ? (double)(t1 - t0) / 1e6 : -1;
}

/* The API tests' group: api_src, plus g_qlong and the calibrated long kernel. */
static inline int group_setup(void **state) {
    (void)state;
    if (fixture_open(api_src) != 0) return -1;
    if (ka_queue_create(g_dev, &async_cfg, &g_qlong) != KA_OK) return -1;
    if (g_spin_iters) return 0;
    /* Calibrate the long kernel: a warm-up launch (the first launch of a local
     * size compiles), then double until a run takes >= 50 ms, then scale. */
    if (run_spin_ms(1) < 0) return -1;
    uint32_t iters = 1u << 16;
    double ms = 0;
    while ((ms = run_spin_ms(iters)) >= 0 && ms < 50 && iters < (1u << 30)) iters *= 2;
    if (ms < 0) return -1;
    double want = 300.0 * iters / (ms > 1 ? ms : 1);
    g_spin_iters = want > 4e9 ? 4000000000u : (uint32_t)want;
    fprintf(stderr, "[ INFO     ] long kernel: %u iterations (%.0f ms for %u)\n", g_spin_iters, ms, iters);
    return 0;
}

static inline int group_teardown(void **state) {
    (void)state;
    ka_queue_release(g_qlong);
    fixture_close();
    return 0;
}

/* For main: 1 where the default device runs kernels, 0 where it is the null
 * device (the default-device group is skipped), -1 where the fixture fails. */
static inline int default_device_runs_kernels(void) {
    if (group_setup(NULL) != 0) return -1;
    bool real_device = g_info->backend != KA_BACKEND_NULL;
    group_teardown(NULL);
    if (!real_device) fprintf(stderr, "the default device is the null device: the default-device group is skipped\n");
    return real_device;
}

static inline ka_kernel get_kernel(const char *name) {
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(g_prog, name, NULL, &k));
    return k;
}

/* Launches the ~300 ms kernel on q with an event. */
static inline ka_event launch_long(ka_queue q, ka_buffer scratch) {
    ka_kernel k = get_kernel("spin");
    ka_arg a[] = {ka_arg_buffer(scratch), ka_arg_u32(g_spin_iters)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {1}}, a, 2, &ev));
    KA_OK_OR_FAIL(ka_queue_flush(q));
    return ev;
}

/* A completion callback's record: calls and the last status. */
typedef struct cb_rec {
    _Atomic uint32_t calls;
    _Atomic int32_t status;
} cb_rec;

static inline void on_done(ka_status st, void *user) {
    cb_rec *r = user;
    atomic_store(&r->status, (int32_t)st);
    atomic_fetch_add(&r->calls, 1);
}
#endif /* KA_TEST_FIXTURE */

#endif
