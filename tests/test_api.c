/* The public API, call by call: results on good input, and the exact status
 * (and detail message) on bad input. Runs on the default device ($KA_DEVICE,
 * else PoCL) and, for the core-only paths, on the "null" device. */
#define _GNU_SOURCE
#include "test_util.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------ */


static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Polls an atomic counter until it reaches want or ms pass; returns its value. */
static uint32_t await_count(_Atomic uint32_t *c, uint32_t want, int ms) {
    int64_t until = now_ns() + (int64_t)ms * 1000000;
    while (atomic_load(c) < want && now_ns() < until) sleep_ms(1);
    return atomic_load(c);
}

static const ka_buffer BAD_BUFFER = {0};
static const ka_queue BAD_QUEUE = {0};
static const ka_device BAD_DEVICE = {0};
static const ka_program BAD_PROGRAM = {0};
static const ka_kernel BAD_KERNEL = {0};

/* ---- shared state: one real device, queue and program for the group ----- */

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

static double run_spin_ms(uint32_t iters) {
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

static int group_setup(void **state) {
    (void)state;
    if (ka_device_open(NULL, &g_dev) != KA_OK) {
        fprintf(stderr, "no default device: %s\n", ka_last_error());
        return -1;
    }
    if (ka_device_get_info(g_dev, &g_info) != KA_OK) return -1;
    if (ka_queue_create(g_dev, NULL, &g_q) != KA_OK) return -1;
    if (ka_queue_create(g_dev, &async_cfg, &g_qlong) != KA_OK) return -1;
    if (ka_program_build(g_dev, api_src, NULL, &g_prog) != KA_OK) {
        fprintf(stderr, "build: %s\n", ka_last_error());
        return -1;
    }
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

static int group_teardown(void **state) {
    (void)state;
    ka_program_release(g_prog);
    ka_queue_release(g_q);
    ka_queue_release(g_qlong);
    ka_status st = ka_device_close(g_dev);
    if (st != KA_OK) fprintf(stderr, "teardown: ka_device_close: %s %s\n", ka_status_name(st), ka_last_error());
    return 0;
}

static ka_kernel get_kernel(const char *name) {
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(g_prog, name, NULL, &k));
    return k;
}

static ka_buffer make_buffer(ka_device dev, size_t bytes) {
    ka_buffer b;
    KA_OK_OR_FAIL(ka_buffer_create(dev, bytes, &b));
    return b;
}

/* Launches the ~300 ms kernel on q with an event. */
static ka_event launch_long(ka_queue q, ka_buffer scratch) {
    ka_kernel k = get_kernel("spin");
    ka_arg a[] = {ka_arg_buffer(scratch), ka_arg_u32(g_spin_iters)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {1}}, a, 2, &ev));
    KA_OK_OR_FAIL(ka_queue_flush(q));
    return ev;
}

/* ======================= statuses and error details ======================= */

static void test_status_names_and_messages(void **state) {
    (void)state;
    struct { ka_status s; const char *name; const char *msg; } all[] = {
#define ROW(name, value, msg) {KA_##name, "KA_" #name, msg},
        KA_STATUS_MAP(ROW)
#undef ROW
    };
    size_t n = sizeof all / sizeof all[0];
    assert_int_equal(n, 20);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal((int)all[i].s, -(int)i); /* dense: 0, -1, ..., -19 */
        assert_string_equal(ka_status_name(all[i].s), all[i].name);
        assert_string_equal(ka_strerror(all[i].s), all[i].msg);
        assert_true(strlen(ka_strerror(all[i].s)) > 0);
        for (size_t j = 0; j < i; j++) assert_string_not_equal(ka_strerror(all[i].s), ka_strerror(all[j].s));
    }
    assert_string_equal(ka_status_name(KA_OK), "KA_OK");
    assert_string_equal(ka_status_name(KA_ERR_TIMEOUT), "KA_ERR_TIMEOUT");
    /* Values outside the table still give static, non-NULL strings. */
    const ka_status odd[] = {(ka_status)1, (ka_status)-20, (ka_status)12345, (ka_status)INT32_MIN};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        assert_non_null(ka_strerror(odd[i]));
        assert_non_null(ka_status_name(odd[i]));
        assert_string_equal(ka_status_name(odd[i]), "KA_UNKNOWN");
    }
}

static void test_version(void **state) {
    (void)state;
    assert_string_equal(ka_version(), KA_VERSION_STRING);
}

static void test_last_error_names_the_call(void **state) {
    (void)state;
    size_t sz;
    ka_queue q;
    ka_buffer b;
    ka_program p;
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_create(BAD_DEVICE, 16, &b));
    EXPECT_DETAIL("ka_buffer_create");
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_create(BAD_DEVICE, NULL, &q));
    EXPECT_DETAIL("ka_queue_create");
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_size(BAD_BUFFER, &sz));
    EXPECT_DETAIL("ka_buffer_size");
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_program_build(BAD_DEVICE, "x", NULL, &p));
    EXPECT_DETAIL("ka_program_build");
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_finish(BAD_QUEUE));
    EXPECT_DETAIL("ka_queue_finish");
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_wait(KA_NULL_EVENT, 0));
    EXPECT_DETAIL("ka_event_wait");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_device_count(NULL));
    EXPECT_DETAIL("ka_device_count");
}

static void test_last_error_is_per_thread(void **state);

/* ================================ devices ================================= */

static void test_device_count_and_describe(void **state) {
    (void)state;
    uint32_t n = 0;
    KA_OK_OR_FAIL(ka_device_count(&n));
    assert_true(n >= 1);
    for (uint32_t i = 0; i < n; i++) {
        ka_device_info d;
        memset(&d, 0xAB, sizeof d);
        KA_OK_OR_FAIL(ka_device_describe(i, &d));
        assert_true(strlen(d.name) > 0 && strlen(d.name) < sizeof d.name);
        assert_true(strlen(d.selector) > 0 && strlen(d.selector) < sizeof d.selector);
        assert_true(d.backend == KA_BACKEND_OPENCL || d.backend == KA_BACKEND_CUDA);
        assert_true(d.max_workgroup_size > 0);
    }
    ka_device_info d;
    KA_EXPECT(KA_ERR_NO_DEVICE, ka_device_describe(n, &d));
    EXPECT_DETAIL("ka_device_describe");
    KA_EXPECT(KA_ERR_NO_DEVICE, ka_device_describe(UINT32_MAX, &d));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_device_describe(0, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_device_count(NULL));
}

/* Index of the first OpenCL device in ka_device_describe order, or -1. */
static int first_opencl(ka_device_info *out) {
    uint32_t n = 0;
    if (ka_device_count(&n) != KA_OK) return -1;
    for (uint32_t i = 0; i < n; i++)
        if (ka_device_describe(i, out) == KA_OK && out->backend == KA_BACKEND_OPENCL) return (int)i;
    return -1;
}

static void test_device_open_opencl0(void **state) {
    (void)state;
    ka_device_info want;
    if (first_opencl(&want) < 0) skip();
    ka_device d;
    KA_OK_OR_FAIL(ka_device_open("opencl:0", &d));
    const ka_device_info *i;
    KA_OK_OR_FAIL(ka_device_get_info(d, &i));
    assert_int_equal(i->backend, KA_BACKEND_OPENCL);
    assert_string_equal(i->selector, "opencl:0");
    assert_string_equal(i->name, want.name);
    /* The info's selector opens the same device again. */
    ka_device d2;
    KA_OK_OR_FAIL(ka_device_open(i->selector, &d2));
    assert_true(d2.id != d.id);
    const ka_device_info *i2;
    KA_OK_OR_FAIL(ka_device_get_info(d2, &i2));
    assert_string_equal(i2->name, i->name);
    KA_OK_OR_FAIL(ka_device_close(d2));
    KA_OK_OR_FAIL(ka_device_close(d));
}

static void test_device_open_pocl(void **state) {
    (void)state;
    ka_device d;
    ka_status st = ka_device_open("pocl", &d);
    if (st == KA_ERR_NO_DEVICE) skip(); /* no PoCL on this machine */
    KA_OK_OR_FAIL(st);
    const ka_device_info *i;
    KA_OK_OR_FAIL(ka_device_get_info(d, &i));
    assert_non_null(strstr(i->platform, "Portable Computing Language"));
    assert_int_equal(i->backend, KA_BACKEND_OPENCL);
    assert_true(i->is_cpu);
    KA_OK_OR_FAIL(ka_device_close(d));
}

static void test_device_open_by_name_substring(void **state) {
    (void)state;
    ka_device_info want;
    if (first_opencl(&want) < 0) skip();
    /* A case-changed middle part of the name must match, case-insensitively. */
    char sub[16];
    size_t len = strlen(want.name), take = len > 6 ? 6 : len, from = len > 8 ? 2 : 0;
    for (size_t i = 0; i < take; i++) {
        char c = want.name[from + i];
        sub[i] = (char)(c >= 'a' && c <= 'z' ? c - 32 : c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    sub[take] = 0;
    ka_device d;
    KA_OK_OR_FAIL(ka_device_open(sub, &d));
    const ka_device_info *i;
    KA_OK_OR_FAIL(ka_device_get_info(d, &i));
    if (!strcasestr(i->name, sub) && !strcasestr(i->platform, sub))
        fail_msg("opened \"%s\" (%s) for selector \"%s\"", i->name, i->platform, sub);
    KA_OK_OR_FAIL(ka_device_close(d));
}

/* Runs f with $KA_DEVICE set to val (NULL: unset), restoring it after. */
static char *saved_env;
static void env_push(const char *val) {
    const char *old = getenv("KA_DEVICE");
    saved_env = old ? strdup(old) : NULL;
    if (val) setenv("KA_DEVICE", val, 1);
    else unsetenv("KA_DEVICE");
}
static void env_pop(void) {
    if (saved_env) setenv("KA_DEVICE", saved_env, 1);
    else unsetenv("KA_DEVICE");
    free(saved_env);
    saved_env = NULL;
}

static void test_device_open_from_env(void **state) {
    (void)state;
    ka_device d;
    const ka_device_info *i;
    env_push("null");
    ka_status s1 = ka_device_open(NULL, &d);
    env_pop();
    KA_OK_OR_FAIL(s1);
    KA_OK_OR_FAIL(ka_device_get_info(d, &i));
    assert_int_equal(i->backend, KA_BACKEND_NULL);
    KA_OK_OR_FAIL(ka_device_close(d));

    ka_device_info want;
    if (first_opencl(&want) >= 0) {
        env_push(want.selector);
        ka_status s2 = ka_device_open("", &d); /* "" reads $KA_DEVICE too */
        env_pop();
        KA_OK_OR_FAIL(s2);
        KA_OK_OR_FAIL(ka_device_get_info(d, &i));
        assert_string_equal(i->selector, want.selector);
        KA_OK_OR_FAIL(ka_device_close(d));
    }

    env_push("no-such-device-xyzzy");
    ka_status s3 = ka_device_open(NULL, &d);
    env_pop();
    KA_EXPECT(KA_ERR_NO_DEVICE, s3);
    EXPECT_DETAIL("no-such-device-xyzzy");
    assert_int_equal(d.id, 0);
}

static void test_device_open_default(void **state) {
    (void)state;
    ka_device d;
    env_push(NULL);
    ka_status st = ka_device_open(NULL, &d);
    env_pop();
    KA_OK_OR_FAIL(st);
    const ka_device_info *i;
    KA_OK_OR_FAIL(ka_device_get_info(d, &i));
    /* The default is the first PoCL CPU device if there is one. */
    ka_device p;
    if (ka_device_open("pocl", &p) == KA_OK) {
        const ka_device_info *pi;
        KA_OK_OR_FAIL(ka_device_get_info(p, &pi));
        assert_string_equal(i->selector, pi->selector);
        KA_OK_OR_FAIL(ka_device_close(p));
    } else {
        ka_device_info d0; /* no PoCL: device 0 */
        KA_OK_OR_FAIL(ka_device_describe(0, &d0));
        assert_string_equal(i->selector, d0.selector);
    }
    KA_OK_OR_FAIL(ka_device_close(d));
}

static void test_device_open_bad_selectors(void **state) {
    (void)state;
    const char *bad[] = {"opencl:99", "opencl:-1", "opencl:", "opencl:0x", "opencl:1a", "cuda:77",
                         "zzz-no-such-device-zzz"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ka_device d = {12345};
        ka_status st = ka_device_open(bad[i], &d);
        if (st != KA_ERR_NO_DEVICE)
            fail_msg("ka_device_open(\"%s\") -> %s, expected KA_ERR_NO_DEVICE", bad[i], ka_status_name(st));
        assert_int_equal(d.id, 0);
        EXPECT_DETAIL("ka_device_open", bad[i]);
    }
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_device_open("pocl", NULL));
}

static void test_device_info_sane(void **state) {
    (void)state;
    const ka_device_info *i = g_info;
    assert_true(strlen(i->name) > 0);
    assert_true(strlen(i->selector) > 0);
    assert_true(strlen(i->version) > 0);
    assert_true(i->compute_units > 0);
    assert_true(i->max_workgroup_size > 0);
    for (int d = 0; d < 3; d++) {
        assert_true(i->max_workgroup[d] > 0);
        assert_true(i->max_workgroup[d] <= i->max_workgroup_size || d > 0);
    }
    assert_true(i->max_workgroup[0] <= i->max_workgroup_size);
    assert_true(i->preferred_workgroup_multiple > 0);
    assert_true(i->local_mem_size > 0);
    assert_true(i->global_mem_size > 0);
    assert_true(i->max_alloc_size > 0 && i->max_alloc_size <= i->global_mem_size);
    assert_true(i->max_arg_bytes >= 256);
    /* Sub-groups: none (valid on PoCL 3.1) or a consistent list. */
    assert_true(i->num_subgroup_sizes <= KA_MAX_SUBGROUP_SIZES);
    if (i->num_subgroup_sizes == 0) {
        assert_int_equal(i->subgroup_width, 0);
    } else {
        assert_int_equal(i->subgroup_width, i->subgroup_sizes[0]);
        for (uint32_t k = 0; k < i->num_subgroup_sizes; k++) assert_true(i->subgroup_sizes[k] > 0);
    }
    if (i->backend == KA_BACKEND_OPENCL) {
        assert_true(i->opencl_c_major >= 1);
        assert_int_equal(strncmp(i->selector, "opencl:", 7), 0);
        assert_int_equal(i->compute_capability, 0);
        assert_true(strlen(i->platform) > 0);
    }
    /* Describing the device by index gives the same name. */
    uint32_t n = 0;
    KA_OK_OR_FAIL(ka_device_count(&n));
    bool found = false;
    for (uint32_t k = 0; k < n; k++) {
        ka_device_info d;
        KA_OK_OR_FAIL(ka_device_describe(k, &d));
        if (!strcmp(d.selector, i->selector)) {
            found = true;
            assert_string_equal(d.name, i->name);
            assert_int_equal(d.max_workgroup_size, i->max_workgroup_size);
        }
    }
    assert_true(found);
}

static void test_device_get_info_bad(void **state) {
    (void)state;
    const ka_device_info *i = NULL;
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_device_get_info(BAD_DEVICE, &i));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_device_get_info((ka_device){UINT64_MAX}, &i));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_device_get_info(g_dev, NULL));
    /* A handle of another type is not a device. */
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_device_get_info((ka_device){g_q.id}, &i));
}

static void test_device_close_in_use(void **state) {
    (void)state;
    ka_device d;
    KA_OK_OR_FAIL(ka_device_open(g_info->selector, &d));
    ka_queue q;
    ka_buffer b;
    ka_program p;
    KA_OK_OR_FAIL(ka_queue_create(d, NULL, &q));
    KA_EXPECT(KA_ERR_IN_USE, ka_device_close(d));
    EXPECT_DETAIL("ka_device_close");
    KA_OK_OR_FAIL(ka_queue_release(q));
    b = make_buffer(d, 64);
    KA_EXPECT(KA_ERR_IN_USE, ka_device_close(d));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_program_build(d, "KA_KERNEL_NOARGS(k) { }\n", NULL, &p));
    KA_EXPECT(KA_ERR_IN_USE, ka_device_close(d));
    /* The device still works while in use. */
    const ka_device_info *i;
    KA_OK_OR_FAIL(ka_device_get_info(d, &i));
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_OK_OR_FAIL(ka_device_close(d));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_device_close(d));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_device_get_info(d, &i));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_create(d, NULL, &q));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_create(d, 64, &b));
}

/* ================================= queues ================================= */

static void test_queue_lifecycle(void **state) {
    (void)state;
    ka_queue q;
    KA_OK_OR_FAIL(ka_queue_create(g_dev, NULL, &q));
    assert_true(q.id != 0);
    KA_OK_OR_FAIL(ka_queue_flush(q));
    KA_OK_OR_FAIL(ka_queue_finish(q));
    ka_buffer b = make_buffer(g_dev, 256);
    uint8_t data[256];
    memset(data, 7, sizeof data);
    ka_event ev;
    KA_OK_OR_FAIL(ka_buffer_write(q, b, 0, sizeof data, data, &ev));
    KA_OK_OR_FAIL(ka_queue_flush(q));
    KA_OK_OR_FAIL(ka_queue_finish(q));
    KA_OK_OR_FAIL(ka_event_wait(ev, 0)); /* finish completes everything enqueued */
    KA_OK_OR_FAIL(ka_queue_release(q));
    /* Releasing the queue makes its events stale. */
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_wait(ev, 0));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_release(ev));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_flush(q));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_finish(q));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_release(q));
    EXPECT_DETAIL("ka_queue_release");
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_write(q, b, 0, 4, data, NULL));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_queue_with_config(void **state) {
    (void)state;
    ka_queue q;
    ka_queue_config cfg = {.event_capacity = 3, .spin_ns = 0};
    KA_OK_OR_FAIL(ka_queue_create(g_dev, &cfg, &q));
    ka_buffer b = make_buffer(g_dev, 16);
    uint32_t v = 5, r = 0;
    ka_event ev;
    KA_OK_OR_FAIL(ka_buffer_write(q, b, 0, 4, &v, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER)); /* spin off: sleeps */
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_read(q, b, 0, 4, &r, NULL));
    assert_int_equal(r, 5);
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_queue_release(q));
}

static void test_queue_create_bad(void **state) {
    (void)state;
    ka_queue q = {99};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_queue_create(g_dev, NULL, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_create(BAD_DEVICE, NULL, &q));
    assert_int_equal(q.id, 0);
    q.id = 99;
    ka_queue_config big = {.event_capacity = (1u << 20) + 1, .spin_ns = -1};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_queue_create(g_dev, &big, &q));
    EXPECT_DETAIL("event_capacity");
    assert_int_equal(q.id, 0);
    /* A buffer handle is not a device. */
    ka_buffer b = make_buffer(g_dev, 16);
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_create((ka_device){b.id}, NULL, &q));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

/* ================================ buffers ================================= */

static void test_buffer_create_and_size(void **state) {
    (void)state;
    ka_buffer b;
    KA_OK_OR_FAIL(ka_buffer_create(g_dev, 1000, &b));
    size_t sz = 0;
    KA_OK_OR_FAIL(ka_buffer_size(b, &sz));
    assert_int_equal(sz, 1000);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_size(b, NULL));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_size(b, &sz));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_release(b));
    EXPECT_DETAIL("ka_buffer_release");
}

static void test_buffer_create_zero_bytes(void **state) {
    (void)state;
    ka_buffer b = {77};
    ka_status st = ka_buffer_create(g_dev, 0, &b);
    if (st == KA_OK) fail_msg("ka_buffer_create(0 bytes) succeeded");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, st);
    assert_int_equal(b.id, 0);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_create(g_dev, 16, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_create(BAD_DEVICE, 16, &b));
}

static void test_buffer_create_huge(void **state) {
    (void)state;
    ka_buffer b = {77};
    KA_EXPECT(KA_ERR_DEVICE_OUT_OF_MEMORY, ka_buffer_create(g_dev, SIZE_MAX, &b));
    assert_int_equal(b.id, 0);
    EXPECT_DETAIL("ka_buffer_create");
    KA_EXPECT(KA_ERR_DEVICE_OUT_OF_MEMORY, ka_buffer_create(g_dev, (size_t)g_info->max_alloc_size + 1, &b));
    KA_EXPECT(KA_ERR_DEVICE_OUT_OF_MEMORY, ka_buffer_create(g_dev, (size_t)1 << 62, &b));
}

static void fill_bytes(uint8_t *p, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
}

static void test_buffer_write_read_blocking(void **state) {
    (void)state;
    enum { N = 4096 };
    uint8_t in[N], out[N];
    fill_bytes(in, N, 1);
    ka_buffer b = make_buffer(g_dev, N);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, N, in, NULL));
    memset(out, 0, N);
    KA_OK_OR_FAIL(ka_buffer_read(g_q, b, 0, N, out, NULL));
    assert_memory_equal(in, out, N);
    /* Partial write at an offset, partial read at another. */
    uint8_t patch[100];
    fill_bytes(patch, sizeof patch, 2);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 1001, sizeof patch, patch, NULL));
    memcpy(in + 1001, patch, sizeof patch);
    uint8_t part[300];
    KA_OK_OR_FAIL(ka_buffer_read(g_q, b, 950, sizeof part, part, NULL));
    assert_memory_equal(part, in + 950, sizeof part);
    /* The last byte, exactly at the end. */
    uint8_t last = 0;
    KA_OK_OR_FAIL(ka_buffer_read(g_q, b, N - 1, 1, &last, NULL));
    assert_int_equal(last, in[N - 1]);
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_buffer_write_read_async(void **state) {
    (void)state;
    enum { N = 1 << 16 };
    static uint8_t in[N], out[N];
    fill_bytes(in, N, 3);
    memset(out, 0, N);
    ka_buffer b = make_buffer(g_dev, N);
    ka_event ev[3];
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, N / 2, in, &ev[0]));
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, N / 2, N / 2, in + N / 2, &ev[1]));
    assert_true(ev[0].id != 0 && ev[1].id != 0 && ev[0].id != ev[1].id);
    /* In-order queue: the read sees both writes. */
    KA_OK_OR_FAIL(ka_buffer_read(g_q, b, 0, N, out, &ev[2]));
    KA_OK_OR_FAIL(ka_wait_all(ev, 3, KA_WAIT_FOREVER));
    assert_memory_equal(in, out, N);
    for (int i = 0; i < 3; i++) {
        KA_OK_OR_FAIL(ka_event_wait(ev[i], 0)); /* done stays done */
        KA_OK_OR_FAIL(ka_event_release(ev[i]));
    }
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_buffer_copy(void **state) {
    (void)state;
    enum { N = 2048 };
    uint8_t in[N], out[N];
    fill_bytes(in, N, 4);
    ka_buffer a = make_buffer(g_dev, N), b = make_buffer(g_dev, N);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, a, 0, N, in, NULL));
    uint8_t zero[N];
    memset(zero, 0, N);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, N, zero, NULL));
    /* Blocking copy of the whole buffer. */
    KA_OK_OR_FAIL(ka_buffer_copy(g_q, a, 0, b, 0, N, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, b, 0, N, out, NULL));
    assert_memory_equal(in, out, N);
    /* Async copy of a middle part to another offset. */
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, N, zero, NULL));
    ka_event ev;
    KA_OK_OR_FAIL(ka_buffer_copy(g_q, a, 100, b, 1000, 500, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, b, 0, N, out, NULL));
    assert_memory_equal(out, zero, 1000);
    assert_memory_equal(out + 1000, in + 100, 500);
    assert_memory_equal(out + 1500, zero, N - 1500);
    /* Within one buffer, ranges that touch but do not overlap. */
    KA_OK_OR_FAIL(ka_buffer_copy(g_q, a, 0, a, 1024, 1024, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, a, 1024, 1024, out, NULL));
    assert_memory_equal(out, in, 1024);
    KA_OK_OR_FAIL(ka_buffer_release(a));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_buffer_copy_overlap(void **state) {
    (void)state;
    ka_buffer a = make_buffer(g_dev, 1024);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, a, 0, a, 100, 200, NULL));
    EXPECT_DETAIL("ka_buffer_copy", "overlap");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, a, 100, a, 0, 200, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, a, 0, a, 0, 1, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, a, 10, a, 10, 1000, NULL));
    ka_event ev = {123};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, a, 0, a, 511, 512, &ev));
    assert_int_equal(ev.id, 0);
    KA_OK_OR_FAIL(ka_buffer_copy(g_q, a, 0, a, 512, 512, NULL));
    KA_OK_OR_FAIL(ka_buffer_release(a));
}

static void test_buffer_out_of_range(void **state) {
    (void)state;
    ka_buffer a = make_buffer(g_dev, 100), b = make_buffer(g_dev, 100);
    uint8_t buf[256] = {0};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(g_q, a, 0, 101, buf, NULL));
    EXPECT_DETAIL("ka_buffer_write");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(g_q, a, 99, 2, buf, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(g_q, a, 101, 0, buf, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(g_q, a, 8, SIZE_MAX, buf, NULL)); /* wraps */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(g_q, a, SIZE_MAX, 2, buf, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_read(g_q, a, 50, 51, buf, NULL));
    EXPECT_DETAIL("ka_buffer_read");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_read(g_q, a, 1, SIZE_MAX, buf, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, a, 60, b, 0, 41, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, a, 0, b, 60, 41, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, a, 0, b, 0, SIZE_MAX, NULL));
    uint32_t pat = 1;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_fill(g_q, a, &pat, 4, 0, 104, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_fill(g_q, a, &pat, 4, 100, 4, NULL));
    /* NULL host pointers. */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(g_q, a, 0, 4, NULL, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_read(g_q, a, 0, 4, NULL, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_fill(g_q, a, NULL, 4, 0, 4, NULL));
    /* A failed transfer with an event leaves the event null. */
    ka_event ev = {42};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(g_q, a, 0, 101, buf, &ev));
    assert_int_equal(ev.id, 0);
    /* Bounds are exact: the whole buffer and an empty range at the end are fine. */
    KA_OK_OR_FAIL(ka_buffer_write(g_q, a, 0, 100, buf, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, a, 100, 0, buf, NULL));
    KA_OK_OR_FAIL(ka_buffer_release(a));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_buffer_empty_transfer(void **state) {
    (void)state;
    ka_buffer a = make_buffer(g_dev, 64);
    uint8_t buf[4];
    ka_event ev;
    KA_OK_OR_FAIL(ka_buffer_write(g_q, a, 10, 0, buf, &ev));
    assert_true(ev.id != 0);
    KA_OK_OR_FAIL(ka_event_wait(ev, 0)); /* complete already */
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_copy(g_q, a, 0, a, 0, 0, &ev)); /* empty ranges do not overlap */
    KA_OK_OR_FAIL(ka_event_wait(ev, 0));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_release(a));
}

static void test_buffer_fill_patterns(void **state) {
    (void)state;
    enum { N = 1024 };
    ka_buffer b = make_buffer(g_dev, N);
    uint8_t pat[128], out[N], zero[N];
    memset(zero, 0, N);
    for (size_t psz = 1; psz <= 128; psz *= 2) {
        fill_bytes(pat, psz, (uint32_t)psz);
        KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, N, zero, NULL));
        /* Fill [psz*2, N - psz*2): the edges must stay zero. */
        size_t off = psz * 2, n = N - psz * 4;
        ka_event ev;
        KA_OK_OR_FAIL(ka_buffer_fill(g_q, b, pat, psz, off, n, psz % 4 ? NULL : &ev));
        if (psz % 4 == 0) {
            KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
            KA_OK_OR_FAIL(ka_event_release(ev));
        }
        KA_OK_OR_FAIL(ka_buffer_read(g_q, b, 0, N, out, NULL));
        assert_memory_equal(out, zero, off);
        for (size_t i = off; i < off + n; i++)
            if (out[i] != pat[(i - off) % psz]) fail_msg("pattern %zu: byte %zu is %u, expected %u", psz, i, out[i], pat[(i - off) % psz]);
        assert_memory_equal(out + off + n, zero, N - off - n);
    }
    const size_t bad[] = {0, 3, 5, 6, 12, 24, 256};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ka_status st = ka_buffer_fill(g_q, b, pat, bad[i], 0, 768, NULL);
        if (st != KA_ERR_INVALID_ARGUMENT) fail_msg("pattern size %zu -> %s", bad[i], ka_status_name(st));
    }
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_fill(g_q, b, pat, 4, 2, 8, NULL)); /* offset */
    EXPECT_DETAIL("ka_buffer_fill");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_fill(g_q, b, pat, 4, 0, 10, NULL)); /* size */
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_buffer_released_handle(void **state) {
    (void)state;
    ka_buffer b = make_buffer(g_dev, 64), c = make_buffer(g_dev, 64);
    KA_OK_OR_FAIL(ka_buffer_release(b));
    uint8_t buf[8] = {0};
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_write(g_q, b, 0, 8, buf, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_read(g_q, b, 0, 8, buf, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_copy(g_q, b, 0, c, 0, 8, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_copy(g_q, c, 0, b, 0, 8, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_fill(g_q, b, buf, 4, 0, 8, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_release(b));
    /* The slot is reused by the next buffer: the old handle stays stale. */
    ka_buffer d = make_buffer(g_dev, 64);
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_release(b));
    size_t sz;
    KA_OK_OR_FAIL(ka_buffer_size(d, &sz));
    KA_OK_OR_FAIL(ka_buffer_release(d));
    KA_OK_OR_FAIL(ka_buffer_release(c));
}

/* =============================== programs ================================= */

static void test_program_build_with_options_and_defines(void **state) {
    (void)state;
    const char *src =
        "#ifndef ADD_ONE\n#error ADD_ONE missing\n#endif\n"
        "KA_KERNEL(k, KA_GLOBAL int *out) {\n"
        "    if (!ka_in_range()) return;\n"
        "    int i = (int)ka_global_id(0);\n"
        "    out[i] = i * SCALE + EXTRA + ADD_ONE;\n"
        "}\n";
    const char *defs[] = {"SCALE=3", "ADD_ONE"};
    ka_build_options o = {.options = "-DEXTRA=100 -cl-mad-enable", .defines = defs, .num_defines = 2};
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, src, &o, &p));
    uint32_t builds = 0;
    KA_OK_OR_FAIL(ka_program_build_count(p, &builds));
    assert_int_equal(builds, 1);
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "k", NULL, &k));
    ka_buffer b = make_buffer(g_dev, 64 * sizeof(int));
    ka_arg a[] = {ka_arg_buffer(b)};
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {64}}, a, 1, NULL));
    int out[64];
    KA_OK_OR_FAIL(ka_buffer_read(g_q, b, 0, sizeof out, out, NULL));
    for (int i = 0; i < 64; i++) assert_int_equal(out[i], i * 3 + 100 + 1); /* ADD_ONE defaults to 1 */
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_program_release(p));
    /* Without the defines the same source does not build. */
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(g_dev, src, NULL, &p));
    EXPECT_DETAIL("ADD_ONE missing");
}

static void test_program_build_bad_defines(void **state) {
    (void)state;
    ka_program p = {5};
    const char *defs[] = {"A=1", NULL};
    ka_build_options o = {.defines = defs, .num_defines = 2};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build(g_dev, "KA_KERNEL_NOARGS(k) {}\n", &o, &p));
    assert_int_equal(p.id, 0);
    const char *defs2[] = {""};
    ka_build_options o2 = {.defines = defs2, .num_defines = 1};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build(g_dev, "KA_KERNEL_NOARGS(k) {}\n", &o2, &p));
    ka_build_options o3 = {.defines = NULL, .num_defines = 1};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build(g_dev, "KA_KERNEL_NOARGS(k) {}\n", &o3, &p));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build(g_dev, NULL, NULL, &p));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build(g_dev, "KA_KERNEL_NOARGS(k) {}\n", NULL, NULL));
}

static void test_program_build_failure_has_log(void **state) {
    (void)state;
    const char *src =
        "KA_KERNEL(broken, KA_GLOBAL int *out) {\n"
        "    out[0] = ka_undeclared_thing_42 + 1;\n"
        "}\n";
    ka_program p = {5};
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(g_dev, src, NULL, &p));
    assert_int_equal(p.id, 0);
    EXPECT_DETAIL("ka_undeclared_thing_42");
    if (g_info->backend == KA_BACKEND_OPENCL) EXPECT_DETAIL("clBuildProgram", "CL_BUILD_PROGRAM_FAILURE");
    /* The user's line numbers: line 2 of the source, not of prelude + source. */
    if (g_info->backend == KA_BACKEND_OPENCL) EXPECT_DETAIL(":2:");
}

static void test_kernel_not_found(void **state) {
    (void)state;
    ka_kernel k = {9};
    KA_EXPECT(KA_ERR_KERNEL_NOT_FOUND, ka_kernel_get(g_prog, "no_such_kernel", NULL, &k));
    assert_int_equal(k.id, 0);
    EXPECT_DETAIL("no_such_kernel");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_kernel_get(g_prog, "", NULL, &k));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_kernel_get(g_prog, NULL, NULL, &k));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_kernel_get(g_prog, "fill_idx", NULL, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_kernel_get(BAD_PROGRAM, "fill_idx", NULL, &k));
    /* A failed lookup is not cached: asking again gives the same answer. */
    KA_EXPECT(KA_ERR_KERNEL_NOT_FOUND, ka_kernel_get(g_prog, "no_such_kernel", NULL, &k));
}

static void test_kernel_not_declared_with_ka_kernel(void **state) {
    (void)state;
    if (g_info->backend != KA_BACKEND_OPENCL) skip();
    ka_kernel k;
    ka_status st = ka_kernel_get(g_prog, "plain_cl", NULL, &k);
    assert_int_not_equal(st, KA_OK);
    EXPECT_DETAIL("plain_cl", "KA_KERNEL");
}

static void test_kernel_get_cached(void **state) {
    (void)state;
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, api_src, NULL, &p));
    uint32_t n0 = 0, n = 0;
    KA_OK_OR_FAIL(ka_program_build_count(p, &n0));
    assert_int_equal(n0, 1);
    ka_kernel a, b, c, d;
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill_idx", NULL, &a));
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill_idx", NULL, &b));
    ka_kernel_config zero;
    memset(&zero, 0, sizeof zero);
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill_idx", &zero, &c)); /* all-zero config == NULL */
    assert_true(a.id != 0);
    assert_true(a.id == b.id);
    assert_true(a.id == c.id);
    KA_OK_OR_FAIL(ka_program_build_count(p, &n));
    assert_int_equal(n, 1);
    /* Another kernel of the same default variant: a new handle, no build. */
    KA_OK_OR_FAIL(ka_kernel_get(p, "args3", NULL, &d));
    assert_true(d.id != a.id);
    KA_OK_OR_FAIL(ka_program_build_count(p, &n));
    assert_int_equal(n, 1);
    KA_OK_OR_FAIL(ka_program_release(p));
}

static void test_kernel_get_static_config_builds_variant(void **state) {
    (void)state;
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, api_src, NULL, &p));
    ka_kernel dyn, st1, st2, st_other, def1, def2;
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill_idx", NULL, &dyn));
    ka_kernel_config cfg = {.workgroup = {4, 0, 0}};
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill_idx", &cfg, &st1));
    assert_true(st1.id != dyn.id);
    uint32_t n = 0;
    KA_OK_OR_FAIL(ka_program_build_count(p, &n));
    assert_int_equal(n, 2);
    /* (4,0,0) and (4,1,1) are the same configuration once normalized. */
    ka_kernel_config cfg2 = {.workgroup = {4, 1, 1}};
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill_idx", &cfg2, &st2));
    assert_true(st2.id == st1.id);
    /* Another kernel under the same configuration shares the variant's build. */
    KA_OK_OR_FAIL(ka_kernel_get(p, "args3", &cfg, &st_other));
    KA_OK_OR_FAIL(ka_program_build_count(p, &n));
    assert_int_equal(n, 2);
    ka_kernel_info ki;
    KA_OK_OR_FAIL(ka_kernel_get_info(st1, &ki));
    assert_int_equal(ki.static_workgroup[0], 4);
    assert_int_equal(ki.static_workgroup[1], 1);
    assert_int_equal(ki.static_workgroup[2], 1);
    assert_int_equal(ki.num_args, 2);
    KA_OK_OR_FAIL(ka_kernel_get_info(dyn, &ki));
    assert_int_equal(ki.static_workgroup[0], 0);
    assert_true(ki.max_workgroup_size > 0);
    /* Per-variant defines make a third build, cached as well. */
    ka_kernel_config dc = {.defines = "-DFOO=1"};
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill_idx", &dc, &def1));
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill_idx", &dc, &def2));
    assert_true(def1.id == def2.id && def1.id != dyn.id);
    KA_OK_OR_FAIL(ka_program_build_count(p, &n));
    assert_int_equal(n, 3);
    /* The static kernel runs with the static size and gives right results. */
    ka_buffer b = make_buffer(g_dev, 10 * sizeof(uint32_t));
    ka_arg a[] = {ka_arg_buffer(b), ka_arg_u32(1000)};
    KA_OK_OR_FAIL(ka_launch(g_q, st1, &(ka_range){.dims = 1, .size = {10}}, a, 2, NULL));
    uint32_t out[10];
    KA_OK_OR_FAIL(ka_buffer_read(g_q, b, 0, sizeof out, out, NULL));
    for (uint32_t i = 0; i < 10; i++) assert_int_equal(out[i], 1000 + i);
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_program_release(p));
}

static void test_kernel_get_bad_configs(void **state) {
    (void)state;
    ka_kernel k = {3};
    ka_kernel_config too_big = {.workgroup = {g_info->max_workgroup_size + 1, 1, 1}};
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP, ka_kernel_get(g_prog, "fill_idx", &too_big, &k));
    assert_int_equal(k.id, 0);
    uint32_t side = 1;
    while ((uint64_t)side * side <= g_info->max_workgroup_size) side *= 2;
    ka_kernel_config too_many = {.workgroup = {side, side, 1}};
    if (side <= g_info->max_workgroup[0] && side <= g_info->max_workgroup[1])
        KA_EXPECT(KA_ERR_INVALID_WORKGROUP, ka_kernel_get(g_prog, "fill_idx", &too_many, &k));
    if (g_info->num_subgroup_sizes == 0) {
        ka_kernel_config sg = {.subgroup_size = 16};
        KA_EXPECT(KA_ERR_UNSUPPORTED, ka_kernel_get(g_prog, "fill_idx", &sg, &k));
        EXPECT_DETAIL("sub-group");
    }
}

static void test_program_release_invalidates_kernels(void **state) {
    (void)state;
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, api_src, NULL, &p));
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "noargs", NULL, &k));
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {1}}, NULL, 0, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
    KA_OK_OR_FAIL(ka_program_release(p));
    ka_kernel_info ki;
    uint32_t n;
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_kernel_get_info(k, &ki));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {1}}, NULL, 0, NULL));
    EXPECT_DETAIL("ka_launch");
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_kernel_get(p, "noargs", NULL, &k));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_program_build_count(p, &n));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_program_release(p));
    EXPECT_DETAIL("ka_program_release");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build_count(g_prog, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_kernel_get_info(get_kernel("noargs"), NULL));
}

/* ================================ launches ================================ */

static void test_launch_runs(void **state) {
    (void)state;
    ka_kernel k = get_kernel("fill_idx");
    ka_buffer b = make_buffer(g_dev, 6 * 5 * sizeof(uint32_t));
    ka_arg a[] = {ka_arg_buffer(b), ka_arg_u32(7)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 2, .size = {6, 5}}, a, 2, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    uint32_t out[30];
    KA_OK_OR_FAIL(ka_buffer_read(g_q, b, 0, sizeof out, out, NULL));
    for (uint32_t i = 0; i < 30; i++) assert_int_equal(out[i], 7 + i);
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_launch_bad_dims(void **state) {
    (void)state;
    ka_kernel k = get_kernel("noargs");
    ka_event ev = {1};
    KA_EXPECT(KA_ERR_INVALID_RANGE, ka_launch(g_q, k, &(ka_range){.dims = 0, .size = {4}}, NULL, 0, &ev));
    assert_int_equal(ev.id, 0);
    EXPECT_DETAIL("ka_launch");
    KA_EXPECT(KA_ERR_INVALID_RANGE, ka_launch(g_q, k, &(ka_range){.dims = 4, .size = {4, 4, 4}}, NULL, 0, NULL));
    KA_EXPECT(KA_ERR_INVALID_RANGE, ka_launch(g_q, k, &(ka_range){.dims = UINT32_MAX, .size = {4}}, NULL, 0, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_launch(g_q, k, NULL, NULL, 0, NULL));
}

static void test_launch_zero_workgroup_dim(void **state) {
    (void)state;
    ka_kernel k = get_kernel("noargs");
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP,
              ka_launch(g_q, k, &(ka_range){.dims = 2, .size = {8, 8}, .workgroup = {4, 0}}, NULL, 0, NULL));
    EXPECT_DETAIL("workgroup[1]");
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP,
              ka_launch(g_q, k, &(ka_range){.dims = 3, .size = {8, 8, 8}, .workgroup = {0, 2, 2}}, NULL, 0, NULL));
    /* Unused dimensions may be zero. */
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {8}, .workgroup = {4, 0, 0}}, NULL, 0, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
}

static void test_launch_oversized_workgroup(void **state) {
    (void)state;
    ka_kernel k = get_kernel("noargs");
    ka_kernel_info ki;
    KA_OK_OR_FAIL(ka_kernel_get_info(k, &ki));
    uint32_t big = ki.max_workgroup_size + 1;
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP,
              ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {big}, .workgroup = {big}}, NULL, 0, NULL));
    /* Each dimension within limits, the product over. */
    uint32_t side = 1;
    while ((uint64_t)side * side <= ki.max_workgroup_size) side *= 2;
    if (side <= g_info->max_workgroup[0] && side <= g_info->max_workgroup[1])
        KA_EXPECT(KA_ERR_INVALID_WORKGROUP, ka_launch(g_q, k, &(ka_range){.dims = 2, .size = {side, side}, .workgroup = {side, side}},
                                                      NULL, 0, NULL));
    /* Over a per-dimension limit. */
    uint32_t zmax = g_info->max_workgroup[2];
    if (zmax < UINT32_MAX)
        KA_EXPECT(KA_ERR_INVALID_WORKGROUP,
                  ka_launch(g_q, k, &(ka_range){.dims = 3, .size = {1, 1, zmax + 1u}, .workgroup = {1, 1, zmax + 1u}}, NULL, 0, NULL));
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP,
              ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {16}, .workgroup = {UINT32_MAX}}, NULL, 0, NULL));
}

static void test_launch_static_dynamic_mismatch(void **state) {
    (void)state;
    ka_kernel_config cfg = {.workgroup = {4, 1, 1}};
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(g_prog, "noargs", &cfg, &k));
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP, ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {16}, .workgroup = {8}}, NULL, 0, NULL));
    EXPECT_DETAIL("noargs", "static");
    /* Giving the static size, or none, is fine. */
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {16}, .workgroup = {4}}, NULL, 0, NULL));
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {16}}, NULL, 0, NULL));
    /* A 2-D static work-group with a 1-D range. */
    ka_kernel_config cfg2 = {.workgroup = {2, 2, 1}};
    ka_kernel k2;
    KA_OK_OR_FAIL(ka_kernel_get(g_prog, "noargs", &cfg2, &k2));
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP, ka_launch(g_q, k2, &(ka_range){.dims = 1, .size = {16}}, NULL, 0, NULL));
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP,
              ka_launch(g_q, k2, &(ka_range){.dims = 2, .size = {16, 16}, .workgroup = {2, 4}}, NULL, 0, NULL));
    KA_OK_OR_FAIL(ka_launch(g_q, k2, &(ka_range){.dims = 2, .size = {16, 16}}, NULL, 0, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
}

static void test_launch_static_ndrange(void **state) {
    (void)state;
    ka_kernel_config cfg = {.ndrange = {12, 0, 0}};
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(g_prog, "fill_idx", &cfg, &k));
    ka_buffer b = make_buffer(g_dev, 16 * sizeof(uint32_t));
    ka_arg a[] = {ka_arg_buffer(b), ka_arg_u32(0)};
    KA_EXPECT(KA_ERR_INVALID_RANGE, ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {13}}, a, 2, NULL));
    EXPECT_DETAIL("fill_idx");
    uint32_t poison[16];
    memset(poison, 0xEE, sizeof poison);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, sizeof poison, poison, NULL));
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {12}}, a, 2, NULL));
    uint32_t out[16];
    KA_OK_OR_FAIL(ka_buffer_read(g_q, b, 0, sizeof out, out, NULL));
    for (uint32_t i = 0; i < 12; i++) assert_int_equal(out[i], i);
    for (uint32_t i = 12; i < 16; i++) assert_int_equal(out[i], 0xEEEEEEEEu);
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_launch_wrong_arg_count(void **state) {
    (void)state;
    ka_kernel k = get_kernel("args3");
    ka_buffer b = make_buffer(g_dev, 64);
    ka_arg a[] = {ka_arg_buffer(b), ka_arg_f32(1.0f), ka_arg_u32(4), ka_arg_u32(5)};
    ka_event ev = {8};
    KA_EXPECT(KA_ERR_ARG_COUNT, ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {4}}, a, 2, &ev));
    EXPECT_DETAIL("args3", "3");
    assert_int_equal(ev.id, 0);
    KA_EXPECT(KA_ERR_ARG_COUNT, ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {4}}, a, 4, NULL));
    EXPECT_DETAIL("args3");
    KA_EXPECT(KA_ERR_ARG_COUNT, ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {4}}, NULL, 0, NULL));
    KA_EXPECT(KA_ERR_ARG_COUNT, ka_launch(g_q, get_kernel("noargs"), &(ka_range){.dims = 1, .size = {4}}, a, 1, NULL));
    EXPECT_DETAIL("noargs");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {4}}, NULL, 3, NULL));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_launch_wrong_arg_type(void **state) {
    (void)state;
    ka_kernel k = get_kernel("args3");
    ka_buffer b = make_buffer(g_dev, 64);
    const ka_range r = {.dims = 1, .size = {4}};
    /* A buffer where a float goes. */
    ka_arg a1[] = {ka_arg_buffer(b), ka_arg_buffer(b), ka_arg_u32(4)};
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(g_q, k, &r, a1, 3, NULL));
    EXPECT_DETAIL("args3", "argument 1", "scale");
    /* A double where a float goes: the size differs. */
    ka_arg a2[] = {ka_arg_buffer(b), ka_arg_f64(1.0), ka_arg_u32(4)};
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(g_q, k, &r, a2, 3, NULL));
    EXPECT_DETAIL("argument 1", "scale");
    /* A 64-bit value where a uint goes. */
    ka_arg a3[] = {ka_arg_buffer(b), ka_arg_f32(1.0f), ka_arg_u64(4)};
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(g_q, k, &r, a3, 3, NULL));
    EXPECT_DETAIL("argument 2", "count");
    /* A value where the buffer goes. */
    ka_arg a4[] = {ka_arg_u64(0), ka_arg_f32(1.0f), ka_arg_u32(4)};
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(g_q, k, &r, a4, 3, NULL));
    EXPECT_DETAIL("argument 0", "dst");
    /* Local memory where the buffer goes; a bogus kind. */
    ka_arg a5[] = {ka_arg_local(64), ka_arg_f32(1.0f), ka_arg_u32(4)};
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(g_q, k, &r, a5, 3, NULL));
    EXPECT_DETAIL("argument 0", "dst");
    ka_arg a6[] = {ka_arg_buffer(b), ka_arg_f32(1.0f), ka_arg_u32(4)};
    a6[2].kind = 99;
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(g_q, k, &r, a6, 3, NULL));
    EXPECT_DETAIL("argument 2", "count");
    /* A buffer where local memory goes. */
    ka_kernel kl = get_kernel("with_local");
    ka_arg a7[] = {ka_arg_buffer(b), ka_arg_buffer(b)};
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(g_q, kl, &r, a7, 2, NULL));
    EXPECT_DETAIL("with_local", "argument 1", "tmp");
    /* More local memory than the device has (read once at open); a size past
     * 4 GiB saturates instead of wrapping to a small one. */
    const ka_device_info *di;
    KA_OK_OR_FAIL(ka_device_get_info(g_dev, &di));
    if (di->local_mem_size) {
        ka_arg a10[] = {ka_arg_buffer(b), ka_arg_local((size_t)di->local_mem_size + 1)};
        KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_launch(g_q, kl, &r, a10, 2, NULL));
        EXPECT_DETAIL("with_local", "argument 1", "tmp", "local memory");
        ka_arg a11[] = {ka_arg_buffer(b), ka_arg_local(((size_t)1 << 32) + 64)};
        assert_int_equal(a11[1].size, 0xffffffffu);
        KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_launch(g_q, kl, &r, a11, 2, NULL));
    }
    /* Raw bytes of the right size pass for a scalar; of the wrong size do not. */
    float f = 2.0f;
    double d = 2.0;
    ka_arg a8[] = {ka_arg_buffer(b), ka_arg_bytes(&f, sizeof f), ka_arg_u32(4)};
    KA_OK_OR_FAIL(ka_launch(g_q, k, &r, a8, 3, NULL));
    ka_arg a9[] = {ka_arg_buffer(b), ka_arg_bytes(&d, sizeof d), ka_arg_u32(4)};
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(g_q, k, &r, a9, 3, NULL));
    EXPECT_DETAIL("argument 1", "scale");
    float out[4];
    KA_OK_OR_FAIL(ka_buffer_read(g_q, b, 0, sizeof out, out, NULL));
    for (int i = 0; i < 4; i++) assert_true(out[i] == 2.0f * (float)i);
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_launch_released_buffer_arg(void **state) {
    (void)state;
    ka_kernel k = get_kernel("args3");
    ka_buffer b = make_buffer(g_dev, 64);
    KA_OK_OR_FAIL(ka_buffer_release(b));
    ka_arg a[] = {ka_arg_buffer(b), ka_arg_f32(1.0f), ka_arg_u32(4)};
    ka_event ev = {3};
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {4}}, a, 3, &ev));
    EXPECT_DETAIL("args3", "argument 0");
    assert_int_equal(ev.id, 0);
    /* A handle of another type in a buffer argument. */
    ka_arg a2[] = {{.kind = KA_ARG_BUFFER, .size = 8, .u.buffer = g_q.id}, ka_arg_f32(1.0f), ka_arg_u32(4)};
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {4}}, a2, 3, NULL));
}

static void test_launch_empty_range(void **state) {
    (void)state;
    ka_kernel k = get_kernel("fill_idx");
    ka_buffer b = make_buffer(g_dev, 16);
    uint32_t poison[4] = {1, 2, 3, 4}, out[4];
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, sizeof poison, poison, NULL));
    ka_arg a[] = {ka_arg_buffer(b), ka_arg_u32(100)};
    const ka_range empties[] = {
        {.dims = 1, .size = {0}},
        {.dims = 2, .size = {4, 0}},
        {.dims = 3, .size = {4, 4, 0}},
        {.dims = 1, .size = {0}, .workgroup = {4}},
    };
    for (size_t i = 0; i < sizeof empties / sizeof empties[0]; i++) {
        ka_event ev = {0};
        KA_OK_OR_FAIL(ka_launch(g_q, k, &empties[i], a, 2, &ev));
        assert_true(ev.id != 0);
        KA_OK_OR_FAIL(ka_event_wait(ev, 0)); /* complete at once */
        uint32_t idx = 99;
        KA_OK_OR_FAIL(ka_wait_any(&ev, 1, 0, &idx));
        assert_int_equal(idx, 0);
        KA_OK_OR_FAIL(ka_event_release(ev));
        KA_OK_OR_FAIL(ka_launch(g_q, k, &empties[i], a, 2, NULL));
    }
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, b, 0, sizeof out, out, NULL));
    assert_memory_equal(out, poison, sizeof out); /* nothing ran */
    /* An empty range still checks arguments. */
    KA_EXPECT(KA_ERR_ARG_COUNT, ka_launch(g_q, k, &empties[0], a, 1, NULL));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_launch_bad_handles(void **state) {
    (void)state;
    ka_kernel k = get_kernel("noargs");
    const ka_range r = {.dims = 1, .size = {1}};
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch(BAD_QUEUE, k, &r, NULL, 0, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch(g_q, BAD_KERNEL, &r, NULL, 0, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch(g_q, (ka_kernel){g_q.id}, &r, NULL, 0, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch((ka_queue){k.id}, k, &r, NULL, 0, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch(g_q, (ka_kernel){0xdeadbeefcafef00dull}, &r, NULL, 0, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch(g_q, (ka_kernel){UINT64_MAX}, &r, NULL, 0, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch(g_q, (ka_kernel){k.id ^ (1ull << 40)}, &r, NULL, 0, NULL));
}

static void test_launch_kernel_queue_other_device(void **state) {
    (void)state;
    ka_device d;
    KA_OK_OR_FAIL(ka_device_open(g_info->selector, &d));
    ka_queue q;
    KA_OK_OR_FAIL(ka_queue_create(d, NULL, &q));
    ka_buffer b = make_buffer(g_dev, 16);
    uint8_t buf[16] = {0};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_launch(q, get_kernel("noargs"), &(ka_range){.dims = 1, .size = {1}}, NULL, 0, NULL));
    EXPECT_DETAIL("different devices");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(q, b, 0, 16, buf, NULL));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_queue_release(q));
    KA_OK_OR_FAIL(ka_device_close(d));
}

/* ============================ events and waits ============================ */

static void test_event_stale_after_release(void **state) {
    (void)state;
    ka_buffer b = make_buffer(g_dev, 16);
    uint32_t v = 1;
    ka_event ev;
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, 4, &v, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_wait(ev, 0));
    EXPECT_DETAIL("ka_event_wait");
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_release(ev));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_wait_all(&ev, 1, 0));
    uint32_t idx;
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_wait_any(&ev, 1, 0, &idx));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_on_complete(ev, NULL, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_notify(ev));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_wait(KA_NULL_EVENT, 0));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_release(KA_NULL_EVENT));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_wait((ka_event){b.id}, 0)); /* a buffer is not an event */
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_wait((ka_event){UINT64_MAX}, 0));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

/* With one slot, the next event reuses the released one's slot: the old
 * handle must stay stale and must not act on the new event. */
static void test_event_stale_after_slot_reuse(void **state) {
    (void)state;
    ka_queue q;
    ka_queue_config cfg = {.event_capacity = 1, .spin_ns = -1};
    KA_OK_OR_FAIL(ka_queue_create(g_dev, &cfg, &q));
    ka_buffer b = make_buffer(g_dev, 16);
    uint32_t v = 1;
    ka_event e1, e2;
    KA_OK_OR_FAIL(ka_buffer_write(q, b, 0, 4, &v, &e1));
    KA_OK_OR_FAIL(ka_event_release(e1));
    KA_OK_OR_FAIL(ka_buffer_write(q, b, 0, 4, &v, &e2));
    assert_true(e1.id != e2.id);
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_wait(e1, KA_WAIT_FOREVER));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_release(e1));
    KA_OK_OR_FAIL(ka_event_wait(e2, KA_WAIT_FOREVER)); /* untouched by the stale release */
    KA_OK_OR_FAIL(ka_event_release(e2));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_release(e2));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_queue_release(q));
}

/* An event handle of a released queue must stay stale when a new queue takes
 * the same slots, however often the old slot was reused. */
static void test_event_stale_after_queue_reuse(void **state) {
    (void)state;
    enum { CYCLES = 64 };
    ka_queue q1, q2;
    ka_queue_config cfg = {.event_capacity = 1, .spin_ns = -1};
    KA_OK_OR_FAIL(ka_queue_create(g_dev, &cfg, &q1));
    ka_buffer b = make_buffer(g_dev, 16);
    uint32_t v = 1;
    ka_event old[CYCLES];
    for (int i = 0; i < CYCLES; i++) {
        KA_OK_OR_FAIL(ka_buffer_write(q1, b, 0, 4, &v, &old[i]));
        KA_OK_OR_FAIL(ka_event_release(old[i]));
    }
    KA_OK_OR_FAIL(ka_queue_release(q1));
    KA_OK_OR_FAIL(ka_queue_create(g_dev, &cfg, &q2));
    ka_event cur;
    KA_OK_OR_FAIL(ka_buffer_write(q2, b, 0, 4, &v, &cur));
    for (int i = 0; i < CYCLES; i++) {
        if (old[i].id == cur.id) fail_msg("stale event %d of a released queue has the id of a live event (%#llx)", i, (unsigned long long)cur.id);
        ka_status st = ka_event_wait(old[i], 0);
        if (st != KA_ERR_INVALID_HANDLE)
            fail_msg("wait on stale event %d of a released queue -> %s, expected KA_ERR_INVALID_HANDLE", i, ka_status_name(st));
    }
    KA_OK_OR_FAIL(ka_event_wait(cur, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(cur));
    KA_OK_OR_FAIL(ka_queue_release(q2));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

/* Waits by polling only (timeout 0): no driver callback is armed, so a
 * release returns the slot at once. */
static void poll_done(ka_event ev) {
    int64_t until = now_ns() + 60 * 1000000000LL;
    ka_status st;
    while ((st = ka_event_wait(ev, 0)) == KA_ERR_TIMEOUT && now_ns() < until) sched_yield();
    KA_OK_OR_FAIL(st);
}

static void test_event_pool_exhaustion(void **state) {
    (void)state;
    enum { CAP = 4 };
    ka_queue q;
    ka_queue_config cfg = {.event_capacity = CAP, .spin_ns = -1};
    KA_OK_OR_FAIL(ka_queue_create(g_dev, &cfg, &q));
    ka_buffer b = make_buffer(g_dev, 64);
    uint32_t v[CAP + 1] = {0};
    ka_event ev[CAP + 1];
    for (int i = 0; i < CAP; i++) KA_OK_OR_FAIL(ka_buffer_write(q, b, 4 * (size_t)i, 4, &v[i], &ev[i]));
    for (int i = 0; i < CAP; i++) poll_done(ev[i]); /* completed, still held */
    ev[CAP].id = 77;
    KA_EXPECT(KA_ERR_EVENT_POOL_EXHAUSTED, ka_buffer_write(q, b, 0, 4, &v[0], &ev[CAP]));
    EXPECT_DETAIL("event_capacity");
    assert_int_equal(ev[CAP].id, 0);
    ka_kernel k = get_kernel("noargs");
    KA_EXPECT(KA_ERR_EVENT_POOL_EXHAUSTED, ka_launch(q, k, &(ka_range){.dims = 1, .size = {1}}, NULL, 0, &ev[CAP]));
    KA_EXPECT(KA_ERR_EVENT_POOL_EXHAUSTED, ka_launch(q, k, &(ka_range){.dims = 1, .size = {0}}, NULL, 0, &ev[CAP]));
    /* Without an event the queue still works. */
    KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {1}}, NULL, 0, NULL));
    KA_OK_OR_FAIL(ka_buffer_write(q, b, 0, 4, &v[0], NULL));
    /* Releasing one frees one slot, exactly. */
    KA_OK_OR_FAIL(ka_event_release(ev[1]));
    KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {1}}, NULL, 0, &ev[1]));
    KA_EXPECT(KA_ERR_EVENT_POOL_EXHAUSTED, ka_buffer_write(q, b, 0, 4, &v[0], &ev[CAP]));
    for (int i = 0; i < CAP; i++) poll_done(ev[i]);
    for (int i = 0; i < CAP; i++) KA_OK_OR_FAIL(ka_event_release(ev[i]));
    /* All free again: CAP events at once work. */
    for (int i = 0; i < CAP; i++) KA_OK_OR_FAIL(ka_buffer_write(q, b, 0, 4, &v[0], &ev[i]));
    KA_OK_OR_FAIL(ka_wait_all(ev, CAP, KA_WAIT_FOREVER));
    for (int i = 0; i < CAP; i++) KA_OK_OR_FAIL(ka_event_release(ev[i]));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_queue_release(q));
}

/* Waiting (asleep, on the driver's callback) and releasing every event must
 * give every slot back: the next CAP events must fit, at once, every time. */
static void test_event_pool_slots_back_after_wait(void **state) {
    (void)state;
    enum { CAP = 1, ROUNDS = 3000 };
    ka_queue q;
    ka_queue_config cfg = {.event_capacity = CAP, .spin_ns = 0}; /* sleep at once */
    KA_OK_OR_FAIL(ka_queue_create(g_dev, &cfg, &q));
    ka_buffer b = make_buffer(g_dev, 64);
    uint32_t v = 1;
    ka_event ev[CAP];
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < CAP; i++) {
            ka_status st = ka_buffer_write(q, b, 4 * (size_t)i, 4, &v, &ev[i]);
            if (st != KA_OK)
                fail_msg("round %d, event %d of %d: %s after all %d events of the previous round were waited for and "
                         "released\n%s", round, i, CAP, ka_status_name(st), CAP, ka_last_error());
        }
        KA_OK_OR_FAIL(ka_wait_all(ev, CAP, KA_WAIT_FOREVER));
        for (int i = 0; i < CAP; i++) KA_OK_OR_FAIL(ka_event_release(ev[i]));
    }
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_queue_release(q));
}

/* Same, when the completion is seen by polling: a timed-out wait armed the
 * driver's callback, then a poll finds the command complete, perhaps before
 * that callback has run. The released slot must still be there at once. */
static void test_event_pool_slots_back_after_poll(void **state) {
    (void)state;
    /* The window is narrow (a few rounds in 10000 hit it): many rounds, within 4 s. */
    enum { ROUNDS = 50000 };
    int64_t until = now_ns() + 4 * 1000000000LL;
    ka_queue q;
    ka_queue_config cfg = {.event_capacity = 1, .spin_ns = 0};
    KA_OK_OR_FAIL(ka_queue_create(g_dev, &cfg, &q));
    ka_buffer b = make_buffer(g_dev, 64);
    uint32_t v = 1;
    int failed_round = -1;
    ka_status fst = KA_OK;
    char detail[512] = "";
    int round = 0;
    for (; round < ROUNDS && (round % 256 || now_ns() < until); round++) {
        ka_event ev;
        ka_status st = ka_buffer_write(q, b, 0, 4, &v, &ev);
        if (st != KA_OK) {
            failed_round = round, fst = st;
            snprintf(detail, sizeof detail, "%s", ka_last_error());
            break;
        }
        st = ka_event_wait(ev, 1); /* 1 ns: arms the callback, times out */
        if (st == KA_ERR_TIMEOUT) /* then poll, tightly, to see the completion early */
            while ((st = ka_event_wait(ev, 0)) == KA_ERR_TIMEOUT) {
            }
        if (st == KA_OK) st = ka_event_release(ev);
        if (st != KA_OK) {
            failed_round = round, fst = st;
            snprintf(detail, sizeof detail, "wait or release failed: %s", ka_last_error());
            break;
        }
    }
    if (failed_round >= 0)
        fail_msg("round %d: %s after the previous round's event completed and was released\n%s", failed_round,
                 ka_status_name(fst), detail);
    print_message("[ INFO     ] %d rounds\n", round);
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_queue_release(q));
}

static void test_wait_timeouts(void **state) {
    (void)state;
    ka_buffer b = make_buffer(g_dev, 64);
    ka_event ev = launch_long(g_qlong, b);
    KA_EXPECT(KA_ERR_TIMEOUT, ka_event_wait(ev, 0));
    EXPECT_DETAIL("ka_event_wait");
    int64_t t0 = now_ns();
    KA_EXPECT(KA_ERR_TIMEOUT, ka_event_wait(ev, 20 * 1000000LL));
    int64_t waited = now_ns() - t0;
    assert_true(waited >= 20 * 1000000LL);
    KA_EXPECT(KA_ERR_TIMEOUT, ka_wait_all(&ev, 1, 0));
    uint32_t idx = 99;
    KA_EXPECT(KA_ERR_TIMEOUT, ka_wait_any(&ev, 1, 0, &idx));
    KA_EXPECT(KA_ERR_TIMEOUT, ka_wait_any(&ev, 1, 5 * 1000000LL, &idx));
    EXPECT_DETAIL("ka_wait_any");
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_wait(ev, 0));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_wait_all(void **state) {
    (void)state;
    ka_buffer b = make_buffer(g_dev, 256);
    ka_event ev[5];
    ev[0] = launch_long(g_qlong, b);
    uint32_t vals[4] = {1, 2, 3, 4};
    for (int i = 0; i < 4; i++) KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 64 + 4 * (size_t)i, 4, &vals[i], &ev[i + 1]));
    KA_EXPECT(KA_ERR_TIMEOUT, ka_wait_all(ev, 5, 0));
    KA_OK_OR_FAIL(ka_wait_all(ev, 5, KA_WAIT_FOREVER));
    for (int i = 0; i < 5; i++) KA_OK_OR_FAIL(ka_event_wait(ev[i], 0));
    KA_OK_OR_FAIL(ka_wait_all(ev, 0, 0));
    KA_OK_OR_FAIL(ka_wait_all(NULL, 0, 0));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_wait_all(NULL, 2, 0));
    KA_OK_OR_FAIL(ka_event_release(ev[2]));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_wait_all(ev, 5, 0));
    EXPECT_DETAIL("ka_wait_all", "2");
    for (int i = 0; i < 5; i++)
        if (i != 2) KA_OK_OR_FAIL(ka_event_release(ev[i]));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_wait_any(void **state) {
    (void)state;
    ka_buffer b = make_buffer(g_dev, 64);
    ka_event ev[2];
    ev[0] = launch_long(g_qlong, b);
    /* An empty launch completes at once: wait_any must find it, even polling. */
    KA_OK_OR_FAIL(ka_launch(g_q, get_kernel("noargs"), &(ka_range){.dims = 1, .size = {0}}, NULL, 0, &ev[1]));
    uint32_t idx = 99;
    KA_OK_OR_FAIL(ka_wait_any(ev, 2, 0, &idx));
    assert_int_equal(idx, 1);
    KA_OK_OR_FAIL(ka_event_release(ev[1]));
    /* A second queue: its short command completes while the long one runs. */
    ka_queue q2;
    KA_OK_OR_FAIL(ka_queue_create(g_dev, NULL, &q2));
    uint32_t v = 3;
    KA_OK_OR_FAIL(ka_buffer_write(q2, b, 32, 4, &v, &ev[1]));
    idx = 99;
    KA_OK_OR_FAIL(ka_wait_any(ev, 2, KA_WAIT_FOREVER, &idx));
    assert_true(idx < 2);
    KA_OK_OR_FAIL(ka_event_wait(ev[idx], 0)); /* the one reported is complete */
    /* Then the long one. */
    idx = 99;
    KA_OK_OR_FAIL(ka_wait_any(&ev[0], 1, KA_WAIT_FOREVER, &idx));
    assert_int_equal(idx, 0);
    KA_OK_OR_FAIL(ka_event_wait(ev[0], 0));
    /* Bad input. */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_wait_any(ev, 0, 0, &idx));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_wait_any(NULL, 1, 0, &idx));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_wait_any(ev, 2, 0, NULL));
    ka_event many[KA_MAX_ARGS + 1];
    for (int i = 0; i <= KA_MAX_ARGS; i++) many[i] = ev[0];
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_wait_any(many, KA_MAX_ARGS + 1, 0, &idx));
    KA_OK_OR_FAIL(ka_event_release(ev[0]));
    KA_OK_OR_FAIL(ka_event_release(ev[1]));
    KA_OK_OR_FAIL(ka_queue_release(q2));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

typedef struct cb_rec {
    _Atomic uint32_t calls;
    _Atomic int32_t status;
} cb_rec;

static void on_done(ka_status st, void *user) {
    cb_rec *r = user;
    atomic_store(&r->status, (int32_t)st);
    atomic_fetch_add(&r->calls, 1);
}

static void test_on_complete_already_done(void **state) {
    (void)state;
    ka_buffer b = make_buffer(g_dev, 16);
    uint32_t v = 1;
    ka_event ev;
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, 4, &v, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    cb_rec r = {0, -100};
    KA_OK_OR_FAIL(ka_event_on_complete(ev, on_done, &r));
    assert_int_equal(atomic_load(&r.calls), 1); /* ran inside the call */
    assert_int_equal(atomic_load(&r.status), KA_OK);
    /* A second callback on the same event is refused and never runs. */
    cb_rec r2 = {0, -100};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_event_on_complete(ev, on_done, &r2));
    KA_OK_OR_FAIL(ka_event_release(ev));
    sleep_ms(20);
    assert_int_equal(atomic_load(&r.calls), 1);
    assert_int_equal(atomic_load(&r2.calls), 0);
    /* After a wait that slept: the driver's callback was armed for the wait
     * and has run; a user callback still runs, once, in this call. */
    ev = launch_long(g_qlong, b);
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    sleep_ms(20); /* let the driver's callback finish */
    cb_rec r4 = {0, -100};
    KA_OK_OR_FAIL(ka_event_on_complete(ev, on_done, &r4));
    assert_int_equal(atomic_load(&r4.calls), 1);
    assert_int_equal(atomic_load(&r4.status), KA_OK);
    KA_OK_OR_FAIL(ka_event_release(ev));
    assert_int_equal(atomic_load(&r4.calls), 1);
    /* The no-op event of an empty launch. */
    cb_rec r3 = {0, -100};
    KA_OK_OR_FAIL(ka_launch(g_q, get_kernel("noargs"), &(ka_range){.dims = 1, .size = {0}}, NULL, 0, &ev));
    KA_OK_OR_FAIL(ka_event_on_complete(ev, on_done, &r3));
    assert_int_equal(atomic_load(&r3.calls), 1);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_event_on_complete(ev, NULL, NULL));
    KA_OK_OR_FAIL(ka_event_release(ev));
    assert_int_equal(atomic_load(&r3.calls), 1);
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_on_complete_pending(void **state) {
    (void)state;
    ka_buffer b = make_buffer(g_dev, 64);
    ka_event ev = launch_long(g_qlong, b);
    cb_rec r = {0, -100};
    KA_OK_OR_FAIL(ka_event_on_complete(ev, on_done, &r));
    assert_int_equal(atomic_load(&r.calls), 0); /* the kernel runs ~300 ms */
    cb_rec r2 = {0, -100};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_event_on_complete(ev, on_done, &r2));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    assert_int_equal(await_count(&r.calls, 1, 5000), 1);
    assert_int_equal(atomic_load(&r.status), KA_OK);
    KA_OK_OR_FAIL(ka_event_release(ev));
    sleep_ms(30);
    assert_int_equal(atomic_load(&r.calls), 1);
    assert_int_equal(atomic_load(&r2.calls), 0);
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_on_complete_then_release(void **state) {
    (void)state;
    ka_buffer b = make_buffer(g_dev, 64);
    ka_event ev = launch_long(g_qlong, b);
    cb_rec r = {0, -100};
    KA_OK_OR_FAIL(ka_event_on_complete(ev, on_done, &r));
    KA_OK_OR_FAIL(ka_event_release(ev)); /* before completion: the callback still runs once */
    KA_OK_OR_FAIL(ka_queue_finish(g_qlong));
    assert_int_equal(await_count(&r.calls, 1, 5000), 1);
    assert_int_equal(atomic_load(&r.status), KA_OK);
    /* The slot is free again and works. */
    ka_event e2;
    uint32_t v = 1;
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, 4, &v, &e2));
    KA_OK_OR_FAIL(ka_event_wait(e2, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(e2));
    sleep_ms(20);
    assert_int_equal(atomic_load(&r.calls), 1);
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

/* Releasing a queue with a callback armed on a running command: the release
 * finishes the work and returns only after the callback ran, once. */
static void test_queue_release_waits_for_callbacks(void **state) {
    (void)state;
    ka_queue q;
    KA_OK_OR_FAIL(ka_queue_create(g_dev, &async_cfg, &q));
    ka_buffer b = make_buffer(g_dev, 64);
    ka_event ev = launch_long(q, b);
    cb_rec r = {0, -100};
    KA_OK_OR_FAIL(ka_event_on_complete(ev, on_done, &r));
    KA_OK_OR_FAIL(ka_queue_release(q));
    assert_int_equal(atomic_load(&r.calls), 1);
    assert_int_equal(atomic_load(&r.status), KA_OK);
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_wait(ev, 0));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_release(ev));
    sleep_ms(20);
    assert_int_equal(atomic_load(&r.calls), 1);
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_event_notify_fd(void **state) {
    (void)state;
    ka_queue q;
    KA_OK_OR_FAIL(ka_queue_create(g_dev, &async_cfg, &q));
    ka_buffer b = make_buffer(g_dev, 64);
    ka_event ev = launch_long(q, b);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_event_notify(ev)); /* no fd yet */
    int fd = -1, fd2 = -2;
    KA_OK_OR_FAIL(ka_queue_fd(q, &fd));
    KA_OK_OR_FAIL(ka_queue_fd(q, &fd2));
    assert_true(fd >= 0);
    assert_int_equal(fd, fd2);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_queue_fd(q, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_fd(BAD_QUEUE, &fd2));
    KA_OK_OR_FAIL(ka_event_notify(ev));
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 0), 0); /* not yet */
    int r = poll(&p, 1, 10000);
    assert_int_equal(r, 1);
    KA_OK_OR_FAIL(ka_event_wait(ev, 0));
    uint64_t cnt = 0;
    assert_int_equal(read(fd, &cnt, sizeof cnt), (ssize_t)sizeof cnt);
    assert_int_equal(cnt, 1);
    KA_OK_OR_FAIL(ka_event_release(ev));
    /* Notify on a completed event: readable at once. */
    uint32_t v = 1;
    KA_OK_OR_FAIL(ka_buffer_write(q, b, 0, 4, &v, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_notify(ev));
    assert_int_equal(poll(&p, 1, 1000), 1);
    assert_int_equal(read(fd, &cnt, sizeof cnt), (ssize_t)sizeof cnt);
    KA_OK_OR_FAIL(ka_event_release(ev));
    /* Notify after a wait that slept (the driver's callback was armed and ran):
     * still readable at once, exactly one count. */
    ev = launch_long(q, b);
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    sleep_ms(20); /* let the driver's callback finish */
    assert_int_equal(poll(&p, 1, 0), 0);
    KA_OK_OR_FAIL(ka_event_notify(ev));
    assert_int_equal(poll(&p, 1, 1000), 1);
    assert_int_equal(read(fd, &cnt, sizeof cnt), (ssize_t)sizeof cnt);
    assert_int_equal(cnt, 1);
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_queue_release(q));
}

static void test_wait_spin_settings(void **state) {
    (void)state;
    ka_buffer b = make_buffer(g_dev, 16);
    uint32_t v = 1;
    const int64_t spins[] = {0, 1000, 200000, -1};
    for (size_t i = 0; i < sizeof spins / sizeof spins[0]; i++) {
        ka_set_wait_spin(spins[i]);
        ka_event ev;
        KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, 4, &v, &ev));
        KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_event_release(ev));
    }
    ka_set_wait_spin(-1);
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

/* ================================ handles ================================= */

static void test_released_handles_everywhere(void **state) {
    (void)state;
    ka_queue q;
    KA_OK_OR_FAIL(ka_queue_create(g_dev, NULL, &q));
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, "KA_KERNEL(k, KA_GLOBAL int *a) { a[0] = 1; }\n", NULL, &p));
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "k", NULL, &k));
    ka_buffer b = make_buffer(g_dev, 16);
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_OK_OR_FAIL(ka_queue_release(q));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_release(b));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_program_release(p));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_release(q));
    ka_kernel_info ki;
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_kernel_get_info(k, &ki));
    ka_arg a[] = {ka_arg_buffer(b)};
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch(q, k, &(ka_range){.dims = 1, .size = {1}}, a, 1, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {1}}, a, 1, NULL));
    /* Garbage ids of every shape. */
    const uint64_t junk[] = {0, 1, 0xffffffffull, 0x100000000ull, UINT64_MAX, 0x123456789abcdefull,
                             (uint64_t)4096 * 256, (uint64_t)4096 * 256 - 1};
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        size_t sz;
        ka_kernel_info kinfo;
        uint32_t n;
        const ka_device_info *di;
        if (ka_buffer_size((ka_buffer){junk[i]}, &sz) != KA_ERR_INVALID_HANDLE) fail_msg("buffer %#llx", (unsigned long long)junk[i]);
        if (ka_buffer_release((ka_buffer){junk[i]}) != KA_ERR_INVALID_HANDLE) fail_msg("buffer %#llx", (unsigned long long)junk[i]);
        if (ka_queue_finish((ka_queue){junk[i]}) != KA_ERR_INVALID_HANDLE) fail_msg("queue %#llx", (unsigned long long)junk[i]);
        if (ka_kernel_get_info((ka_kernel){junk[i]}, &kinfo) != KA_ERR_INVALID_HANDLE) fail_msg("kernel %#llx", (unsigned long long)junk[i]);
        if (ka_program_build_count((ka_program){junk[i]}, &n) != KA_ERR_INVALID_HANDLE) fail_msg("program %#llx", (unsigned long long)junk[i]);
        if (ka_device_get_info((ka_device){junk[i]}, &di) != KA_ERR_INVALID_HANDLE) fail_msg("device %#llx", (unsigned long long)junk[i]);
        if (ka_event_wait((ka_event){junk[i]}, 0) != KA_ERR_INVALID_HANDLE) fail_msg("event %#llx", (unsigned long long)junk[i]);
    }
}

/* ================================= logger ================================= */

typedef struct log_rec {
    _Atomic uint32_t n;
    char last[512];
} log_rec;

static void logger(ka_log_level lvl, const char *msg, void *user) {
    log_rec *r = user;
    (void)lvl;
    snprintf(r->last, sizeof r->last, "%s", msg);
    atomic_fetch_add(&r->n, 1);
}

static void test_logger_hook(void **state) {
    (void)state;
    static log_rec r;
    atomic_store(&r.n, 0);
    size_t sz;
    /* Not installed: nothing arrives. */
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_size(BAD_BUFFER, &sz));
    assert_int_equal(atomic_load(&r.n), 0);
    ka_set_logger(logger, &r);
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_size(BAD_BUFFER, &sz));
    uint32_t got = atomic_load(&r.n);
    ka_set_logger(NULL, NULL);
    assert_true(got >= 1);
    assert_non_null(strstr(r.last, "ka_buffer_size"));
    /* Removed: nothing more arrives. */
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_size(BAD_BUFFER, &sz));
    ka_program p;
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(g_dev, "KA_KERNEL_NOARGS(k) { nope; }", NULL, &p));
    assert_int_equal(atomic_load(&r.n), got);
}

/* ============================== last error ================================ */

static void *other_thread(void *arg) {
    (void)arg;
    size_t sz;
    ka_buffer_size(BAD_BUFFER, &sz);
    return strstr(ka_last_error(), "ka_buffer_size") ? (void *)1 : NULL;
}

static void test_last_error_is_per_thread(void **state) {
    (void)state;
    ka_queue q;
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_create(BAD_DEVICE, NULL, &q));
    pthread_t t;
    void *ok = NULL;
    assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
    pthread_join(t, &ok);
    assert_non_null(ok);
    /* This thread's detail is untouched by the other's failure. */
    EXPECT_DETAIL("ka_queue_create");
    assert_null(strstr(ka_last_error(), "ka_buffer_size"));
}

/* ============================== null device =============================== */

static ka_device n_dev;
static ka_queue n_q;

static int null_setup(void **state) {
    (void)state;
    if (ka_device_open("null", &n_dev) != KA_OK) return -1;
    if (ka_queue_create(n_dev, NULL, &n_q) != KA_OK) return -1;
    return 0;
}

static int null_teardown(void **state) {
    (void)state;
    ka_queue_release(n_q);
    ka_status st = ka_device_close(n_dev);
    if (st != KA_OK) fprintf(stderr, "null teardown: %s %s\n", ka_status_name(st), ka_last_error());
    return 0;
}

static void test_null_device_info(void **state) {
    (void)state;
    const ka_device_info *i;
    KA_OK_OR_FAIL(ka_device_get_info(n_dev, &i));
    assert_int_equal(i->backend, KA_BACKEND_NULL);
    assert_string_equal(i->selector, "null");
    assert_true(i->max_workgroup_size > 0);
    assert_true(i->local_mem_size > 0);
    /* The null device is not in the enumerated list. */
    uint32_t n = 0;
    KA_OK_OR_FAIL(ka_device_count(&n));
    for (uint32_t k = 0; k < n; k++) {
        ka_device_info d;
        KA_OK_OR_FAIL(ka_device_describe(k, &d));
        assert_int_not_equal(d.backend, KA_BACKEND_NULL);
    }
}

static void test_null_buffers(void **state) {
    (void)state;
    ka_buffer a = make_buffer(n_dev, 256), b = make_buffer(n_dev, 256);
    uint8_t in[256], out[256];
    fill_bytes(in, sizeof in, 9);
    KA_OK_OR_FAIL(ka_buffer_write(n_q, a, 0, 256, in, NULL));
    KA_OK_OR_FAIL(ka_buffer_copy(n_q, a, 0, b, 0, 256, NULL));
    ka_event ev;
    KA_OK_OR_FAIL(ka_buffer_read(n_q, b, 0, 256, out, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, 0));
    KA_OK_OR_FAIL(ka_event_release(ev));
    assert_memory_equal(in, out, 256);
    uint16_t pat = 0xA55A;
    KA_OK_OR_FAIL(ka_buffer_fill(n_q, b, &pat, 2, 4, 8, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(n_q, b, 0, 16, out, NULL));
    assert_memory_equal(out, in, 4);
    for (int i = 0; i < 4; i++) assert_int_equal(((uint16_t *)(out + 4))[i], 0xA55A);
    assert_memory_equal(out + 12, in + 12, 4);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(n_q, a, 0, a, 8, 16, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(n_q, a, 250, 7, in, NULL));
    ka_buffer c;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_create(n_dev, 0, &c));
    KA_EXPECT(KA_ERR_DEVICE_OUT_OF_MEMORY, ka_buffer_create(n_dev, SIZE_MAX, &c));
    /* A buffer of another device cannot be used on this queue. */
    ka_buffer real = make_buffer(g_dev, 16);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(n_q, real, 0, 4, in, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(n_q, a, 0, real, 0, 4, NULL));
    KA_OK_OR_FAIL(ka_buffer_release(real));
    KA_OK_OR_FAIL(ka_buffer_release(a));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_release(b));
}

static void test_null_programs_and_launch(void **state) {
    (void)state;
    const char *src = "KA_KERNEL(k3, KA_GLOBAL float *a, float s, uint n) { }\n"
                      "KA_KERNEL_NOARGS(k0) { }\n";
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(n_dev, src, NULL, &p));
    ka_kernel k, k2;
    KA_OK_OR_FAIL(ka_kernel_get(p, "k3", NULL, &k));
    KA_OK_OR_FAIL(ka_kernel_get(p, "k3", NULL, &k2));
    assert_true(k.id == k2.id);
    ka_kernel_info ki;
    KA_OK_OR_FAIL(ka_kernel_get_info(k, &ki));
    assert_int_equal(ki.num_args, 3);
    uint32_t builds = 0;
    ka_kernel_config cfg = {.workgroup = {8}};
    KA_OK_OR_FAIL(ka_kernel_get(p, "k3", &cfg, &k2));
    KA_OK_OR_FAIL(ka_program_build_count(p, &builds));
    assert_int_equal(builds, 2);
    ka_kernel k4;
    KA_EXPECT(KA_ERR_KERNEL_NOT_FOUND, ka_kernel_get(p, "k4", NULL, &k4));
    ka_kernel k0;
    KA_OK_OR_FAIL(ka_kernel_get(p, "k0", NULL, &k0)); /* KA_KERNEL_NOARGS */
    KA_OK_OR_FAIL(ka_kernel_get_info(k0, &ki));
    assert_int_equal(ki.num_args, 0);
    ka_buffer b = make_buffer(n_dev, 64);
    ka_arg a[] = {ka_arg_buffer(b), ka_arg_f32(1.0f), ka_arg_u32(3)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(n_q, k, &(ka_range){.dims = 1, .size = {100}}, a, 3, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, 0));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_EXPECT(KA_ERR_ARG_COUNT, ka_launch(n_q, k, &(ka_range){.dims = 1, .size = {100}}, a, 2, NULL));
    EXPECT_DETAIL("k3");
    KA_EXPECT(KA_ERR_INVALID_RANGE, ka_launch(n_q, k, &(ka_range){.dims = 0, .size = {100}}, a, 3, NULL));
    KA_EXPECT(KA_ERR_INVALID_RANGE, ka_launch(n_q, k, &(ka_range){.dims = 4, .size = {100}}, a, 3, NULL));
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP,
              ka_launch(n_q, k, &(ka_range){.dims = 2, .size = {10, 10}, .workgroup = {2, 0}}, a, 3, NULL));
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP,
              ka_launch(n_q, k, &(ka_range){.dims = 1, .size = {10}, .workgroup = {2048}}, a, 3, NULL));
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP,
              ka_launch(n_q, k2, &(ka_range){.dims = 1, .size = {10}, .workgroup = {4}}, a, 3, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {1}}, a, 3, NULL));
    /* A released buffer in the arguments is a stale handle on every back-end. */
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch(n_q, k, &(ka_range){.dims = 1, .size = {100}}, a, 3, NULL));
    ka_program bad;
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(n_dev, "#error nope\n", NULL, &bad));
    KA_EXPECT(KA_ERR_IN_USE, ka_device_close(n_dev));
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_kernel_get_info(k, &ki));
}

static void test_null_events(void **state) {
    (void)state;
    ka_queue q;
    ka_queue_config cfg = {.event_capacity = 2, .spin_ns = -1};
    KA_OK_OR_FAIL(ka_queue_create(n_dev, &cfg, &q));
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(n_dev, "KA_KERNEL_NOARGS(k) { }\n", NULL, &p));
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "k", NULL, &k));
    const ka_range r = {.dims = 1, .size = {4}};
    ka_event ev[3];
    KA_OK_OR_FAIL(ka_launch(q, k, &r, NULL, 0, &ev[0]));
    KA_OK_OR_FAIL(ka_launch(q, k, &r, NULL, 0, &ev[1]));
    KA_EXPECT(KA_ERR_EVENT_POOL_EXHAUSTED, ka_launch(q, k, &r, NULL, 0, &ev[2]));
    KA_OK_OR_FAIL(ka_wait_all(ev, 2, 0));
    uint32_t idx = 9;
    KA_OK_OR_FAIL(ka_wait_any(ev, 2, 0, &idx));
    assert_true(idx < 2);
    cb_rec rec = {0, -100};
    KA_OK_OR_FAIL(ka_event_on_complete(ev[0], on_done, &rec));
    assert_int_equal(atomic_load(&rec.calls), 1);
    KA_OK_OR_FAIL(ka_event_release(ev[0]));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_release(ev[0]));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_wait(ev[0], 0));
    KA_OK_OR_FAIL(ka_launch(q, k, &r, NULL, 0, &ev[2]));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_wait(ev[0], 0));
    KA_OK_OR_FAIL(ka_event_release(ev[1]));
    KA_OK_OR_FAIL(ka_event_release(ev[2]));
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_OK_OR_FAIL(ka_queue_release(q));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_release(q));
}

int main(void) {
    const struct CMUnitTest core[] = {
        cmocka_unit_test(test_status_names_and_messages),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_last_error_names_the_call),
        cmocka_unit_test(test_last_error_is_per_thread),
        cmocka_unit_test(test_device_count_and_describe),
        cmocka_unit_test(test_device_open_opencl0),
        cmocka_unit_test(test_device_open_pocl),
        cmocka_unit_test(test_device_open_by_name_substring),
        cmocka_unit_test(test_device_open_from_env),
        cmocka_unit_test(test_device_open_default),
        cmocka_unit_test(test_device_open_bad_selectors),
    };
    const struct CMUnitTest real[] = {
        cmocka_unit_test(test_device_info_sane),
        cmocka_unit_test(test_device_get_info_bad),
        cmocka_unit_test(test_device_close_in_use),
        cmocka_unit_test(test_queue_lifecycle),
        cmocka_unit_test(test_queue_with_config),
        cmocka_unit_test(test_queue_create_bad),
        cmocka_unit_test(test_buffer_create_and_size),
        cmocka_unit_test(test_buffer_create_zero_bytes),
        cmocka_unit_test(test_buffer_create_huge),
        cmocka_unit_test(test_buffer_write_read_blocking),
        cmocka_unit_test(test_buffer_write_read_async),
        cmocka_unit_test(test_buffer_copy),
        cmocka_unit_test(test_buffer_copy_overlap),
        cmocka_unit_test(test_buffer_out_of_range),
        cmocka_unit_test(test_buffer_empty_transfer),
        cmocka_unit_test(test_buffer_fill_patterns),
        cmocka_unit_test(test_buffer_released_handle),
        cmocka_unit_test(test_program_build_with_options_and_defines),
        cmocka_unit_test(test_program_build_bad_defines),
        cmocka_unit_test(test_program_build_failure_has_log),
        cmocka_unit_test(test_kernel_not_found),
        cmocka_unit_test(test_kernel_not_declared_with_ka_kernel),
        cmocka_unit_test(test_kernel_get_cached),
        cmocka_unit_test(test_kernel_get_static_config_builds_variant),
        cmocka_unit_test(test_kernel_get_bad_configs),
        cmocka_unit_test(test_program_release_invalidates_kernels),
        cmocka_unit_test(test_launch_runs),
        cmocka_unit_test(test_launch_bad_dims),
        cmocka_unit_test(test_launch_zero_workgroup_dim),
        cmocka_unit_test(test_launch_oversized_workgroup),
        cmocka_unit_test(test_launch_static_dynamic_mismatch),
        cmocka_unit_test(test_launch_static_ndrange),
        cmocka_unit_test(test_launch_wrong_arg_count),
        cmocka_unit_test(test_launch_wrong_arg_type),
        cmocka_unit_test(test_launch_released_buffer_arg),
        cmocka_unit_test(test_launch_empty_range),
        cmocka_unit_test(test_launch_bad_handles),
        cmocka_unit_test(test_launch_kernel_queue_other_device),
        cmocka_unit_test(test_event_stale_after_release),
        cmocka_unit_test(test_event_stale_after_slot_reuse),
        cmocka_unit_test(test_event_stale_after_queue_reuse),
        cmocka_unit_test(test_event_pool_exhaustion),
        cmocka_unit_test(test_event_pool_slots_back_after_wait),
        cmocka_unit_test(test_event_pool_slots_back_after_poll),
        cmocka_unit_test(test_wait_timeouts),
        cmocka_unit_test(test_wait_all),
        cmocka_unit_test(test_wait_any),
        cmocka_unit_test(test_on_complete_already_done),
        cmocka_unit_test(test_on_complete_pending),
        cmocka_unit_test(test_on_complete_then_release),
        cmocka_unit_test(test_queue_release_waits_for_callbacks),
        cmocka_unit_test(test_event_notify_fd),
        cmocka_unit_test(test_wait_spin_settings),
        cmocka_unit_test(test_released_handles_everywhere),
        cmocka_unit_test(test_logger_hook),
    };
    const struct CMUnitTest null_dev[] = {
        cmocka_unit_test(test_null_device_info),
        cmocka_unit_test(test_null_buffers),
        cmocka_unit_test(test_null_programs_and_launch),
        cmocka_unit_test(test_null_events),
    };
    int fails = cmocka_run_group_tests_name("api: core", core, NULL, NULL);
    /* The default device's group needs a device that runs kernels. */
    if (group_setup(NULL) != 0) return fails + 1;
    bool real_device = g_info->backend != KA_BACKEND_NULL;
    group_teardown(NULL);
    if (real_device)
        fails += cmocka_run_group_tests_name("api: default device", real, group_setup, group_teardown);
    else
        fprintf(stderr, "the default device is the null device: the default-device group is skipped\n");
    /* The null group borrows the default device for cross-device checks. */
    if (group_setup(NULL) != 0) return fails + 1;
    fails += cmocka_run_group_tests_name("api: null device", null_dev, null_setup, null_teardown);
    group_teardown(NULL);
    return fails;
}
