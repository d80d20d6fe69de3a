/* Devices: counting, describing and opening them by selector, name and
 * $KA_DEVICE (no fixture), then the default device's info and its close while
 * in use. */
#define _GNU_SOURCE /* strcasestr */
#define KA_TEST_FIXTURE
#include "test_util.h"

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
        assert_true(d.backend == KA_BACKEND_OPENCL || d.backend == KA_BACKEND_CUDA || d.backend == KA_BACKEND_HOST);
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

int main(void) {
    const struct CMUnitTest core[] = {
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
    };
    int fails = cmocka_run_group_tests_name("devices: core", core, NULL, NULL);
    /* The default device's group needs a device that runs kernels. */
    int dev = default_device_runs_kernels();
    if (dev < 0) return fails + 1;
    if (dev) fails += cmocka_run_group_tests_name("devices: default device", real, group_setup, group_teardown);
    return fails;
}
