/* Events: the slot, its inline helpers, and what the rest of the core calls
 * of events. event.c holds the pool and completion, wait.c every wait. Not
 * installed; back-ends see of events only what objects.h declares
 * (ka__event_native_done, the completion callback's target).
 *
 * Each queue owns a fixed array of event slots made when the queue is made;
 * a launch pops one from a lock-free stack, a release pushes it back, and the
 * handle's generation changes on release, so a stale handle is detected.
 *
 * Threading: the driver's completion callback (on a driver thread) only does
 * atomic stores, a futex wake, an eventfd write, the user's callback and a
 * lock-free push; it takes no lock that a user thread could hold.
 *
 * The helpers below are static inline because a launch + wait runs them
 * (bind marks a no-op launch done, a wait pins and polls, a release unrefs):
 * split over files they would otherwise become calls. The clock, the futex
 * wrappers and ka__cpu_relax are objects.h's (back-ends use them too). */
#ifndef KA_EVENT_H
#define KA_EVENT_H

#include "backend.h"
#include "freelist.h"
#include "ka_internal.h"

enum ka__ev_state { KA__EV_FREE = 0, KA__EV_PENDING, KA__EV_DONE };

struct ka__event {
    uint64_t id;               /* current handle (renewed on release) */
    ka__queue *q;
    void *native;              /* native event, NULL for a no-op launch */
    void *stale_native;        /* released when the slot is next used */
    _Atomic uint32_t state;    /* futex word */
    _Atomic uint32_t sleepers; /* threads in futex_wait on state: wake only then */
    _Atomic int32_t status;    /* ka_status once done */
    _Atomic uint32_t refs;
    _Atomic uint32_t cb_armed; /* driver callback registered for this use */
    _Atomic uint32_t user_cb;  /* 0 none, 1 armed, 2 fired */
    _Atomic uint32_t notify;   /* 1: write the queue's eventfd on completion */
    _Atomic uint32_t released; /* the user released it; a callback may still hold it */
    ka_event_fn fn;
    void *fn_user;
    /* Free-list link (index+1). Atomic (relaxed) because a pop reads the link
     * of a slot another thread may be popping and pushing back at that moment:
     * the tagged compare-exchange then fails and the value is dropped, but the
     * read itself must not be a data race. */
    _Atomic uint32_t next;
};

/* ---- ka_wait_any's wake (defined in event.c) ---------------------------- */
/* ka_wait_any sleeps on ka__any_seq, bumped by every completion while a
 * wait_any is in progress (ka__any_waiters > 0). Hidden: read in mark_done
 * directly, not through the GOT. */
extern KA_HIDDEN _Atomic uint32_t ka__any_seq;
extern KA_HIDDEN _Atomic uint32_t ka__any_waiters;

/* Marks the event done (once); wakes sleepers. */
static inline void ka__event_mark_done(ka__event *e, ka_status st) {
    uint32_t expect = KA__EV_PENDING;
    atomic_store_explicit(&e->status, st, memory_order_relaxed);
    /* seq_cst on state and sleepers: either the sleeper sees DONE before it
     * sleeps, or this sees the sleeper and wakes it. A wake is a system call,
     * so it is skipped when nobody sleeps (the common, short-kernel case). */
    if (atomic_compare_exchange_strong(&e->state, &expect, KA__EV_DONE)) {
        if (atomic_load(&e->sleepers)) ka__futex_wake_all(&e->state);
        if (atomic_load(&ka__any_waiters)) {
            atomic_fetch_add(&ka__any_seq, 1);
            ka__futex_wake_all(&ka__any_seq);
        }
    }
}

/* Asks the driver; marks done if so. true when done. */
static inline bool ka__event_poll(ka__event *e) {
    if (atomic_load_explicit(&e->state, memory_order_acquire) == KA__EV_DONE) return true;
    ka_status st = KA_OK;
    int r = ka__be_event_query(e->q, e->native, &st);
    if (r == 0) return false;
    ka__event_mark_done(e, r > 0 ? KA_OK : st);
    return true;
}

/* ---- the pool (event.c) ------------------------------------------------- */
/* free_head is the list's head (freelist.h), each slot's `next` its link. */
static inline void ka__event_push_free(ka__queue *q, ka__event *e) {
    ka__freelist_push(&q->free_head, &e->next, (uint32_t)(e - q->events) + 1);
}

/* Drops a reference; the last returns the slot to the pool. */
static inline void ka__event_unref(ka__event *e) {
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) != 1) return;
    /* The native event may be the one whose callback is running now: release
     * it when the slot is next used, not from inside its own callback. */
    e->stale_native = e->native;
    e->native = NULL;
    atomic_store_explicit(&e->state, KA__EV_FREE, memory_order_release);
    ka__event_push_free(e->q, e);
}

/* The event behind a live handle, its slot pinned for the call: a release of
 * its queue in another thread waits for the call (ka__events_fini drains the
 * slots). NULL for a stale handle or a free slot. */
static inline ka__event *ka__event_pin(ka_event ev, ka__slot **s) {
    ka__event *e = ka__pin(ev.id, KA__T_EVENT, s);
    if (KA_UNLIKELY(e && atomic_load_explicit(&e->state, memory_order_acquire) == KA__EV_FREE)) {
        ka__unpin(*s);
        return NULL;
    }
    return e;
}

/* A queue's slots, made with it (KA_ERR_OUT_OF_MEMORY naming ka_queue_create)
 * and released with it; fini drains calls in flight on its events. */
ka_status ka__events_init(ka__queue *q, uint32_t n);
void ka__events_fini(ka__queue *q);

/* An enqueue that asks for an event: acquire a slot before the back-end's
 * call, then publish. */
ka_status ka__event_acquire(ka__queue *q, ka__event **out);
void ka__event_bind(ka__event *e, void *native);
void ka__event_abandon(ka__event *e);
/* The end of an enqueue that asked for an event (e from ka__event_acquire,
 * NULL when none was asked): on success binds the native event and gives the
 * caller its handle; on failure gives the slot back. Returns st. */
static inline ka_status ka__event_publish(ka__event *e, ka_status st, void *native, ka_event *ev) {
    if (!e) return st;
    if (KA_UNLIKELY(st != KA_OK)) {
        ka__event_abandon(e);
        return st;
    }
    ka__event_bind(e, native);
    ev->id = e->id;
    return KA_OK;
}

/* ---- completion (event.c) ----------------------------------------------- */
/* Registers the driver's completion callback for this use of the event, once
 * (later calls return KA_OK); it holds a reference until it has run. Off the
 * hot path: only a wait past its spin, ka_wait_any, ka_event_on_complete and
 * ka_event_notify arm it. */
ka_status ka__event_arm_callback(ka__event *e);

/* ---- waits (wait.c) ----------------------------------------------------- */
/* At queue release: returns once no completion callback of q is pending. */
void ka__queue_wait_callbacks(ka__queue *q);
/* The checks a wait on a queue with hooks runs after it succeeded (only for
 * KA__QH_ASSERTS or KA__QH_DEBUG): ka_assert's record (KA_ERR_KERNEL_FAILED
 * naming the failing work-item; the record is cleared), then KA_DEBUG's guard
 * zones. The caller has named the call (KA__ENTRY): the checks log what
 * they find. */
ka_status ka__wait_checks(ka__queue *q);

#endif
