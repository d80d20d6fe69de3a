/* Queues: a non-blocking CUstream, a pool of CUevents with a completion
 * callback thread (cuda_events.c), and ka_assert's record. */
#include "cuda_internal.h"

/* Events per queue: the core's slot count (its default when not yet known)
 * plus a margin for released events the callback helper still holds. */
#define KA__CUDA_EVENT_MARGIN 64
#define KA__CUDA_DEFAULT_EVENTS 1024

ka_status ka__cuda_queue_create(ka__queue *q, const ka_queue_config *cfg) {
    (void)cfg; /* nothing in it is the back-end's */
    ka__cu_dev *nd = q->dev->native;
    ka_status st = ka__cuda_bind(nd);
    if (st != KA_OK) return st;
    ka__cu_queue *nq = ka__calloc(1, sizeof *nq);
    if (!nq) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    nq->nd = nd;
    nq->q = q;
    nq->profiling = q->profiling;
    CUresult r = ka__cu.cuStreamCreate(&nq->stream, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) {
        st = ka__cu_fail(r, "cuStreamCreate");
        goto fail_stream;
    }
    /* ka_assert's record: zeroed on the stream, before any kernel. */
    if ((r = ka__cu.cuMemAlloc(&nq->arec, KA__ASSERT_WORDS * 4)) != CUDA_SUCCESS) {
        st = ka__cu_fail(r, "cuMemAlloc(assertion record)");
        goto fail_arec;
    }
    if ((r = ka__cu.cuMemsetD8Async(nq->arec, 0, KA__ASSERT_WORDS * 4, nq->stream)) != CUDA_SUCCESS) {
        st = ka__cu_fail(r, "cuMemsetD8Async(assertion record)");
        goto fail_astream;
    }
    if ((r = ka__cu.cuStreamCreate(&nq->astream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
        st = ka__cu_fail(r, "cuStreamCreate(assertion stream)");
        goto fail_astream;
    }
    /* The core's slot count when it is known here, else its default. */
    uint32_t slots = q->nevents ? q->nevents : KA__CUDA_DEFAULT_EVENTS;
    if ((st = ka__cuda_events_init(nq, slots + KA__CUDA_EVENT_MARGIN)) != KA_OK) goto fail_events;
    q->native = nq;
    return KA_OK;

fail_events:
    ka__cu.cuStreamDestroy(nq->astream);
fail_astream:
    ka__cu.cuMemFree(nq->arec);
fail_arec:
    ka__cu.cuStreamDestroy(nq->stream);
fail_stream:
    ka__free(nq, sizeof *nq);
    return st;
}

/* After a wait: the awaited command and those before it are complete and
 * the host saw it. The record is read on a stream of its own (non-blocking):
 * on the queue's stream the read would also wait for the commands enqueued
 * after the awaited one, and a timed wait would lose its timeout. */
ka_status ka__cuda_assert_take(ka__queue *q, uint32_t *rec) {
    ka__cu_queue *nq = q->native;
    ka_status st = ka__cuda_bind(nq->nd);
    if (st != KA_OK) return st;
    CUresult r = ka__cu.cuMemcpyDtoHAsync(rec, nq->arec, KA__ASSERT_WORDS * 4, nq->astream);
    if (r == CUDA_SUCCESS) r = ka__cu.cuStreamSynchronize(nq->astream);
    if (r == CUDA_SUCCESS && rec[0] &&
        (r = ka__cu.cuMemsetD8Async(nq->arec, 0, KA__ASSERT_WORDS * 4, nq->astream)) == CUDA_SUCCESS)
        r = ka__cu.cuStreamSynchronize(nq->astream);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "reading the assertion record");
}

void ka__cuda_queue_release(ka__queue *q) {
    ka__cu_queue *nq = q->native;
    if (!nq) return;
    if (ka__cuda_bind(nq->nd) == KA_OK) ka__cu.cuStreamSynchronize(nq->stream);
    ka__cuda_events_fini(nq);
    ka__cu.cuMemFree(nq->arec);
    ka__cu.cuStreamDestroy(nq->astream);
    ka__cu.cuStreamDestroy(nq->stream);
    ka__free(nq, sizeof *nq);
    q->native = NULL;
}

ka_status ka__cuda_queue_finish(ka__queue *q) {
    ka__cu_queue *nq = q->native;
    ka_status st = ka__cuda_bind(nq->nd);
    if (st != KA_OK) return st;
    CUresult r = ka__cu.cuStreamSynchronize(nq->stream);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuStreamSynchronize");
}

/* Commands start as soon as they are enqueued. */
ka_status ka__cuda_queue_flush(ka__queue *q) {
    (void)q;
    return KA_OK;
}

void ka__cuda_queue_native(ka__queue *q, ka_native_queue *out) { out->queue = ((ka__cu_queue *)q->native)->stream; }
