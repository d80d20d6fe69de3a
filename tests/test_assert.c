/* ka_assert on the default device: the first failing work-item's line, global
 * id and kernel reach the next wait on its queue (ka_event_wait, ka_wait_all,
 * ka_wait_any, ka_queue_finish) as KA_ERR_KERNEL_FAILED; the queue is usable
 * afterwards; other queues see nothing; launches routed inline on PoCL and
 * threaded ones; 2-D ids; kernels of programs without ka_assert keep their
 * argument count; an asserting kernel's steady launch + wait allocates
 * nothing; a graph refuses to record one. */
#include "test_util.h"

#include <pthread.h>


/* Line numbers matter: the detail names the line of the failing ka_assert. */
static const char *src =
    "KA_KERNEL(check, KA_GLOBAL uint *out, uint bad) {\n"          /* 1 */
    "    if (!ka_in_range()) return;\n"                             /* 2 */
    "    uint i = (uint)ka_global_id(0);\n"                         /* 3 */
    "    ka_assert(i != bad);\n"                                    /* 4 */
    "    out[i] = i;\n"                                             /* 5 */
    "}\n"                                                           /* 6 */
    "KA_KERNEL(check2d, KA_GLOBAL uint *out, uint bx, uint by) {\n" /* 7 */
    "    if (!ka_in_range()) return;\n"                             /* 8 */
    "    uint x = (uint)ka_global_id(0), y = (uint)ka_global_id(1);\n"
    "    ka_assert(!(x == bx && y == by));\n"                       /* 10 */
    "    out[y * ka_ndrange(0) + x] = 1;\n"
    "}\n"
    "KA_KERNEL_NOARGS(noargs) { ka_assert(ka_global_id(0) != 3); }\n"; /* 13 */

static const char *plain_src = /* "ka_assert" only in a comment: no hidden parameters */
    "/* ka_assert(x) */ KA_KERNEL(check, KA_GLOBAL uint *out, uint bad) {\n"
    "    if (ka_in_range()) out[ka_global_id(0)] = bad;\n"
    "}\n";

static ka_device g_dev;
static ka_queue g_q, g_q2;
static ka_program g_prog;
static ka_kernel g_check, g_check2d, g_noargs;
static ka_buffer g_out;
#define N_BIG 300000u /* past PoCL routing's default limit: the threaded device */

static ka_status launch_check(ka_queue q, uint32_t n, uint32_t bad, ka_event *ev) {
    ka_arg a[] = {ka_arg_buffer(g_out), ka_arg_u32(bad)};
    return ka_launch(q, g_check, &(ka_range){.dims = 1, .size = {n}}, a, 2, ev);
}

static void expect_failure(const char *call, uint32_t line, const char *kernel, const char *gid) {
    char want[96];
    snprintf(want, sizeof want, "line %u of", line);
    char k[64];
    snprintf(k, sizeof k, "kernel '%s'", kernel);
    EXPECT_DETAIL(call, "ka_assert failed", k, want, gid);
}

static void test_event_wait(void **state) {
    (void)state;
    const uint32_t sizes[] = {1000, N_BIG};
    for (int r = 0; r < 2; r++) {
        uint32_t n = sizes[r], bad = n / 2 + 1;
        ka_event ev;
        KA_OK_OR_FAIL(launch_check(g_q, n, bad, &ev));
        KA_EXPECT(KA_ERR_KERNEL_FAILED, ka_event_wait(ev, KA_WAIT_FOREVER));
        char gid[64];
        snprintf(gid, sizeof gid, "work-item (%u,0,0)", bad);
        expect_failure("ka_event_wait", 4, "check", gid);
        KA_OK_OR_FAIL(ka_event_release(ev));
        /* The work-item went on, and the queue is usable: the record was cleared. */
        KA_OK_OR_FAIL(launch_check(g_q, n, UINT32_MAX, &ev));
        KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_event_release(ev));
        uint32_t v[2];
        KA_OK_OR_FAIL(ka_buffer_read(g_q, v, g_out, (size_t)(n - 2) * 4, 8));
        assert_int_equal(v[0], n - 2);
        assert_int_equal(v[1], n - 1);
        KA_OK_OR_FAIL(ka_queue_finish(g_q));
    }
}

/* A wait on a queue that ran asserting kernels keeps its meaning: it waits
 * for its own event, not for the commands enqueued after it (the record is
 * read apart from the queue). A kernel behind the awaited one spins until
 * the host sets a flag in wrapped host memory; a watchdog sets it after 60 s
 * so that a wait which wrongly waits for it fails the test instead of
 * hanging it. */
static const char *hold_src =
    "KA_KERNEL(hold, KA_GLOBAL volatile uint *flag) {\n"
    "    if (ka_global_id(0) == 0) while (flag[0] == 0) {}\n"
    "}\n";

static void *watchdog(void *arg) {
    uint32_t *flag = arg;
    for (int i = 0; i < 600 && !__atomic_load_n(flag, __ATOMIC_ACQUIRE); i++)
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
    return NULL;
}

static void test_wait_not_after_later_commands(void **state) {
    (void)state;
    const ka_device_info *info;
    KA_OK_OR_FAIL(ka_device_get_info(g_dev, &info));
    if (info->backend == KA_BACKEND_NULL) skip(); /* runs no kernel */
    ka_program hp;
    ka_kernel hold;
    KA_OK_OR_FAIL(ka_program_build(g_dev, hold_src, NULL, &hp));
    KA_OK_OR_FAIL(ka_kernel_get(hp, "hold", NULL, &hold));
    uint32_t *flag;
    KA_OK_OR_FAIL(ka_host_alloc(g_dev, KA_HOST_ALIGN, (void **)&flag));
    __atomic_store_n(flag, 0u, __ATOMIC_RELEASE);
    ka_buffer fb;
    KA_OK_OR_FAIL(ka_buffer_wrap(g_dev, flag, KA_HOST_ALIGN, &fb));
    ka_event first, held;
    ka_arg a[] = {ka_arg_buffer(g_out), ka_arg_u32(UINT32_MAX)}, h[] = {ka_arg_buffer(fb)};
    /* An asserting kernel (the queue reads the record at waits), then the hold. */
    KA_OK_OR_FAIL(ka_launch(g_q, g_check, &(ka_range){.dims = 1, .size = {64}, .flags = KA_LAUNCH_ASYNC}, a, 2, &first));
    KA_OK_OR_FAIL(ka_launch(g_q, hold, &(ka_range){.dims = 1, .size = {1}, .flags = KA_LAUNCH_ASYNC}, h, 1, &held));
    pthread_t dog;
    assert_int_equal(pthread_create(&dog, NULL, watchdog, flag), 0);
    KA_OK_OR_FAIL(ka_event_wait(first, KA_WAIT_FOREVER));
    ka_status later = ka_event_wait(held, 0); /* still spinning: the host has not set the flag */
    __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
    pthread_join(dog, NULL);
    KA_OK_OR_FAIL(ka_event_wait(held, KA_WAIT_FOREVER));
    if (later != KA_ERR_TIMEOUT)
        fail_msg("the wait for the first kernel also waited for the kernel enqueued after it (%s)", ka_status_name(later));
    KA_OK_OR_FAIL(ka_event_release(first));
    KA_OK_OR_FAIL(ka_event_release(held));
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
    KA_OK_OR_FAIL(ka_buffer_release(fb));
    KA_OK_OR_FAIL(ka_host_free(g_dev, flag));
    KA_OK_OR_FAIL(ka_program_release(hp));
}

/* Only the first failure is kept: several failing work-items, one record. */
static void test_first_failure_and_other_calls(void **state) {
    (void)state;
    ka_arg a[] = {ka_arg_buffer(g_out), ka_arg_u32(9), ka_arg_u32(5)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(g_q, g_check2d, &(ka_range){.dims = 2, .size = {16, 16}}, a, 3, &ev));
    KA_EXPECT(KA_ERR_KERNEL_FAILED, ka_wait_all(&ev, 1, KA_WAIT_FOREVER));
    expect_failure("ka_wait_all", 10, "check2d", "work-item (9,5,0)");
    KA_OK_OR_FAIL(ka_event_release(ev));
    /* ka_queue_finish reports it, without an event. */
    KA_OK_OR_FAIL(launch_check(g_q, 64, 7, NULL));
    KA_EXPECT(KA_ERR_KERNEL_FAILED, ka_queue_finish(g_q));
    expect_failure("ka_queue_finish", 4, "check", "work-item (7,0,0)");
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
    /* ka_wait_any, and a kernel without arguments. */
    KA_OK_OR_FAIL(ka_launch(g_q, g_noargs, &(ka_range){.dims = 1, .size = {8}}, NULL, 0, &ev));
    uint32_t idx = 9;
    KA_EXPECT(KA_ERR_KERNEL_FAILED, ka_wait_any(&ev, 1, KA_WAIT_FOREVER, &idx));
    assert_int_equal(idx, 0);
    expect_failure("ka_wait_any", 13, "noargs", "work-item (3,0,0)");
    KA_OK_OR_FAIL(ka_event_release(ev));
    /* Many failing work-items: one report, then a clean queue. */
    KA_OK_OR_FAIL(launch_check(g_q, 64, 5, NULL));
    KA_OK_OR_FAIL(launch_check(g_q, 64, 6, NULL));
    KA_EXPECT(KA_ERR_KERNEL_FAILED, ka_queue_finish(g_q));
    expect_failure("ka_queue_finish", 4, "check", "work-item (5,0,0)");
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
}

/* A failure on one queue is not another queue's. */
static void test_other_queue(void **state) {
    (void)state;
    ka_event ev, ev2;
    KA_OK_OR_FAIL(launch_check(g_q, 64, 1, &ev));
    KA_OK_OR_FAIL(launch_check(g_q2, 64, UINT32_MAX, &ev2));
    KA_OK_OR_FAIL(ka_event_wait(ev2, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_queue_finish(g_q2));
    KA_EXPECT(KA_ERR_KERNEL_FAILED, ka_event_wait(ev, KA_WAIT_FOREVER));
    expect_failure("ka_event_wait", 4, "check", "work-item (1,0,0)");
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_event_release(ev2));
}

/* Argument counts exclude the hidden parameters; a program without ka_assert
 * has none (its kernel's argument list is the user's). */
static void test_signatures(void **state) {
    (void)state;
    ka_kernel_info info;
    KA_OK_OR_FAIL(ka_kernel_get_info(g_check, &info));
    assert_int_equal(info.num_args, 2);
    KA_OK_OR_FAIL(ka_kernel_get_info(g_noargs, &info));
    assert_int_equal(info.num_args, 0);
    ka_program p;
    ka_kernel k;
    KA_OK_OR_FAIL(ka_program_build(g_dev, plain_src, NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "check", NULL, &k));
    KA_OK_OR_FAIL(ka_kernel_get_info(k, &info));
    assert_int_equal(info.num_args, 2);
    ka_native_queue nq;
    (void)nq;
    ka_arg a[] = {ka_arg_buffer(g_out), ka_arg_u32(3)};
    KA_EXPECT(KA_ERR_ARG_COUNT, ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {4}}, a, 4, NULL));
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {4}}, a, 2, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
    KA_OK_OR_FAIL(ka_program_release(p));
    /* A graph cannot record an asserting kernel. */
    KA_OK_OR_FAIL(ka_graph_begin(g_q));
    KA_EXPECT(KA_ERR_UNSUPPORTED, launch_check(g_q, 64, 1, NULL));
    EXPECT_DETAIL("ka_assert", "graph");
    ka_graph g;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_end(g_q, &g)); /* nothing recorded */
}

/* Steady launches + waits of an asserting kernel allocate nothing. */
static void test_no_alloc(void **state) {
    (void)state;
    for (int w = 0; w < 3; w++) {
        ka_event ev;
        KA_OK_OR_FAIL(launch_check(g_q, 64, UINT32_MAX, &ev));
        KA_OK_OR_FAIL(launch_check(g_q, N_BIG, UINT32_MAX, NULL));
        KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_event_release(ev));
        KA_OK_OR_FAIL(ka_queue_finish(g_q));
    }
    heap_start();
    for (int i = 0; i < 200; i++) {
        ka_event ev;
        KA_OK_OR_FAIL(launch_check(g_q, 64, UINT32_MAX, &ev));
        KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_event_release(ev));
    }
    KA_OK_OR_FAIL(launch_check(g_q, N_BIG, UINT32_MAX, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
    assert_int_equal(heap_stop(), 0);
}

static int setup(void **state) {
    (void)state;
    KA_OK_OR_FAIL(ka_device_open(NULL, &g_dev));
    KA_OK_OR_FAIL(ka_queue_create(g_dev, NULL, &g_q));
    KA_OK_OR_FAIL(ka_queue_create(g_dev, NULL, &g_q2));
    KA_OK_OR_FAIL(ka_program_build(g_dev, src, NULL, &g_prog));
    KA_OK_OR_FAIL(ka_kernel_get(g_prog, "check", NULL, &g_check));
    KA_OK_OR_FAIL(ka_kernel_get(g_prog, "check2d", NULL, &g_check2d));
    KA_OK_OR_FAIL(ka_kernel_get(g_prog, "noargs", NULL, &g_noargs));
    KA_OK_OR_FAIL(ka_buffer_create(g_dev, N_BIG * 4, &g_out));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ka_buffer_release(g_out);
    ka_program_release(g_prog);
    ka_queue_release(g_q);
    ka_queue_release(g_q2);
    return ka_device_close(g_dev) == KA_OK ? 0 : -1;
}

int main(void) {
    heap_install();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_wait),
        cmocka_unit_test(test_first_failure_and_other_calls),
        cmocka_unit_test(test_wait_not_after_later_commands),
        cmocka_unit_test(test_other_queue),
        cmocka_unit_test(test_signatures),
        cmocka_unit_test(test_no_alloc),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
