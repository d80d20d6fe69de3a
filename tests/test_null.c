/* The "null" device (runs nothing, completes every command at once): its
 * info, buffers, programs (their defines checked as on every device),
 * launches and events. The default device's fixture
 * is open alongside for the cross-device checks. */
#define KA_TEST_FIXTURE
#include "test_util.h"

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
    KA_OK_OR_FAIL(ka_buffer_write(n_q, a, 0, in, 256));
    KA_OK_OR_FAIL(ka_buffer_copy(n_q, b, 0, a, 0, 256, NULL));
    ka_event ev;
    KA_OK_OR_FAIL(ka_buffer_read_async(n_q, out, b, 0, 256, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, 0));
    KA_OK_OR_FAIL(ka_event_release(ev));
    assert_memory_equal(in, out, 256);
    uint16_t pat = 0xA55A;
    KA_OK_OR_FAIL(ka_buffer_fill(n_q, b, 4, &pat, 2, 8, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(n_q, out, b, 0, 16));
    assert_memory_equal(out, in, 4);
    for (int i = 0; i < 4; i++) assert_int_equal(((uint16_t *)(out + 4))[i], 0xA55A);
    assert_memory_equal(out + 12, in + 12, 4);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(n_q, a, 8, a, 0, 16, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(n_q, a, 250, in, 7));
    ka_buffer c;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_create(n_dev, 0, &c));
    KA_EXPECT(KA_ERR_DEVICE_OUT_OF_MEMORY, ka_buffer_create(n_dev, SIZE_MAX, &c));
    /* A buffer of another device cannot be used on this queue. */
    ka_buffer real = make_buffer(g_dev, 16);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(n_q, real, 0, in, 4));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(n_q, real, 0, a, 0, 4, NULL));
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

/* A kernel name of 1000 characters is found (its parameters counted) and launched. */
static void test_null_long_name(void **state) {
    (void)state;
    char name[1001], src[1200];
    memset(name, 'n', 1000);
    name[1000] = 0;
    snprintf(src, sizeof src, "KA_KERNEL(%s, KA_GLOBAL int *a, int v) { }\n", name);
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(n_dev, src, NULL, &p));
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, name, NULL, &k));
    ka_kernel_info ki;
    KA_OK_OR_FAIL(ka_kernel_get_info(k, &ki));
    assert_int_equal(ki.num_args, 2);
    ka_buffer b = make_buffer(n_dev, 64);
    ka_arg a[] = {ka_arg_buffer(b), ka_arg_i32(1)};
    KA_OK_OR_FAIL(ka_launch(n_q, k, &(ka_range){.dims = 1, .size = {4}}, a, 2, NULL));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_program_release(p));
}

/* Defines are checked by the core, so the null device, which compiles
 * nothing, refuses the same ones the others do and takes the same ones. */
static void test_null_defines(void **state) {
    (void)state;
    const char *good[] = {"VAL=1 + 2", "F(x)=((x) + 1)", "FLAG"}, *bad[] = {"A\nB"};
    ka_build_options og = {.defines = good, .num_defines = 3}, ob = {.defines = bad, .num_defines = 1};
    ka_program p;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build(n_dev, "KA_KERNEL_NOARGS(k) { }\n", &ob, &p));
    EXPECT_DETAIL("ka_build_options.defines[0]", "line break");
    const char *tri[] = {"X=1 ?" "?/"}; /* a splice where trigraphs are read (PoCL's clang) */
    ka_build_options ot = {.defines = tri, .num_defines = 1};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build(n_dev, "KA_KERNEL_NOARGS(k) { }\n", &ot, &p));
    EXPECT_DETAIL("ka_build_options.defines[0]", "join the next line");
    const char *splice[] = {"Y=1 \\  "}; /* blanks between the backslash and the line's end splice too */
    ka_build_options os = {.defines = splice, .num_defines = 1};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build(n_dev, "KA_KERNEL_NOARGS(k) { }\n", &os, &p));
    EXPECT_DETAIL("ka_build_options.defines[0]", "join the next line");
    KA_OK_OR_FAIL(ka_program_build(n_dev, "KA_KERNEL_NOARGS(k) { }\n", &og, &p));
    ka_kernel k;
    ka_kernel_config cfg = {.defines = "-DVAL=1 + 2"}, ok = {.defines = "-DW=4 -UFLAG"};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_kernel_get(p, "k", &cfg, &k));
    EXPECT_DETAIL("ka_kernel_config.defines", "'+'");
    KA_OK_OR_FAIL(ka_kernel_get(p, "k", &ok, &k));
    KA_OK_OR_FAIL(ka_program_release(p));
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

/* The GPU work-group rule (the null device is not a CPU), as the launches'
 * trace records it: dimension 0 up to 64, the later dimensions what the
 * earlier leave of 256, and a dimension 1 or 2 past 65535 groups taking items
 * from the earlier ones (docs/API.md, "Work-group choice"). */
static struct {
    uint32_t n;
    uint64_t local[16][3];
} wg_seen;

static void wg_tracer(const ka_trace_event *ev, void *user) {
    (void)user;
    if (ev->kind != KA_TRACE_LAUNCH || ev->end || wg_seen.n == 16) return;
    for (int d = 0; d < 3; d++) wg_seen.local[wg_seen.n][d] = ev->local[d];
    wg_seen.n++;
}

static void test_null_gpu_workgroups(void **state) {
    (void)state;
    static const struct {
        ka_range r;
        uint64_t want[3];
    } cases[] = {{{.dims = 1, .size = {1000}}, {256, 1, 1}},
                 {{.dims = 1, .size = {7}}, {8, 1, 1}},
                 {{.dims = 2, .size = {1000, 1000}}, {64, 4, 1}},
                 {{.dims = 2, .size = {5, 3}}, {8, 4, 1}},
                 {{.dims = 2, .size = {4, 100000}}, {4, 64, 1}},
                 {{.dims = 2, .size = {1, 300000}}, {1, 256, 1}},
                 {{.dims = 3, .size = {3, 3, 3}}, {4, 4, 4}},
                 {{.dims = 3, .size = {1000, 1000, 1000}}, {64, 4, 1}},
                 {{.dims = 3, .size = {64, 4, 70000}}, {32, 4, 2}},
                 {{.dims = 3, .size = {1, 1, 100}}, {1, 1, 128}}};
    const uint32_t nc = sizeof cases / sizeof cases[0];
    memset(&wg_seen, 0, sizeof wg_seen);
    ka_set_tracer(wg_tracer, NULL);
    ka_device d;
    ka_queue q;
    ka_program p;
    ka_kernel k;
    ka_status st = ka_device_open("null", &d); /* traced: opened with the tracer installed */
    ka_set_tracer(NULL, NULL);
    KA_OK_OR_FAIL(st);
    ka_set_tracer(wg_tracer, NULL);
    KA_OK_OR_FAIL(ka_queue_create(d, NULL, &q));
    KA_OK_OR_FAIL(ka_program_build(d, "KA_KERNEL_NOARGS(k) { }\n", NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "k", NULL, &k));
    for (uint32_t c = 0; c < nc; c++) KA_OK_OR_FAIL(ka_launch(q, k, &cases[c].r, NULL, 0, NULL));
    ka_set_tracer(NULL, NULL);
    assert_int_equal(wg_seen.n, nc);
    for (uint32_t c = 0; c < nc; c++)
        for (int i = 0; i < 3; i++)
            if (wg_seen.local[c][i] != cases[c].want[i])
                fail_msg("case %u (%u-D %llu x %llu x %llu): work-group %llu x %llu x %llu, want %llu x %llu x %llu", c,
                         cases[c].r.dims, (unsigned long long)cases[c].r.size[0], (unsigned long long)cases[c].r.size[1],
                         (unsigned long long)cases[c].r.size[2], (unsigned long long)wg_seen.local[c][0],
                         (unsigned long long)wg_seen.local[c][1], (unsigned long long)wg_seen.local[c][2],
                         (unsigned long long)cases[c].want[0], (unsigned long long)cases[c].want[1],
                         (unsigned long long)cases[c].want[2]);
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_OK_OR_FAIL(ka_queue_release(q));
    KA_OK_OR_FAIL(ka_device_close(d));
}

int main(void) {
    const struct CMUnitTest null_dev[] = {
        cmocka_unit_test(test_null_device_info),
        cmocka_unit_test(test_null_buffers),
        cmocka_unit_test(test_null_programs_and_launch),
        cmocka_unit_test(test_null_long_name),
        cmocka_unit_test(test_null_defines),
        cmocka_unit_test(test_null_events),
        cmocka_unit_test(test_null_gpu_workgroups),
    };
    /* The null group borrows the default device for cross-device checks. */
    if (group_setup(NULL) != 0) return 1;
    int fails = cmocka_run_group_tests_name("null device", null_dev, null_setup, null_teardown);
    group_teardown(NULL);
    return fails;
}
