#define _GNU_SOURCE /* RUSAGE_THREAD */
/* Issue 4: cooperative waits. Timeouts, a sleeping wait that costs no CPU,
 * user callbacks (once, on the driver's thread or at once, safe with the
 * event released), the queue's eventfd, wait_any, device errors reaching the
 * waiter, and the libuv example's loop staying live during a long kernel. */
#include "test_util.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int uv_kernels_run(const char *sel, double kernel_ms, int *fires_during, double *measured_ms);

static const char *src = KA_TEST_SPIN_KERNEL("work");

static struct {
    ka_device dev;
    ka_queue q; /* routing off: the long kernel has few work-items */
    ka_program prog;
    ka_kernel work;
    ka_buffer buf;
    uint32_t iters_200ms;
} F;

static double now_ms(void) { return (double)now_ns() / 1e6; }

static ka_status launch(uint32_t iters, ka_event *ev) {
    ka_arg args[] = {ka_arg_buffer(F.buf), ka_arg_u32(iters)};
    return ka_launch(F.q, F.work, &(ka_range){.dims = 1, .size = {256}}, args, 2, ev);
}

static int setup(void **state) {
    (void)state;
    ka_queue_config cfg = {.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF};
    if (ka_device_open(NULL, &F.dev) || ka_queue_create(F.dev, &cfg, &F.q) || ka_program_build(F.dev, src, NULL, &F.prog) ||
        ka_kernel_get(F.prog, "work", NULL, &F.work) || ka_buffer_create(F.dev, 256 * sizeof(float), &F.buf))
        return -1;
    /* Calibrate a 200 ms kernel. */
    uint32_t iters = 1u << 14;
    for (;;) {
        ka_event ev;
        double t0 = now_ms();
        if (launch(iters, &ev) || ka_event_wait(ev, KA_WAIT_FOREVER) || ka_event_release(ev)) return -1;
        double ms = now_ms() - t0;
        if (ms >= 200 || iters >= (1u << 30)) break;
        iters = ms > 1 ? (uint32_t)((double)iters * 200 / ms * 1.2) : iters * 8;
    }
    F.iters_200ms = iters;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ka_buffer_release(F.buf);
    ka_program_release(F.prog);
    ka_queue_release(F.q);
    ka_device_close(F.dev);
    return 0;
}

static double thread_cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static void long_wait_costs_no_cpu(void **state) {
    (void)state;
    ka_event ev;
    KA_OK_OR_FAIL(launch(F.iters_200ms, &ev));
    double t0 = now_ms(), c0 = thread_cpu_s();
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    double wall = (now_ms() - t0) / 1e3, cpu = thread_cpu_s() - c0;
    KA_OK_OR_FAIL(ka_event_release(ev));
    print_message("waited %.0f ms, the waiting thread used %.2f ms of CPU (%.3f%%)\n", wall * 1e3, cpu * 1e3,
                  100 * cpu / wall);
    assert_true(wall > 0.1);
    assert_true(cpu / wall < 0.02);
}

static void timeouts(void **state) {
    (void)state;
    ka_event ev;
    KA_OK_OR_FAIL(launch(F.iters_200ms, &ev));
    KA_EXPECT(KA_ERR_TIMEOUT, ka_event_wait(ev, 0));
    double t0 = now_ms();
    KA_EXPECT(KA_ERR_TIMEOUT, ka_event_wait(ev, 20 * 1000000LL));
    double waited = now_ms() - t0;
    print_message("a 20 ms timeout returned after %.1f ms\n", waited);
    assert_true(waited >= 19 && waited < 150);
    uint32_t idx;
    KA_EXPECT(KA_ERR_TIMEOUT, ka_wait_any(&ev, 1, 5 * 1000000LL, &idx));
    KA_EXPECT(KA_ERR_TIMEOUT, ka_wait_all(&ev, 1, 0));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_wait(ev, 0)); /* complete: a poll succeeds */
    KA_OK_OR_FAIL(ka_event_release(ev));
}

static void wait_any_returns_the_short_one(void **state) {
    (void)state;
    ka_queue q2;
    KA_OK_OR_FAIL(ka_queue_create(F.dev, &(ka_queue_config){.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF}, &q2));
    ka_event ev[2];
    KA_OK_OR_FAIL(launch(F.iters_200ms, &ev[0]));
    ka_arg args[] = {ka_arg_buffer(F.buf), ka_arg_u32(1)};
    KA_OK_OR_FAIL(ka_launch(q2, F.work, &(ka_range){.dims = 1, .size = {64}}, args, 2, &ev[1]));
    uint32_t idx = 99;
    KA_OK_OR_FAIL(ka_wait_any(ev, 2, KA_WAIT_FOREVER, &idx));
    assert_int_equal(idx, 1);
    KA_EXPECT(KA_ERR_TIMEOUT, ka_event_wait(ev[0], 0));
    KA_OK_OR_FAIL(ka_wait_all(ev, 2, KA_WAIT_FOREVER));
    ka_event_release(ev[0]);
    ka_event_release(ev[1]);
    ka_queue_release(q2);
}

typedef struct cb_state {
    _Atomic int calls;
    _Atomic int status;
    pthread_t thread;
} cb_state;

static void on_done(ka_status st, void *user) {
    cb_state *c = user;
    c->thread = pthread_self();
    atomic_store(&c->status, st);
    atomic_fetch_add(&c->calls, 1);
}

static void callback_once_on_driver_thread_after_release(void **state) {
    (void)state;
    cb_state c = {0};
    ka_event ev;
    KA_OK_OR_FAIL(launch(F.iters_200ms / 4, &ev));
    KA_OK_OR_FAIL(ka_event_on_complete(ev, on_done, &c));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_event_on_complete(ev, on_done, &c)); /* one per event */
    KA_OK_OR_FAIL(ka_event_release(ev)); /* released before it completes */
    KA_OK_OR_FAIL(ka_queue_finish(F.q));
    for (int i = 0; i < 1000 && atomic_load(&c.calls) == 0; i++) sleep_ms(1);
    sleep_ms(20);
    assert_int_equal(atomic_load(&c.calls), 1);
    assert_int_equal(atomic_load(&c.status), KA_OK);
    assert_false(pthread_equal(c.thread, pthread_self())); /* the driver's thread */
}

static void callback_at_once_when_complete(void **state) {
    (void)state;
    cb_state c = {0};
    ka_event ev;
    KA_OK_OR_FAIL(launch(1, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_on_complete(ev, on_done, &c));
    assert_int_equal(atomic_load(&c.calls), 1);
    assert_true(pthread_equal(c.thread, pthread_self())); /* run in the call */
    KA_OK_OR_FAIL(ka_event_release(ev));
    /* a failing call never runs the callback */
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_on_complete(ev, on_done, &c));
    assert_int_equal(atomic_load(&c.calls), 1);
}

static void eventfd_readable_only_after_completion(void **state) {
    (void)state;
    int fd;
    KA_OK_OR_FAIL(ka_queue_fd(F.q, &fd));
    ka_event ev;
    KA_OK_OR_FAIL(launch(F.iters_200ms / 2, &ev));
    KA_OK_OR_FAIL(ka_event_notify(ev));
    struct pollfd p = {fd, POLLIN, 0};
    assert_int_equal(poll(&p, 1, 0), 0); /* still running */
    assert_int_equal(poll(&p, 1, 5000), 1);
    uint64_t n = 0;
    assert_int_equal(read(fd, &n, sizeof n), sizeof n);
    assert_int_equal(n, 1);
    KA_OK_OR_FAIL(ka_event_wait(ev, 0));
    KA_OK_OR_FAIL(ka_event_release(ev));
}

/* The null back-end completes kernels named ka_null_fail* with an error. */
static void device_error_reaches_the_waiter(void **state) {
    (void)state;
    ka_device d;
    ka_queue q;
    ka_program p;
    ka_kernel bad, good;
    ka_buffer b;
    KA_OK_OR_FAIL(ka_device_open("null", &d));
    KA_OK_OR_FAIL(ka_queue_create(d, NULL, &q));
    KA_OK_OR_FAIL(ka_program_build(d, "KA_KERNEL(ka_null_fail_k, KA_GLOBAL int *p) {}\nKA_KERNEL(ok, KA_GLOBAL int *p) {}\n", NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "ka_null_fail_k", NULL, &bad));
    KA_OK_OR_FAIL(ka_kernel_get(p, "ok", NULL, &good));
    KA_OK_OR_FAIL(ka_buffer_create(d, 64, &b));
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_range r = {.dims = 1, .size = {8}};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(q, bad, &r, args, 1, &ev));
    KA_EXPECT(KA_ERR_KERNEL_FAILED, ka_event_wait(ev, KA_WAIT_FOREVER));
    /* the detail names the driver's error (here the null back-end's) */
    print_message("detail: %s\n", ka_last_error());
    assert_non_null(strstr(ka_last_error(), "failed on the device: a ka_null_fail kernel"));
    cb_state c = {0};
    KA_OK_OR_FAIL(ka_event_on_complete(ev, on_done, &c));
    assert_int_equal(atomic_load(&c.status), KA_ERR_KERNEL_FAILED);
    KA_OK_OR_FAIL(ka_event_release(ev));
    /* ka_wait_all over {ok, failed}: the failure's own detail, with its index */
    ka_event two[2];
    KA_OK_OR_FAIL(ka_launch(q, good, &r, args, 1, &two[0]));
    KA_OK_OR_FAIL(ka_launch(q, bad, &r, args, 1, &two[1]));
    KA_EXPECT(KA_ERR_KERNEL_FAILED, ka_wait_all(two, 2, KA_WAIT_FOREVER));
    print_message("detail: %s\n", ka_last_error());
    assert_non_null(strstr(ka_last_error(), "ka_wait_all: event 1: event: the command failed on the device: a ka_null_fail"));
    KA_OK_OR_FAIL(ka_event_release(two[0]));
    KA_OK_OR_FAIL(ka_event_release(two[1]));
    /* later launches still work */
    KA_OK_OR_FAIL(ka_launch(q, good, &r, args, 1, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    ka_buffer_release(b);
    ka_program_release(p);
    ka_queue_release(q);
    KA_OK_OR_FAIL(ka_device_close(d));
}

/* A spin near INT64_MAX (any value is valid: the spin ends at completion or
 * at the timeout) must not overflow the spin's end; UBSan stops the process
 * at a signed overflow. The kernel runs for milliseconds, so the waits below
 * find it running and go through their spin; they pass whether or not it has
 * completed by a short timeout, so nothing depends on timing. */
static void huge_spin_saturates(void **state) {
    (void)state;
    const int64_t spins[] = {INT64_MAX, INT64_MAX - 1, INT64_MAX - 1000000000};
    for (size_t s = 0; s < sizeof spins / sizeof spins[0]; s++) {
        ka_queue q;
        KA_OK_OR_FAIL(ka_queue_create(F.dev, &(ka_queue_config){.spin_ns = spins[s], .inline_max_items = KA_INLINE_OFF}, &q));
        ka_arg args[] = {ka_arg_buffer(F.buf), ka_arg_u32(F.iters_200ms / 40 + 1)};
        ka_range r = {.dims = 1, .size = {256}};
        ka_event ev;
        uint32_t idx = 99;
        /* unbounded: spins until complete */
        KA_OK_OR_FAIL(ka_launch(q, F.work, &r, args, 2, &ev));
        KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_event_release(ev));
        /* bounded: spins until the deadline (or completion) */
        KA_OK_OR_FAIL(ka_launch(q, F.work, &r, args, 2, &ev));
        ka_status st = ka_event_wait(ev, 1000000);
        assert_true(st == KA_OK || st == KA_ERR_TIMEOUT);
        st = ka_wait_any(&ev, 1, 1000000, &idx);
        assert_true(st == KA_OK || st == KA_ERR_TIMEOUT);
        KA_OK_OR_FAIL(ka_wait_any(&ev, 1, KA_WAIT_FOREVER, &idx));
        assert_int_equal(idx, 0);
        KA_OK_OR_FAIL(ka_wait_all(&ev, 1, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_event_release(ev));
        /* the process-wide setting, for a queue that takes the default */
        ka_set_wait_spin(spins[s]);
        KA_OK_OR_FAIL(ka_launch(F.q, F.work, &r, args, 2, &ev));
        st = ka_event_wait(ev, 1000000);
        ka_set_wait_spin(-1);
        assert_true(st == KA_OK || st == KA_ERR_TIMEOUT);
        KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_event_release(ev));
        ka_queue_release(q);
    }
}

static void libuv_loop_keeps_serving_its_timer(void **state) {
    (void)state;
    int fires = 0;
    double ms = 0;
    assert_int_equal(uv_kernels_run(NULL, 200, &fires, &ms), 0);
    print_message("kernel %.0f ms, 10 ms timer fired %d times meanwhile\n", ms, fires);
    assert_true(ms >= 100);
    assert_true(fires >= 5);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(long_wait_costs_no_cpu),
        cmocka_unit_test(timeouts),
        cmocka_unit_test(wait_any_returns_the_short_one),
        cmocka_unit_test(callback_once_on_driver_thread_after_release),
        cmocka_unit_test(callback_at_once_when_complete),
        cmocka_unit_test(eventfd_readable_only_after_completion),
        cmocka_unit_test(device_error_reaches_the_waiter),
        cmocka_unit_test(huge_spin_saturates),
        cmocka_unit_test(libuv_loop_keeps_serving_its_timer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
