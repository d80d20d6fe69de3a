/* Commands in flight, on the default device ($KA_DEVICE, else PoCL):
 * - a launch over many work-items returns before its kernel has run (the
 *   kernel waits on a flag the test sets only after ka_launch returned);
 * - a buffer, a kernel and its program released while a launch that uses
 *   them is still running: the release returns at once, the kernel finishes
 *   on the memory and code it was given (as OpenCL keeps released objects
 *   alive for their commands), and the wait succeeds;
 * - on the host back-end, a failure inside a kernel whose launch returned
 *   without an event reaches the next wait on the queue, once.
 * The held kernel gives up after a very large number of polls and says so,
 * so a launch that blocks until its kernel has run fails the test instead of
 * hanging it; no outcome depends on timing. */
#include "test_util.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define N (1u << 16)              /* work-items: over the host back-end's inline limit */
#define BIG ((size_t)4 << 20)     /* bytes: freed memory of this size is unmapped at once */

static const char *src =
    /* item 0 waits for flag[0], then writes the end of `out` and reads it
     * back; the others write their element. res[1] = 1: it gave up. */
    "KA_KERNEL(hold, KA_GLOBAL int *flag, KA_GLOBAL int *out, KA_GLOBAL int *res, uint n) {\n"
    "    ka_size_t i = ka_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    if (i == 0) {\n"
    "        ulong polls = 0;\n"
    "        while (!ka_atomic_load(&flag[0]))\n"
    "            if (++polls == (1ul << 36)) { res[1] = 1; break; }\n"
    "        out[n - 1] = 7;\n"
    "        res[0] = out[n - 1] + 1;\n"
    "        return;\n"
    "    }\n"
    "    out[i - 1] = (int)i;\n"
    "}\n";

static const ka_device_info *info(ka_device d) {
    const ka_device_info *di = NULL;
    KA_OK_OR_FAIL(ka_device_get_info(d, &di));
    return di;
}

/* A host device whose pool has one thread ($KA_NUM_THREADS=1, or one CPU):
 * every launch runs in the calling thread, complete on return. */
static bool one_thread(ka_device d) { return info(d)->backend == KA_BACKEND_HOST && info(d)->compute_units < 2; }

typedef struct held {
    ka_device dev;
    ka_queue q;
    ka_program prog;
    ka_kernel k;
    ka_buffer out, flagb, resb;
    int *flag, *res;
} held;

/* A device, a queue that never runs a launch in the calling thread (PoCL's
 * routing could run this one inline, where it would wait for a flag the
 * caller sets only after the launch), the program and the buffers. */
static void held_open(held *h) {
    memset(h, 0, sizeof *h);
    KA_OK_OR_FAIL(ka_device_open(NULL, &h->dev));
    ka_queue_config qc = {.inline_max_items = KA_INLINE_OFF};
    if (info(h->dev)->backend == KA_BACKEND_HOST) qc.inline_max_items = 0; /* host: the pool launch */
    KA_OK_OR_FAIL(ka_queue_create(h->dev, &qc, &h->q));
    KA_OK_OR_FAIL(ka_program_build(h->dev, src, NULL, &h->prog));
    KA_OK_OR_FAIL(ka_kernel_get(h->prog, "hold", NULL, &h->k));
    KA_OK_OR_FAIL(ka_buffer_create(h->dev, BIG, &h->out));
    KA_OK_OR_FAIL(ka_host_alloc(h->dev, 64, (void **)&h->flag));
    KA_OK_OR_FAIL(ka_host_alloc(h->dev, 64, (void **)&h->res));
    memset(h->flag, 0, 64);
    memset(h->res, 0, 64);
    KA_OK_OR_FAIL(ka_buffer_wrap(h->dev, h->flag, 64, &h->flagb));
    KA_OK_OR_FAIL(ka_buffer_wrap(h->dev, h->res, 64, &h->resb));
}

static void held_close(held *h, bool released) {
    KA_OK_OR_FAIL(ka_queue_finish(h->q)); /* the wrapped memory is the caller's: it must outlive the kernel */
    if (!released) {
        KA_OK_OR_FAIL(ka_buffer_release(h->out));
        KA_OK_OR_FAIL(ka_program_release(h->prog));
    }
    KA_OK_OR_FAIL(ka_buffer_release(h->flagb));
    KA_OK_OR_FAIL(ka_buffer_release(h->resb));
    KA_OK_OR_FAIL(ka_host_free(h->dev, h->flag));
    KA_OK_OR_FAIL(ka_host_free(h->dev, h->res));
    KA_OK_OR_FAIL(ka_queue_release(h->q));
    KA_OK_OR_FAIL(ka_device_close(h->dev));
}

static ka_status held_launch(held *h, uint32_t flags, ka_event *ev) {
    ka_range r = {.dims = 1, .size = {N}, .flags = flags};
    ka_arg a[] = {ka_arg_buffer(h->flagb), ka_arg_buffer(h->out), ka_arg_buffer(h->resb), ka_arg_u32(N)};
    return ka_launch(h->q, h->k, &r, a, 4, ev);
}

/* The flag, set through the wrapped memory the kernel polls. */
static void release_flag(held *h) { __atomic_store_n(&h->flag[0], 1, __ATOMIC_SEQ_CST); }

static void expect_ran(held *h, const char *what) {
    if (h->res[1]) fail_msg("%s: ka_launch returned only when its kernel had given up waiting", what);
    if (h->res[0] != 8) fail_msg("%s: the kernel read %d back, not 8", what, h->res[0] - 1);
}

/* Without KA_LAUNCH_ASYNC: on every device but null, the launch returns
 * before its kernel has run. */
static void launch_returns_before_run(void **state) {
    (void)state;
    held h;
    held_open(&h);
    if (info(h.dev)->backend == KA_BACKEND_NULL || one_thread(h.dev)) {
        release_flag(&h);
        held_close(&h, false);
        skip(); /* runs no kernel; or a host pool of one thread, which runs every launch in the caller */
    }
    ka_event ev;
    KA_OK_OR_FAIL(held_launch(&h, 0, &ev));
    KA_EXPECT(KA_ERR_TIMEOUT, ka_event_wait(ev, 0)); /* not complete: its item 0 waits for the flag */
    release_flag(&h);
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    expect_ran(&h, "a launch over the pool");
    held_close(&h, false);
}

/* The buffer, then the program (and its kernel), released under the
 * running launch; flags 0 or KA_LAUNCH_ASYNC. */
static void release_under(uint32_t flags, const char *what) {
    held h;
    held_open(&h);
    if (info(h.dev)->backend == KA_BACKEND_CUDA) {
        /* cuMemFree and cuModuleUnload wait for the device's work: a
         * release under a kernel that waits for the caller would wait for
         * ever. That back-end defers by blocking (docs/API.md). */
        release_flag(&h);
        held_close(&h, false);
        skip();
    }
    bool runs = info(h.dev)->backend != KA_BACKEND_NULL;
    ka_event ev;
    KA_OK_OR_FAIL(held_launch(&h, flags, &ev));
    KA_OK_OR_FAIL(ka_buffer_release(h.out));
    KA_OK_OR_FAIL(ka_program_release(h.prog));
    /* The handles are gone at once. */
    size_t bytes;
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_size(h.out, &bytes));
    ka_kernel k2;
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_kernel_get(h.prog, "hold", NULL, &k2));
    release_flag(&h);
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    if (runs) expect_ran(&h, what);
    /* More commands after the deferred releases: they were carried out. */
    KA_OK_OR_FAIL(ka_queue_finish(h.q));
    held_close(&h, true);
}

static void release_under_async_launch(void **state) {
    (void)state;
    release_under(KA_LAUNCH_ASYNC, "KA_LAUNCH_ASYNC");
}

static void release_under_pool_launch(void **state) {
    (void)state;
    ka_device d;
    KA_OK_OR_FAIL(ka_device_open(NULL, &d));
    bool one = one_thread(d);
    KA_OK_OR_FAIL(ka_device_close(d));
    if (one) skip(); /* a pool of one runs it in the caller, which would wait for ever */
    release_under(0, "a launch over the pool");
}

/* Many releases under one held launch, and a queue released with a release
 * still deferred: nothing leaks (ASan) and the device closes clean. */
static void many_releases_under_launch(void **state) {
    (void)state;
    held h;
    held_open(&h);
    if (info(h.dev)->backend == KA_BACKEND_CUDA) { /* as release_under */
        release_flag(&h);
        held_close(&h, false);
        skip();
    }
    ka_buffer extra[8];
    for (int i = 0; i < 8; i++) KA_OK_OR_FAIL(ka_buffer_create(h.dev, 4096u << i, &extra[i]));
    ka_event ev;
    KA_OK_OR_FAIL(held_launch(&h, KA_LAUNCH_ASYNC, &ev));
    for (int i = 0; i < 8; i++) KA_OK_OR_FAIL(ka_buffer_release(extra[i]));
    KA_OK_OR_FAIL(ka_buffer_release(h.out));
    KA_OK_OR_FAIL(ka_program_release(h.prog));
    release_flag(&h);
    KA_OK_OR_FAIL(ka_event_release(ev)); /* never waited: the queue's release finishes it */
    held_close(&h, true);
}

/* Host: a kernel that fails (divergent barriers) in a launch over the pool
 * without an event: the launch returns KA_OK, the next wait on the queue
 * reports the failure, naming the kernel, and the one after does not. */
static void failure_reaches_next_wait(void **state) {
    (void)state;
    ka_device dev;
    KA_OK_OR_FAIL(ka_device_open(NULL, &dev));
    if (info(dev)->backend != KA_BACKEND_HOST || one_thread(dev)) {
        KA_OK_OR_FAIL(ka_device_close(dev));
        skip(); /* divergent barriers are undefined elsewhere; a pool of one returns it from ka_launch */
    }
    static const char *div =
        "KA_KERNEL(diverge, KA_GLOBAL int *out) {\n"
        "    if (ka_local_id(0) == 0) return;\n"
        "    ka_barrier();\n"
        "    out[ka_global_id(0)] = 1;\n"
        "}\n";
    ka_queue q;
    ka_program p;
    ka_kernel k;
    ka_buffer b;
    KA_OK_OR_FAIL(ka_queue_create(dev, NULL, &q));
    KA_OK_OR_FAIL(ka_program_build(dev, div, NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "diverge", NULL, &k));
    KA_OK_OR_FAIL(ka_buffer_create(dev, N * sizeof(int), &b));
    ka_range r = {.dims = 1, .size = {N}, .workgroup = {64}};
    ka_arg a[] = {ka_arg_buffer(b)};
    KA_OK_OR_FAIL(ka_launch(q, k, &r, a, 1, NULL));
    KA_EXPECT(KA_ERR_KERNEL_FAILED, ka_queue_finish(q));
    EXPECT_DETAIL("ka_queue_finish", "kernel 'diverge'", "barrier");
    KA_OK_OR_FAIL(ka_queue_finish(q));
    /* With an event, the event's wait reports it. */
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(q, k, &r, a, 1, &ev));
    KA_EXPECT(KA_ERR_KERNEL_FAILED, ka_event_wait(ev, KA_WAIT_FOREVER));
    EXPECT_DETAIL("kernel 'diverge'", "barrier");
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_queue_finish(q));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_OK_OR_FAIL(ka_queue_release(q));
    KA_OK_OR_FAIL(ka_device_close(dev));
}

/* Host: a completion callback that launches on its own queue and on
 * another, small and over the pool, while the held launch's run completes:
 * no deadlock, every launch runs. */
static held cb_h;
static ka_queue cb_other;
static ka_buffer cb_out;
static ka_kernel cb_fill;
static _Atomic int cb_status = 1;

static void cb_launch(ka_status st, void *user) {
    (void)user;
    ka_status s = st;
    ka_arg a[] = {ka_arg_buffer(cb_out), ka_arg_i32(5)};
    if (s == KA_OK) s = ka_launch(cb_h.q, cb_fill, &(ka_range){.dims = 1, .size = {16}}, a, 2, NULL);
    if (s == KA_OK) s = ka_launch(cb_h.q, cb_fill, &(ka_range){.dims = 1, .size = {N}}, a, 2, NULL);
    if (s == KA_OK) s = ka_launch(cb_other, cb_fill, &(ka_range){.dims = 1, .size = {N}}, a, 2, NULL);
    atomic_store(&cb_status, s);
}

static const char *fill_src = "KA_KERNEL(fill, KA_GLOBAL int *out, int v) { if (ka_in_range()) out[ka_global_id(0)] = v; }\n";

static void callback_launches(void **state) {
    (void)state;
    held_open(&cb_h);
    if (info(cb_h.dev)->backend != KA_BACKEND_HOST || one_thread(cb_h.dev)) {
        release_flag(&cb_h);
        held_close(&cb_h, false);
        skip(); /* which thread runs a callback, and what it may do, is the driver's elsewhere */
    }
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(cb_h.dev, fill_src, NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill", NULL, &cb_fill));
    KA_OK_OR_FAIL(ka_queue_create(cb_h.dev, NULL, &cb_other));
    KA_OK_OR_FAIL(ka_buffer_create(cb_h.dev, N * sizeof(int), &cb_out));
    ka_event ev;
    KA_OK_OR_FAIL(held_launch(&cb_h, 0, &ev));
    KA_OK_OR_FAIL(ka_event_on_complete(ev, cb_launch, NULL));
    release_flag(&cb_h);
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    while (atomic_load(&cb_status) == 1) sched_yield(); /* the callback has run */
    KA_OK_OR_FAIL(atomic_load(&cb_status));
    KA_OK_OR_FAIL(ka_queue_finish(cb_h.q));
    KA_OK_OR_FAIL(ka_queue_finish(cb_other));
    int last;
    KA_OK_OR_FAIL(ka_buffer_read(cb_h.q, &last, cb_out, (N - 1) * sizeof(int), sizeof last));
    assert_int_equal(last, 5);
    expect_ran(&cb_h, "the held launch");
    KA_OK_OR_FAIL(ka_buffer_release(cb_out));
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_OK_OR_FAIL(ka_queue_release(cb_other));
    held_close(&cb_h, false);
}

/* A launch over the pool on a second queue while the first queue's run
 * holds the pool (its kernel waits for the flag) returns at once, and runs
 * once the first is done. */
static void second_queue_returns(void **state) {
    (void)state;
    held h;
    held_open(&h);
    if (info(h.dev)->backend == KA_BACKEND_NULL || one_thread(h.dev)) {
        release_flag(&h);
        held_close(&h, false);
        skip(); /* runs no kernel; or a host pool of one, where the held launch runs in the caller */
    }
    ka_program p;
    ka_kernel fill;
    ka_queue q2;
    ka_buffer out;
    KA_OK_OR_FAIL(ka_program_build(h.dev, fill_src, NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill", NULL, &fill));
    ka_queue_config qc = {.inline_max_items = KA_INLINE_OFF};
    if (info(h.dev)->backend == KA_BACKEND_HOST) qc.inline_max_items = 0;
    KA_OK_OR_FAIL(ka_queue_create(h.dev, &qc, &q2));
    KA_OK_OR_FAIL(ka_buffer_create(h.dev, N * sizeof(int), &out));
    KA_OK_OR_FAIL(held_launch(&h, 0, NULL));
    ka_arg a[] = {ka_arg_buffer(out), ka_arg_i32(9)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(q2, fill, &(ka_range){.dims = 1, .size = {N}}, a, 2, &ev));
    release_flag(&h);
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_queue_finish(h.q));
    expect_ran(&h, "the first queue's launch");
    int last;
    KA_OK_OR_FAIL(ka_buffer_read(q2, &last, out, (N - 1) * sizeof(int), sizeof last));
    assert_int_equal(last, 9);
    KA_OK_OR_FAIL(ka_buffer_release(out));
    KA_OK_OR_FAIL(ka_queue_release(q2));
    KA_OK_OR_FAIL(ka_program_release(p));
    held_close(&h, false);
}

/* Host: by-value arguments over what a queue's launch slot copies (5 of
 * 1000 bytes) on a launch over the pool: it runs (to completion, in the
 * calling thread and the pool) with the right values. */
static void big_arguments(void **state) {
    (void)state;
    ka_device dev;
    KA_OK_OR_FAIL(ka_device_open(NULL, &dev));
    if (info(dev)->backend != KA_BACKEND_HOST) {
        KA_OK_OR_FAIL(ka_device_close(dev));
        skip(); /* OpenCL devices may take as little as 1024 bytes of arguments */
    }
    static const char *big_src =
        "typedef struct blk { int v[250]; } blk;\n"
        "KA_KERNEL(sum5, KA_GLOBAL int *out, blk a, blk b, blk c, blk d, blk e) {\n"
        "    if (!ka_in_range()) return;\n"
        "    ka_size_t i = ka_global_id(0);\n"
        "    int j = (int)(i % 250);\n"
        "    out[i] = a.v[j] + b.v[j] + c.v[j] + d.v[j] + e.v[j];\n"
        "}\n";
    typedef struct blk { int v[250]; } blk;
    static blk b[5];
    for (int k = 0; k < 5; k++)
        for (int j = 0; j < 250; j++) b[k].v[j] = (k + 1) * 1000 + j;
    ka_queue q;
    ka_program p;
    ka_kernel k;
    ka_buffer out;
    KA_OK_OR_FAIL(ka_queue_create(dev, NULL, &q));
    KA_OK_OR_FAIL(ka_program_build(dev, big_src, NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "sum5", NULL, &k));
    KA_OK_OR_FAIL(ka_buffer_create(dev, N * sizeof(int), &out));
    ka_arg a[6] = {ka_arg_buffer(out)};
    for (int i = 0; i < 5; i++) a[i + 1] = ka_arg_bytes(&b[i], sizeof b[i]);
    KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {N}}, a, 6, NULL));
    static int got[N];
    KA_OK_OR_FAIL(ka_buffer_read(q, got, out, 0, sizeof got));
    for (uint32_t i = 0; i < N; i++) {
        int j = (int)(i % 250), want = 15000 + 5 * j;
        if (got[i] != want) fail_msg("element %u: %d, expected %d", i, got[i], want);
    }
    KA_OK_OR_FAIL(ka_buffer_release(out));
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_OK_OR_FAIL(ka_queue_release(q));
    KA_OK_OR_FAIL(ka_device_close(dev));
}

/* A release with no memory left to remember it waits for the commands
 * before it instead (the host back-end's fallback), and frees nothing in use
 * (ASan); the flag is set by another thread, whenever it runs. */
static _Atomic int fail_allocs;
static void *maybe_alloc(size_t n, void *u) {
    (void)u;
    return atomic_load(&fail_allocs) ? NULL : malloc(n);
}
static void plain_free(void *p, size_t n, void *u) {
    (void)n;
    (void)u;
    free(p);
}
static void *set_flag(void *arg) {
    __atomic_store_n(&((held *)arg)->flag[0], 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void release_without_memory(void **state) {
    (void)state;
    static const ka_allocator a = {maybe_alloc, plain_free, NULL};
    ka_set_allocator(&a); /* no libka object is alive between tests */
    held h;
    held_open(&h);
    ka_event ev;
    KA_OK_OR_FAIL(held_launch(&h, KA_LAUNCH_ASYNC, &ev));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, set_flag, &h), 0);
    atomic_store(&fail_allocs, 1);
    ka_status st = ka_buffer_release(h.out);
    atomic_store(&fail_allocs, 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    KA_OK_OR_FAIL(st);
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    if (info(h.dev)->backend != KA_BACKEND_NULL) expect_ran(&h, "KA_LAUNCH_ASYNC");
    KA_OK_OR_FAIL(ka_program_release(h.prog));
    held_close(&h, true);
    ka_set_allocator(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(launch_returns_before_run),
        cmocka_unit_test(release_under_async_launch),
        cmocka_unit_test(release_under_pool_launch),
        cmocka_unit_test(many_releases_under_launch),
        cmocka_unit_test(failure_reaches_next_wait),
        cmocka_unit_test(callback_launches),
        cmocka_unit_test(second_queue_returns),
        cmocka_unit_test(big_arguments),
        cmocka_unit_test(release_without_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
