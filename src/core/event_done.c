/* Completion: the driver's callback (ka__event_native_done, called by every
 * back-end), arming it, what it fires (the user's callback, the queue's
 * eventfd) and the public calls that ask for them, ka_event_on_complete and
 * ka_event_notify. A plain wait only marks an event done (event.h); all of
 * this is for the callback path. */
#include "event.h"

#include <time.h>
#include <unistd.h>

/* Writes the queue's eventfd if a notification was asked for (1 -> 2). An
 * event with none stays at 0, so ka_event_notify still works after a wait
 * armed the driver's callback and it fired. */
static void notify_fd(ka__event *e) {
    uint32_t asked = 1;
    if (atomic_compare_exchange_strong(&e->notify, &asked, 2) && e->q->efd >= 0) {
        uint64_t one = 1;
        ssize_t r = write(e->q->efd, &one, sizeof one);
        (void)r; /* EAGAIN only at counter overflow; the fd stays readable */
    }
}

/* Runs the user's callback if one is armed (1 -> 2). An event with none stays
 * at 0, so ka_event_on_complete still works after a wait armed the driver's
 * callback and it fired. */
static void fire_user(ka__event *e, ka_status st) {
    uint32_t armed = 1;
    if (atomic_compare_exchange_strong(&e->user_cb, &armed, 2)) e->fn(st, e->fn_user);
}

/* The driver's completion callback. */
void ka__event_native_done(void *ctx, ka_status st) {
    ka__event *e = ctx;
    ka__queue *q = e->q;
    atomic_fetch_add_explicit(&q->callbacks, 1, memory_order_relaxed);
    atomic_fetch_add(&q->callbacks_running, 1);
    ka__event_mark_done(e, st);
    st = (ka_status)atomic_load(&e->status);
    fire_user(e, st);
    notify_fd(e);
    ka__event_unref(e);
    atomic_fetch_sub(&q->callbacks_running, 1);
    atomic_fetch_sub_explicit(&q->callbacks_pending, 1, memory_order_release);
}

ka_status ka__event_arm_callback(ka__event *e) {
    if (atomic_exchange(&e->cb_armed, 1)) return KA_OK;
    ka__queue *q = e->q;
    atomic_fetch_add(&e->refs, 1);
    atomic_fetch_add(&q->callbacks_pending, 1);
    ka_status st = ka__be_event_callback(q, e->native, ka__event_native_done, e);
    if (st != KA_OK) {
        atomic_fetch_sub(&q->callbacks_pending, 1);
        atomic_store(&e->cb_armed, 0);
        ka__event_unref(e);
    }
    return st;
}

void ka__queue_wait_callbacks(ka__queue *q) {
    while (atomic_load_explicit(&q->callbacks_pending, memory_order_acquire)) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

static ka_status on_complete(ka__event *e, ka_event_fn fn, void *user);

ka_status ka_event_on_complete(ka_event ev, ka_event_fn fn, void *user) {
    ka__slot *s;
    ka__event *e = ka__event_pin(ev, &s);
    if (!e) return ka__fail(KA_ERR_INVALID_HANDLE, "ka_event_on_complete: invalid, released or stale event");
    ka_status st = fn ? on_complete(e, fn, user) : ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_event_on_complete: fn is NULL");
    ka__unpin(s);
    return st;
}

static ka_status on_complete(ka__event *e, ka_event_fn fn, void *user) {
    if (atomic_load(&e->user_cb) != 0)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_event_on_complete: the event already has a callback");
    e->fn = fn;
    e->fn_user = user;
    atomic_store(&e->user_cb, 1);
    uint32_t expect;
    if (ka__event_poll(e)) {
        fire_user(e, (ka_status)atomic_load(&e->status));
        return KA_OK;
    }
    ka__be_queue_flush(e->q);
    ka_status st = ka__event_arm_callback(e);
    if (st != KA_OK) {
        /* Take the callback back unless the completion raced us and ran it. */
        expect = 1;
        if (atomic_compare_exchange_strong(&e->user_cb, &expect, 0)) return st;
    }
    return KA_OK;
}

static ka_status notify(ka__event *e);

ka_status ka_event_notify(ka_event ev) {
    ka__slot *s;
    ka__event *e = ka__event_pin(ev, &s);
    if (!e) return ka__fail(KA_ERR_INVALID_HANDLE, "ka_event_notify: invalid, released or stale event");
    ka_status st = notify(e);
    ka__unpin(s);
    return st;
}

static ka_status notify(ka__event *e) {
    if (e->q->efd < 0) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_event_notify: call ka_queue_fd on the queue first");
    uint32_t expect = 0;
    if (!atomic_compare_exchange_strong(&e->notify, &expect, 1)) return KA_OK;
    if (ka__event_poll(e)) {
        notify_fd(e);
        return KA_OK;
    }
    ka__be_queue_flush(e->q);
    ka_status st = ka__event_arm_callback(e);
    if (st != KA_OK) {
        expect = 1;
        if (atomic_compare_exchange_strong(&e->notify, &expect, 0)) return st;
    }
    return KA_OK;
}
