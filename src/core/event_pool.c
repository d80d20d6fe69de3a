/* The per-queue event pool: the slots made with the queue, acquire (a
 * launch's pop from the free list), bind, abandon and ka_event_release (the
 * push back). The free list itself is freelist.h; its push and the reference
 * drop are inline in event.h, as the completion callback drops references
 * too. */
#include "event.h"

#include <sched.h>

static _Atomic uint32_t *slot_link(void *pool, uint32_t idx1) { return &((ka__queue *)pool)->events[idx1 - 1].next; }

ka_status ka__events_init(ka__queue *q, uint32_t n) {
    q->events = ka__calloc(n, sizeof(ka__event));
    if (!q->events) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_queue_create: out of memory for %u events", n);
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
            return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_queue_create: out of memory for event handles");
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

ka_status ka_event_release(ka_event ev) {
    ka__slot *s;
    ka__event *e = ka__event_pin(ev, &s);
    if (KA_UNLIKELY(!e)) return ka__fail(KA_ERR_INVALID_HANDLE, "ka_event_release: invalid, released or stale event");
    uint64_t renewed = ka__handle_renew(ev.id);
    if (KA_UNLIKELY(!renewed)) { /* another thread released it meanwhile: it dropped the reference */
        ka__unpin(s);
        return ka__fail(KA_ERR_INVALID_HANDLE, "ka_event_release: invalid, released or stale event");
    }
    __atomic_store_n(&e->id, renewed, __ATOMIC_RELAXED); /* ka__events_fini may read it meanwhile */
    atomic_store_explicit(&e->released, 1, memory_order_relaxed);
    ka__event_unref(e);
    ka__unpin(s);
    return KA_OK;
}
