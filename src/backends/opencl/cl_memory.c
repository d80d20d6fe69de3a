/* Buffers and transfers, all on the queue's main command queue. */
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
 * serializes these calls, so making it at first use is not raced). After the
 * user's wait the kernels' writes are visible. */
ka_status ka__cl_guard_copy(cl_command_queue *slot, cl_device_id dev, ka__buffer *b, void *host, bool write) {
    cl_int err;
    if (!*slot) {
        cl_command_queue gq = clCreateCommandQueue(ka__cl_dev_of(b->dev)->context, dev, 0, &err);
        if (err != CL_SUCCESS) return ka__cl_fail("clCreateCommandQueue", err);
        *slot = gq;
    }
    if (write) err = clEnqueueWriteBuffer(*slot, b->native, CL_TRUE, b->bytes, b->guard, host, 0, NULL, NULL);
    else err = clEnqueueReadBuffer(*slot, b->native, CL_TRUE, b->bytes, b->guard, host, 0, NULL, NULL);
    KA__CL_CHECK(write ? "clEnqueueWriteBuffer (KA_DEBUG guard zone)" : "clEnqueueReadBuffer (KA_DEBUG guard zone)", err);
    return KA_OK;
}

ka_status ka__cl_buffer_guard(ka__buffer *b, void *host, bool write) {
    ka__cl_dev *nd = ka__cl_dev_of(b->dev);
    return ka__cl_guard_copy(&nd->guard_q, nd->device, b, host, write);
}

ka_status ka__cl_buffer_write(ka__queue *q, ka__buffer *b, size_t off, size_t n, const void *src, void **ev, bool block) {
    KA__CL_CHECK("clEnqueueWriteBuffer", clEnqueueWriteBuffer(ka__cl_main_q(q), b->native, block ? CL_TRUE : CL_FALSE, off,
                                                              n, src, 0, NULL, (cl_event *)ev));
    return KA_OK;
}

ka_status ka__cl_buffer_read(ka__queue *q, ka__buffer *b, size_t off, size_t n, void *dst, void **ev, bool block) {
    KA__CL_CHECK("clEnqueueReadBuffer", clEnqueueReadBuffer(ka__cl_main_q(q), b->native, block ? CL_TRUE : CL_FALSE, off,
                                                            n, dst, 0, NULL, (cl_event *)ev));
    return KA_OK;
}

/* Copies and fills have no blocking form: when blocking, the command's own
 * event is waited for here. */
static ka_status event_or_wait(cl_event e, void **ev, bool block) {
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
    return KA_OK;
}

ka_status ka__cl_buffer_copy(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n, void **ev,
                             bool block) {
    cl_event e;
    KA__CL_CHECK("clEnqueueCopyBuffer", clEnqueueCopyBuffer(ka__cl_main_q(q), s->native, d->native, so, dof, n, 0, NULL, &e));
    return event_or_wait(e, ev, block);
}

ka_status ka__cl_buffer_fill(ka__queue *q, ka__buffer *b, const void *pat, size_t psz, size_t off, size_t n,
                             void **ev, bool block) {
    cl_event e;
    KA__CL_CHECK("clEnqueueFillBuffer", clEnqueueFillBuffer(ka__cl_main_q(q), b->native, pat, psz, off, n, 0, NULL, &e));
    return event_or_wait(e, ev, block);
}
