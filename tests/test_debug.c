/* KA_DEBUG=1 (docs/API.md, "Debug mode"), on the default device (PoCL unless
 * $KA_DEVICE) and on the host back-end: a kernel writing past the end of a
 * buffer makes the next wait on its queue (ka_event_wait, ka_wait_all,
 * ka_wait_any, ka_queue_finish) return KA_ERR_OUT_OF_BOUNDS naming the
 * buffer, the bytes and the kernel, logged as an error, with no crash; the
 * overrun is reported once; in-bounds kernels pass; ka_buffer_release reports
 * an overrun no wait saw; sizes stay the user's; the full argument check and
 * the warnings and errors (to stderr when no logger is set). A device opened without
 * KA_DEBUG keeps none of it. KA_DEBUG is set here per device, before its open. */
#include "test_util.h"

#include <unistd.h>

static const char *src =
    "KA_KERNEL(past, KA_GLOBAL uint *out, uint n) {\n"
    "    if (!ka_in_range()) return;\n"
    "    uint i = (uint)ka_global_id(0);\n"
    "    out[i] = i;\n"
    "    if (i == n - 1) out[n] = 0xdeadbeefu;\n" /* one element past the end */
    "}\n"
    "KA_KERNEL(inside, KA_GLOBAL uint *out, uint n) {\n"
    "    if (!ka_in_range()) return;\n"
    "    uint i = (uint)ka_global_id(0);\n"
    "    if (i < n) out[i] = 2u * i;\n"
    "}\n"
    "KA_KERNEL(second, KA_GLOBAL uint *a, KA_GLOBAL uint *b, uint n) {\n"
    "    if (!ka_in_range()) return;\n"
    "    uint i = (uint)ka_global_id(0);\n"
    "    a[i] = i;\n"
    "    if (i == 0) b[n + 1] = 0u;\n" /* a zero, 4 bytes after the end */
    "}\n"
    "typedef struct tri { float x, y, z; } tri;\n"
    "KA_KERNEL(takes_struct, KA_GLOBAL float *out, tri t) {\n"
    "    if (ka_in_range()) out[ka_global_id(0)] = t.x + t.y + t.z;\n"
    "}\n";

#define N_BIG 300000u /* past PoCL routing's default limit: the threaded device */

typedef struct dev {
    const char *sel; /* NULL: the default device */
    ka_device d;
    ka_queue q;
    ka_program p;
    ka_kernel past, inside, second, takes_struct;
} dev;

/* The errors and warnings logged, the last of each. */
static char logged_error[1024], logged_warn[1024];
static void logger(ka_log_level lvl, const char *msg, void *user) {
    (void)user;
    if (lvl == KA_LOG_ERROR) snprintf(logged_error, sizeof logged_error, "%s", msg);
    if (lvl == KA_LOG_WARN) snprintf(logged_warn, sizeof logged_warn, "%s", msg);
}

/* Opens sel with KA_DEBUG as given; false (after saying why) when sel is a
 * back-end this machine does not have. */
static bool dev_open(dev *v, const char *sel, const char *debug) {
    memset(v, 0, sizeof *v);
    v->sel = sel;
    if (debug) setenv("KA_DEBUG", debug, 1);
    else unsetenv("KA_DEBUG");
    ka_status st = ka_device_open(sel, &v->d);
    unsetenv("KA_DEBUG"); /* read at the open: later opens are each test's own choice */
    if (sel && (st == KA_ERR_NO_DEVICE || st == KA_ERR_BACKEND_UNAVAILABLE)) {
        printf("no %s device here (%s): its cases are not run\n", sel, ka_last_error());
        return false;
    }
    KA_OK_OR_FAIL(st);
    KA_OK_OR_FAIL(ka_queue_create(v->d, NULL, &v->q));
    KA_OK_OR_FAIL(ka_program_build(v->d, src, NULL, &v->p));
    KA_OK_OR_FAIL(ka_kernel_get(v->p, "past", NULL, &v->past));
    KA_OK_OR_FAIL(ka_kernel_get(v->p, "inside", NULL, &v->inside));
    KA_OK_OR_FAIL(ka_kernel_get(v->p, "second", NULL, &v->second));
    KA_OK_OR_FAIL(ka_kernel_get(v->p, "takes_struct", NULL, &v->takes_struct));
    return true;
}

static void dev_close(dev *v) {
    KA_OK_OR_FAIL(ka_program_release(v->p));
    KA_OK_OR_FAIL(ka_queue_release(v->q));
    KA_OK_OR_FAIL(ka_device_close(v->d));
}

static ka_status launch1(dev *v, ka_kernel k, ka_buffer b, uint32_t n, ka_event *ev) {
    ka_arg a[] = {ka_arg_buffer(b), ka_arg_u32(n)};
    return ka_launch(v->q, k, &(ka_range){.dims = 1, .size = {n}}, a, 2, ev);
}

/* The detail (and the logged error) of an overrun of buffer b of n uint. */
static void expect_overrun(const char *call, ka_buffer b, uint32_t n, const char *kernel, uint32_t arg, size_t from,
                           size_t to) {
    char id[64], size[64], bytes[96], who[96];
    snprintf(id, sizeof id, "buffer 0x%llx ", (unsigned long long)b.id);
    snprintf(size, sizeof size, "of %zu bytes", (size_t)n * 4);
    snprintf(bytes, sizeof bytes, "bytes %zu to %zu changed", from, to);
    snprintf(who, sizeof who, "'%s' (argument %u)", kernel, arg);
    EXPECT_DETAIL(call, id, size, "written past its end", bytes, who);
    if (!strstr(logged_error, id) || !strstr(logged_error, bytes))
        fail_msg("the overrun was not logged as an error: \"%s\"", logged_error);
    logged_error[0] = 0;
}

/* An overrun as the host back-end reports it when the store lands past the
 * padding to 64 bytes: on the inaccessible page after the buffer, where the
 * kernel faults (the bytes after a buffer of n uint, when n * 4 is a
 * multiple of 64). */
/* ThreadSanitizer builds keep plain guard zones (docs/API.md). */
#if defined(__SANITIZE_THREAD__)
#define GUARD_PAGES 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GUARD_PAGES 0
#endif
#endif
#ifndef GUARD_PAGES
#define GUARD_PAGES 1
#endif

static bool host_faults(dev *v, uint32_t n) {
    const ka_device_info *info;
    KA_OK_OR_FAIL(ka_device_get_info(v->d, &info));
    return GUARD_PAGES && info->backend == KA_BACKEND_HOST && (size_t)n * 4 % 64 == 0;
}

static void expect_fault(const char *call, ka_buffer b, uint32_t n, const char *kernel, size_t byte) {
    char id[64], size[64], at[64], who[96];
    snprintf(id, sizeof id, "buffer 0x%llx ", (unsigned long long)b.id);
    snprintf(size, sizeof size, "of %zu bytes", (size_t)n * 4);
    snprintf(at, sizeof at, "past its end: byte %zu,", byte);
    snprintf(who, sizeof who, "by kernel '%s'", kernel);
    EXPECT_DETAIL(call, id, size, "was written past its end", at, who);
    if (!strstr(logged_error, id) || !strstr(logged_error, at))
        fail_msg("the fault was not logged as an error: \"%s\"", logged_error);
    logged_error[0] = 0;
}

/* A wait of each kind after one overrun; the data in bounds is right, the
 * overrun reported once, and an in-bounds launch afterwards passes. */
static void overruns_on(const char *sel, uint32_t n) {
    dev v;
    if (!dev_open(&v, sel, "1")) return;
    const ka_device_info *info;
    KA_OK_OR_FAIL(ka_device_get_info(v.d, &info));
    printf("%s, %u items\n", info->name, n);
    ka_buffer b = make_buffer(v.d, (size_t)n * 4);
    size_t end = (size_t)n * 4;
    const char *calls[] = {"ka_event_wait", "ka_queue_finish", "ka_wait_all", "ka_wait_any"};
    for (int c = 0; c < 4; c++) {
        ka_event ev;
        KA_OK_OR_FAIL(launch1(&v, v.past, b, n, &ev));
        uint32_t idx = 0;
        ka_status st = c == 0   ? ka_event_wait(ev, KA_WAIT_FOREVER)
                       : c == 1 ? ka_queue_finish(v.q)
                       : c == 2 ? ka_wait_all(&ev, 1, KA_WAIT_FOREVER)
                                : ka_wait_any(&ev, 1, KA_WAIT_FOREVER, &idx);
        if (st != KA_ERR_OUT_OF_BOUNDS)
            fail_msg("%s after an overrun -> %s, expected KA_ERR_OUT_OF_BOUNDS\n%s", calls[c], ka_status_name(st),
                     ka_last_error());
        if (host_faults(&v, n)) expect_fault(calls[c], b, n, "past", end);
        else expect_overrun(calls[c], b, n, "past", 0, end, end + 3);
        /* Reported once: the zone holds its pattern again. */
        KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_queue_finish(v.q));
        KA_OK_OR_FAIL(ka_event_release(ev));
    }
    uint32_t last[2];
    KA_OK_OR_FAIL(ka_buffer_read(v.q, last, b, end - 8, 8));
    assert_int_equal(last[0], n - 2);
    assert_int_equal(last[1], n - 1);
    /* In bounds: every wait passes; the sizes are the user's. */
    for (int i = 0; i < 3; i++) {
        ka_event ev;
        KA_OK_OR_FAIL(launch1(&v, v.inside, b, n, &ev));
        KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_event_release(ev));
    }
    KA_OK_OR_FAIL(ka_queue_finish(v.q));
    size_t bytes = 0;
    KA_OK_OR_FAIL(ka_buffer_size(b, &bytes));
    assert_int_equal(bytes, end);
    ka_native_buffer nb;
    KA_OK_OR_FAIL(ka_buffer_get_native(b, &nb));
    assert_int_equal(nb.bytes, end);
    /* The second of two buffer arguments, a zero stored 4 bytes past its end. */
    ka_buffer a = make_buffer(v.d, (size_t)n * 4);
    ka_arg args[] = {ka_arg_buffer(a), ka_arg_buffer(b), ka_arg_u32(n)};
    KA_OK_OR_FAIL(ka_launch(v.q, v.second, &(ka_range){.dims = 1, .size = {n}}, args, 3, NULL));
    KA_EXPECT(KA_ERR_OUT_OF_BOUNDS, ka_queue_finish(v.q));
    if (host_faults(&v, n)) expect_fault("ka_queue_finish", b, n, "second", end + 4);
    else expect_overrun("ka_queue_finish", b, n, "second", 1, end + 4, end + 7);
    KA_OK_OR_FAIL(ka_buffer_release(a));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    dev_close(&v);
}

static void test_overrun_default(void **state) {
    (void)state;
    ka_set_logger(logger, NULL);
    overruns_on(NULL, 1000);
    overruns_on(NULL, N_BIG);
}

static void test_overrun_host(void **state) {
    (void)state;
    ka_set_logger(logger, NULL);
    overruns_on("host", 1000);
    overruns_on("host", N_BIG);
}

/* Host: reads past the end and before the start of a buffer fault on the
 * inaccessible pages beside it and come back as KA_ERR_OUT_OF_BOUNDS at the
 * next wait, naming the buffer, the byte and the kernel; in the calling
 * thread (a small launch), over the pool, and on a work-item's fiber (a
 * kernel with barriers); the device works on afterwards. PoCL allocates
 * its own buffers: reads past them are not caught there. */
static const char *reads_src =
    "KA_KERNEL(read_next, KA_GLOBAL uint *out, KA_GLOBAL const uint *in, uint n) {\n"
    "    if (!ka_in_range()) return;\n"
    "    uint i = (uint)ka_global_id(0);\n"
    "    if (i < n) out[i] = in[i + 1];\n" /* item n - 1 reads in[n] */
    "}\n"
    "KA_KERNEL(read_prev, KA_GLOBAL uint *out, KA_GLOBAL const uint *in, uint n) {\n"
    "    if (!ka_in_range()) return;\n"
    "    int i = (int)ka_global_id(0);\n"
    "    if (i < (int)n) out[i] = in[i - 1];\n" /* item 0 reads in[-1] */
    "}\n"
    "KA_KERNEL(read_tile, KA_GLOBAL uint *out, KA_GLOBAL const uint *in, uint n) {\n"
    "    KA_LOCAL uint t[64];\n"
    "    uint l = (uint)ka_local_id(0), g = (uint)ka_global_id(0);\n"
    "    t[l] = in[g + (l ? 64u : 0u)];\n" /* the last group's items 1.. read past n */
    "    ka_barrier();\n"
    "    out[g] = t[63 - l];\n"
    "}\n";

static void reads_case(dev *v, ka_program p, const char *kernel, uint32_t n, uint32_t wg, const char *want) {
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, kernel, NULL, &k));
    ka_buffer out = make_buffer(v->d, (size_t)n * 4), in = make_buffer(v->d, (size_t)n * 4);
    ka_arg a[] = {ka_arg_buffer(out), ka_arg_buffer(in), ka_arg_u32(n)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(v->q, k, &(ka_range){.dims = 1, .size = {n}, .workgroup = {wg}}, a, 3, &ev));
    KA_EXPECT(KA_ERR_OUT_OF_BOUNDS, ka_event_wait(ev, KA_WAIT_FOREVER));
    char id[64], who[96];
    snprintf(id, sizeof id, "buffer 0x%llx of %zu bytes", (unsigned long long)in.id, (size_t)n * 4);
    snprintf(who, sizeof who, "by kernel '%s'", kernel);
    EXPECT_DETAIL("ka_event_wait", id, want, who);
    if (!strstr(logged_error, id)) fail_msg("the fault was not logged as an error: \"%s\"", logged_error);
    logged_error[0] = 0;
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_queue_finish(v->q)); /* reported once */
    /* The device works on. */
    KA_OK_OR_FAIL(launch1(v, v->inside, out, n, NULL));
    uint32_t last;
    KA_OK_OR_FAIL(ka_buffer_read(v->q, &last, out, (size_t)(n - 1) * 4, 4));
    assert_int_equal(last, 2 * (n - 1));
    KA_OK_OR_FAIL(ka_buffer_release(out));
    KA_OK_OR_FAIL(ka_buffer_release(in));
}

static void test_reads_host(void **state) {
    (void)state;
    if (!GUARD_PAGES) {
        printf("a ThreadSanitizer build: KA_DEBUG keeps guard zones only, reads are not caught\n");
        skip();
    }
    ka_set_logger(logger, NULL);
    dev v;
    if (!dev_open(&v, "host", "1")) return;
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(v.d, reads_src, NULL, &p));
    for (int big = 0; big < 2; big++) {
        uint32_t n = big ? 1u << 16 : 1024; /* whole pages; 1024: in the calling thread, 2^16: over the pool */
        char past[64];
        snprintf(past, sizeof past, "was read past its end: byte %u,", n * 4);
        reads_case(&v, p, "read_next", n, 0, past);
        reads_case(&v, p, "read_prev", n, 0, "was read before its start: 4 bytes before");
        reads_case(&v, p, "read_tile", n, 64, "was read past its end: byte");
    }
    KA_OK_OR_FAIL(ka_program_release(p));
    dev_close(&v);
}

/* A blocking read waits for the queue's kernels: it reports their overrun
 * (the bytes are read all the same). An overrun no check saw (a map of
 * another buffer made the kernel complete) fails the buffer's release, which
 * still releases it. */
static void release_on(const char *sel) {
    dev v;
    if (!dev_open(&v, sel, "1")) return;
    const uint32_t n = 500;
    ka_buffer b = make_buffer(v.d, n * 4), c = make_buffer(v.d, 64);
    KA_OK_OR_FAIL(launch1(&v, v.past, b, n, NULL));
    uint32_t x = 7;
    KA_EXPECT(KA_ERR_OUT_OF_BOUNDS, ka_buffer_read(v.q, &x, b, 0, 4));
    expect_overrun("ka_buffer_read", b, n, "past", 0, n * 4, n * 4 + 3);
    assert_int_equal(x, 0);
    KA_OK_OR_FAIL(launch1(&v, v.past, b, n, NULL));
    void *ptr;
    KA_OK_OR_FAIL(ka_buffer_map(v.q, c, 0, 64, KA_MAP_READ, &ptr));
    KA_OK_OR_FAIL(ka_buffer_unmap(v.q, c, ptr));
    KA_EXPECT(KA_ERR_OUT_OF_BOUNDS, ka_buffer_release(b));
    expect_overrun("ka_buffer_release", b, n, "past", 0, n * 4, n * 4 + 3);
    size_t bytes;
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_size(b, &bytes));
    /* A buffer never overrun releases cleanly. */
    KA_OK_OR_FAIL(launch1(&v, v.inside, c, 16, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(v.q));
    KA_OK_OR_FAIL(ka_buffer_release(c));
    dev_close(&v);
}

static void test_release(void **state) {
    (void)state;
    ka_set_logger(logger, NULL);
    release_on(NULL);
    release_on("host");
}

/* Garbage of exactly the word the fast path compares (kind 0, size
 * 0xffffffff: a struct parameter's) is refused by the core's full check
 * under KA_DEBUG; without it, by the back-end. */
static void full_check_on(const char *sel) {
    for (int debug = 1; debug >= 0; debug--) {
        dev v;
        if (!dev_open(&v, sel, debug ? "1" : NULL)) return;
        ka_buffer b = make_buffer(v.d, 64);
        ka_arg args[] = {ka_arg_buffer(b), {0, UINT32_MAX, {0}}};
        ka_status st = ka_launch(v.q, v.takes_struct, &(ka_range){.dims = 1, .size = {16}}, args, 2, NULL);
        assert_int_not_equal(st, KA_OK);
        if (debug) {
            assert_int_equal(st, KA_ERR_ARG_TYPE);
            EXPECT_DETAIL("ka_launch: kernel 'takes_struct' argument 1", "unknown argument kind 0");
        }
        KA_OK_OR_FAIL(ka_queue_finish(v.q));
        KA_OK_OR_FAIL(ka_buffer_release(b));
        dev_close(&v);
    }
}

static void test_full_check(void **state) {
    (void)state;
    ka_set_logger(logger, NULL);
    full_check_on(NULL);
    full_check_on("host");
}

/* stderr into a file while fn runs; what was written there, in out. */
static void capture_stderr(void (*fn)(dev *), dev *v, char *out, size_t cap) {
    fflush(stderr);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    fn(v);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(out, 1, cap - 1, tmp);
    out[n] = 0;
    fclose(tmp);
}

/* A launch with a mapped buffer argument: a warning under KA_DEBUG. */
static void launch_mapped(dev *v) {
    ka_buffer b = make_buffer(v->d, 64);
    void *p;
    KA_OK_OR_FAIL(ka_buffer_map(v->q, b, 0, 64, KA_MAP_READ, &p));
    KA_OK_OR_FAIL(launch1(v, v->inside, b, 16, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(v->q));
    KA_OK_OR_FAIL(ka_buffer_unmap(v->q, b, p));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

/* An overrun: its error printed too when no logger is set. */
static void overrun(dev *v) {
    ka_buffer b = make_buffer(v->d, 400);
    KA_OK_OR_FAIL(launch1(v, v->past, b, 100, NULL));
    KA_EXPECT(KA_ERR_OUT_OF_BOUNDS, ka_queue_finish(v->q));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_warnings(void **state) {
    (void)state;
    for (int debug = 1; debug >= 0; debug--) {
        dev v;
        dev_open(&v, NULL, debug ? "1" : NULL);
        /* With a logger: to the logger only. */
        ka_set_logger(logger, NULL);
        logged_warn[0] = 0;
        char err[2048];
        capture_stderr(launch_mapped, &v, err, sizeof err);
        assert_string_equal(err, "");
        if (debug) assert_non_null(strstr(logged_warn, "argument 0 ('out'): buffer 0x"));
        else assert_string_equal(logged_warn, "");
        /* Without one: printed under KA_DEBUG, "libka: " first; else nothing. */
        ka_set_logger(NULL, NULL);
        capture_stderr(launch_mapped, &v, err, sizeof err);
        if (debug) {
            if (strncmp(err, "libka: ka_launch: kernel 'inside' argument 0", 44) || !strstr(err, "is mapped"))
                fail_msg("stderr under KA_DEBUG: \"%s\"", err);
            capture_stderr(overrun, &v, err, sizeof err);
            if (strncmp(err, "libka: ka_queue_finish: buffer 0x", 33) || !strstr(err, "'past' (argument 0)"))
                fail_msg("stderr after an overrun under KA_DEBUG: \"%s\"", err);
        } else {
            assert_string_equal(err, "");
        }
        dev_close(&v);
    }
}

/* Without KA_DEBUG, launches and waits of in-bounds kernels as ever, and a
 * KA_DEBUG device beside it does not change them. */
static void test_off(void **state) {
    (void)state;
    ka_set_logger(logger, NULL);
    dev on, off;
    dev_open(&on, NULL, "1");
    dev_open(&off, NULL, "0");
    const uint32_t n = 1000;
    ka_buffer b = make_buffer(off.d, n * 4);
    ka_event ev;
    KA_OK_OR_FAIL(launch1(&off, off.inside, b, n, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    uint32_t v[2];
    KA_OK_OR_FAIL(ka_buffer_read(off.q, v, b, (n - 2) * 4, 8));
    assert_int_equal(v[1], 2 * (n - 1));
    ka_native_buffer nb;
    KA_OK_OR_FAIL(ka_buffer_get_native(b, &nb));
    assert_int_equal(nb.bytes, n * 4);
    KA_OK_OR_FAIL(ka_buffer_release(b));
    /* A wrapped buffer has no guard zone: in-bounds use passes under KA_DEBUG too. */
    uint32_t *host = aligned_alloc(4096, 4096);
    ka_buffer w;
    KA_OK_OR_FAIL(ka_buffer_wrap(on.d, host, 4096, &w));
    KA_OK_OR_FAIL(launch1(&on, on.inside, w, 1024, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(on.q));
    KA_OK_OR_FAIL(ka_buffer_read(on.q, v, w, 4092, 4));
    assert_int_equal(v[0], 2046);
    KA_OK_OR_FAIL(ka_buffer_release(w));
    free(host);
    assert_string_equal(logged_error, "");
    dev_close(&off);
    dev_close(&on);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overrun_default), cmocka_unit_test(test_overrun_host), cmocka_unit_test(test_release),
        cmocka_unit_test(test_reads_host),      cmocka_unit_test(test_full_check),      cmocka_unit_test(test_warnings),     cmocka_unit_test(test_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
