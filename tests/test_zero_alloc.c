/* Issue 3: once a kernel is compiled, lookups, launches and waits make no
 * allocation in libka. A counting allocator is installed through
 * ka_set_allocator before anything is made; each test warms up, then counts
 * libka's allocations and frees across 10,000 iterations and asserts zero.
 *
 * Built twice: test_zero_alloc against libka, and test_zero_alloc_selftest
 * against a libka with one allocation injected into ka_launch, whose run must
 * report exactly those allocations (ctest PASS_REGULAR_EXPRESSION on the
 * failure message): the test of the test. */
#include "test_util.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <stdatomic.h>
#include <string.h>

#define N 10000

/* Counted through test_util.h's heap_*: allocations and frees apart. */
#define COUNT_END_ZERO(what)                                                                        \
    do {                                                                                            \
        heap_stop();                                                                                \
        uint64_t a_ = atomic_load(&heap()->allocs), f_ = atomic_load(&heap()->frees);               \
        if (a_ || f_) fail_msg("%s: %llu allocations and %llu frees in libka over %d iterations", what, \
                               (unsigned long long)a_, (unsigned long long)f_, N);                  \
    } while (0)

static const char *src =
    "KA_KERNEL(inc, KA_GLOBAL int *p) { if (ka_in_range()) p[ka_global_id(0)] += 1; }\n"
    KA_TEST_SPIN_KERNEL("spin")
    "KA_KERNEL(inc3, KA_GLOBAL int *p) {\n"
    "    if (ka_in_range()) p[ka_global_linear_id()] += 1;\n"
    "}\n"
    "KA_KERNEL(many, KA_GLOBAL int *p, %s) {\n"
    "    if (ka_global_id(0) == 0) p[0] += 1;\n"
    "}\n";

typedef struct fix {
    ka_device dev;
    ka_queue q;        /* the default queue: on PoCL, small launches run inline on `basic` */
    ka_queue q_thr;    /* routing off: every launch on the threaded device */
    ka_queue q_nospin; /* routing off, no spin: waits sleep on the completion callback */
    ka_queue q_spin;   /* routing off, a 50 ms spin: waits poll the event before sleeping */
    ka_program prog;
    ka_kernel inc, spin, inc3, many;
    ka_buffer buf, fbuf;
} fix;
static fix F;

static int setup(void **state) {
    (void)state;
    heap_install();
    /* 39 extra int arguments: the 40-argument kernel. */
    char args39[39 * 12], full[4096];
    int n = 0;
    for (int i = 1; i <= 39; i++) n += snprintf(args39 + n, sizeof args39 - (size_t)n, "%sint a%d", i > 1 ? ", " : "", i);
    snprintf(full, sizeof full, src, args39);
    if (ka_device_open(NULL, &F.dev) || ka_queue_create(F.dev, NULL, &F.q) ||
        ka_queue_create(F.dev, &(ka_queue_config){.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF}, &F.q_thr) ||
        ka_queue_create(F.dev, &(ka_queue_config){.spin_ns = 0, .inline_max_items = KA_INLINE_OFF}, &F.q_nospin) ||
        ka_queue_create(F.dev, &(ka_queue_config){.spin_ns = 50000000, .inline_max_items = KA_INLINE_OFF}, &F.q_spin) ||
        ka_program_build(F.dev, full, NULL, &F.prog) || ka_kernel_get(F.prog, "inc", NULL, &F.inc) ||
        ka_kernel_get(F.prog, "spin", NULL, &F.spin) || ka_kernel_get(F.prog, "inc3", NULL, &F.inc3) ||
        ka_kernel_get(F.prog, "many", NULL, &F.many) || ka_buffer_create(F.dev, 1 << 20, &F.buf) ||
        ka_buffer_create(F.dev, 1 << 20, &F.fbuf)) {
        fprintf(stderr, "setup: %s\n", ka_last_error());
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ka_buffer_release(F.buf);
    ka_buffer_release(F.fbuf);
    ka_program_release(F.prog);
    ka_queue_release(F.q);
    ka_queue_release(F.q_nospin);
    ka_queue_release(F.q_spin);
    ka_queue_release(F.q_thr);
    ka_device_close(F.dev);
    return 0;
}

static void zero(ka_queue q, ka_buffer b) {
    int z = 0;
    KA_OK_OR_FAIL(ka_buffer_fill(q, b, 0, &z, sizeof z, 1 << 20, NULL));
}

static void expect_all(ka_queue q, ka_buffer b, size_t n, int want) {
    int *h = malloc(n * sizeof *h);
    KA_OK_OR_FAIL(ka_buffer_read(q, h, b, 0, n * sizeof *h));
    for (size_t i = 0; i < n; i++)
        if (h[i] != want) fail_msg("element %zu is %d, expected %d", i, h[i], want);
    free(h);
}

static void zero_alloc_lookup(void **state) {
    (void)state;
    ka_kernel k;
    ka_kernel_config cfg = {.workgroup = {16}};
    KA_OK_OR_FAIL(ka_kernel_get(F.prog, "inc", &cfg, &k)); /* compiles the variant once */
    heap_start();
    for (int i = 0; i < N; i++) {
        ka_kernel k1, k2;
        if (ka_kernel_get(F.prog, "inc", NULL, &k1) || ka_kernel_get(F.prog, "inc", &cfg, &k2) || k1.id != F.inc.id ||
            k2.id != k.id)
            fail_msg("lookup %d: %s", i, ka_last_error());
    }
    COUNT_END_ZERO("kernel lookup");
}

/* Inline launches on Q since s0: on the default queue of a PoCL device with
 * routing every small launch here must have run inline, on a queue with
 * routing off none. */
static void expect_path(ka_queue Q, const ka_queue_stats *s0, uint64_t launches) {
    ka_queue_stats s1;
    KA_OK_OR_FAIL(ka_queue_get_stats(Q, &s1));
    uint64_t want = Q.id == F.q.id && s1.inline_max_items ? launches : 0;
    assert_int_equal(s1.inline_launches - s0->inline_launches, want);
}

static void zero_alloc_launch(void **state) {
    ka_queue Q = *(ka_queue *)*state;
    zero(Q, F.buf);
    ka_arg args[] = {ka_arg_buffer(F.buf)};
    ka_range r = {.dims = 1, .size = {100}}; /* a partial group */
    KA_OK_OR_FAIL(ka_launch(Q, F.inc, &r, args, 1, NULL)); /* warm-up: local size compiled */
    KA_OK_OR_FAIL(ka_queue_finish(Q));
    ka_queue_stats s0;
    KA_OK_OR_FAIL(ka_queue_get_stats(Q, &s0));
    heap_start();
    for (int i = 0; i < N; i++)
        if (ka_launch(Q, F.inc, &r, args, 1, NULL)) fail_msg("launch %d: %s", i, ka_last_error());
    COUNT_END_ZERO("launch");
    KA_OK_OR_FAIL(ka_queue_finish(Q));
    expect_path(Q, &s0, N);
    expect_all(Q, F.buf, 100, N + 1);
}

/* A 2-D launch of a kernel variant with a static work-group, partial groups
 * in both dimensions; the lookup of the variant is in the loop too. */
static void zero_alloc_2d_static(void **state) {
    ka_queue Q = *(ka_queue *)*state;
    zero(Q, F.buf);
    ka_kernel_config cfg = {.workgroup = {8, 4}};
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(F.prog, "inc3", &cfg, &k)); /* compiles the variant once */
    ka_arg args[] = {ka_arg_buffer(F.buf)};
    ka_range r = {.dims = 2, .size = {13, 7}};
    KA_OK_OR_FAIL(ka_launch(Q, k, &r, args, 1, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(Q));
    ka_queue_stats s0;
    KA_OK_OR_FAIL(ka_queue_get_stats(Q, &s0));
    heap_start();
    for (int i = 0; i < N; i++) {
        ka_kernel k2;
        if (ka_kernel_get(F.prog, "inc3", &cfg, &k2) || k2.id != k.id || ka_launch(Q, k2, &r, args, 1, NULL))
            fail_msg("iteration %d: %s", i, ka_last_error());
    }
    COUNT_END_ZERO("2-D launch of a static work-group variant");
    KA_OK_OR_FAIL(ka_queue_finish(Q));
    expect_path(Q, &s0, N);
    expect_all(Q, F.buf, 13 * 7, N + 1);
}

/* A recorded graph of two launches: replays, argument updates and a replay
 * with its event waited on and released allocate nothing. */
static void zero_alloc_graph(void **state) {
    ka_queue Q = *(ka_queue *)*state;
    zero(Q, F.buf);
    ka_arg args[] = {ka_arg_buffer(F.buf)};
    ka_range r = {.dims = 1, .size = {100}};
    KA_OK_OR_FAIL(ka_launch(Q, F.inc, &r, args, 1, NULL)); /* warm-up: local size compiled */
    KA_OK_OR_FAIL(ka_graph_begin(Q));
    KA_OK_OR_FAIL(ka_launch(Q, F.inc, &r, args, 1, NULL));
    KA_OK_OR_FAIL(ka_launch(Q, F.inc, &r, args, 1, NULL));
    ka_graph g;
    KA_OK_OR_FAIL(ka_graph_end(Q, &g));
    KA_OK_OR_FAIL(ka_graph_launch(Q, g, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(Q));
    heap_start();
    for (int i = 0; i < N; i++) {
        ka_event ev;
        if (ka_graph_set_arg(g, (ka_graph_node){(uint32_t)i & 1}, 0, ka_arg_buffer(F.buf)) || ka_graph_launch(Q, g, NULL) ||
            ka_graph_launch(Q, g, &ev) || ka_event_wait(ev, KA_WAIT_FOREVER) || ka_event_release(ev))
            fail_msg("graph iteration %d: %s", i, ka_last_error());
    }
    COUNT_END_ZERO("graph replay");
    KA_OK_OR_FAIL(ka_queue_finish(Q));
    KA_OK_OR_FAIL(ka_graph_release(g));
    expect_all(Q, F.buf, 100, 4 * N + 3);
}

/* Waits that poll the event for up to 50 ms before sleeping: a short kernel
 * on the threaded device ends within the spin, not through the callback (on
 * 2 loaded cores the spinner holds one, and PoCL's worker may wait for the
 * other for milliseconds). */
static void zero_alloc_launch_wait_spin(void **state) {
    (void)state;
    zero(F.q_spin, F.buf);
    ka_arg args[] = {ka_arg_buffer(F.buf)};
    ka_range r = {.dims = 1, .size = {64}};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(F.q_spin, F.inc, &r, args, 1, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    ka_queue_stats s0, s1;
    KA_OK_OR_FAIL(ka_queue_get_stats(F.q_spin, &s0));
    heap_start();
    for (int i = 0; i < N; i++) {
        if (ka_launch(F.q_spin, F.inc, &r, args, 1, &ev) || ka_event_wait(ev, KA_WAIT_FOREVER) || ka_event_release(ev))
            fail_msg("iteration %d: %s", i, ka_last_error());
    }
    COUNT_END_ZERO("launch + wait with a spin before sleeping");
    KA_OK_OR_FAIL(ka_queue_get_stats(F.q_spin, &s1));
    uint64_t polled = s1.waits_polled - s0.waits_polled, slept = s1.waits_slept - s0.waits_slept;
    print_message("spin path: %llu of %d waits ended while polling, %llu slept\n", (unsigned long long)polled, N,
                  (unsigned long long)slept);
    assert_true(polled > slept); /* with spin 0 most of these sleep (zero_alloc_launch_wait_callback) */
    expect_all(F.q_spin, F.buf, 64, N + 1);
}

static void zero_alloc_launch_wait_short(void **state) {
    ka_queue Q = *(ka_queue *)*state;
    zero(Q, F.buf);
    ka_arg args[] = {ka_arg_buffer(F.buf)};
    ka_range r = {.dims = 1, .size = {64}};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(Q, F.inc, &r, args, 1, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    heap_start();
    for (int i = 0; i < N; i++) {
        if (ka_launch(Q, F.inc, &r, args, 1, &ev) || ka_event_wait(ev, KA_WAIT_FOREVER) || ka_event_release(ev))
            fail_msg("iteration %d: %s", i, ka_last_error());
    }
    COUNT_END_ZERO("launch + wait (short kernel)");
    expect_all(Q, F.buf, 64, N + 1);
}

/* With spinning off, every wait that does not find the kernel done at its
 * first look sleeps on the completion callback. */
static void zero_alloc_launch_wait_callback(void **state) {
    (void)state;
    zero(F.q_nospin, F.buf);
    ka_arg args[] = {ka_arg_buffer(F.buf)};
    ka_range r = {.dims = 1, .size = {64}};
    ka_queue_stats s0, s1;
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(F.q_nospin, F.inc, &r, args, 1, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_queue_get_stats(F.q_nospin, &s0));
    heap_start();
    for (int i = 0; i < N; i++) {
        if (ka_launch(F.q_nospin, F.inc, &r, args, 1, &ev) || ka_event_wait(ev, KA_WAIT_FOREVER) || ka_event_release(ev))
            fail_msg("iteration %d: %s", i, ka_last_error());
    }
    COUNT_END_ZERO("launch + wait through the completion callback");
    KA_OK_OR_FAIL(ka_queue_get_stats(F.q_nospin, &s1));
    print_message("callback path taken in %llu of %d waits\n", (unsigned long long)(s1.waits_slept - s0.waits_slept), N);
    assert_true(s1.waits_slept - s0.waits_slept > 0);
    expect_all(F.q_nospin, F.buf, 64, N + 1);
}

/* A kernel of 50 ms or more: the wait must sleep on the callback. 10
 * iterations, not 10,000 (that would be over 8 minutes); each one is checked
 * to have slept. */
static void zero_alloc_launch_wait_long(void **state) {
    (void)state;
    ka_range r = {.dims = 1, .size = {256}};
    uint32_t iters = 1u << 16;
    ka_arg args[] = {ka_arg_buffer(F.fbuf), ka_arg_u32(iters)};
    /* Calibrate: grow the loop until one launch takes 50 ms. */
    for (;;) {
        args[1] = ka_arg_u32(iters);
        ka_event ev;
        int64_t t0 = now_ns();
        KA_OK_OR_FAIL(ka_launch(F.q_thr, F.spin, &r, args, 2, &ev));
        KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_event_release(ev));
        double ms = (double)(now_ns() - t0) / 1e6;
        if (ms >= 50 || iters >= (1u << 30)) break;
        iters *= 2;
    }
    const int reps = 10;
    ka_queue_stats s0, s1;
    KA_OK_OR_FAIL(ka_queue_get_stats(F.q_thr, &s0));
    heap_start();
    for (int i = 0; i < reps; i++) {
        ka_event ev;
        if (ka_launch(F.q_thr, F.spin, &r, args, 2, &ev) || ka_event_wait(ev, KA_WAIT_FOREVER) || ka_event_release(ev))
            fail_msg("iteration %d: %s", i, ka_last_error());
    }
    COUNT_END_ZERO("launch + wait of a 50 ms kernel");
    KA_OK_OR_FAIL(ka_queue_get_stats(F.q_thr, &s1));
    assert_int_equal(s1.waits_slept - s0.waits_slept, reps);
    /* Past the spin an unbounded wait sleeps on the completion callback,
     * except on CUDA, where it blocks in the driver (cuEventSynchronize), and
     * on the host back-end, whose wait joins the run or sleeps on the event. */
    const ka_device_info *di;
    KA_OK_OR_FAIL(ka_device_get_info(F.dev, &di));
    if (di->backend == KA_BACKEND_CUDA || di->backend == KA_BACKEND_HOST)
        assert_int_equal(s1.callbacks - s0.callbacks, 0);
    else assert_true(s1.callbacks - s0.callbacks >= (uint64_t)reps);
}

/* A dependency between queues (ka_queue_wait_event) in a loop: the producer
 * (routing off) launches with an event, the consumer waits for it on the
 * device and launches KA_LAUNCH_ASYNC (never inline), no allocation. */
static void zero_alloc_queue_wait(void **state) {
    ka_queue Q = *(ka_queue *)*state;
    ka_range r = {.dims = 1, .size = {64}, .flags = KA_LAUNCH_ASYNC};
    ka_arg pa[] = {ka_arg_buffer(F.buf)}, ca[] = {ka_arg_buffer(F.fbuf)};
    zero(F.q_thr, F.buf);
    zero(Q, F.fbuf);
    for (int i = 0; i < 2; i++) { /* warm-up: both launches made */
        ka_event ev;
        KA_OK_OR_FAIL(ka_launch(F.q_thr, F.inc, &r, pa, 1, &ev));
        KA_OK_OR_FAIL(ka_queue_wait_event(Q, ev));
        KA_OK_OR_FAIL(ka_event_release(ev));
        KA_OK_OR_FAIL(ka_launch(Q, F.inc, &r, ca, 1, NULL));
    }
    KA_OK_OR_FAIL(ka_queue_finish(Q));
    heap_start();
    for (int i = 0; i < N; i++) {
        ka_event ev;
        if (ka_launch(F.q_thr, F.inc, &r, pa, 1, &ev) || ka_queue_wait_event(Q, ev) || ka_event_release(ev) ||
            ka_launch(Q, F.inc, &r, ca, 1, NULL) || ((i & 255) == 255 && ka_queue_finish(Q)))
            fail_msg("iteration %d: %s", i, ka_last_error());
    }
    COUNT_END_ZERO("launch, queue wait on its event, launch");
    KA_OK_OR_FAIL(ka_queue_finish(Q));
    KA_OK_OR_FAIL(ka_queue_finish(F.q_thr));
    expect_all(F.q_thr, F.buf, 64, N + 2);
    expect_all(Q, F.fbuf, 64, N + 2);
}

static void zero_alloc_40_args(void **state) {
    ka_queue Q = *(ka_queue *)*state;
    zero(Q, F.buf);
    ka_arg args[40];
    args[0] = ka_arg_buffer(F.buf);
    for (int i = 1; i < 40; i++) args[i] = ka_arg_i32(i);
    ka_range r = {.dims = 1, .size = {8}};
    KA_OK_OR_FAIL(ka_launch(Q, F.many, &r, args, 40, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(Q));
    heap_start();
    for (int i = 0; i < N; i++) {
        ka_event ev;
        if (ka_launch(Q, F.many, &r, args, 40, &ev) || ka_event_wait(ev, KA_WAIT_FOREVER) || ka_event_release(ev))
            fail_msg("iteration %d: %s", i, ka_last_error());
    }
    COUNT_END_ZERO("40-argument launch + wait");
    expect_all(Q, F.buf, 1, N + 1);
}

static void zero_alloc_3d_partial(void **state) {
    ka_queue Q = *(ka_queue *)*state;
    zero(Q, F.buf);
    ka_arg args[] = {ka_arg_buffer(F.buf)};
    ka_range r = {.dims = 3, .size = {5, 7, 3}, .workgroup = {4, 4, 2}};
    KA_OK_OR_FAIL(ka_launch(Q, F.inc3, &r, args, 1, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(Q));
    heap_start();
    for (int i = 0; i < N; i++)
        if (ka_launch(Q, F.inc3, &r, args, 1, NULL)) fail_msg("launch %d: %s", i, ka_last_error());
    COUNT_END_ZERO("3-D launch with partial groups");
    KA_OK_OR_FAIL(ka_queue_finish(Q));
    expect_all(Q, F.buf, 5 * 7 * 3, N + 1);
}

static void zero_alloc_wait_many(void **state) {
    ka_queue Q = *(ka_queue *)*state;
    zero(Q, F.buf);
    ka_arg args[] = {ka_arg_buffer(F.buf)};
    ka_range r = {.dims = 1, .size = {64}};
    enum { M = 8 };
    ka_event evs[M];
    const int loops = N / M;
    heap_start();
    for (int i = 0; i < loops; i++) {
        for (int j = 0; j < M; j++)
            if (ka_launch(Q, F.inc, &r, args, 1, &evs[j])) fail_msg("launch: %s", ka_last_error());
        uint32_t idx;
        if (ka_wait_any(evs, M, KA_WAIT_FOREVER, &idx) || idx >= M) fail_msg("wait_any: %s", ka_last_error());
        if (ka_wait_all(evs, M, KA_WAIT_FOREVER)) fail_msg("wait_all: %s", ka_last_error());
        for (int j = 0; j < M; j++) ka_event_release(evs[j]);
    }
    COUNT_END_ZERO("ka_wait_any + ka_wait_all over 8 events");
    expect_all(Q, F.buf, 64, loops * M);
}

static _Atomic int cb_calls;
static void on_done(ka_status st, void *user) {
    (void)user;
    if (st == KA_OK) atomic_fetch_add(&cb_calls, 1);
}

/* ka_event_on_complete, with the event released at once: the user callback
 * runs on the driver's thread (or in the call, inline). */
static void zero_alloc_on_complete(void **state) {
    ka_queue Q = *(ka_queue *)*state;
    ka_arg args[] = {ka_arg_buffer(F.buf)};
    ka_range r = {.dims = 1, .size = {64}};
    atomic_store(&cb_calls, 0);
    heap_start();
    for (int i = 0; i < N; i++) {
        ka_event ev;
        if (ka_launch(Q, F.inc, &r, args, 1, &ev) || ka_event_on_complete(ev, on_done, NULL) || ka_event_release(ev))
            fail_msg("iteration %d: %s", i, ka_last_error());
        while (atomic_load(&cb_calls) <= i) sched_yield();
    }
    COUNT_END_ZERO("launch + ka_event_on_complete");
    assert_int_equal(atomic_load(&cb_calls), N);
}

/* ka_event_notify and the queue's eventfd. */
static void zero_alloc_notify(void **state) {
    ka_queue Q = *(ka_queue *)*state;
    ka_arg args[] = {ka_arg_buffer(F.buf)};
    ka_range r = {.dims = 1, .size = {64}};
    int fd;
    KA_OK_OR_FAIL(ka_queue_fd(Q, &fd));
    heap_start();
    for (int i = 0; i < N; i++) {
        ka_event ev;
        if (ka_launch(Q, F.inc, &r, args, 1, &ev) || ka_event_notify(ev) || ka_event_release(ev))
            fail_msg("iteration %d: %s", i, ka_last_error());
        struct pollfd p = {fd, POLLIN, 0};
        uint64_t n;
        if (poll(&p, 1, 10000) != 1 || read(fd, &n, sizeof n) != sizeof n) fail_msg("iteration %d: no notification", i);
    }
    COUNT_END_ZERO("launch + ka_event_notify + eventfd");
}

typedef struct worker {
    ka_queue q;
    ka_buffer b;
    int failed;
} worker;

static void *work(void *p) {
    worker *w = p;
    ka_arg args[] = {ka_arg_buffer(w->b)};
    ka_range r = {.dims = 1, .size = {64}};
    for (int i = 0; i < N / 4; i++) {
        ka_event ev;
        if (ka_launch(w->q, F.inc, &r, args, 1, &ev) || ka_event_wait(ev, KA_WAIT_FOREVER) || ka_event_release(ev)) {
            w->failed = 1;
            break;
        }
    }
    return NULL;
}

static void zero_alloc_4_threads(void **state) {
    ka_queue Q = *(ka_queue *)*state;
    ka_queue_config cfg = {.spin_ns = KA_SPIN_DEFAULT,
                           .inline_max_items = Q.id == F.q_thr.id ? KA_INLINE_OFF : 0};
    worker w[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        memset(&w[i], 0, sizeof w[i]);
        /* two threads share the fixture's queue, two have their own */
        if (i < 2) w[i].q = Q;
        else KA_OK_OR_FAIL(ka_queue_create(F.dev, &cfg, &w[i].q));
        KA_OK_OR_FAIL(ka_buffer_create(F.dev, 64 * sizeof(int), &w[i].b));
        int z = 0;
        KA_OK_OR_FAIL(ka_buffer_fill(w[i].q, w[i].b, 0, &z, sizeof z, 64 * sizeof(int), NULL));
    }
    heap_start();
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, &w[i]);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    COUNT_END_ZERO("launch + wait from 4 threads at once");
    for (int i = 0; i < 4; i++) {
        assert_false(w[i].failed);
        expect_all(w[i].q, w[i].b, 64, N / 4);
        ka_buffer_release(w[i].b);
        if (i >= 2) ka_queue_release(w[i].q);
    }
}

/* The harness itself counts: a call that does allocate is seen. */
static void harness_sees_allocations(void **state) {
    (void)state;
    heap_start();
    ka_buffer b;
    KA_OK_OR_FAIL(ka_buffer_create(F.dev, 64, &b));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    heap_stop();
    assert_true(atomic_load(&heap()->allocs) > 0);
    assert_int_equal(atomic_load(&heap()->allocs), atomic_load(&heap()->frees));
}

int main(void) {
    /* Each launch test runs on the default queue (on PoCL: inline on `basic`
     * for these small ranges) and on a queue with routing off. */
#define BOTH(f) cmocka_unit_test_prestate(f, &F.q), cmocka_unit_test_prestate(f, &F.q_thr)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(harness_sees_allocations),
        cmocka_unit_test(zero_alloc_lookup),
        BOTH(zero_alloc_launch),
        BOTH(zero_alloc_2d_static),
        BOTH(zero_alloc_graph),
        cmocka_unit_test(zero_alloc_launch_wait_spin),
        BOTH(zero_alloc_launch_wait_short),
        cmocka_unit_test(zero_alloc_launch_wait_callback),
        cmocka_unit_test(zero_alloc_launch_wait_long),
        BOTH(zero_alloc_queue_wait),
        BOTH(zero_alloc_40_args),
        BOTH(zero_alloc_3d_partial),
        BOTH(zero_alloc_wait_many),
        BOTH(zero_alloc_4_threads),
        BOTH(zero_alloc_on_complete),
        BOTH(zero_alloc_notify),
    };
#ifdef KA_INJECT_LAUNCH_ALLOC
    cmocka_set_test_filter("zero_alloc_launch");
#endif
    return cmocka_run_group_tests(tests, setup, teardown);
}
