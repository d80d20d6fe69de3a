/* Native events of the host back-end: one per asynchronous command whose
 * caller asked for an event. Each queue keeps a free list, grown by chunks
 * (only when more events are alive at once than ever before) and freed with
 * the queue. Two references: the core's (event_release) and the command's
 * (its completion). A command completes in two steps: settle marks the event
 * complete and wakes its waiters, in the thread that finished the command;
 * finish runs its callback, if one was registered, on the device's callback
 * thread, never in that thread (a pool worker, a thread of the
 * application's joining a run, a queue's worker). */
#include "host_internal.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define CHUNK 64u

struct ka__hev_chunk {
    struct ka__hev_chunk *next;
    ka__hev ev[CHUNK];
};

/* A chunk more on the free list; under ev_lock, or before the queue is shared. */
static bool grow(ka__hqueue *hq) {
    struct ka__hev_chunk *c = ka__calloc(1, sizeof *c);
    if (!c) return false;
    c->next = hq->chunks;
    hq->chunks = c;
    for (uint32_t i = 0; i < CHUNK; i++) {
        c->ev[i].q = hq;
        c->ev[i].next_free = hq->ev_free;
        hq->ev_free = &c->ev[i];
    }
    return true;
}

ka_status ka__host_events_init(ka__hqueue *hq) {
    return grow(hq) ? KA_OK : ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for events");
}

ka_status ka__host_ev_new(ka__hqueue *hq, ka__hev **out) {
    ka__spin_lock(&hq->ev_lock);
    if (!hq->ev_free && !grow(hq)) {
        ka__spin_unlock(&hq->ev_lock);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for an event");
    }
    ka__hev *e = hq->ev_free;
    hq->ev_free = e->next_free;
    ka__spin_unlock(&hq->ev_lock);
    atomic_store_explicit(&e->state, 0, memory_order_relaxed);
    atomic_store_explicit(&e->waiters, 0, memory_order_relaxed);
    atomic_store_explicit(&e->status, KA_OK, memory_order_relaxed);
    atomic_store_explicit(&e->refs, 2, memory_order_relaxed);
    e->cb = NULL;
    e->cb_ctx = NULL;
    e->run_cb = NULL;
    e->run_ctx = NULL;
    e->t0 = e->t1 = 0;
    e->pooled = false;
    e->ticket = 0;
    e->why[0] = 0;
    *out = e;
    return KA_OK;
}

void ka__host_ev_unref(ka__hev *e) {
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) != 1) return;
    ka__hqueue *hq = e->q;
    ka__spin_lock(&hq->ev_lock);
    e->next_free = hq->ev_free;
    hq->ev_free = e;
    ka__spin_unlock(&hq->ev_lock);
}

void ka__host_ev_settle(ka__hev *e, ka_status st, const char *why) {
    if (st != KA_OK) snprintf(e->why, sizeof e->why, "%s", why && *why ? why : ka_strerror(st));
    atomic_store_explicit(&e->status, st, memory_order_relaxed);
    ka__spin_lock(&e->lock);
    atomic_store_explicit(&e->state, 1, memory_order_release);
    e->run_cb = e->cb; /* for finish: a registration from now on runs in its own thread */
    e->run_ctx = e->cb_ctx;
    e->cb = NULL;
    ka__spin_unlock(&e->lock);
    if (atomic_load_explicit(&e->waiters, memory_order_seq_cst)) ka__futex_wake_all(&e->state);
}

void ka__host_ev_complete(ka__hev *e, ka_status st) {
    ka__host_ev_settle(e, st, NULL);
    ka__host_ev_finish(e);
}

void ka__host_ev_finish(ka__hev *e) {
    if (!e->run_cb) {
        ka__host_ev_unref(e);
        return;
    }
    /* The callback runs on the device's callback thread, never in a thread
     * that finished the command while it was joining a run or serving a
     * queue: there it could wait for what that thread holds. */
    ka__hqueue *hq = e->q;
    ka__hdev *hd = hq->q->dev->native;
    atomic_fetch_add_explicit(&hq->cb_inflight, 1, memory_order_relaxed);
    ka__hev *head = atomic_load_explicit(&hd->cb_head, memory_order_relaxed);
    do e->cb_next = head;
    while (!atomic_compare_exchange_weak_explicit(&hd->cb_head, &head, e, memory_order_release, memory_order_relaxed));
    atomic_fetch_add(&hd->cb_seq, 1); /* seq_cst: then the thread's sleep is seen */
    if (atomic_load(&hd->cb_asleep)) ka__futex_wake_all(&hd->cb_seq);
}

/* The device's callback thread: runs the callbacks of completed events in
 * the order they completed, each event's command reference dropped after. */
static void *cb_main(void *arg) {
    ka__hdev *hd = arg;
    for (;;) {
        uint32_t seq = atomic_load(&hd->cb_seq);
        ka__hev *list = atomic_exchange_explicit(&hd->cb_head, NULL, memory_order_acquire);
        if (!list) {
            if (atomic_load_explicit(&hd->cb_stop, memory_order_acquire)) return NULL;
            atomic_store(&hd->cb_asleep, 1); /* seq_cst: then re-read seq */
            if (atomic_load(&hd->cb_seq) == seq && !atomic_load(&hd->cb_stop)) ka__futex_wait(&hd->cb_seq, seq, INT64_MAX);
            atomic_store(&hd->cb_asleep, 0);
            continue;
        }
        ka__hev *fifo = NULL; /* pushed last first: reversed */
        while (list) {
            ka__hev *next = list->cb_next;
            list->cb_next = fifo;
            fifo = list;
            list = next;
        }
        while (fifo) {
            ka__hev *e = fifo;
            fifo = e->cb_next;
            ka__hqueue *hq = e->q;
            e->run_cb(e->run_ctx, (ka_status)atomic_load_explicit(&e->status, memory_order_relaxed));
            ka__host_ev_unref(e);
            atomic_fetch_sub_explicit(&hq->cb_inflight, 1, memory_order_release);
        }
    }
}

ka_status ka__host_cb_start(ka__hdev *hd) {
    /* As the pool's workers: the application's signal handlers run in its
     * own threads. */
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = pthread_create(&hd->cb_thread, NULL, cb_main, hd);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) return ka__fail(KA_ERR_DEVICE, "cannot start the callback thread: %s", strerror(e));
    hd->cb_started = true;
    return KA_OK;
}

void ka__host_cb_stop(ka__hdev *hd) {
    if (!hd->cb_started) return;
    atomic_store(&hd->cb_stop, true);
    atomic_fetch_add(&hd->cb_seq, 1);
    ka__futex_wake_all(&hd->cb_seq);
    pthread_join(hd->cb_thread, NULL);
    hd->cb_started = false;
}

void ka__host_events_fini(ka__hqueue *hq) {
    while (hq->chunks) {
        struct ka__hev_chunk *c = hq->chunks;
        hq->chunks = c->next;
        ka__free(c, sizeof *c);
    }
    hq->ev_free = NULL;
}

int ka__host_event_query(void *ev, ka_status *st) {
    ka__hev *e = ev;
    if (!atomic_load_explicit(&e->state, memory_order_acquire)) return 0;
    ka_status s = (ka_status)atomic_load_explicit(&e->status, memory_order_relaxed);
    if (s == KA_OK) return 1;
    *st = s;
    return -1;
}

ka_status ka__host_event_callback(void *ev, ka__native_cb cb, void *ctx) {
    ka__hev *e = ev;
    ka__spin_lock(&e->lock);
    bool done = atomic_load_explicit(&e->state, memory_order_acquire) != 0;
    if (!done) {
        e->cb = cb;
        e->cb_ctx = ctx;
    }
    ka__spin_unlock(&e->lock);
    if (done) cb(ctx, (ka_status)atomic_load_explicit(&e->status, memory_order_relaxed));
    return KA_OK;
}

ka_status ka__host_event_wait(void *ev) {
    ka__hev *e = ev;
    /* A pool launch's: help run it (the caller joins at the wait). Once the
     * join returns the run is over and the thread that finished it is
     * completing the event: a moment's spin, not a sleep and a wake. */
    if (e->pooled && !atomic_load_explicit(&e->state, memory_order_acquire)) {
        ka__pool_join(e->q->pool, e->ticket);
        int64_t until = ka__now_ns() + 50000;
        while (!atomic_load_explicit(&e->state, memory_order_acquire) && ka__now_ns() < until)
            for (int i = 0; i < 32; i++) ka__cpu_relax();
    }
    while (!atomic_load_explicit(&e->state, memory_order_acquire)) {
        atomic_fetch_add_explicit(&e->waiters, 1, memory_order_seq_cst);
        if (!atomic_load_explicit(&e->state, memory_order_seq_cst)) ka__futex_wait(&e->state, 0, INT64_MAX);
        atomic_fetch_sub_explicit(&e->waiters, 1, memory_order_relaxed);
    }
    ka_status s = (ka_status)atomic_load_explicit(&e->status, memory_order_relaxed);
    return s == KA_OK ? KA_OK : ka__fail(s, "%s", e->why[0] ? e->why : ka_strerror(s));
}

void ka__host_event_release(void *ev) { ka__host_ev_unref(ev); }

const char *ka__host_event_error(void *ev) {
    const ka__hev *e = ev;
    return atomic_load_explicit(&e->state, memory_order_acquire) && e->why[0] ? e->why : NULL;
}

ka_status ka__host_event_elapsed(void *ev, uint64_t *ns) {
    ka__hev *e = ev;
    int64_t d = e->t1 - e->t0;
    *ns = d > 0 ? (uint64_t)d : 1; /* it ran: never 0 */
    return KA_OK;
}

ka_status ka__host_done_event(ka__queue *q, int64_t t0, ka_status st, void **ev) {
    if (!ev) return st;
    *ev = NULL;
    if (st != KA_OK || !q->profiling) return st;
    ka__hev *e;
    ka_status s = ka__host_ev_new(q->native, &e);
    if (s != KA_OK) return s;
    e->t0 = t0;
    e->t1 = ka__now_ns();
    ka__host_ev_complete(e, KA_OK); /* drops the command's reference */
    *ev = e;
    return KA_OK;
}
