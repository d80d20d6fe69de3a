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
#define KA__CU_EVENT_MARGIN 64u

static inline ka__cu_event *event_at(ka__cu_queue *nq, uint32_t index) {
    ka__cu_event *c = atomic_load_explicit(&nq->chunks[index / KA__CU_EVENT_CHUNK], memory_order_acquire);
    return &c[index % KA__CU_EVENT_CHUNK];
}

static void push_free(ka__cu_queue *nq, ka__cu_event *ne) { ka__freelist_push(&nq->free_head, &ne->next_free, ne->index + 1); }

static _Atomic uint32_t *event_link(void *pool, uint32_t idx1) { return &event_at(pool, idx1 - 1)->next_free; }

static void unref(ka__cu_event *ne) {
    if (atomic_fetch_sub_explicit(&ne->refs, 1, memory_order_acq_rel) == 1) push_free(ne->nq, ne);
}

/* Makes events up to `want` in all (under grow_lock, or before the queue is
 * shared) and puts the new ones on the free list. On failure the ones made
 * before stay (nev counts them). */
static ka_status add_events(ka__cu_queue *nq, uint32_t want) {
    uint32_t have = atomic_load_explicit(&nq->nev, memory_order_relaxed);
    ka__cu_event *ne;
    ka_status st;
    CUresult r;
    if (want > KA__CU_EVENT_CHUNK * KA__CU_EVENT_MAX_CHUNKS) want = KA__CU_EVENT_CHUNK * KA__CU_EVENT_MAX_CHUNKS;
    while (have < want) {
        uint32_t ci = have / KA__CU_EVENT_CHUNK;
        ka__cu_event *c = atomic_load_explicit(&nq->chunks[ci], memory_order_relaxed);
        if (!c) {
            if (!(c = ka__calloc(KA__CU_EVENT_CHUNK, sizeof *c)))
                return ka__fail(KA_ERR_OUT_OF_MEMORY, "CUDA queue: out of memory for events");
            atomic_store_explicit(&nq->chunks[ci], c, memory_order_release);
        }
        ne = &c[have % KA__CU_EVENT_CHUNK];
        /* A profiling queue's events time (ka_event_elapsed_ns); others do
         * not, the cheaper event to record. */
        unsigned timing = nq->profiling ? 0 : CU_EVENT_DISABLE_TIMING;
        if ((r = ka__cu.cuEventCreate(&ne->ev, timing)) != CUDA_SUCCESS) return ka__cu_fail(r, "cuEventCreate");
        if (nq->profiling && (r = ka__cu.cuEventCreate(&ne->sev, 0)) != CUDA_SUCCESS) {
            st = ka__cu_fail(r, "cuEventCreate(start)");
            goto fail_sev;
        }
        if ((r = ka__cu.cuEventCreate(&ne->bev, CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC)) != CUDA_SUCCESS) {
            st = ka__cu_fail(r, "cuEventCreate(blocking sync)");
            goto fail_bev;
        }
        ne->nq = nq;
        ne->index = have;
        atomic_store_explicit(&nq->nev, ++have, memory_order_release);
        push_free(nq, ne);
    }
    return KA_OK;

fail_bev:
    if (ne->sev) ka__cu.cuEventDestroy(ne->sev);
fail_sev:
    ka__cu.cuEventDestroy(ne->ev);
    ne->ev = ne->sev = NULL;
    return st;
}

/* Destroys every event made and frees the chunks. */
static void destroy_events(ka__cu_queue *nq) {
    uint32_t n = atomic_load(&nq->nev);
    for (uint32_t i = 0; i < n; i++) {
        ka__cu_event *ne = event_at(nq, i);
        ka__cu.cuEventDestroy(ne->ev);
        ka__cu.cuEventDestroy(ne->bev);
        if (ne->sev) ka__cu.cuEventDestroy(ne->sev);
    }
    for (uint32_t c = 0; c < KA__CU_EVENT_MAX_CHUNKS; c++) {
        ka__cu_event *chunk = atomic_load(&nq->chunks[c]);
        if (chunk) ka__free(chunk, sizeof *chunk * KA__CU_EVENT_CHUNK);
        atomic_store(&nq->chunks[c], NULL);
    }
    atomic_store(&nq->nev, 0);
}

/* The pool is dry: grows it when the core has more slots than were assumed.
 * true when there may be free events now. */
static bool grow(ka__cu_queue *nq) {
    uint32_t want = nq->q->nevents + KA__CU_EVENT_MARGIN;
    bool ok;
    pthread_mutex_lock(&nq->grow_lock);
    if (atomic_load_explicit(&nq->nev, memory_order_relaxed) < want) {
        ka__log(KA_LOG_DEBUG, "CUDA queue: growing the event pool to %u", want);
        ok = add_events(nq, want) == KA_OK;
    } else {
        ok = ka__freelist_peek(&nq->free_head) != 0; /* grown by another thread */
    }
    pthread_mutex_unlock(&nq->grow_lock);
    return ok;
}

ka__cu_event *ka__cuda_event_pop(ka__cu_queue *nq) {
    uint32_t idx;
    while (KA_UNLIKELY(!(idx = ka__freelist_pop(&nq->free_head, event_link, nq)))) {
        if (grow(nq) && ka__freelist_peek(&nq->free_head)) continue;
        ka__fail(KA_ERR_EVENT_POOL_EXHAUSTED, "CUDA queue: all %u native events are in use",
                 atomic_load_explicit(&nq->nev, memory_order_relaxed));
        return NULL;
    }
    ka__cu_event *ne = event_at(nq, idx - 1);
    atomic_store_explicit(&ne->refs, 1, memory_order_relaxed);
    if (KA_UNLIKELY(nq->profiling)) {
        CUresult r = ka__cu.cuEventRecord(ne->sev, nq->stream);
        if (r != CUDA_SUCCESS) {
            unref(ne);
            ka__cu_fail(r, "cuEventRecord(start)");
            return NULL;
        }
    }
    return ne;
}

void ka__cuda_event_unpop(ka__cu_event *ne) { unref(ne); }

ka_status ka__cuda_event_record(ka__cu_event *ne) {
    ne->seq = atomic_fetch_add_explicit(&ne->nq->seq, 1, memory_order_relaxed);
    atomic_store_explicit(&ne->chain, 0, memory_order_relaxed);
    CUresult r = ka__cu.cuEventRecord(ne->ev, ne->nq->stream);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuEventRecord");
}

ka_status ka__cuda_event_elapsed(void *ev, uint64_t *ns) {
    ka__cu_event *ne = ev;
    if (!ne->sev || !ka__cu.cuEventElapsedTime)
        return ka__fail(KA_ERR_UNSUPPORTED, "%s", ne->sev ? "the CUDA driver lacks cuEventElapsedTime" : "the event's queue does not profile");
    float ms = 0;
    CUresult r = ka__cu.cuEventElapsedTime(&ms, ne->sev, ne->ev);
    if (r != CUDA_SUCCESS) return ka__cu_fail(r, "cuEventElapsedTime");
    *ns = ms > 0 ? (uint64_t)((double)ms * 1e6) : 0;
    return KA_OK;
}

int ka__cuda_event_query(void *ev, ka_status *st) {
    ka__cu_event *ne = ev;
    CUresult r = ka__cu.cuEventQuery(ne->ev);
    if (KA_LIKELY(r == CUDA_ERROR_NOT_READY)) return 0;
    if (r == CUDA_SUCCESS) return 1;
    *st = ka__cu_fail(r, "cuEventQuery");
    return -1;
}

const char *ka__cuda_event_error(void *ev) {
    CUresult r = ka__cu.cuEventQuery(((ka__cu_event *)ev)->ev);
    return r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY ? NULL : ka__cu_name(r);
}

/* bev, following this recording of ev on the side stream (see the top):
 * made by the first thread that needs it; others wait until it is recorded
 * (a bev synchronized before its record would return at once). The caller
 * has the device's context current. */
static CUresult chain(ka__cu_event *ne) {
    uint32_t s = 0;
    if (atomic_compare_exchange_strong_explicit(&ne->chain, &s, 1, memory_order_acq_rel, memory_order_acquire)) {
        CUresult r = ka__cu.cuStreamWaitEvent(ne->nq->side, ne->ev, 0);
        if (r == CUDA_SUCCESS) r = ka__cu.cuEventRecord(ne->bev, ne->nq->side);
        atomic_store_explicit(&ne->chain, r == CUDA_SUCCESS ? 2u : 3u, memory_order_release);
        return r;
    }
    while ((s = atomic_load_explicit(&ne->chain, memory_order_acquire)) == 1) sched_yield();
    return s == 2 ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

/* The core's unbounded wait past its spin: the calling thread blocks here,
 * on the blocking-sync bev (the driver sleeps rather than spins), and is the
 * one thread the completion wakes. The command's own status is ev's. The
 * device's context is made current first, as at every entry point (a thread
 * may wait on an event it did not launch). */
ka_status ka__cuda_event_wait(void *ev) {
    ka__cu_event *ne = ev;
    ka_status st = ka__cuda_bind(ne->nq->nd);
    if (st != KA_OK) return st;
    CUresult r = chain(ne);
    if (r == CUDA_SUCCESS && (r = ka__cu.cuEventSynchronize(ne->bev)) != CUDA_SUCCESS)
        return ka__cu_fail(r, "cuEventSynchronize");
    /* Without a blocking-sync twin (its record failed), poll in 50 us sleeps:
     * the command's own status is ev's either way. */
    while ((r = ka__cu.cuEventQuery(ne->ev)) == CUDA_ERROR_NOT_READY) nanosleep(&(struct timespec){0, 50000}, NULL);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuEventQuery");
}

void ka__cuda_event_release(void *ev) { unref(ev); }

ka_status ka__cuda_event_callback(void *ev, ka__native_cb cb, void *ctx) {
    ka__cu_event *ne = ev;
    ka__cu_queue *nq = ne->nq;
    CUresult r = ka__cu.cuEventQuery(ne->ev);
    if (r != CUDA_ERROR_NOT_READY) { /* complete, or failed: no need for the helper */
        cb(ctx, r == CUDA_SUCCESS ? KA_OK : ka__cu_status(r));
        return KA_OK;
    }
    ka_status st = ka__cuda_bind(nq->nd);
    if (st != KA_OK) return st;
    if ((r = chain(ne)) != CUDA_SUCCESS)
        return ka__cu_fail(r, "cuStreamWaitEvent/cuEventRecord (blocking-sync event)");
    pthread_mutex_lock(&nq->lock);
    if (ne->cb) {
        pthread_mutex_unlock(&nq->lock);
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "CUDA event: a completion callback is already registered");
    }
    if (!nq->thread_started || nq->stop) {
        pthread_mutex_unlock(&nq->lock);
        return ka__fail(KA_ERR_UNSUPPORTED, "CUDA queue: no callback thread");
    }
    atomic_fetch_add_explicit(&ne->refs, 1, memory_order_relaxed);
    ne->cb = cb;
    ne->cb_ctx = ctx;
    ne->armed_next = nq->armed;
    nq->armed = ne;
    pthread_cond_signal(&nq->cond);
    pthread_mutex_unlock(&nq->lock);
    return KA_OK;
}

/* The callback helper. Sleeps on the condition while nothing is armed. */
static void *helper_main(void *arg) {
    ka__cu_queue *nq = arg;
    ka__cu.cuCtxSetCurrent(nq->nd->ctx);
    pthread_mutex_lock(&nq->lock);
    for (;;) {
        while (!nq->armed && !nq->stop) pthread_cond_wait(&nq->cond, &nq->lock);
        if (!nq->armed) break; /* stop, and nothing left to run */
        ka__cu_event *oldest = nq->armed;
        for (ka__cu_event *ne = nq->armed->armed_next; ne; ne = ne->armed_next)
            if (ne->seq < oldest->seq) oldest = ne;
        CUevent wait_on = oldest->bev; /* chained when armed; oldest stays armed, so its CUevent stays ours */
        pthread_mutex_unlock(&nq->lock);
        ka__cu.cuEventSynchronize(wait_on);
        pthread_mutex_lock(&nq->lock);
        /* Unlink every armed event that is complete (or failed). */
        ka__cu_event *fire = NULL;
        for (ka__cu_event **pp = &nq->armed; *pp;) {
            ka__cu_event *ne = *pp;
            if (ka__cu.cuEventQuery(ne->ev) == CUDA_ERROR_NOT_READY) {
                pp = &ne->armed_next;
                continue;
            }
            *pp = ne->armed_next;
            ne->armed_next = fire;
            fire = ne;
        }
        pthread_mutex_unlock(&nq->lock);
        while (fire) {
            ka__cu_event *ne = fire;
            fire = ne->armed_next;
            CUresult r = ka__cu.cuEventQuery(ne->ev);
            ka__native_cb cb = ne->cb;
            void *ctx = ne->cb_ctx;
            ne->cb = NULL;
            ne->cb_ctx = NULL;
            cb(ctx, r == CUDA_SUCCESS ? KA_OK : ka__cu_status(r));
            unref(ne);
        }
        pthread_mutex_lock(&nq->lock);
    }
    pthread_mutex_unlock(&nq->lock);
    return NULL;
}

ka_status ka__cuda_events_init(ka__cu_queue *nq, uint32_t n) {
    ka_status st;
    CUresult r = ka__cu.cuStreamCreate(&nq->side, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) {
        nq->side = NULL;
        return ka__cu_fail(r, "cuStreamCreate(side)");
    }
    atomic_init(&nq->free_head, 0);
    atomic_init(&nq->seq, 1);
    atomic_init(&nq->nev, 0);
    if (pthread_mutex_init(&nq->grow_lock, NULL)) {
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "pthread_mutex_init failed");
        goto fail_grow_lock;
    }
    if (pthread_mutex_init(&nq->lock, NULL)) {
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "pthread_mutex_init/pthread_cond_init failed");
        goto fail_lock;
    }
    if (pthread_cond_init(&nq->cond, NULL)) {
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "pthread_mutex_init/pthread_cond_init failed");
        goto fail_cond;
    }
    if ((st = add_events(nq, n)) != KA_OK) goto fail_events;
    nq->stop = false;
    nq->armed = NULL;
    if (pthread_create(&nq->thread, NULL, helper_main, nq) != 0) {
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "cannot start the CUDA callback thread");
        goto fail_events;
    }
    nq->thread_started = true;
    return KA_OK;

fail_events:
    destroy_events(nq);
    pthread_cond_destroy(&nq->cond);
fail_cond:
    pthread_mutex_destroy(&nq->lock);
fail_lock:
    pthread_mutex_destroy(&nq->grow_lock);
fail_grow_lock:
    ka__cu.cuStreamDestroy(nq->side);
    nq->side = NULL;
    return st;
}

/* After the stream is idle: stops the helper (running what is still armed)
 * and destroys the events. */
void ka__cuda_events_fini(ka__cu_queue *nq) {
    pthread_mutex_lock(&nq->lock);
    nq->stop = true;
    pthread_cond_signal(&nq->cond);
    pthread_mutex_unlock(&nq->lock);
    pthread_join(nq->thread, NULL);
    nq->thread_started = false;
    pthread_cond_destroy(&nq->cond);
    pthread_mutex_destroy(&nq->lock);
    pthread_mutex_destroy(&nq->grow_lock);
    ka__cu.cuStreamSynchronize(nq->side);
    ka__cu.cuStreamDestroy(nq->side);
    nq->side = NULL;
    destroy_events(nq);
}
