/* ka_launch on the default device: results, ranges and work-groups (static
 * and dynamic), argument counts and types, empty ranges, and bad or foreign
 * handles. */
#define KA_TEST_FIXTURE
#include "test_util.h"

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
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, sizeof out));
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
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, poison, sizeof poison));
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {12}}, a, 2, NULL));
    uint32_t out[16];
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, sizeof out));
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
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, sizeof out));
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

/* Ranges long in dimension 1 or 2 with libka's work-group choice: on a GPU
 * the default group is short there (64 x 4, 64 x 4 x 1), so a narrow range
 * gives dimension 0's unused share to the next one and a tall range takes
 * items from the earlier dimensions (CUDA's grid has at most 65535 groups in
 * y and z); every row runs once. */
static void test_launch_tall_ranges(void **state) {
    (void)state;
    static const char *src =
        "KA_KERNEL(mark_rows, KA_GLOBAL uint *a) {\n"
        "    if (!ka_in_range()) return;\n"
        "    uint r = (uint)(ka_ndims() == 3 ? ka_global_id(2) : ka_global_id(1));\n"
        "    if (ka_global_id(0) == 0 && (ka_ndims() == 2 || ka_global_id(1) == 0)) a[r] = r + 1;\n"
        "}\n";
    ka_program p;
    ka_kernel k;
    KA_OK_OR_FAIL(ka_program_build(g_dev, src, NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "mark_rows", NULL, &k));
    const ka_range ranges[] = {{.dims = 2, .size = {1, 300000}}, {.dims = 2, .size = {4, 300000}},
                               {.dims = 3, .size = {64, 4, 70000}}};
    uint32_t *h = malloc(300000 * sizeof *h);
    assert_non_null(h);
    ka_buffer b = make_buffer(g_dev, 300000 * sizeof *h);
    for (size_t c = 0; c < sizeof ranges / sizeof ranges[0]; c++) {
        uint32_t rows = (uint32_t)ranges[c].size[ranges[c].dims - 1];
        KA_OK_OR_FAIL(ka_buffer_fill(g_q, b, 0, &(uint32_t){0}, 4, 300000 * sizeof *h, NULL));
        ka_arg a[] = {ka_arg_buffer(b)};
        KA_OK_OR_FAIL(ka_launch(g_q, k, &ranges[c], a, 1, NULL));
        KA_OK_OR_FAIL(ka_buffer_read(g_q, h, b, 0, rows * sizeof *h));
        for (uint32_t r = 0; r < rows; r++)
            if (h[r] != r + 1) fail_msg("range %zu: row %u holds %u", c, r, h[r]);
    }
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_program_release(p));
    free(h);
}

static void test_launch_empty_range(void **state) {
    (void)state;
    ka_kernel k = get_kernel("fill_idx");
    ka_buffer b = make_buffer(g_dev, 16);
    uint32_t poison[4] = {1, 2, 3, 4}, out[4];
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, poison, sizeof poison));
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
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, sizeof out));
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
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(q, b, 0, buf, 16));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_queue_release(q));
    KA_OK_OR_FAIL(ka_device_close(d));
}

int main(void) {
    const struct CMUnitTest tests[] = {
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
        cmocka_unit_test(test_launch_tall_ranges),
        cmocka_unit_test(test_launch_bad_handles),
        cmocka_unit_test(test_launch_kernel_queue_other_device),
    };
    /* The group needs a device that runs kernels. */
    int dev = default_device_runs_kernels();
    if (dev <= 0) return dev < 0 ? 1 : 77;
    return cmocka_run_group_tests_name("launch: default device", tests, group_setup, group_teardown);
}
