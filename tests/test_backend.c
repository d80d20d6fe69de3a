/* The back-end contract (src/core/backend.h), linked against libka's objects
 * so the internal table and its check can be called: every built-in table
 * (and OpenCL's PoCL routing layer) passes the check; a table of another version, without a required hook
 * (the build hooks among them), with some but not all of the host memory
 * hooks, or with only one of source_append and append_file, is refused with
 * a message naming it; selectors and names come from the
 * table. */
#include "test_util.h"

#include "backend.h"

extern const ka__backend ka__pocl_backend; /* OpenCL's PoCL routing layer, chosen at device open (device_ops) */

static void builtin_tables_pass(void **state) {
    (void)state;
    assert_true(ka__nbackends >= 2);
    for (uint32_t i = 0; i < ka__nbackends; i++) {
        const ka__backend *be = ka__backends[i];
        KA_OK_OR_FAIL(ka__backend_check(be));
        assert_string_equal(ka_backend_name(be->kind), be->name);
    }
    KA_OK_OR_FAIL(ka__backend_check(&ka__pocl_backend));
    assert_string_equal(ka_backend_name(KA_BACKEND_OPENCL), "opencl");
    assert_string_equal(ka_backend_name(KA_BACKEND_NULL), "null");
    assert_string_equal(ka_backend_name((ka_backend)77), "unknown");
}

static void wrong_version_refused(void **state) {
    (void)state;
    ka__backend t = ka__null_backend;
    t.version = KA__BACKEND_VERSION + 1;
    KA_EXPECT(KA_ERR_UNSUPPORTED, ka__backend_check(&t));
    EXPECT_DETAIL("null", "version");
    t.version = 1; /* the table before buffers were resolved by the core */
    KA_EXPECT(KA_ERR_UNSUPPORTED, ka__backend_check(&t));
}

static ka_status fake_host_alloc(ka__device *d, size_t bytes, void **ptr) {
    (void)d;
    (void)bytes;
    (void)ptr;
    return KA_ERR_UNSUPPORTED;
}

/* OpenCL's table without one required hook: refused, the detail naming it. */
#define EXPECT_REQUIRED(hook)                                                                      \
    do {                                                                                           \
        ka__backend t_ = ka__opencl_backend;                                                       \
        t_.hook = NULL;                                                                            \
        KA_EXPECT(KA_ERR_UNSUPPORTED, ka__backend_check(&t_));                                     \
        EXPECT_DETAIL("opencl", #hook);                                                            \
    } while (0)

static void missing_hook_refused(void **state) {
    (void)state;
    EXPECT_REQUIRED(launch);
    EXPECT_REQUIRED(event_wait);
    /* The hooks of host memory, maps and queue waits are required too. */
    EXPECT_REQUIRED(queue_wait);
    EXPECT_REQUIRED(buffer_map);
    /* The build hooks the core's pipeline calls (src/core/build.c). */
    EXPECT_REQUIRED(prelude);
    EXPECT_REQUIRED(build_target);
    EXPECT_REQUIRED(compile);
    EXPECT_REQUIRED(load);
    EXPECT_REQUIRED(module_release);
    /* The four host memory hooks: all or none (OpenCL has none, CUDA all). */
    ka__backend t = ka__opencl_backend;
    t.host_alloc = fake_host_alloc; /* one of the four */
    KA_EXPECT(KA_ERR_UNSUPPORTED, ka__backend_check(&t));
    EXPECT_DETAIL("opencl", "1 of the 4 host memory hooks");
    /* The appendix and its file name: both or neither. */
    t = ka__opencl_backend;
    t.append_file = NULL;
    KA_EXPECT(KA_ERR_UNSUPPORTED, ka__backend_check(&t));
    EXPECT_DETAIL("opencl", "source_append and append_file");
    t = ka__opencl_backend;
    t.source_append = NULL;
    KA_EXPECT(KA_ERR_UNSUPPORTED, ka__backend_check(&t));
    /* The optional ones may be NULL. */
    t = ka__opencl_backend;
    t.source_file = NULL;
    t.source_rewrite = NULL;
    t.source_append = NULL;
    t.append_file = NULL;
    t.build_options = NULL;
    t.selects = NULL;
    t.preferred = NULL;
    t.device_native = NULL;
    t.queue_native = NULL;
    t.queue_stats = NULL;
    t.event_error = NULL;
    t.event_elapsed = NULL;
    t.assert_take = NULL;
    t.buffer_native = NULL;
    t.host_alloc = NULL;
    t.host_free = NULL;
    t.host_register = NULL;
    t.host_unregister = NULL;
    KA_OK_OR_FAIL(ka__backend_check(&t));
}

/* An unlisted back-end is opened by its bare name only, not as "NAME:N"
 * (test_devices covers the listed ones' selectors). */
static void unlisted_by_bare_name(void **state) {
    (void)state;
    ka_device d;
    KA_OK_OR_FAIL(ka_device_open("null", &d));
    const ka_device_info *info;
    KA_OK_OR_FAIL(ka_device_get_info(d, &info));
    assert_int_equal(info->backend, KA_BACKEND_NULL);
    KA_OK_OR_FAIL(ka_device_close(d));
    KA_EXPECT(KA_ERR_NO_DEVICE, ka_device_open("null:0", &d));
    uint32_t n, listed = 0;
    KA_OK_OR_FAIL(ka_device_count(&n));
    for (uint32_t i = 0; i < n; i++) {
        ka_device_info di;
        KA_OK_OR_FAIL(ka_device_describe(i, &di));
        listed += di.backend == KA_BACKEND_NULL;
    }
    assert_int_equal(listed, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(builtin_tables_pass),
        cmocka_unit_test(wrong_version_refused),
        cmocka_unit_test(missing_hook_refused),
        cmocka_unit_test(unlisted_by_bare_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
