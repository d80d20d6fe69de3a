/* Statuses, their names and messages, the version, the per-thread detail of the
 * last error, released and garbage handles on every call, and the logger hook.
 * The core cases need no device; the rest run on the default device. */
#define KA_TEST_FIXTURE
#include "test_util.h"

#include <pthread.h>

static void test_status_names_and_messages(void **state) {
    (void)state;
    struct { ka_status s; const char *name; const char *msg; } all[] = {
#define ROW(name, value, msg) {KA_##name, "KA_" #name, msg},
        KA_STATUS_MAP(ROW)
#undef ROW
    };
    size_t n = sizeof all / sizeof all[0];
    assert_int_equal(n, 21);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal((int)all[i].s, -(int)i); /* dense: 0, -1, ..., -20 */
        assert_string_equal(ka_status_name(all[i].s), all[i].name);
        assert_string_equal(ka_strerror(all[i].s), all[i].msg);
        assert_true(strlen(ka_strerror(all[i].s)) > 0);
        for (size_t j = 0; j < i; j++) assert_string_not_equal(ka_strerror(all[i].s), ka_strerror(all[j].s));
    }
    assert_string_equal(ka_status_name(KA_OK), "KA_OK");
    assert_string_equal(ka_status_name(KA_ERR_TIMEOUT), "KA_ERR_TIMEOUT");
    /* Values outside the table still give static, non-NULL strings. */
    const ka_status odd[] = {(ka_status)1, (ka_status)-21, (ka_status)12345, (ka_status)INT32_MIN};
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

int main(void) {
    const struct CMUnitTest core[] = {
        cmocka_unit_test(test_status_names_and_messages),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_last_error_names_the_call),
        cmocka_unit_test(test_last_error_is_per_thread),
    };
    const struct CMUnitTest real[] = {
        cmocka_unit_test(test_released_handles_everywhere),
        cmocka_unit_test(test_logger_hook),
    };
    int fails = cmocka_run_group_tests_name("errors: core", core, NULL, NULL);
    /* The default device's group needs a device that runs kernels. */
    int dev = default_device_runs_kernels();
    if (dev < 0) return fails + 1;
    if (dev) fails += cmocka_run_group_tests_name("errors: default device", real, group_setup, group_teardown);
    return fails;
}
