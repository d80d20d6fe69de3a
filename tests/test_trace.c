/* Timing and tracing on the default device: ka_event_elapsed_ns on profiling
 * queues (routed small launches, threaded large ones, transfers) and its
 * errors; ka_set_tracer's spans; the KA_TRACE file, checked as JSON by
 * tests/check_trace.py, with a buffer of 16 records (several writes) and
 * after a program that exits without closing its device. */
#include "test_util.h"

#include <unistd.h>

static const char *src =
    "KA_KERNEL(saxpy, KA_GLOBAL float *y, KA_GLOBAL const float *x, float a, uint n) {\n"
    "    if (!ka_in_range()) return;\n"
    "    size_t i = ka_global_id(0);\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n"
    "KA_KERNEL(spin, KA_GLOBAL uint *out, uint iters) {\n"
    "    if (!ka_in_range()) return;\n"
    "    uint v = (uint)ka_global_id(0);\n"
    "    for (uint k = 0; k < iters; k++) v = v * 1664525u + 1013904223u;\n"
    "    out[ka_global_id(0)] = v;\n"
    "}\n";


static char g_trace[256];
static char g_self[512];

/* ---- a tracer counting spans by kind ---------------------------------- */
static _Atomic uint32_t g_begins[8], g_ends[8], g_saxpy_ends;
static _Atomic uint64_t g_saxpy_global, g_qid; /* spans of queue g_qid are counted */

static void tracer(const ka_trace_event *ev, void *user) {
    assert_ptr_equal(user, &g_begins);
    assert_true(ev->kind >= KA_TRACE_LAUNCH && ev->kind <= KA_TRACE_WAIT);
    assert_non_null(ev->name);
    assert_true(ev->queue != 0);
    if (ev->queue != atomic_load(&g_qid)) return;
    if (!ev->end) {
        atomic_fetch_add(&g_begins[ev->kind], 1);
        return;
    }
    atomic_fetch_add(&g_ends[ev->kind], 1);
    if (ev->kind == KA_TRACE_LAUNCH && !strcmp(ev->name, "saxpy")) {
        atomic_fetch_add(&g_saxpy_ends, 1);
        atomic_store(&g_saxpy_global, ev->global[0]);
        assert_int_equal(ev->status, KA_OK);
        assert_int_equal(ev->dims, 1);
        assert_true(ev->local[0] >= 1);
    }
}

/* saxpy of n items: 2 writes, a launch with an event and its wait, a fill,
 * a copy, a read, a finish and a ka_wait_all. Checks the result. */
static void saxpy_round(ka_device dev, ka_queue q, uint32_t n) {
    ka_program p;
    ka_kernel k;
    KA_OK_OR_FAIL(ka_program_build(dev, src, NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "saxpy", NULL, &k));
    float *hx = malloc(n * sizeof *hx), *hy = malloc(n * sizeof *hy);
    assert_non_null(hx);
    assert_non_null(hy);
    for (uint32_t i = 0; i < n; i++) hx[i] = (float)i, hy[i] = 1.0f;
    ka_buffer x, y, z;
    KA_OK_OR_FAIL(ka_buffer_create(dev, n * sizeof(float), &x));
    KA_OK_OR_FAIL(ka_buffer_create(dev, n * sizeof(float), &y));
    KA_OK_OR_FAIL(ka_buffer_create(dev, n * sizeof(float), &z));
    KA_OK_OR_FAIL(ka_buffer_write(q, x, 0, n * sizeof(float), hx, NULL));
    KA_OK_OR_FAIL(ka_buffer_write(q, y, 0, n * sizeof(float), hy, NULL));
    ka_arg args[] = {ka_arg_buffer(y), ka_arg_buffer(x), ka_arg_f32(2.0f), ka_arg_u32(n)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {n}}, args, 4, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    float zero = 0;
    KA_OK_OR_FAIL(ka_buffer_fill(q, z, &zero, sizeof zero, 0, n * sizeof(float), NULL));
    KA_OK_OR_FAIL(ka_buffer_copy(q, y, 0, z, 0, n * sizeof(float), &ev));
    KA_OK_OR_FAIL(ka_wait_all(&ev, 1, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_queue_finish(q));
    KA_OK_OR_FAIL(ka_buffer_read(q, z, 0, n * sizeof(float), hy, NULL));
    for (uint32_t i = 0; i < n; i++) assert_float_equal(hy[i], 2.0f * (float)i + 1.0f, 1e-3f * (2.0f * (float)i + 1.0f));
    free(hx);
    free(hy);
    KA_OK_OR_FAIL(ka_buffer_release(x));
    KA_OK_OR_FAIL(ka_buffer_release(y));
    KA_OK_OR_FAIL(ka_buffer_release(z));
    KA_OK_OR_FAIL(ka_program_release(p));
}

/* ---- timing ------------------------------------------------------------- */
/* Launches of `items` work-items of a kernel that loops: small ones run
 * inline on PoCL's `basic` device, large ones on the threaded device. */
static void timed_launch(ka_queue q, ka_kernel k, ka_buffer out, uint64_t items, uint32_t iters) {
    ka_arg a[] = {ka_arg_buffer(out), ka_arg_u32(iters)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {items}}, a, 2, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    uint64_t ns = 0;
    KA_OK_OR_FAIL(ka_event_elapsed_ns(ev, &ns));
    /* A kernel of items * iters dependent multiply-adds takes some time on
     * any device; no upper bound (the machine may be loaded). */
    assert_true(ns > 0);
    KA_OK_OR_FAIL(ka_event_release(ev));
}

static void test_elapsed(void **state) {
    (void)state;
    ka_device dev;
    KA_OK_OR_FAIL(ka_device_open(NULL, &dev));
    ka_queue q, plain;
    KA_OK_OR_FAIL(ka_queue_create(dev, &(ka_queue_config){.spin_ns = -1, .profiling = 1}, &q));
    KA_OK_OR_FAIL(ka_queue_create(dev, NULL, &plain));
    ka_program p;
    ka_kernel k;
    KA_OK_OR_FAIL(ka_program_build(dev, src, NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "spin", NULL, &k));
    /* Threaded, though adaptive routing's table goes up to 2^22 items: a size
     * class's first launches take the seed model's path, inline only up to
     * 20000 * c / (c - 1) items on c cores (40000 at most). */
    const uint64_t big = 1u << 19;
    ka_buffer out;
    KA_OK_OR_FAIL(ka_buffer_create(dev, big * 4, &out));
    ka_queue_stats before, after;
    KA_OK_OR_FAIL(ka_queue_get_stats(q, &before));
    timed_launch(q, k, out, 64, 2000); /* routed inline where PoCL routes */
    timed_launch(q, k, out, 64, 2000);
    timed_launch(q, k, out, big, 20);  /* on the threaded device */
    KA_OK_OR_FAIL(ka_queue_get_stats(q, &after));
    if (before.inline_max_items) assert_int_equal(after.inline_launches - before.inline_launches, 2);
    /* A transfer with an event times too: a 2 MB write copies for far longer
     * than the drivers' resolution (1 ns OpenCL, 0.5 us CUDA), so it is > 0. */
    uint32_t v[256] = {0}; /* the null device's write, below */
    void *host = calloc(1, big * 4);
    assert_non_null(host);
    ka_event ev;
    KA_OK_OR_FAIL(ka_buffer_write(q, out, 0, big * 4, host, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    free(host);
    uint64_t ns = 0;
    KA_OK_OR_FAIL(ka_event_elapsed_ns(ev, &ns));
    assert_true(ns > 0);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_event_elapsed_ns(ev, NULL));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_elapsed_ns(ev, &ns));
    EXPECT_DETAIL("ka_event_elapsed_ns");
    /* An empty range ran nothing: 0 ns. */
    ka_arg a[] = {ka_arg_buffer(out), ka_arg_u32(1)};
    KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {0}}, a, 2, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_elapsed_ns(ev, &ns));
    assert_int_equal(ns, 0);
    KA_OK_OR_FAIL(ka_event_release(ev));
    /* A queue without profiling: a clear refusal. */
    KA_OK_OR_FAIL(ka_launch(plain, k, &(ka_range){.dims = 1, .size = {64}}, a, 2, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_EXPECT(KA_ERR_UNSUPPORTED, ka_event_elapsed_ns(ev, &ns));
    EXPECT_DETAIL("profiling");
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_release(out));
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_OK_OR_FAIL(ka_queue_release(q));
    KA_OK_OR_FAIL(ka_queue_release(plain));
    KA_OK_OR_FAIL(ka_device_close(dev));
    /* The null back-end times nothing. */
    KA_OK_OR_FAIL(ka_device_open("null", &dev));
    KA_OK_OR_FAIL(ka_queue_create(dev, &(ka_queue_config){.profiling = 1}, &q));
    KA_OK_OR_FAIL(ka_buffer_create(dev, sizeof v, &out));
    KA_OK_OR_FAIL(ka_buffer_write(q, out, 0, sizeof v, v, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_EXPECT(KA_ERR_UNSUPPORTED, ka_event_elapsed_ns(ev, &ns));
    EXPECT_DETAIL("null");
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_release(out));
    KA_OK_OR_FAIL(ka_queue_release(q));
    KA_OK_OR_FAIL(ka_device_close(dev));
}

/* ---- tracing ------------------------------------------------------------ */
static int check_file(const char *args) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 %s %s %s", KA_TRACE_CHECK, g_trace, args);
    return system(cmd);
}

/* Spans of two rounds (a routed and a threaded saxpy) reach the tracer and
 * the file; with 16 records the buffer is written out several times. */
static void test_trace(void **state) {
    (void)state;
    ka_device dev;
    KA_OK_OR_FAIL(ka_device_open(NULL, &dev));
    ka_queue q;
    KA_OK_OR_FAIL(ka_queue_create(dev, NULL, &q));
    atomic_store(&g_qid, q.id);
    saxpy_round(dev, q, 1000);
    saxpy_round(dev, q, 300007);
    KA_OK_OR_FAIL(ka_queue_release(q)); /* finishes the queue: a span too */
    KA_OK_OR_FAIL(ka_device_close(dev)); /* writes the file */
    assert_int_equal(atomic_load(&g_saxpy_ends), 2);
    assert_true(atomic_load(&g_saxpy_global) >= 300007); /* the padded range */
    /* by kind: launch, write, read, copy, fill, finish, wait */
    static const uint32_t want[8] = {0, 2, 4, 2, 2, 2, 3, 4};
    for (int kd = KA_TRACE_LAUNCH; kd <= KA_TRACE_WAIT; kd++) {
        uint32_t b = atomic_load(&g_begins[kd]), e = atomic_load(&g_ends[kd]);
        if (b != want[kd] || e != want[kd]) fail_msg("kind %d: %u begins, %u ends, expected %u", kd, b, e, want[kd]);
    }
    char args[256];
    snprintf(args, sizeof args, "queue=%llu saxpy=2 launch=2 write=4 read=2 copy=2 fill=2 finish=3 wait=4",
             (unsigned long long)q.id);
    assert_int_equal(check_file(args), 0);
}

/* Traced launches and waits allocate nothing, while the 16 records are
 * written out several times over; so does ka_event_elapsed_ns. */
static void test_trace_no_alloc(void **state) {
    (void)state;
    ka_device dev;
    KA_OK_OR_FAIL(ka_device_open(NULL, &dev));
    ka_queue q;
    KA_OK_OR_FAIL(ka_queue_create(dev, &(ka_queue_config){.spin_ns = -1, .profiling = 1}, &q));
    ka_program p;
    ka_kernel k;
    KA_OK_OR_FAIL(ka_program_build(dev, src, NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "spin", NULL, &k));
    ka_buffer out;
    KA_OK_OR_FAIL(ka_buffer_create(dev, 4096, &out));
    ka_arg a[] = {ka_arg_buffer(out), ka_arg_u32(4)};
    for (int i = 0; i < 120; i++) {
        if (i == 20) heap_start(); /* after the warm-up */
        ka_event ev;
        uint64_t ns;
        KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {1024}}, a, 2, &ev));
        KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_event_elapsed_ns(ev, &ns));
        KA_OK_OR_FAIL(ka_event_release(ev));
    }
    assert_int_equal(heap_stop(), 0);
    KA_OK_OR_FAIL(ka_buffer_release(out));
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_OK_OR_FAIL(ka_queue_release(q));
    KA_OK_OR_FAIL(ka_device_close(dev));
}

/* A program that exits without closing its device still leaves valid JSON. */
static void test_trace_at_exit(void **state) {
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "KA_TRACE=%s.exit %s --exit-without-close", g_trace, g_self);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "python3 %s %s.exit saxpy=1 launch=1 write=2 read=1 copy=1 fill=1 finish=1 wait=2",
             KA_TRACE_CHECK, g_trace);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s.exit", g_trace);
    unlink(cmd);
}

static int exit_without_close(void) {
    ka_device dev;
    ka_queue q;
    if (ka_device_open(NULL, &dev) || ka_queue_create(dev, NULL, &q)) return 1;
    saxpy_round(dev, q, 1000);
    exit(0); /* device and queue left open: atexit writes the file */
}

int main(int argc, char **argv) {
    ssize_t n = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
    if (n <= 0) return 1;
    g_self[n] = 0;
    if (argc > 1 && !strcmp(argv[1], "--exit-without-close")) return exit_without_close();
    snprintf(g_trace, sizeof g_trace, "%s/test_trace_%d.json", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    /* Both before the first device opens: tracing is chosen there. */
    setenv("KA_TRACE", g_trace, 1);
    setenv("KA_TRACE_BUFFER", "16", 1);
    ka_set_tracer(tracer, &g_begins);
    heap_install();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elapsed),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_trace_no_alloc),
        cmocka_unit_test(test_trace_at_exit),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(g_trace);
    return r;
}
