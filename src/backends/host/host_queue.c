/* Queues of the host back-end. In order. A launch over the pool starts the
 * pool's run and returns (host_launch.c); a small launch, a transfer, a fill
 * and a map run in the calling thread and are complete on return. An
 * asynchronous launch (KA_LAUNCH_ASYNC) goes to the queue's worker thread
 * through a fixed ring; a wait on another queue's event (queue_wait) too, so
 * the commands after it wait for it. A command run in the calling thread
 * first joins the queue's pool run and waits until the worker has finished
 * the queue's earlier commands (ka__host_drain); a ring command joins the
 * pool run enqueued before it. */
#include "host_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* A failure with no event to carry it: kept for the next wait on the queue
 * (the first one, until a wait takes it). */
void ka__host_record_failure(ka__hqueue *hq, ka_status st, const char *why) {
    ka__spin_lock(&hq->fail_lock);
    if (hq->fail_st == KA_OK) {
        hq->fail_st = st;
        snprintf(hq->fail_why, sizeof hq->fail_why, "%s", why && *why ? why : ka_strerror(st));
    }
    ka__spin_unlock(&hq->fail_lock);
    ka__queue_mark_asserts(hq->q); /* the waits then ask (assert_take) */
}

void ka__host_cmd_settle(ka__hqueue *hq, ka__hev *e, ka_status st, const char *why) {
    if (e) ka__host_ev_settle(e, st, why);
    else if (st != KA_OK) ka__host_record_failure(hq, st, why);
    atomic_fetch_add_explicit(&hq->done, 1, memory_order_acq_rel);
}

void ka__host_cmd_finish(ka__hdev *hd, ka__hev *e) {
    if (e) ka__host_ev_finish(e);
    ka__host_reclaim(hd);
}

static void *worker(void *arg) {
    ka__hqueue *hq = arg;
    pthread_mutex_lock(&hq->lock);
    for (;;) {
        while (hq->tail == hq->head && !hq->stop) pthread_cond_wait(&hq->more, &hq->lock);
        if (hq->tail == hq->head) break; /* stop, and nothing left */
        ka__hcmd *c = &hq->ring[hq->tail % KA__HOST_RING];
        pthread_mutex_unlock(&hq->lock);
        ka_status st = KA_OK;
        char why[160] = "";
        if (c->after) ka__pool_join(hq->pool, (uint32_t)c->after); /* the pool launch enqueued before */
        if (c->ev) c->ev->t0 = ka__now_ns();
        if (c->kind == KA__HC_WAIT) {
            /* Another queue's failure is its own: the order holds either way. */
            if (c->dep) { /* NULL: a slot a failed launch left */
                (void)ka__host_event_wait(c->dep);
                ka__host_ev_unref(c->dep);
            }
        } else {
            st = ka__host_run_launch(hq, c, why, sizeof why, true);
        }
        ka__hev *ev = c->ev;
        if (ev) ev->t1 = ka__now_ns();
        ka__host_cmd_settle(hq, ev, st, why);
        pthread_mutex_lock(&hq->lock);
        hq->tail++;
        pthread_cond_signal(&hq->room);
        if (atomic_fetch_sub_explicit(&hq->pending, 1, memory_order_acq_rel) == 1) {
            atomic_fetch_add_explicit(&hq->drained, 1, memory_order_release);
            ka__futex_wake_all(&hq->drained);
        }
        /* Not pending any more: its callback may use the queue. */
        pthread_mutex_unlock(&hq->lock);
        ka__host_cmd_finish(hq->q->dev->native, ev);
        pthread_mutex_lock(&hq->lock);
    }
    pthread_mutex_unlock(&hq->lock);
    return NULL;
}

ka_status ka__host_queue_create(ka__queue *q, const ka_queue_config *cfg) {
    ka_status st;
    ka__hqueue *hq = ka__calloc(1, sizeof *hq);
    if (!hq) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    int64_t lim = cfg ? cfg->inline_max_items : 0;
    hq->sync_max_items = lim == KA_INLINE_OFF ? 0 : lim > 0 ? (uint64_t)lim : UINT64_MAX;
    hq->ring = ka__calloc(KA__HOST_RING, sizeof *hq->ring);
    if (!hq->ring) {
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for the command ring");
        goto fail_ring;
    }
    hq->q = q;
    hq->pool = ((ka__hdev *)q->dev->native)->pool;
    if (!(hq->prun = ka__calloc(1, sizeof *hq->prun))) {
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for the queue's launch slot");
        goto fail_prun;
    }
    hq->prun->hq = hq;
    if ((st = ka__host_events_init(hq)) != KA_OK) goto fail_events;
    pthread_mutex_init(&hq->lock, NULL);
    pthread_cond_init(&hq->more, NULL);
    pthread_cond_init(&hq->room, NULL);
    int e = pthread_create(&hq->worker, NULL, worker, hq);
    if (e != 0) {
        st = ka__fail(KA_ERR_DEVICE, "cannot start the queue's thread (error %d)", e);
        goto fail_thread;
    }
    q->native = hq;
    ka__host_queue_listed(q->dev->native, hq, true);
    atomic_fetch_add(&((ka__hdev *)q->dev->native)->nqueues, 1);
    return KA_OK;
fail_thread:
    pthread_cond_destroy(&hq->room);
    pthread_cond_destroy(&hq->more);
    pthread_mutex_destroy(&hq->lock);
    ka__host_events_fini(hq);
fail_events:
    ka__free(hq->prun, sizeof *hq->prun);
fail_prun:
    ka__free(hq->ring, KA__HOST_RING * sizeof *hq->ring);
fail_ring:
    ka__free(hq, sizeof *hq);
    return st;
}

void ka__host_queue_release(ka__queue *q) {
    ka__hqueue *hq = q->native;
    ka__host_drain(hq);
    /* The completions still under way use the queue's events: a run's after
     * step in the thread that finished it, callbacks on the callback thread. */
    while (atomic_load_explicit(&hq->afters, memory_order_acquire) ||
           atomic_load_explicit(&hq->cb_inflight, memory_order_acquire)) {
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&hq->lock);
    hq->stop = true;
    pthread_cond_signal(&hq->more);
    pthread_mutex_unlock(&hq->lock);
    pthread_join(hq->worker, NULL);
    ka__host_queue_listed(q->dev->native, hq, false);
    ka__host_events_fini(hq);
    ka__free(hq->prun, sizeof *hq->prun);
    pthread_cond_destroy(&hq->room);
    pthread_cond_destroy(&hq->more);
    pthread_mutex_destroy(&hq->lock);
    ka__free(hq->ring, KA__HOST_RING * sizeof *hq->ring);
    ka__free(hq, sizeof *hq);
    ka__hdev *hd = q->dev->native;
    atomic_fetch_sub(&hd->nqueues, 1);
    ka__host_fs_trim(hd);
}

void ka__host_drain(ka__hqueue *hq) {
    uint64_t t = atomic_load_explicit(&hq->prun_ticket, memory_order_acquire);
    if (t) ka__pool_join(hq->pool, (uint32_t)t);
    for (;;) {
        uint32_t seq = atomic_load_explicit(&hq->drained, memory_order_acquire);
        if (!atomic_load_explicit(&hq->pending, memory_order_acquire)) return;
        ka__futex_wait(&hq->drained, seq, INT64_MAX);
    }
}

ka_status ka__host_queue_finish(ka__queue *q) {
    ka__host_drain(q->native);
    return KA_OK;
}

ka_status ka__host_queue_flush(ka__queue *q) {
    (void)q; /* the worker takes each command as it comes */
    return KA_OK;
}

ka__hcmd *ka__host_cmd_begin(ka__hqueue *hq) {
    pthread_mutex_lock(&hq->lock);
    while (hq->head - hq->tail == KA__HOST_RING) pthread_cond_wait(&hq->room, &hq->lock);
    ka__hcmd *c = &hq->ring[hq->head % KA__HOST_RING];
    atomic_fetch_add_explicit(&hq->pending, 1, memory_order_acq_rel);
    atomic_fetch_add_explicit(&hq->subm, 1, memory_order_acq_rel);
    c->after = atomic_load_explicit(&hq->prun_ticket, memory_order_acquire);
    return c; /* the lock stays held until submit */
}

void ka__host_cmd_submit(ka__hqueue *hq) {
    hq->head++;
    pthread_cond_signal(&hq->more);
    pthread_mutex_unlock(&hq->lock);
}

ka_status ka__host_queue_wait(ka__queue *q, void *ev) {
    ka__hev *dep = ev;
    if (atomic_load_explicit(&dep->state, memory_order_acquire)) return KA_OK;
    ka__hqueue *hq = q->native;
    atomic_fetch_add_explicit(&dep->refs, 1, memory_order_relaxed); /* until the worker has waited */
    ka__hcmd *c = ka__host_cmd_begin(hq);
    c->kind = KA__HC_WAIT;
    c->dep = dep;
    c->ev = NULL;
    ka__host_cmd_submit(hq);
    return KA_OK;
}

/* ka_assert's record, and before it a failure of a command that had no
 * event (reported once, by the first wait after it). */
ka_status ka__host_assert_take(ka__queue *q, uint32_t *rec) {
    ka__hqueue *hq = q->native;
    ka__spin_lock(&hq->fail_lock);
    ka_status st = hq->fail_st;
    char why[sizeof hq->fail_why];
    if (st != KA_OK) memcpy(why, hq->fail_why, sizeof why);
    hq->fail_st = KA_OK;
    ka__spin_unlock(&hq->fail_lock);
    if (st != KA_OK) return ka__fail(st, "%s", why);
    for (int i = 0; i < KA__ASSERT_WORDS; i++) rec[i] = __atomic_load_n(&hq->arec[i], __ATOMIC_ACQUIRE);
    if (rec[0]) memset(hq->arec, 0, sizeof hq->arec);
    return KA_OK;
}
