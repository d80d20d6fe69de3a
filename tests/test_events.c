/* Events on the default device: stale handles, the event pool, waits with
 * timeouts (one, all, any), completion callbacks, a queue's release with
 * callbacks armed, the notify fd, and the wait-spin settings. */
#define KA_TEST_FIXTURE
#include "test_util.h"

#include <poll.h>
#include <sched.h>
#include <unistd.h>

static void test_event_stale_after_release(void **state) {
    (void)state;
    ka_buffer b = make_buffer(g_dev, 16);
    uint32_t v = 1;
    ka_event ev;
    KA_OK_OR_FAIL(ka_buffer_write_async(g_q, b, 0, &v, 4, &ev));
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
    KA_OK_OR_FAIL(ka_buffer_write_async(q, b, 0, &v, 4, &e1));
    KA_OK_OR_FAIL(ka_event_release(e1));
    KA_OK_OR_FAIL(ka_buffer_write_async(q, b, 0, &v, 4, &e2));
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
        KA_OK_OR_FAIL(ka_buffer_write_async(q1, b, 0, &v, 4, &old[i]));
        KA_OK_OR_FAIL(ka_event_release(old[i]));
    }
    KA_OK_OR_FAIL(ka_queue_release(q1));
    KA_OK_OR_FAIL(ka_queue_create(g_dev, &cfg, &q2));
    ka_event cur;
    KA_OK_OR_FAIL(ka_buffer_write_async(q2, b, 0, &v, 4, &cur));
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
    for (int i = 0; i < CAP; i++) KA_OK_OR_FAIL(ka_buffer_write_async(q, b, 4 * (size_t)i, &v[i], 4, &ev[i]));
    for (int i = 0; i < CAP; i++) poll_done(ev[i]); /* completed, still held */
    ev[CAP].id = 77;
    KA_EXPECT(KA_ERR_EVENT_POOL_EXHAUSTED, ka_buffer_write_async(q, b, 0, &v[0], 4, &ev[CAP]));
    EXPECT_DETAIL("event_capacity");
    assert_int_equal(ev[CAP].id, 0);
    ka_kernel k = get_kernel("noargs");
    KA_EXPECT(KA_ERR_EVENT_POOL_EXHAUSTED, ka_launch(q, k, &(ka_range){.dims = 1, .size = {1}}, NULL, 0, &ev[CAP]));
    KA_EXPECT(KA_ERR_EVENT_POOL_EXHAUSTED, ka_launch(q, k, &(ka_range){.dims = 1, .size = {0}}, NULL, 0, &ev[CAP]));
    /* Without an event the queue still works. */
    KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {1}}, NULL, 0, NULL));
    KA_OK_OR_FAIL(ka_buffer_write(q, b, 0, &v[0], 4));
    /* Releasing one frees one slot, exactly. */
    KA_OK_OR_FAIL(ka_event_release(ev[1]));
    KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {1}}, NULL, 0, &ev[1]));
    KA_EXPECT(KA_ERR_EVENT_POOL_EXHAUSTED, ka_buffer_write_async(q, b, 0, &v[0], 4, &ev[CAP]));
    for (int i = 0; i < CAP; i++) poll_done(ev[i]);
    for (int i = 0; i < CAP; i++) KA_OK_OR_FAIL(ka_event_release(ev[i]));
    /* All free again: CAP events at once work. */
    for (int i = 0; i < CAP; i++) KA_OK_OR_FAIL(ka_buffer_write_async(q, b, 0, &v[0], 4, &ev[i]));
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
            ka_status st = ka_buffer_write_async(q, b, 4 * (size_t)i, &v, 4, &ev[i]);
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
        ka_status st = ka_buffer_write_async(q, b, 0, &v, 4, &ev);
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
    for (int i = 0; i < 4; i++) KA_OK_OR_FAIL(ka_buffer_write_async(g_q, b, 64 + 4 * (size_t)i, &vals[i], 4, &ev[i + 1]));
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
    KA_OK_OR_FAIL(ka_buffer_write_async(q2, b, 32, &v, 4, &ev[1]));
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

static void test_on_complete_already_done(void **state) {
    (void)state;
    ka_buffer b = make_buffer(g_dev, 16);
    uint32_t v = 1;
    ka_event ev;
    KA_OK_OR_FAIL(ka_buffer_write_async(g_q, b, 0, &v, 4, &ev));
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
    KA_OK_OR_FAIL(ka_buffer_write_async(g_q, b, 0, &v, 4, &e2));
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
    KA_OK_OR_FAIL(ka_buffer_write_async(q, b, 0, &v, 4, &ev));
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
        KA_OK_OR_FAIL(ka_buffer_write_async(g_q, b, 0, &v, 4, &ev));
        KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_event_release(ev));
    }
    ka_set_wait_spin(-1);
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

int main(void) {
    const struct CMUnitTest tests[] = {
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
    };
    /* The group needs a device that runs kernels. */
    int dev = default_device_runs_kernels();
    if (dev <= 0) return dev < 0 ? 1 : 77;
    return cmocka_run_group_tests_name("events: default device", tests, group_setup, group_teardown);
}
