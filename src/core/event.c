/* Events: a queue's slots and what happens to them, in the order of a use.
 * - the pool: the slots made with the queue, acquire (a launch's pop from the
 *   free list), bind, abandon, ka_event_release (the push back). The free list
 *   is freelist.h; its push and the reference drop are inline in event.h, as
 *   the completion callback drops references too.
 * - completion: the driver's callback (ka__event_native_done, called by every
 *   back-end), arming it, what it fires (the user's callback, the queue's
 *   eventfd) and the calls that ask for them, ka_event_on_complete and
 *   ka_event_notify. A plain wait only marks an event done (event.h); this is
 *   for the callback path.
 * - ka_event_elapsed_ns: the device's own time of a completed command.
 * The waits are wait.c. */
#include "event.h"

#include <sched.h>
#include <unistd.h>

/* ---- the pool ----------------------------------------------------------- */
static _Atomic uint32_t *slot_link(void *pool, uint32_t idx1) { return &((ka__queue *)pool)->events[idx1 - 1].next; }

ka_status ka__events_init(ka__queue *q, uint32_t n) {
    q->events = ka__calloc(n, sizeof(ka__event));
    if (!q->events) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for %u events", n);
    q->nevents = n;
    atomic_init(&q->free_head, 0);
    for (uint32_t i = 0; i < n; i++) {
        ka__event *e = &q->events[i];
        e->q = q;
        e->id = ka__handle_new(KA__T_EVENT, e);
        if (!e->id) {
            /* Not ka__events_fini: the array must be freed with the size it
             * was allocated with, n events, not the i with handles. */
            for (uint32_t j = 0; j < i; j++) ka__handle_free(q->events[j].id);
            ka__free(q->events, sizeof(ka__event) * n);
            q->events = NULL;
            q->nevents = 0;
            return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for event handles");
        }
    }
    for (uint32_t i = n; i-- > 0;) ka__event_push_free(q, &q->events[i]);
    return KA_OK;
}

void ka__events_fini(ka__queue *q) {
    if (!q->events) return;
    for (uint32_t i = 0; i < q->nevents; i++) {
        ka__event *e = &q->events[i];
        /* A ka_event_release in flight may be storing a renewed id: both
         * sides atomic (the slot index, all drain needs, stays). After the
         * drain it is done, so e->id below is its final value. */
        ka__handle_drain(__atomic_load_n(&e->id, __ATOMIC_RELAXED)); /* calls on the event in other threads return first */
        if (e->native) ka__be_event_release(q, e->native);
        if (e->stale_native) ka__be_event_release(q, e->stale_native);
        ka__handle_free(e->id);
    }
    ka__free(q->events, sizeof(ka__event) * (q->nevents ? q->nevents : 1));
    q->events = NULL;
}

/* A released event whose command is complete can still be held by its armed
 * completion callback: the driver runs callbacks a moment after completion (a
 * waiter may have seen it done by polling, or woke at mark_done before the
 * callback dropped its reference). A pool that looks empty while such events
 * exist waits for their callbacks, for at most 2 s (a loaded machine can keep
 * the driver's thread off a core that long). Off the hot path. */
static bool held_by_callback(ka__queue *q) {
    if (atomic_load(&q->callbacks_running)) return true;
    for (uint32_t i = 0; i < q->nevents; i++) {
        ka__event *e = &q->events[i];
        /* done and released, yet held: only its callback holds it */
        if (atomic_load(&e->released) && atomic_load(&e->refs) > 0 && atomic_load(&e->state) == KA__EV_DONE)
            return true;
    }
    return false;
}

static bool settle_callbacks(ka__queue *q) {
    /* A short grace for any pending callback (a snapshot of the slots can
     * miss one that is between its steps), up to 2 s while one is seen
     * holding a released, completed slot. */
    int64_t start = ka__now_ns();
    while (!ka__freelist_peek(&q->free_head) && atomic_load(&q->callbacks_pending)) {
        int64_t t = ka__now_ns() - start;
        if (t > 2000000000 || (t > 2000000 && !held_by_callback(q))) break;
        sched_yield();
    }
    return ka__freelist_peek(&q->free_head) != 0;
}

ka_status ka__event_acquire(ka__queue *q, ka__event **out) {
    uint32_t idx;
    while (KA_UNLIKELY(!(idx = ka__freelist_pop(&q->free_head, slot_link, q)))) {
        /* Look again (a callback may have pushed a slot since the first
         * look), and wait for callbacks that hold released slots. */
        uint32_t pending = atomic_load(&q->callbacks_pending); /* before the head: a callback pushes, then counts down */
        if (ka__freelist_peek(&q->free_head) || (pending && settle_callbacks(q))) continue;
        return ka__fail(KA_ERR_EVENT_POOL_EXHAUSTED,
                        "the queue's %u event slots are all in use: release events after waiting, or raise "
                        "ka_queue_config.event_capacity (%u completion callbacks pending)",
                        q->nevents, atomic_load(&q->callbacks_pending));
    }
    ka__event *e = &q->events[idx - 1];
    if (e->stale_native) {
        ka__be_event_release(q, e->stale_native);
        e->stale_native = NULL;
    }
    e->native = NULL;
    e->fn = NULL;
    e->fn_user = NULL;
    atomic_store_explicit(&e->status, KA_OK, memory_order_relaxed);
    atomic_store_explicit(&e->refs, 1, memory_order_relaxed);
    atomic_store_explicit(&e->cb_armed, 0, memory_order_relaxed);
    atomic_store_explicit(&e->user_cb, 0, memory_order_relaxed);
    atomic_store_explicit(&e->notify, 0, memory_order_relaxed);
    atomic_store_explicit(&e->released, 0, memory_order_relaxed);
    atomic_store_explicit(&e->sleepers, 0, memory_order_relaxed);
    atomic_store_explicit(&e->state, KA__EV_PENDING, memory_order_release);
    *out = e;
    return KA_OK;
}

/* NULL: a command already complete (an inline launch), done at once. */
void ka__event_bind(ka__event *e, void *native) {
    e->native = native;
    if (!native) ka__event_mark_done(e, KA_OK);
}

/* Returns an acquired slot unused (the enqueue failed). */
void ka__event_abandon(ka__event *e) { ka__event_unref(e); }

/* On the launch path: named on its failure branches only. */
ka_status ka_event_release(ka_event ev) {
    ka__slot *s;
    ka__event *e = ka__event_pin(ev, &s);
    if (KA_UNLIKELY(!e)) return ka__fail_handle(KA__T_EVENT, __func__);
    uint64_t renewed = ka__handle_renew(ev.id);
    if (KA_UNLIKELY(!renewed)) { /* another thread released it meanwhile: it dropped the reference */
        ka__unpin(s);
        return ka__fail_handle(KA__T_EVENT, __func__);
    }
    __atomic_store_n(&e->id, renewed, __ATOMIC_RELAXED); /* ka__events_fini may read it meanwhile */
    atomic_store_explicit(&e->released, 1, memory_order_relaxed);
    ka__event_unref(e);
    ka__unpin(s);
    return KA_OK;
}

/* ---- completion --------------------------------------------------------- */
/* ka_wait_any's wake (event.h): bumped here, slept on in wait.c. */
_Atomic uint32_t ka__any_seq;
_Atomic uint32_t ka__any_waiters;

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

static ka_status on_complete(ka__event *e, ka_event_fn fn, void *user);

ka_status ka_event_on_complete(ka_event ev, ka_event_fn fn, void *user) {
    KA__ENTRY();
    ka__slot *s;
    ka__event *e = ka__event_pin(ev, &s);
    if (!e) return ka__fail_handle(KA__T_EVENT, __func__);
    ka_status st = fn ? on_complete(e, fn, user) : ka__fail(KA_ERR_INVALID_ARGUMENT, "fn is NULL");
    ka__unpin(s);
    return st;
}

static ka_status on_complete(ka__event *e, ka_event_fn fn, void *user) {
    if (atomic_load(&e->user_cb) != 0)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "the event already has a callback");
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
    KA__ENTRY();
    ka__slot *s;
    ka__event *e = ka__event_pin(ev, &s);
    if (!e) return ka__fail_handle(KA__T_EVENT, __func__);
    ka_status st = notify(e);
    ka__unpin(s);
    return st;
}

static ka_status notify(ka__event *e) {
    if (e->q->efd < 0) return ka__fail(KA_ERR_INVALID_ARGUMENT, "call ka_queue_fd on the queue first");
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

/* ---- timing ------------------------------------------------------------- */
/* ka_event_elapsed_ns: on queues made with ka_queue_config.profiling (off by
 * default: the back-ends then create their queues and events exactly as
 * without it). */
ka_status ka_event_elapsed_ns(ka_event ev, uint64_t *ns) {
    KA__ENTRY();
    if (!ns) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ns is NULL");
    *ns = 0;
    ka__slot *s;
    ka__event *e = ka__event_pin(ev, &s);
    if (!e) return ka__fail_handle(KA__T_EVENT, __func__);
    ka_status st = KA_OK;
    if (!e->q->profiling)
        st = ka__fail(KA_ERR_UNSUPPORTED,
                      "the event's queue does not profile (ka_queue_config.profiling = 1)");
    else if (!ka__be_has_timing(e->q->dev)) /* the null back-end: it times nothing, even what ran nothing */
        st = ka__be_event_elapsed(e->q, NULL, ns);
    else if (!ka__event_poll(e))
        st = ka__fail(KA_ERR_INVALID_ARGUMENT, "the command is not complete (wait for it first)");
    else if (e->native) /* none: the command ran nothing (an empty range) */
        st = ka__be_event_elapsed(e->q, e->native, ns);
    ka__unpin(s);
    return st;
}
