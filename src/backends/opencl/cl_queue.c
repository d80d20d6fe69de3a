/* Queues: the device's command queue, and PoCL's second one on `basic` made
 * by cl_route.c. */
#include "cl_internal.h"

ka_status ka__cl_queue_create(ka__queue *q, const ka_queue_config *cfg) {
    ka__cl_dev *cd = ka__cl_dev_of(q->dev);
    ka__cl_queue *cq = ka__calloc(1, sizeof *cq);
    if (!cq) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_queue_create: out of memory");
    cl_int err;
    cq->main = clCreateCommandQueue(cd->context, cd->device, q->profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
    if (err != CL_SUCCESS) {
        ka__free(cq, sizeof *cq);
        return ka__cl_fail("clCreateCommandQueue", err);
    }
    /* ka_assert's record: a few zeroed bytes per queue, no command. */
    static const uint32_t zero[KA__ASSERT_WORDS];
    cq->arec = clCreateBuffer(cd->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero, (void *)zero, &err);
    if (err != CL_SUCCESS) {
        clReleaseCommandQueue(cq->main);
        ka__free(cq, sizeof *cq);
        return ka__cl_fail("clCreateBuffer(assertion record)", err);
    }
    cq->aux = clCreateCommandQueue(cd->context, cd->device, 0, &err);
    if (err != CL_SUCCESS) {
        clReleaseMemObject(cq->arec);
        clReleaseCommandQueue(cq->main);
        ka__free(cq, sizeof *cq);
        return ka__cl_fail("clCreateCommandQueue(assertion record)", err);
    }
    ka_status st = ka__cl_route_open(q, cfg, cq);
    if (st != KA_OK) {
        clReleaseCommandQueue(cq->aux);
        clReleaseMemObject(cq->arec);
        clReleaseCommandQueue(cq->main);
        ka__free(cq, sizeof *cq);
        return st;
    }
    q->native = cq;
    return KA_OK;
}

void ka__cl_queue_release(ka__queue *q) {
    ka__cl_queue *cq = q->native;
    clReleaseCommandQueue(cq->main);
    if (cq->inl) clReleaseCommandQueue(cq->inl);
    clReleaseCommandQueue(cq->aux);
    clReleaseMemObject(cq->arec);
    ka__free(cq, sizeof *cq);
}

ka_status ka__cl_queue_finish(ka__queue *q) {
    ka__cl_queue *cq = q->native;
    ka_status st = ka__cl_finish_main(cq);
    if (st != KA_OK) return st;
    if (cq->inl) KA__CL_CHECK("clFinish(basic)", clFinish(cq->inl));
    return KA_OK;
}

ka_status ka__cl_queue_flush(ka__queue *q) {
    KA__CL_CHECK("clFlush", clFlush(ka__cl_main_q(q)));
    return KA_OK;
}

void ka__cl_queue_native(ka__queue *q, ka_native_queue *out) {
    ka__cl_queue *cq = q->native;
    out->queue = cq->main;
    out->inline_queue = cq->inl;
}

void ka__cl_queue_stats(ka__queue *q, ka_queue_stats *out) {
    ka__cl_queue *cq = q->native;
    out->inline_max_items = cq->inl ? cq->inline_max : 0;
    out->inline_launches = atomic_load_explicit(&cq->inline_launches, memory_order_relaxed);
}

/* After a wait: the awaited command and those before it are complete
 * (inline launches on return), and the host saw it, so their writes to the
 * record are visible to a later command of any queue. The read goes on aux:
 * on main it would also wait for every command enqueued after the awaited
 * one, and a timed wait would no longer keep its timeout. A failure that a
 * kernel still running records between this read and the clear is lost
 * (only the first failure between two waits is kept anyway). */
ka_status ka__cl_assert_take(ka__queue *q, uint32_t *rec) {
    ka__cl_queue *cq = q->native;
    static const uint32_t zero[KA__ASSERT_WORDS];
    KA__CL_CHECK("clEnqueueReadBuffer(assertion record)",
                 clEnqueueReadBuffer(cq->aux, cq->arec, CL_TRUE, 0, sizeof zero, rec, 0, NULL, NULL));
    if (rec[0])
        KA__CL_CHECK("clEnqueueWriteBuffer(assertion record)",
                     clEnqueueWriteBuffer(cq->aux, cq->arec, CL_TRUE, 0, sizeof zero, zero, 0, NULL, NULL));
    return KA_OK;
}
