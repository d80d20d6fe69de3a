/* Buffers and transfers, all on the queue's main command queue (never on
 * `basic`), each counted for routing (ka__cl_counted); a blocking one also
 * covers the commands before it (ka__cl_covered). */
#include "cl_internal.h"

ka_status ka__cl_buffer_create(ka__buffer *b) {
    cl_int err;
    cl_mem m = clCreateBuffer(ka__cl_dev_of(b->dev)->context, CL_MEM_READ_WRITE, b->bytes + b->guard, NULL, &err);
    if (err != CL_SUCCESS) return ka__cl_fail("clCreateBuffer", err);
    b->native = m;
    return KA_OK;
}

void ka__cl_buffer_release(ka__buffer *b) { clReleaseMemObject(b->native); }

/* KA_DEBUG's guard zone, on a queue of its own (the core's dbg_lock
 * serializes these calls, so making it at first use is not raced): on PoCL's
 * `basic` device where routing has it (the copy runs in the calling thread,
 * not a round trip through the threaded device's workers), else on the
 * device. After the user's wait the kernels' writes are visible. */
ka_status ka__cl_buffer_guard(ka__buffer *b, void *host, bool write) {
    ka__cl_dev *cd = ka__cl_dev_of(b->dev);
    cl_int err;
    if (!cd->guard_q) {
        cd->guard_q = clCreateCommandQueue(cd->context, cd->inline_device ? cd->inline_device : cd->device, 0, &err);
        if (err != CL_SUCCESS) {
            cd->guard_q = NULL;
            return ka__cl_fail("clCreateCommandQueue", err);
        }
    }
    if (write) err = clEnqueueWriteBuffer(cd->guard_q, b->native, CL_TRUE, b->bytes, b->guard, host, 0, NULL, NULL);
    else err = clEnqueueReadBuffer(cd->guard_q, b->native, CL_TRUE, b->bytes, b->guard, host, 0, NULL, NULL);
    KA__CL_CHECK(write ? "clEnqueueWriteBuffer (KA_DEBUG guard zone)" : "clEnqueueReadBuffer (KA_DEBUG guard zone)", err);
    return KA_OK;
}

/* main_enqueued before a blocking command: once it returns, those are
 * complete (an in-order queue), and routing need not finish main for them. */
static uint64_t before(ka__queue *q) { return atomic_load(&((ka__cl_queue *)q->native)->main_enqueued); }
static void blocked(ka__queue *q, uint64_t n) { ka__cl_covered(q->native, n); }

ka_status ka__cl_buffer_write(ka__queue *q, ka__buffer *b, size_t off, size_t n, const void *src, void **ev, bool block) {
    uint64_t n0 = before(q);
    KA__CL_CHECK("clEnqueueWriteBuffer",
                 ka__cl_counted(q, !block,
                                clEnqueueWriteBuffer(ka__cl_main_q(q), b->native, block ? CL_TRUE : CL_FALSE, off, n, src, 0,
                                                     NULL, (cl_event *)ev)));
    if (block) blocked(q, n0);
    return KA_OK;
}

ka_status ka__cl_buffer_read(ka__queue *q, ka__buffer *b, size_t off, size_t n, void *dst, void **ev, bool block) {
    uint64_t n0 = before(q);
    KA__CL_CHECK("clEnqueueReadBuffer",
                 ka__cl_counted(q, !block,
                                clEnqueueReadBuffer(ka__cl_main_q(q), b->native, block ? CL_TRUE : CL_FALSE, off, n, dst, 0,
                                                    NULL, (cl_event *)ev)));
    if (block) blocked(q, n0);
    return KA_OK;
}

/* Copies and fills have no blocking form: when blocking, the command's own
 * event is waited for here. */
static ka_status event_or_wait(ka__queue *q, uint64_t n0, cl_event e, void **ev, bool block) {
    if (ev) {
        *ev = e;
        return KA_OK;
    }
    if (!block) {
        clReleaseEvent(e);
        return KA_OK;
    }
    cl_int err = clWaitForEvents(1, &e);
    clReleaseEvent(e);
    KA__CL_CHECK("clWaitForEvents", err);
    blocked(q, n0);
    return KA_OK;
}

ka_status ka__cl_buffer_copy(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n, void **ev,
                             bool block) {
    uint64_t n0 = before(q);
    cl_event e;
    KA__CL_CHECK("clEnqueueCopyBuffer",
                 ka__cl_counted(q, !block,
                                clEnqueueCopyBuffer(ka__cl_main_q(q), s->native, d->native, so, dof, n, 0, NULL, &e)));
    return event_or_wait(q, n0, e, ev, block);
}

ka_status ka__cl_buffer_fill(ka__queue *q, ka__buffer *b, const void *pat, size_t psz, size_t off, size_t n,
                             void **ev, bool block) {
    uint64_t n0 = before(q);
    cl_event e;
    KA__CL_CHECK("clEnqueueFillBuffer",
                 ka__cl_counted(q, !block,
                                clEnqueueFillBuffer(ka__cl_main_q(q), b->native, pat, psz, off, n, 0, NULL, &e)));
    return event_or_wait(q, n0, e, ev, block);
}
