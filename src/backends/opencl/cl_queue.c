/* Queues: the device's command queue, ka_assert's record and the queue
 * that reads it. */
#include "cl_internal.h"

ka_status ka__cl_queue_create(ka__queue *q, const ka_queue_config *cfg) {
    (void)cfg; /* nothing in it for the plain back-end (PoCL routing's limit: pocl/) */
    ka__cl_dev *nd = ka__cl_dev_of(q->dev);
    ka_status st;
    cl_int err;
    ka__cl_queue *nq = ka__calloc(1, sizeof *nq);
    if (!nq) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    nq->main = clCreateCommandQueue(nd->context, nd->device, q->profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
    if (err != CL_SUCCESS) {
        st = ka__cl_fail("clCreateCommandQueue", err);
        goto fail_main;
    }
    /* ka_assert's record: a few zeroed bytes per queue, no command. */
    static const uint32_t zero[KA__ASSERT_WORDS];
    nq->arec = clCreateBuffer(nd->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero, (void *)zero, &err);
    if (err != CL_SUCCESS) {
        st = ka__cl_fail("clCreateBuffer(assertion record)", err);
        goto fail_arec;
    }
    nq->aux = clCreateCommandQueue(nd->context, nd->device, 0, &err);
    if (err != CL_SUCCESS) {
        st = ka__cl_fail("clCreateCommandQueue(assertion record)", err);
        goto fail_aux;
    }
    q->native = nq;
    return KA_OK;
fail_aux:
    clReleaseMemObject(nq->arec);
fail_arec:
    clReleaseCommandQueue(nq->main);
fail_main:
    ka__free(nq, sizeof *nq);
    return st;
}

void ka__cl_queue_release(ka__queue *q) {
    ka__cl_queue *nq = q->native;
    clReleaseCommandQueue(nq->main);
    clReleaseCommandQueue(nq->aux);
    clReleaseMemObject(nq->arec);
    ka__free(nq, sizeof *nq);
}

ka_status ka__cl_queue_finish(ka__queue *q) {
    KA__CL_CHECK("clFinish", clFinish(ka__cl_main_q(q)));
    return KA_OK;
}

ka_status ka__cl_queue_flush(ka__queue *q) {
    KA__CL_CHECK("clFlush", clFlush(ka__cl_main_q(q)));
    return KA_OK;
}

void ka__cl_queue_native(ka__queue *q, ka_native_queue *out) { out->queue = ka__cl_main_q(q); }

/* After a wait: the awaited command and those before it are complete, and
 * the host saw it, so their writes to the record are visible to a later
 * command of any queue. The read goes on aux: on main it would also wait
 * for every command enqueued after the awaited one, and a timed wait would
 * no longer keep its timeout. A failure that a kernel still running records
 * between this read and the clear is lost (only the first failure between
 * two waits is kept anyway). */
ka_status ka__cl_assert_take(ka__queue *q, uint32_t *rec) {
    ka__cl_queue *nq = q->native;
    static const uint32_t zero[KA__ASSERT_WORDS];
    KA__CL_CHECK("clEnqueueReadBuffer(assertion record)",
                 clEnqueueReadBuffer(nq->aux, nq->arec, CL_TRUE, 0, sizeof zero, rec, 0, NULL, NULL));
    if (rec[0])
        KA__CL_CHECK("clEnqueueWriteBuffer(assertion record)",
                     clEnqueueWriteBuffer(nq->aux, nq->arec, CL_TRUE, 0, sizeof zero, zero, 0, NULL, NULL));
    return KA_OK;
}
