/* Queues. */
#include "event.h"
#include "graph.h"
#include "trace.h"

#include <sys/eventfd.h>
#include <unistd.h>

ka__queue *ka__queue_of(ka_queue q) { return ka__resolve(q.id, KA__T_QUEUE); }

ka_status ka_queue_create(ka_device dev, const ka_queue_config *cfg, ka_queue *out) {
    KA__ENTRY();
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "out is NULL");
    out->id = 0;
    ka__device *d = ka__resolve(dev.id, KA__T_DEVICE);
    if (!d) return ka__fail_handle(KA__T_DEVICE, __func__);
    uint32_t cap = cfg && cfg->event_capacity ? cfg->event_capacity : 1024;
    if (cap > (1u << 20)) return ka__fail(KA_ERR_INVALID_ARGUMENT, "event_capacity %u > 2^20", cap);
    ka__queue *q = ka__calloc(1, sizeof *q);
    if (!q) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    q->dev = d;
    q->efd = -1;
    q->spin_ns = cfg ? cfg->spin_ns : -1;
    q->profiling = cfg && cfg->profiling;
    q->hooks = (ka__trace_device(d) ? KA__QH_TRACED : 0) | (d->debug ? KA__QH_DEBUG : 0);
    q->nevents = cap; /* back-ends size their native event pools by it */
    ka_status st = ka__be_queue_create(q, cfg);
    if (st != KA_OK) goto fail_q;
    st = ka__events_init(q, cap);
    if (st != KA_OK) goto fail_native;
    q->id = ka__handle_new(KA__T_QUEUE, q);
    if (!q->id) {
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for a handle");
        goto fail_events;
    }
    atomic_fetch_add(&d->live, 1);
    out->id = q->id;
    return KA_OK;
fail_events:
    ka__events_fini(q);
fail_native:
    ka__be_queue_release(q);
fail_q:
    ka__free(q, sizeof *q);
    return st;
}

ka_status ka_queue_release(ka_queue queue) {
    KA__ENTRY();
    ka__queue *q = ka__queue_of(queue);
    /* Retired first: calls on the queue in other threads (launches,
     * transfers, finish) return before it goes; later ones see it stale. */
    if (!q || !ka__handle_retire(queue.id))
        return ka__fail_handle(KA__T_QUEUE, __func__);
    ka__handle_free(q->id);
    ka__graph_free(q->rec); /* a recording never ended is discarded */
    ka_status st = ka__be_queue_finish(q);
    ka__queue_wait_callbacks(q);
    ka__events_fini(q);
    ka__be_queue_release(q);
    if (q->efd >= 0) close(q->efd);
    atomic_fetch_sub(&q->dev->live, 1);
    ka__free(q, sizeof *q);
    return st;
}

/* Nothing recorded has run: finishing or flushing it would be a lie. */
static ka_status recording(void) {
    return ka__fail(KA_ERR_INVALID_ARGUMENT, "the queue is recording a graph (ka_graph_end first)");
}

/* On the launch path: named on its failure branches only (KA__FAILED). */
ka_status ka_queue_finish(ka_queue queue) {
    KA__PIN(ka__queue, q, qs, queue, KA__T_QUEUE);
    ka_status st = q->rec ? recording() : ka__be_queue_finish(q);
    if (KA_UNLIKELY(atomic_load_explicit(&q->hooks, memory_order_relaxed) & (KA__QH_ASSERTS | KA__QH_DEBUG)) &&
        st == KA_OK) {
        KA__ENTRY(); /* the checks log what they find */
        st = ka__wait_checks(q);
    }
    ka__unpin(qs);
    return KA__FAILED(st);
}

ka_status ka_queue_flush(ka_queue queue) {
    KA__ENTRY();
    KA__PIN(ka__queue, q, qs, queue, KA__T_QUEUE);
    ka_status st = q->rec ? recording() : ka__be_queue_flush(q);
    ka__unpin(qs);
    return st;
}

/* The calls below pin the queue too (a release waits for them); their
 * arguments are checked before, so the pin has one way out. */
ka_status ka_queue_fd(ka_queue queue, int *fd) {
    KA__ENTRY();
    if (!fd) return ka__fail(KA_ERR_INVALID_ARGUMENT, "fd is NULL");
    KA__PIN(ka__queue, q, qs, queue, KA__T_QUEUE);
    ka_status st = KA_OK;
    if (q->efd < 0) {
        int e = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        int expect = -1;
        if (e < 0) st = ka__fail(KA_ERR_IO, "eventfd failed");
        else if (!__atomic_compare_exchange_n(&q->efd, &expect, e, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) close(e);
    }
    if (st == KA_OK) *fd = q->efd;
    ka__unpin(qs);
    return st;
}

ka_status ka_queue_get_stats(ka_queue queue, ka_queue_stats *out) {
    KA__ENTRY();
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "out is NULL");
    KA__PIN(ka__queue, q, qs, queue, KA__T_QUEUE);
    out->waits_polled = atomic_load(&q->waits_polled);
    out->waits_slept = atomic_load(&q->waits_slept);
    out->callbacks = atomic_load(&q->callbacks);
    out->inline_max_items = out->inline_launches = 0;
    ka__be_queue_stats(q, out);
    ka__unpin(qs);
    return KA_OK;
}

ka_status ka_queue_get_native(ka_queue queue, ka_native_queue *out) {
    KA__ENTRY();
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "out is NULL");
    out->queue = out->inline_queue = NULL;
    KA__PIN(ka__queue, q, qs, queue, KA__T_QUEUE);
    ka_status st = KA_OK;
    if (!ka__be_queue_native(q, out)) st = ka__fail(KA_ERR_UNSUPPORTED, "the %s back-end has no native queue", ka__be_name(q->dev));
    ka__unpin(qs);
    return st;
}
