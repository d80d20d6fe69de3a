/* Issue 3, whole process: malloc, calloc, realloc, free and the aligned
 * allocators are interposed for the whole process (defined here, in the
 * executable), and each heap call made by the test's thread is attributed to
 * the shared object that called it (its return address, resolved with
 * dladdr). Over launch loops written with libka and with raw OpenCL calls on
 * the same device, kernel, argument count, event use and queue state:
 *   - libka itself makes no heap call at all;
 *   - libka's loop makes no more heap calls per iteration (median) than the
 *     raw loop: PoCL allocates per enqueue, libka adds nothing.
 * Skipped (77) in sanitizer builds, whose runtimes own malloc. */
#define _GNU_SOURCE
#include "test_util.h"

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <dlfcn.h>
#include <string.h>

#ifndef KA_SANITIZER_BUILD
/* ---- the interposer ---------------------------------------------------- */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

#define MAX_CALLS (1u << 20)
static __thread int counting;
static uintptr_t callers[MAX_CALLS];
static size_t ncalls;

static inline void note(void *ret) {
    if (counting && ncalls < MAX_CALLS) callers[ncalls++] = (uintptr_t)ret;
}
void *malloc(size_t n) {
    note(__builtin_return_address(0));
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
    note(__builtin_return_address(0));
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
    note(__builtin_return_address(0));
    return __libc_realloc(p, n);
}
void free(void *p) {
    if (p) note(__builtin_return_address(0));
    __libc_free(p);
}
int posix_memalign(void **out, size_t align, size_t n) {
    note(__builtin_return_address(0));
    void *p = __libc_memalign(align, n);
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}
void *aligned_alloc(size_t align, size_t n) {
    note(__builtin_return_address(0));
    return __libc_memalign(align, n);
}
void *memalign(size_t align, size_t n) {
    note(__builtin_return_address(0));
    return __libc_memalign(align, n);
}

/* ---- the loops --------------------------------------------------------- */
#define ITERS 400

static const char *ka_src = "KA_KERNEL(k, KA_GLOBAL float *p, float v) { if (ka_global_id(0) == 0) p[0] = v; }\n";
static const char *raw_src = "__kernel void k(ulong4 nd, __global float *p, float v) { if (get_global_id(0) == 0) p[0] = v; }\n";

typedef struct raw {
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    cl_kernel k;
    cl_mem buf;
} raw;

/* In libka's own context (the same devices and PoCL state as libka's loop);
 * program, kernel, queue and buffer of its own. */
static void raw_open(raw *r, cl_context ctx, cl_device_id d) {
    cl_int err;
    assert_int_equal(clRetainContext(ctx), CL_SUCCESS);
    r->ctx = ctx;
    r->q = clCreateCommandQueue(r->ctx, d, 0, &err);
    assert_int_equal(err, CL_SUCCESS);
    r->prog = clCreateProgramWithSource(r->ctx, 1, &raw_src, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    assert_int_equal(clBuildProgram(r->prog, 1, &d, "-cl-kernel-arg-info", NULL, NULL), CL_SUCCESS);
    r->k = clCreateKernel(r->prog, "k", &err);
    assert_int_equal(err, CL_SUCCESS);
    r->buf = clCreateBuffer(r->ctx, CL_MEM_READ_WRITE, 256, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    cl_ulong nd[4] = {64, 1, 1, 1};
    assert_int_equal(clSetKernelArg(r->k, 0, sizeof nd, nd), CL_SUCCESS);
}

static void raw_close(raw *r) {
    clReleaseMemObject(r->buf);
    clReleaseKernel(r->k);
    clReleaseProgram(r->prog);
    clReleaseCommandQueue(r->q);
    clReleaseContext(r->ctx);
}

static void CL_CALLBACK noop_cb(cl_event e, cl_int s, void *u) {
    (void)e, (void)s, (void)u;
}

enum { LAUNCH, WAIT, WAIT_CALLBACK };

/* Heap calls per iteration of the raw loop; mode: launch only, launch + wait,
 * launch + completion callback + wait. flush: on PoCL's basic device a command
 * runs at clFlush, as libka's inline launch does, and is complete then. */
static void raw_loop(raw *r, int mode, int flush, size_t *per_iter) {
    size_t n = 64, local = 64;
    cl_int bad = CL_SUCCESS; /* the first failure, checked after the loop (not counted) */
#define RAW_CHECK(x) do { cl_int e_ = (x); if (e_ != CL_SUCCESS && bad == CL_SUCCESS) bad = e_; } while (0)
    for (int i = 0; i < ITERS; i++) {
        float v = (float)i;
        size_t c0 = ncalls;
        counting = 1;
        RAW_CHECK(clSetKernelArg(r->k, 1, sizeof(cl_mem), &r->buf));
        RAW_CHECK(clSetKernelArg(r->k, 2, sizeof v, &v));
        if (mode == LAUNCH || (mode == WAIT && flush)) {
            /* On `basic` a command is complete when clFlush returns: the raw
             * launch + wait needs no event there, and libka's uses none. */
            RAW_CHECK(clEnqueueNDRangeKernel(r->q, r->k, 1, NULL, &n, &local, 0, NULL, NULL));
            if (flush) RAW_CHECK(clFlush(r->q));
        } else {
            cl_event e;
            RAW_CHECK(clEnqueueNDRangeKernel(r->q, r->k, 1, NULL, &n, &local, 0, NULL, &e));
            if (flush) RAW_CHECK(clFlush(r->q));
            if (mode == WAIT_CALLBACK) RAW_CHECK(clSetEventCallback(e, CL_COMPLETE, noop_cb, NULL));
            RAW_CHECK(clWaitForEvents(1, &e));
            RAW_CHECK(clReleaseEvent(e));
        }
        counting = 0;
        per_iter[i] = ncalls - c0;
        if (mode == LAUNCH && i % 16 == 15) clFinish(r->q); /* same queue depth as the ka loop */
    }
#undef RAW_CHECK
    assert_int_equal(bad, CL_SUCCESS);
    float last = -1;
    assert_int_equal(clEnqueueReadBuffer(r->q, r->buf, CL_TRUE, 0, sizeof last, &last, 0, NULL, NULL), CL_SUCCESS);
    assert_true(last == (float)(ITERS - 1)); /* every launch ran, the last one last */
}

static void ka_loop(ka_queue q, ka_kernel k, ka_buffer b, int mode, size_t *per_iter) {
    ka_range r = {.dims = 1, .size = {64}, .workgroup = {64}};
    ka_status bad = KA_OK; /* the first failure, checked after the loop */
    for (int i = 0; i < ITERS; i++) {
        ka_arg args[] = {ka_arg_buffer(b), ka_arg_f32((float)i)};
        ka_status st;
        size_t c0 = ncalls;
        counting = 1;
        if (mode == LAUNCH) {
            st = ka_launch(q, k, &r, args, 2, NULL);
        } else {
            ka_event ev;
            st = ka_launch(q, k, &r, args, 2, &ev);
            if (st == KA_OK) st = ka_event_wait(ev, KA_WAIT_FOREVER);
            if (st == KA_OK) st = ka_event_release(ev);
        }
        counting = 0;
        if (st != KA_OK && bad == KA_OK) bad = st;
        per_iter[i] = ncalls - c0;
        if (mode == LAUNCH && i % 16 == 15) ka_queue_finish(q);
    }
    KA_OK_OR_FAIL(bad);
    KA_OK_OR_FAIL(ka_queue_finish(q));
    float last = -1;
    KA_OK_OR_FAIL(ka_buffer_read(q, b, 0, sizeof last, &last, NULL));
    assert_true(last == (float)(ITERS - 1)); /* every launch ran, the last one last */
}

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}
static size_t median(size_t *v) {
    qsort(v, ITERS, sizeof *v, cmp_size);
    return v[ITERS / 2];
}

/* Heap calls recorded since `from` whose caller lies in libka. */
static size_t in_libka(size_t from) {
    Dl_info self;
    assert_true(dladdr((void *)ka_launch, &self) != 0);
    size_t n = 0;
    for (size_t i = from; i < ncalls; i++) {
        Dl_info info;
        if (dladdr((void *)callers[i], &info) && info.dli_fbase == self.dli_fbase) n++;
    }
    return n;
}

typedef struct path {
    const char *name;
    ka_queue_config cfg;
    int inline_path; /* the raw loop runs on `basic` with a flush */
} path;

static void compare(const path *p) {
    ka_device dev;
    ka_queue q;
    ka_program prog;
    ka_kernel k;
    ka_buffer b;
    KA_OK_OR_FAIL(ka_device_open(NULL, &dev));
    KA_OK_OR_FAIL(ka_queue_create(dev, &p->cfg, &q));
    KA_OK_OR_FAIL(ka_program_build(dev, ka_src, NULL, &prog));
    KA_OK_OR_FAIL(ka_kernel_get(prog, "k", NULL, &k));
    KA_OK_OR_FAIL(ka_buffer_create(dev, 256, &b));
    ka_native_device nat;
    KA_OK_OR_FAIL(ka_device_get_native(dev, &nat));
    if (p->inline_path && !nat.inline_device) {
        ka_buffer_release(b);
        ka_program_release(prog);
        ka_queue_release(q);
        ka_device_close(dev);
        print_message("skipped: no PoCL routing on this device\n");
        skip();
    }
    raw r;
    raw_open(&r, nat.context, p->inline_path ? nat.inline_device : nat.device);
    static size_t ka_it[ITERS], raw_it[ITERS];
    /* warm-up of both (lazy builds, work-group functions) */
    ka_loop(q, k, b, WAIT, ka_it);
    raw_loop(&r, WAIT, p->inline_path, raw_it);
    for (int mode = LAUNCH; mode <= WAIT; mode++) {
        ka_queue_stats s0, s1;
        KA_OK_OR_FAIL(ka_queue_get_stats(q, &s0));
        size_t from = ncalls;
        ka_loop(q, k, b, mode, ka_it);
        size_t own = in_libka(from);
        KA_OK_OR_FAIL(ka_queue_get_stats(q, &s1));
        /* the path under test is the one the launches took */
        assert_int_equal(s1.inline_launches - s0.inline_launches, p->inline_path ? ITERS : 0);
        /* libka arms the driver's completion callback when a wait sleeps;
         * compare with a raw loop that registers one too when it did. */
        int cb = mode == WAIT && s1.waits_slept - s0.waits_slept > ITERS / 2;
        raw_loop(&r, cb ? WAIT_CALLBACK : mode, p->inline_path, raw_it);
        size_t mk = median(ka_it), mr = median(raw_it);
        print_message("%s, %s: heap calls per iteration, median: libka %zu, raw %zu%s; made by libka itself: %zu\n",
                      p->name, mode == LAUNCH ? "launch" : "launch + wait", mk, mr,
                      cb ? " (both with a completion callback)" : "", own);
        assert_int_equal(own, 0);
        assert_true(mk <= mr);
    }
    raw_close(&r);
    ka_buffer_release(b);
    ka_program_release(prog);
    ka_queue_release(q);
    ka_device_close(dev);
}

static void threaded_path(void **state) {
    (void)state;
    path p = {"threaded device", {.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF}, 0};
    compare(&p);
}

static void inline_path(void **state) {
    (void)state;
    path p = {"inline (PoCL basic)", {.spin_ns = KA_SPIN_DEFAULT}, 1};
    compare(&p);
}

int main(void) {
    ka_device dev;
    const ka_device_info *di = NULL;
    int opencl = ka_device_open(NULL, &dev) == KA_OK && ka_device_get_info(dev, &di) == KA_OK &&
                 di->backend == KA_BACKEND_OPENCL;
    if (di) ka_device_close(dev);
    if (!opencl) {
        printf("skipped: the whole-process heap test compares against raw OpenCL and needs an OpenCL device\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(threaded_path),
        cmocka_unit_test(inline_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
    printf("skipped: malloc interposition conflicts with the sanitizer's allocator (runs in the plain build)\n");
    return 77;
}
#endif
