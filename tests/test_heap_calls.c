/* Whole process: malloc, calloc, realloc, free and the aligned allocators
 * are interposed (defined here, in the executable), and each heap call is
 * attributed to the shared object that made it (its return address, resolved
 * with dladdr). Over launch loops written with libka and with raw OpenCL
 * calls on the same device, kernel, argument count and event use:
 *   - libka itself makes no heap call at all, in any thread (its completion
 *     callbacks run on PoCL's threads);
 *   - libka's loop makes no more allocations per iteration (median) on the
 *     calling thread than the raw loop in the same state.
 * "The same state" makes the comparison independent of load: PoCL's count
 * per enqueue moves with whether the previous command still runs, and which
 * thread frees a finished command's objects (the caller's, or PoCL's worker
 * dropping the last reference) follows the scheduler. So every measured
 * launch starts on a drained queue; allocations, not frees, are compared (a
 * command's objects are allocated by the enqueueing thread, whoever frees
 * them); a wait is measured once its command is complete, and the sleeping
 * wait is measured on a queue held by an incomplete user event, so that it
 * times out, arming the driver's completion callback every time (the raw loop
 * arms one too).
 *
 * On the host device there is no driver to compare with: what a user would
 * write instead runs the loop in their own thread and makes no heap call. So
 * there every heap call libka makes, in any thread (the caller, the pool's
 * workers, each queue's worker), is counted over whole iterations of: a small
 * launch run in the caller, large launches split over the pool (a kernel
 * without barriers, and one with barriers run as fibers), an asynchronous
 * launch with its event waited on and released, and a queue's wait on
 * another queue's pending event; after a warm-up each count must be 0.
 * Skipped (77) in sanitizer builds, whose runtimes own malloc. */
#define _GNU_SOURCE
#include "test_util.h"

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#ifndef KA_SANITIZER_BUILD
/* ---- the interposer ---------------------------------------------------- */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

#define MAX_CALLS (1u << 20)
static _Atomic int counting;           /* any thread's calls are recorded */
static uintptr_t callers[MAX_CALLS];   /* their return addresses */
static _Atomic size_t ncalls;
static __thread size_t my_allocs;      /* this thread's allocations while counting */

static inline void note(void *ret, int alloc) {
    if (!atomic_load_explicit(&counting, memory_order_relaxed)) return;
    size_t i = atomic_fetch_add_explicit(&ncalls, 1, memory_order_relaxed);
    if (i < MAX_CALLS) callers[i] = (uintptr_t)ret;
    my_allocs += (size_t)alloc;
}
void *malloc(size_t n) {
    note(__builtin_return_address(0), 1);
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
    note(__builtin_return_address(0), 1);
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
    note(__builtin_return_address(0), 1);
    return __libc_realloc(p, n);
}
void free(void *p) {
    if (p) note(__builtin_return_address(0), 0);
    __libc_free(p);
}
int posix_memalign(void **out, size_t align, size_t n) {
    note(__builtin_return_address(0), 1);
    void *p = __libc_memalign(align, n);
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}
void *aligned_alloc(size_t align, size_t n) {
    note(__builtin_return_address(0), 1);
    return __libc_memalign(align, n);
}
void *memalign(size_t align, size_t n) {
    note(__builtin_return_address(0), 1);
    return __libc_memalign(align, n);
}

static size_t c0; /* my_allocs at the start of the iteration's counted part */
/* libka's native context and threaded queue, for holding it. */
typedef struct ka_context_t {
    cl_context ctx;
    cl_command_queue q;
} ka_context_t;

static void count_on(void) {
    c0 = my_allocs;
    atomic_store(&counting, 1);
}
static size_t count_off(void) {
    atomic_store(&counting, 0);
    return my_allocs - c0;
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

/* LAUNCH: a launch on a drained queue. WAIT: launch with an event, then
 * (once the command is complete) wait and release. SLEEP: the queue is held
 * by an incomplete user event; the launch, and a 1 ms wait that must time
 * out (libka arms the driver's completion callback; the raw loop registers
 * one); then the hold is lifted and the wait and release are measured. */
enum { LAUNCH, WAIT, SLEEP };
static const char *const mode_name[] = {"launch", "launch + wait", "launch + sleeping wait"};

/* A user event holding queue q (an in-order queue: later commands wait). */
static cl_event hold(cl_context ctx, cl_command_queue q) {
    cl_int err;
    cl_event u = clCreateUserEvent(ctx, &err);
    assert_int_equal(err, CL_SUCCESS);
    assert_int_equal(clEnqueueBarrierWithWaitList(q, 1, &u, NULL), CL_SUCCESS);
    return u;
}
static void unhold(cl_event u, cl_command_queue q) {
    assert_int_equal(clSetUserEventStatus(u, CL_COMPLETE), CL_SUCCESS);
    assert_int_equal(clFinish(q), CL_SUCCESS);
    assert_int_equal(clReleaseEvent(u), CL_SUCCESS);
}

/* Allocations per iteration on this thread; inline: PoCL's `basic` device,
 * where a command runs inside clFlush and is complete then (libka's inline
 * launch asks for no native event, nor does this loop). */
static void raw_loop(raw *r, int mode, int inl, size_t *per_iter) {
    size_t n = 64, local = 64;
    cl_int bad = CL_SUCCESS; /* the first failure, checked after the loop */
#define RAW_CHECK(x) do { cl_int e_ = (x); if (e_ != CL_SUCCESS && bad == CL_SUCCESS) bad = e_; } while (0)
    for (int i = 0; i < ITERS; i++) {
        float v = (float)i;
        cl_event e = NULL, u = mode == SLEEP ? hold(r->ctx, r->q) : NULL;
        count_on();
        RAW_CHECK(clSetKernelArg(r->k, 1, sizeof(cl_mem), &r->buf));
        RAW_CHECK(clSetKernelArg(r->k, 2, sizeof v, &v));
        RAW_CHECK(clEnqueueNDRangeKernel(r->q, r->k, 1, NULL, &n, &local, 0, NULL, mode == LAUNCH || inl ? NULL : &e));
        if (inl || mode == SLEEP) RAW_CHECK(clFlush(r->q));
        if (mode == SLEEP) RAW_CHECK(clSetEventCallback(e, CL_COMPLETE, noop_cb, NULL));
        size_t got = count_off();
        if (u) unhold(u, r->q);
        else RAW_CHECK(clFinish(r->q));
        if (e) {
            count_on();
            RAW_CHECK(clWaitForEvents(1, &e));
            RAW_CHECK(clReleaseEvent(e));
            got += count_off();
        }
        per_iter[i] = got;
    }
#undef RAW_CHECK
    assert_int_equal(bad, CL_SUCCESS);
    float last = -1;
    assert_int_equal(clEnqueueReadBuffer(r->q, r->buf, CL_TRUE, 0, sizeof last, &last, 0, NULL, NULL), CL_SUCCESS);
    assert_true(last == (float)(ITERS - 1)); /* every launch ran, the last one last */
}

static void ka_loop(ka_queue q, ka_context_t *c, ka_kernel k, ka_buffer b, int mode, size_t *per_iter) {
    ka_range r = {.dims = 1, .size = {64}, .workgroup = {64}};
    ka_status bad = KA_OK; /* the first failure, checked after the loop */
#define KA_CHECK(x, want) do { ka_status s_ = (x); if (s_ != (want) && bad == KA_OK) bad = s_ ? s_ : KA_ERR_DEVICE; } while (0)
    for (int i = 0; i < ITERS; i++) {
        ka_arg args[] = {ka_arg_buffer(b), ka_arg_f32((float)i)};
        ka_event ev = {0};
        cl_event u = mode == SLEEP ? hold(c->ctx, c->q) : NULL;
        count_on();
        KA_CHECK(ka_launch(q, k, &r, args, 2, mode == LAUNCH ? NULL : &ev), KA_OK);
        if (mode == SLEEP) KA_CHECK(ka_event_wait(ev, 1000000), KA_ERR_TIMEOUT);
        size_t got = count_off();
        if (u) unhold(u, c->q);
        else KA_CHECK(ka_queue_finish(q), KA_OK);
        if (ev.id) {
            count_on();
            KA_CHECK(ka_event_wait(ev, KA_WAIT_FOREVER), KA_OK);
            KA_CHECK(ka_event_release(ev), KA_OK);
            got += count_off();
        }
        per_iter[i] = got;
    }
#undef KA_CHECK
    KA_OK_OR_FAIL(bad);
    float last = -1;
    KA_OK_OR_FAIL(ka_buffer_read(q, &last, b, 0, sizeof last));
    assert_true(last == (float)(ITERS - 1)); /* every launch ran, the last one last */
}

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}
/* Sorts v; its median. */
static size_t median(size_t *v) {
    qsort(v, ITERS, sizeof *v, cmp_size);
    return v[ITERS / 2];
}

/* Heap calls recorded since `from`, by any thread, whose caller lies in libka. */
static size_t in_libka(size_t from) {
    Dl_info self;
    assert_true(dladdr((void *)ka_launch, &self) != 0);
    size_t n = 0, to = atomic_load(&ncalls);
    for (size_t i = from; i < to && i < MAX_CALLS; i++) {
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
    ka_native_queue nq;
    KA_OK_OR_FAIL(ka_device_get_native(dev, &nat));
    KA_OK_OR_FAIL(ka_queue_get_native(q, &nq));
    if (p->inline_path && !nat.inline_device) {
        ka_buffer_release(b);
        ka_program_release(prog);
        ka_queue_release(q);
        ka_device_close(dev);
        print_message("skipped: no PoCL routing on this device\n");
        skip();
    }
    ka_context_t c = {nat.context, nq.queue};
    raw r;
    raw_open(&r, nat.context, p->inline_path ? nat.inline_device : nat.device);
    static size_t ka_it[ITERS], raw_it[ITERS];
    /* warm-up of both (lazy builds, work-group functions) */
    ka_loop(q, &c, k, b, WAIT, ka_it);
    raw_loop(&r, WAIT, p->inline_path, raw_it);
    /* The sleeping wait needs a queue that a user event can hold: not an
     * inline one (it runs each command in the calling thread). */
    int modes = p->inline_path ? WAIT : SLEEP;
    for (int mode = LAUNCH; mode <= modes; mode++) {
        ka_queue_stats s0, s1;
        KA_OK_OR_FAIL(ka_queue_get_stats(q, &s0));
        size_t from = atomic_load(&ncalls);
        ka_loop(q, &c, k, b, mode, ka_it);
        size_t own = in_libka(from);
        KA_OK_OR_FAIL(ka_queue_get_stats(q, &s1));
        /* the path under test is the one the launches took */
        assert_int_equal(s1.inline_launches - s0.inline_launches, p->inline_path ? ITERS : 0);
        if (mode == SLEEP) assert_true(s1.waits_slept - s0.waits_slept >= ITERS); /* each timed wait slept */
        raw_loop(&r, mode, p->inline_path, raw_it);
        size_t mk = median(ka_it), mr = median(raw_it);
        print_message("%s, %s: allocations per iteration on the calling thread, median (min-max): libka %zu (%zu-%zu), "
                      "raw %zu (%zu-%zu); heap calls made by libka itself, any thread: %zu\n",
                      p->name, mode_name[mode], mk, ka_it[0], ka_it[ITERS - 1], mr, raw_it[0], raw_it[ITERS - 1], own);
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

/* ka_queue_wait_event against clEnqueueBarrierWithWaitList on a second
 * queue, on an event still pending (its queue held by a user event): the same
 * state for both, every iteration. Counted: the wait's enqueue alone. */
static void queue_wait_path(void **state) {
    (void)state;
    const ka_queue_config thr = {.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF};
    ka_device dev;
    ka_queue qa, qb;
    ka_program prog;
    ka_kernel k;
    ka_buffer b;
    KA_OK_OR_FAIL(ka_device_open(NULL, &dev));
    KA_OK_OR_FAIL(ka_queue_create(dev, &thr, &qa));
    KA_OK_OR_FAIL(ka_queue_create(dev, &thr, &qb));
    KA_OK_OR_FAIL(ka_program_build(dev, ka_src, NULL, &prog));
    KA_OK_OR_FAIL(ka_kernel_get(prog, "k", NULL, &k));
    KA_OK_OR_FAIL(ka_buffer_create(dev, 256, &b));
    ka_native_device nat;
    ka_native_queue na;
    KA_OK_OR_FAIL(ka_device_get_native(dev, &nat));
    KA_OK_OR_FAIL(ka_queue_get_native(qa, &na));
    raw r;
    raw_open(&r, nat.context, nat.device);
    cl_int err;
    cl_command_queue rq2 = clCreateCommandQueue(r.ctx, nat.device, 0, &err);
    assert_int_equal(err, CL_SUCCESS);
    static size_t ka_it[ITERS], raw_it[ITERS];
    ka_range rg = {.dims = 1, .size = {64}, .workgroup = {64}};
    size_t n = 64, local = 64;
    size_t from = 0;
    for (int pass = 0; pass < 2; pass++) { /* a warm-up pass, then the measured one */
        if (pass) from = atomic_load(&ncalls);
        for (int i = 0; i < ITERS; i++) {
            ka_arg args[] = {ka_arg_buffer(b), ka_arg_f32((float)i)};
            ka_event ev;
            cl_event u = hold(nat.context, na.queue);
            KA_OK_OR_FAIL(ka_launch(qa, k, &rg, args, 2, &ev));
            count_on();
            ka_status st = ka_queue_wait_event(qb, ev);
            ka_it[i] = count_off();
            KA_OK_OR_FAIL(st);
            unhold(u, na.queue);
            KA_OK_OR_FAIL(ka_queue_finish(qb));
            KA_OK_OR_FAIL(ka_event_release(ev));
        }
    }
    size_t own = in_libka(from);
    for (int i = 0; i < ITERS; i++) {
        float v = (float)i;
        cl_event e, u = hold(r.ctx, r.q);
        assert_int_equal(clSetKernelArg(r.k, 1, sizeof(cl_mem), &r.buf), CL_SUCCESS);
        assert_int_equal(clSetKernelArg(r.k, 2, sizeof v, &v), CL_SUCCESS);
        assert_int_equal(clEnqueueNDRangeKernel(r.q, r.k, 1, NULL, &n, &local, 0, NULL, &e), CL_SUCCESS);
        count_on();
        cl_int e2 = clEnqueueBarrierWithWaitList(rq2, 1, &e, NULL);
        raw_it[i] = count_off();
        assert_int_equal(e2, CL_SUCCESS);
        unhold(u, r.q);
        assert_int_equal(clFinish(rq2), CL_SUCCESS);
        assert_int_equal(clReleaseEvent(e), CL_SUCCESS);
    }
    size_t mk = median(ka_it), mr = median(raw_it);
    print_message("queue wait on a pending event: allocations on the calling thread, median (min-max): libka %zu "
                  "(%zu-%zu), raw %zu (%zu-%zu); heap calls made by libka itself, any thread: %zu\n",
                  mk, ka_it[0], ka_it[ITERS - 1], mr, raw_it[0], raw_it[ITERS - 1], own);
    assert_int_equal(own, 0);
    assert_true(mk <= mr);
    clReleaseCommandQueue(rq2);
    raw_close(&r);
    ka_buffer_release(b);
    ka_program_release(prog);
    ka_queue_release(qa);
    ka_queue_release(qb);
    ka_device_close(dev);
}

/* ---- the host device ---------------------------------------------------- */
/* k: as above; fill: every item (the rows path); grp: local memory and a
 * barrier (work-groups of fibers); hold: spins until *flag is set, keeping
 * its queue's worker busy, so that a later command's event stays pending. */
static const char *host_src =
    "KA_KERNEL(k, KA_GLOBAL float *p, float v) { if (ka_global_id(0) == 0) p[0] = v; }\n"
    "KA_KERNEL(fill, KA_GLOBAL float *p, float v) { if (ka_in_range()) p[ka_global_id(0)] = v; }\n"
    "KA_KERNEL(grp, KA_GLOBAL float *p, float v) {\n"
    "    KA_LOCAL float t[64];\n"
    "    t[ka_local_id(0)] = v + (float)ka_local_id(0);\n"
    "    ka_barrier();\n"
    "    p[ka_global_id(0)] = t[63 - ka_local_id(0)] - (float)(63 - ka_local_id(0));\n"
    "}\n"
    "KA_KERNEL(hold, KA_GLOBAL int *flag) { while (!ka_atomic_load(&flag[0])) {} }\n";

#define HOST_BIG (1u << 16) /* work-items of the pool's launches: over the back-end's inline limit (4096) */

static struct {
    ka_device dev;
    ka_queue q, q2; /* default configuration */
    ka_program prog;
    ka_kernel k, fill, grp, hold;
    float *mem, *mem2; /* wrapped: the test reads what the kernels wrote directly */
    int *flag;
    ka_buffer b, b2, bflag;
    uint32_t workers; /* the pool's threads */
} H;

static int host_setup(void **state) {
    (void)state;
    if (ka_device_open(NULL, &H.dev) || ka_queue_create(H.dev, NULL, &H.q) || ka_queue_create(H.dev, NULL, &H.q2) ||
        ka_program_build(H.dev, host_src, NULL, &H.prog) || ka_kernel_get(H.prog, "k", NULL, &H.k) ||
        ka_kernel_get(H.prog, "fill", NULL, &H.fill) || ka_kernel_get(H.prog, "grp", NULL, &H.grp) ||
        ka_kernel_get(H.prog, "hold", NULL, &H.hold) ||
        ka_host_alloc(H.dev, HOST_BIG * sizeof(float), (void **)&H.mem) ||
        ka_host_alloc(H.dev, HOST_BIG * sizeof(float), (void **)&H.mem2) ||
        ka_host_alloc(H.dev, 64 * sizeof(int), (void **)&H.flag) ||
        ka_buffer_wrap(H.dev, H.mem, HOST_BIG * sizeof(float), &H.b) ||
        ka_buffer_wrap(H.dev, H.mem2, HOST_BIG * sizeof(float), &H.b2) ||
        ka_buffer_wrap(H.dev, H.flag, 64 * sizeof(int), &H.bflag)) {
        fprintf(stderr, "host_setup: %s\n", ka_last_error());
        return -1;
    }
    const ka_device_info *di;
    if (ka_device_get_info(H.dev, &di)) return -1;
    H.workers = di->compute_units;
    return 0;
}

static int host_teardown(void **state) {
    (void)state;
    ka_buffer_release(H.b);
    ka_buffer_release(H.b2);
    ka_buffer_release(H.bflag);
    ka_host_free(H.dev, H.mem);
    ka_host_free(H.dev, H.mem2);
    ka_host_free(H.dev, H.flag);
    ka_program_release(H.prog);
    ka_queue_release(H.q);
    ka_queue_release(H.q2);
    ka_device_close(H.dev);
    return 0;
}

/* Every heap call of the process, any thread, from `from` on: libka's and
 * the rest. The rest is reported, not asserted: it is the user's kernel
 * object's and the C library's (a thread's first use of a dlopen'ed object's
 * thread-local storage allocates in the loader). */
static void host_report(const char *what, size_t from, size_t iters) {
    size_t own = in_libka(from), all = atomic_load(&ncalls) - from;
    print_message("host device, %s, %zu iterations (no raw driver on this device to compare with: a loop of your own "
                  "makes no heap call, so libka must make none): heap calls made by libka itself, any thread: %zu; "
                  "all heap calls in the process: %zu\n",
                  what, iters, own, all);
    assert_int_equal(own, 0);
}

/* One iteration: k's launch with an event, its wait and release; flags
 * KA_LAUNCH_ASYNC or none. The value is checked in the wrapped memory. */
static void host_launch_wait(ka_kernel k, uint64_t items, uint32_t wg, uint32_t flags, float v, ka_status *bad) {
    ka_range r = {.dims = 1, .size = {items}, .workgroup = {wg}, .flags = flags};
    ka_arg args[] = {ka_arg_buffer(H.b), ka_arg_f32(v)};
    ka_event ev;
    ka_status st = ka_launch(H.q, k, &r, args, 2, &ev);
    if (st == KA_OK) st = ka_event_wait(ev, KA_WAIT_FOREVER);
    if (st == KA_OK && H.mem[0] != v) st = KA_ERR_DEVICE;
    if (st == KA_OK) st = ka_event_release(ev);
    if (st != KA_OK && *bad == KA_OK) *bad = st;
}

/* Warm-up, then ITERS counted iterations (launch, wait, release; then the
 * queue drained, so its worker's part is counted too). */
static void host_case(const char *what, ka_kernel k, uint64_t items, uint32_t wg, uint32_t flags) {
    ka_status bad = KA_OK;
    for (int i = 0; i < ITERS; i++) host_launch_wait(k, items, wg, flags, (float)i, &bad);
    KA_OK_OR_FAIL(ka_queue_finish(H.q));
    KA_OK_OR_FAIL(bad);
    size_t from = atomic_load(&ncalls);
    count_on();
    for (int i = 0; i < ITERS; i++) host_launch_wait(k, items, wg, flags, (float)(ITERS + i), &bad);
    ka_status fin = ka_queue_finish(H.q);
    count_off();
    KA_OK_OR_FAIL(bad);
    KA_OK_OR_FAIL(fin);
    for (uint64_t i = 0; i < items; i += k.id == H.k.id ? items : 1) /* every item (k: item 0) wrote the last value */
        if (H.mem[i] != (float)(2 * ITERS - 1)) fail_msg("%s: element %llu is %g", what, (unsigned long long)i, H.mem[i]);
    host_report(what, from, ITERS);
}

static void host_inline(void **state) {
    (void)state;
    host_case("small launch run in the caller + wait", H.k, 64, 64, 0);
}

static void host_pool_rows(void **state) {
    (void)state;
    if (H.workers < 2) {
        print_message("skipped: a pool of one thread runs every launch in the caller\n");
        skip();
    }
    host_case("large launch split over the pool + wait", H.fill, HOST_BIG, 64, 0);
}

static void host_pool_fibers(void **state) {
    (void)state;
    if (H.workers < 2) {
        print_message("skipped: a pool of one thread runs every launch in the caller\n");
        skip();
    }
    host_case("large launch with barriers (fibers) split over the pool + wait", H.grp, HOST_BIG, 64, 0);
}

static void host_async(void **state) {
    (void)state;
    host_case("KA_LAUNCH_ASYNC launch (the queue's worker) + event wait + release", H.fill, 64, 64, KA_LAUNCH_ASYNC);
}

/* The producer queue is held by `hold` until the flag is set, so its
 * launch's event is pending at the consumer's ka_queue_wait_event (checked)
 * and the consumer's worker waits on it. Counted: whole iterations. */
static void host_queue_wait(void **state) {
    (void)state;
    ka_range one = {.dims = 1, .size = {1}, .flags = KA_LAUNCH_ASYNC};
    ka_range r = {.dims = 1, .size = {64}, .workgroup = {64}, .flags = KA_LAUNCH_ASYNC};
    ka_arg ha[] = {ka_arg_buffer(H.bflag)};
    size_t from = 0, pending = 0;
    ka_status bad = KA_OK;
#define HQ_CHECK(x) do { ka_status s_ = (x); if (s_ != KA_OK && bad == KA_OK) bad = s_; } while (0)
    for (int pass = 0; pass < 2; pass++) { /* a warm-up pass, then the counted one */
        if (pass) {
            from = atomic_load(&ncalls);
            count_on();
        }
        for (int i = 0; i < ITERS; i++) {
            ka_arg pa[] = {ka_arg_buffer(H.b), ka_arg_f32((float)i)}, ca[] = {ka_arg_buffer(H.b2), ka_arg_f32((float)i)};
            ka_event ev;
            __atomic_store_n(&H.flag[0], 0, __ATOMIC_RELEASE);
            HQ_CHECK(ka_launch(H.q, H.hold, &one, ha, 1, NULL));
            HQ_CHECK(ka_launch(H.q, H.k, &r, pa, 2, &ev));
            HQ_CHECK(ka_queue_wait_event(H.q2, ev));
            HQ_CHECK(ka_launch(H.q2, H.fill, &r, ca, 2, NULL));
            if (pass) pending += ka_event_wait(ev, 0) == KA_ERR_TIMEOUT;
            __atomic_store_n(&H.flag[0], 1, __ATOMIC_RELEASE);
            HQ_CHECK(ka_queue_finish(H.q2));
            HQ_CHECK(ka_event_release(ev));
            HQ_CHECK(ka_queue_finish(H.q));
            if (bad != KA_OK) break;
        }
    }
    count_off();
#undef HQ_CHECK
    KA_OK_OR_FAIL(bad);
    assert_int_equal(pending, ITERS); /* the hold kept every event pending until the flag */
    assert_true(H.mem[0] == (float)(ITERS - 1) && H.mem2[63] == (float)(ITERS - 1));
    host_report("ka_queue_wait_event on another queue's pending event, launch after it, finish", from, ITERS);
}

int main(void) {
    ka_device dev;
    const ka_device_info *di = NULL;
    int backend = ka_device_open(NULL, &dev) == KA_OK && ka_device_get_info(dev, &di) == KA_OK ? (int)di->backend : -1;
    if (di) ka_device_close(dev);
    if (backend == KA_BACKEND_HOST) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(host_inline),
            cmocka_unit_test(host_pool_rows),
            cmocka_unit_test(host_pool_fibers),
            cmocka_unit_test(host_async),
            cmocka_unit_test(host_queue_wait),
        };
        return cmocka_run_group_tests(tests, host_setup, host_teardown);
    }
    if (backend != KA_BACKEND_OPENCL) {
        printf("skipped: the whole-process heap test runs on OpenCL devices (against raw OpenCL) and on the host "
               "device; the default device is neither\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(threaded_path),
        cmocka_unit_test(inline_path),
        cmocka_unit_test(queue_wait_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
    printf("skipped: malloc interposition conflicts with the sanitizer's allocator (runs in the plain build)\n");
    return 77;
}
#endif
