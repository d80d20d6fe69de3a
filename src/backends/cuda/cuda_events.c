/* Native events: a per-queue pool of CUevents, and completion callbacks.
 *
 * Pool. queue_create makes every event the queue should need (the core's
 * slot count plus a margin: a core slot holds at most one native event at a
 * time, and a released one can be held a moment longer by the callback
 * helper). A command pops one from a lock-free stack and records it;
 * event_release pushes it back once the callback helper no longer holds it.
 * Nothing is allocated per command. The core makes its slots after
 * queue_create, so the slot count is not always known there (the default,
 * 1024, is assumed); if the pool runs dry while the core has more slots than
 * events were made for, it grows once, by chunks, under a lock (an
 * allocation on that one launch; never in steady state, and never with the
 * default capacity).
 *
 * Two CUevents an event. What a command records is `ev`, with default sync
 * (CU_EVENT_DISABLE_TIMING only): on an H200 a launch + record + poll cost
 * 1.2 us more with a CU_EVENT_BLOCKING_SYNC event than with this one, the
 * whole gap between libka's launch + wait and the raw one (ka-bench launch's
 * raw_poll_* rows). A waiter that must sleep needs a blocking-sync event, or
 * cuEventSynchronize spins a core: `bev`, recorded on the queue's side stream
 * behind a cuStreamWaitEvent on `ev` (chain(), once per recording of ev), so
 * it completes when ev does. Only sleeping waits and callbacks pay for it. On
 * the side stream chains queue in the order they were made: a sleeper on an
 * earlier command chained after a later one wakes with the later one.
 *
 * Waits. The core's unbounded wait, past its spin, blocks in event_wait
 * (cuEventSynchronize on bev: the calling thread sleeps in the driver and is
 * the one thread woken). Callbacks serve everything else.
 *
 * Callbacks. One helper thread per queue, started with the queue. event_callback
 * runs cb inline when the event is already complete; otherwise it chains the
 * event, links it into the queue's armed list and signals the helper, which
 * blocks in cuEventSynchronize on the oldest armed event's bev (it sleeps, it
 * does not spin), then fires every armed event the driver reports complete.
 * Why not cuLaunchHostFunc: a host function must be enqueued when the callback
 * is asked for, i.e. behind later commands, and it stalls the stream until it
 * has run, which costs every later command on the queue tens of microseconds;
 * the core asks for a callback on every timed wait that outlasts its spin. */
#include "cuda_internal.h"

#include <sched.h>
#include <string.h>
#include <time.h>

/* Released natives the callback helper can hold past the core's slots. */
#define KA__CUEV_MARGIN 64u

static inline ka__cuev *event_at(ka__cuq *q, uint32_t index) {
    ka__cuev *c = atomic_load_explicit(&q->chunks[index / KA__CUEV_CHUNK], memory_order_acquire);
    return &c[index % KA__CUEV_CHUNK];
}

static void push_free(ka__cuq *q, ka__cuev *e) { ka__freelist_push(&q->free_head, &e->next_free, e->index + 1); }

static _Atomic uint32_t *event_link(void *pool, uint32_t idx1) { return &event_at(pool, idx1 - 1)->next_free; }

static void unref(ka__cuev *e) {
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) push_free(e->q, e);
}

/* Makes events up to `want` in all (under grow_lock, or before the queue is
 * shared) and puts the new ones on the free list. */
static ka_status add_events(ka__cuq *q, uint32_t want) {
    uint32_t have = atomic_load_explicit(&q->nev, memory_order_relaxed);
    if (want > KA__CUEV_CHUNK * KA__CUEV_MAX_CHUNKS) want = KA__CUEV_CHUNK * KA__CUEV_MAX_CHUNKS;
    while (have < want) {
        uint32_t ci = have / KA__CUEV_CHUNK;
        ka__cuev *c = atomic_load_explicit(&q->chunks[ci], memory_order_relaxed);
        if (!c) {
            if (!(c = ka__calloc(KA__CUEV_CHUNK, sizeof *c)))
                return ka__fail(KA_ERR_OUT_OF_MEMORY, "CUDA queue: out of memory for events");
            atomic_store_explicit(&q->chunks[ci], c, memory_order_release);
        }
        ka__cuev *e = &c[have % KA__CUEV_CHUNK];
        /* A profiling queue's events time (ka_event_elapsed_ns); others do
         * not, the cheaper event to record. */
        unsigned timing = q->profiling ? 0 : CU_EVENT_DISABLE_TIMING;
        CUresult r = ka__cu.cuEventCreate(&e->ev, timing);
        if (r != CUDA_SUCCESS) return ka__cu_fail(r, "cuEventCreate");
        if (q->profiling && (r = ka__cu.cuEventCreate(&e->sev, 0)) != CUDA_SUCCESS) {
            ka__cu.cuEventDestroy(e->ev);
            e->ev = NULL;
            return ka__cu_fail(r, "cuEventCreate(start)");
        }
        if ((r = ka__cu.cuEventCreate(&e->bev, CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC)) != CUDA_SUCCESS) {
            ka__cu.cuEventDestroy(e->ev);
            if (e->sev) ka__cu.cuEventDestroy(e->sev);
            e->ev = e->sev = NULL;
            return ka__cu_fail(r, "cuEventCreate(blocking sync)");
        }
        e->q = q;
        e->index = have;
        atomic_store_explicit(&q->nev, ++have, memory_order_release);
        push_free(q, e);
    }
    return KA_OK;
}

/* The pool is dry: grows it when the core has more slots than were assumed.
 * true when there may be free events now. */
static bool grow(ka__cuq *q) {
    uint32_t want = q->kq->nevents + KA__CUEV_MARGIN;
    bool ok;
    pthread_mutex_lock(&q->grow_lock);
    if (atomic_load_explicit(&q->nev, memory_order_relaxed) < want) {
        ka__log(KA_LOG_DEBUG, "CUDA queue: growing the event pool to %u", want);
        ok = add_events(q, want) == KA_OK;
    } else {
        ok = ka__freelist_peek(&q->free_head) != 0; /* grown by another thread */
    }
    pthread_mutex_unlock(&q->grow_lock);
    return ok;
}

ka__cuev *ka__cuda_event_pop(ka__cuq *q) {
    uint32_t idx;
    while (KA_UNLIKELY(!(idx = ka__freelist_pop(&q->free_head, event_link, q)))) {
        if (grow(q) && ka__freelist_peek(&q->free_head)) continue;
        ka__fail(KA_ERR_EVENT_POOL_EXHAUSTED, "CUDA queue: all %u native events are in use",
                 atomic_load_explicit(&q->nev, memory_order_relaxed));
        return NULL;
    }
    ka__cuev *e = event_at(q, idx - 1);
    atomic_store_explicit(&e->refs, 1, memory_order_relaxed);
    if (KA_UNLIKELY(q->profiling)) {
        CUresult r = ka__cu.cuEventRecord(e->sev, q->stream);
        if (r != CUDA_SUCCESS) {
            unref(e);
            ka__cu_fail(r, "cuEventRecord(start)");
            return NULL;
        }
    }
    return e;
}

void ka__cuda_event_unpop(ka__cuev *e) { unref(e); }

ka_status ka__cuda_event_record(ka__cuev *e) {
    e->seq = atomic_fetch_add_explicit(&e->q->seq, 1, memory_order_relaxed);
    atomic_store_explicit(&e->chain, 0, memory_order_relaxed);
    CUresult r = ka__cu.cuEventRecord(e->ev, e->q->stream);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuEventRecord");
}

ka_status ka__cuda_event_elapsed(void *ev, uint64_t *ns) {
    ka__cuev *e = ev;
    if (!e->sev || !ka__cu.cuEventElapsedTime)
        return ka__fail(KA_ERR_UNSUPPORTED, "ka_event_elapsed_ns: %s", e->sev ? "the CUDA driver lacks cuEventElapsedTime" : "the event's queue does not profile");
    float ms = 0;
    CUresult r = ka__cu.cuEventElapsedTime(&ms, e->sev, e->ev);
    if (r != CUDA_SUCCESS) return ka__cu_fail(r, "cuEventElapsedTime");
    *ns = ms > 0 ? (uint64_t)((double)ms * 1e6) : 0;
    return KA_OK;
}

int ka__cuda_event_query(void *ev, ka_status *st) {
    ka__cuev *e = ev;
    CUresult r = ka__cu.cuEventQuery(e->ev);
    if (KA_LIKELY(r == CUDA_ERROR_NOT_READY)) return 0;
    if (r == CUDA_SUCCESS) return 1;
    *st = ka__cu_fail(r, "cuEventQuery");
    return -1;
}

const char *ka__cuda_event_error(void *ev) {
    CUresult r = ka__cu.cuEventQuery(((ka__cuev *)ev)->ev);
    return r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY ? NULL : ka__cu_name(r);
}

/* bev, following this recording of ev on the side stream (see the top):
 * made by the first thread that needs it; others wait until it is recorded
 * (a bev synchronized before its record would return at once). The caller
 * has the device's context current. */
static CUresult chain(ka__cuev *e) {
    uint32_t s = 0;
    if (atomic_compare_exchange_strong_explicit(&e->chain, &s, 1, memory_order_acq_rel, memory_order_acquire)) {
        CUresult r = ka__cu.cuStreamWaitEvent(e->q->side, e->ev, 0);
        if (r == CUDA_SUCCESS) r = ka__cu.cuEventRecord(e->bev, e->q->side);
        atomic_store_explicit(&e->chain, r == CUDA_SUCCESS ? 2u : 3u, memory_order_release);
        return r;
    }
    while ((s = atomic_load_explicit(&e->chain, memory_order_acquire)) == 1) sched_yield();
    return s == 2 ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

/* The core's unbounded wait past its spin: the calling thread blocks here,
 * on the blocking-sync bev (the driver sleeps rather than spins), and is the
 * one thread the completion wakes. The command's own status is ev's. The
 * device's context is made current first, as at every entry point (a thread
 * may wait on an event it did not launch). */
ka_status ka__cuda_event_wait(void *ev) {
    ka__cuev *e = ev;
    ka_status st = ka__cuda_bind(e->q->d);
    if (st != KA_OK) return st;
    CUresult r = chain(e);
    if (r == CUDA_SUCCESS && (r = ka__cu.cuEventSynchronize(e->bev)) != CUDA_SUCCESS)
        return ka__cu_fail(r, "cuEventSynchronize");
    /* Without a blocking-sync twin (its record failed), poll in 50 us sleeps:
     * the command's own status is ev's either way. */
    while ((r = ka__cu.cuEventQuery(e->ev)) == CUDA_ERROR_NOT_READY) nanosleep(&(struct timespec){0, 50000}, NULL);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuEventQuery");
}

void ka__cuda_event_release(void *ev) { unref(ev); }

ka_status ka__cuda_event_callback(void *ev, ka__native_cb cb, void *ctx) {
    ka__cuev *e = ev;
    ka__cuq *q = e->q;
    CUresult r = ka__cu.cuEventQuery(e->ev);
    if (r != CUDA_ERROR_NOT_READY) { /* complete, or failed: no need for the helper */
        cb(ctx, r == CUDA_SUCCESS ? KA_OK : ka__cu_status(r));
        return KA_OK;
    }
    ka_status st = ka__cuda_bind(q->d);
    if (st != KA_OK) return st;
    if ((r = chain(e)) != CUDA_SUCCESS)
        return ka__cu_fail(r, "cuStreamWaitEvent/cuEventRecord (blocking-sync event)");
    pthread_mutex_lock(&q->lock);
    if (e->cb) {
        pthread_mutex_unlock(&q->lock);
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "CUDA event: a completion callback is already registered");
    }
    if (!q->thread_started || q->stop) {
        pthread_mutex_unlock(&q->lock);
        return ka__fail(KA_ERR_UNSUPPORTED, "CUDA queue: no callback thread");
    }
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    e->cb = cb;
    e->cb_ctx = ctx;
    e->armed_next = q->armed;
    q->armed = e;
    pthread_cond_signal(&q->cond);
    pthread_mutex_unlock(&q->lock);
    return KA_OK;
}

/* The callback helper. Sleeps on the condition while nothing is armed. */
static void *helper_main(void *arg) {
    ka__cuq *q = arg;
    ka__cu.cuCtxSetCurrent(q->d->ctx);
    pthread_mutex_lock(&q->lock);
    for (;;) {
        while (!q->armed && !q->stop) pthread_cond_wait(&q->cond, &q->lock);
        if (!q->armed) break; /* stop, and nothing left to run */
        ka__cuev *oldest = q->armed;
        for (ka__cuev *e = q->armed->armed_next; e; e = e->armed_next)
            if (e->seq < oldest->seq) oldest = e;
        CUevent wait_on = oldest->bev; /* chained when armed; oldest stays armed, so its CUevent stays ours */
        pthread_mutex_unlock(&q->lock);
        ka__cu.cuEventSynchronize(wait_on);
        pthread_mutex_lock(&q->lock);
        /* Unlink every armed event that is complete (or failed). */
        ka__cuev *fire = NULL;
        for (ka__cuev **pp = &q->armed; *pp;) {
            ka__cuev *e = *pp;
            if (ka__cu.cuEventQuery(e->ev) == CUDA_ERROR_NOT_READY) {
                pp = &e->armed_next;
                continue;
            }
            *pp = e->armed_next;
            e->armed_next = fire;
            fire = e;
        }
        pthread_mutex_unlock(&q->lock);
        while (fire) {
            ka__cuev *e = fire;
            fire = e->armed_next;
            CUresult r = ka__cu.cuEventQuery(e->ev);
            ka__native_cb cb = e->cb;
            void *ctx = e->cb_ctx;
            e->cb = NULL;
            e->cb_ctx = NULL;
            cb(ctx, r == CUDA_SUCCESS ? KA_OK : ka__cu_status(r));
            unref(e);
        }
        pthread_mutex_lock(&q->lock);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

ka_status ka__cuda_events_init(ka__cuq *q, uint32_t n) {
    CUresult r = ka__cu.cuStreamCreate(&q->side, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) {
        q->side = NULL;
        return ka__cu_fail(r, "cuStreamCreate(side)");
    }
    atomic_init(&q->free_head, 0);
    atomic_init(&q->seq, 1);
    atomic_init(&q->nev, 0);
    if (pthread_mutex_init(&q->grow_lock, NULL)) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_queue_create: pthread_mutex_init failed");
    q->locks_made = true;
    if (pthread_mutex_init(&q->lock, NULL) || pthread_cond_init(&q->cond, NULL)) {
        ka__cuda_events_fini(q);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_queue_create: pthread_mutex_init/pthread_cond_init failed");
    }
    ka_status st = add_events(q, n);
    if (st != KA_OK) {
        ka__cuda_events_fini(q);
        return st;
    }
    q->stop = false;
    q->armed = NULL;
    if (pthread_create(&q->thread, NULL, helper_main, q) != 0) {
        ka__cuda_events_fini(q);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_queue_create: cannot start the CUDA callback thread");
    }
    q->thread_started = true;
    return KA_OK;
}

/* After the stream is idle: stops the helper (running what is still armed)
 * and destroys the events. */
void ka__cuda_events_fini(ka__cuq *q) {
    if (q->thread_started) {
        pthread_mutex_lock(&q->lock);
        q->stop = true;
        pthread_cond_signal(&q->cond);
        pthread_mutex_unlock(&q->lock);
        pthread_join(q->thread, NULL);
        q->thread_started = false;
    }
    if (q->locks_made) {
        pthread_cond_destroy(&q->cond);
        pthread_mutex_destroy(&q->lock);
        pthread_mutex_destroy(&q->grow_lock);
        q->locks_made = false;
    }
    if (q->side) {
        ka__cu.cuStreamSynchronize(q->side);
        ka__cu.cuStreamDestroy(q->side);
        q->side = NULL;
    }
    uint32_t n = atomic_load(&q->nev);
    for (uint32_t i = 0; i < n; i++) {
        ka__cu.cuEventDestroy(event_at(q, i)->ev);
        ka__cu.cuEventDestroy(event_at(q, i)->bev);
        if (event_at(q, i)->sev) ka__cu.cuEventDestroy(event_at(q, i)->sev);
    }
    for (uint32_t c = 0; c < KA__CUEV_MAX_CHUNKS; c++) {
        ka__cuev *chunk = atomic_load(&q->chunks[c]);
        if (chunk) ka__free(chunk, sizeof *chunk * KA__CUEV_CHUNK);
        atomic_store(&q->chunks[c], NULL);
    }
    atomic_store(&q->nev, 0);
}
