/* Queues on the default device: create, flush, finish, release (its events go
 * stale), a configured queue, and bad configurations and handles. */
#define KA_TEST_FIXTURE
#include "test_util.h"

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
    KA_OK_OR_FAIL(ka_buffer_write_async(q, b, 0, data, sizeof data, &ev));
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
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_write(q, b, 0, data, 4));
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
    KA_OK_OR_FAIL(ka_buffer_write_async(q, b, 0, &v, 4, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER)); /* spin off: sleeps */
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_read(q, &r, b, 0, 4));
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_lifecycle),
        cmocka_unit_test(test_queue_with_config),
        cmocka_unit_test(test_queue_create_bad),
    };
    /* The group needs a device that runs kernels. */
    int dev = default_device_runs_kernels();
    if (dev <= 0) return dev < 0 ? 1 : 77;
    return cmocka_run_group_tests_name("queues: default device", tests, group_setup, group_teardown);
}
