/* Buffers over host memory, initial contents, maps, and waits on another
 * queue's event, on the queue's main command queue. Host memory (ka_host_alloc) is the core's plain aligned memory: a CPU
 * device reads it where it is. */
#include "cl_internal.h"

/* CL_MEM_USE_HOST_PTR: PoCL's CPU devices run kernels on that memory itself
 * when it is aligned (measured: `ka-bench hostmem`, test_hostmem). */
ka_status ka__cl_buffer_wrap(ka__buffer *b) {
    cl_int err;
    cl_mem m = clCreateBuffer(ka__cl_dev_of(b->dev)->context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, b->bytes, b->host,
                              &err);
    if (err != CL_SUCCESS) return ka__cl_fail("clCreateBuffer(CL_MEM_USE_HOST_PTR)", err);
    b->native = m;
    return KA_OK;
}

/* A buffer's creation has no queue of the user's: a short-lived one of the
 * device's context writes or fills it and is finished before return. */
ka_status ka__cl_buffer_init(ka__buffer *b, const void *src) {
    ka__cl_dev *nd = ka__cl_dev_of(b->dev);
    cl_int err;
    cl_command_queue iq = clCreateCommandQueue(nd->context, nd->device, 0, &err);
    if (err != CL_SUCCESS) return ka__cl_fail("clCreateCommandQueue", err);
    static const unsigned char zero = 0;
    if (src) err = clEnqueueWriteBuffer(iq, b->native, CL_TRUE, 0, b->bytes, src, 0, NULL, NULL);
    else err = clEnqueueFillBuffer(iq, b->native, &zero, 1, 0, b->bytes, 0, NULL, NULL);
    ka_status st = err == CL_SUCCESS ? KA_OK : ka__cl_fail(src ? "clEnqueueWriteBuffer" : "clEnqueueFillBuffer", err);
    if (st == KA_OK && (err = clFinish(iq)) != CL_SUCCESS) st = ka__cl_fail("clFinish", err);
    clReleaseCommandQueue(iq);
    return st;
}

/* ka__buffer.be_flags: a map of this wrapped buffer returned the user's own
 * memory, so the driver runs kernels on it in place (PoCL's CPU devices). */
enum { KA__CL_IN_PLACE = 1u };
/* The token of a map that was only a wait (below): unmap has nothing to do. */
static const char in_place_map = 0;

/* Blocking map: complete on return, like every command before it on main
 * (in order). Write-only maps invalidate:
 * the driver need not copy the old contents in. Once a map of a wrapped
 * buffer has shown that the driver uses the user's memory in place, later
 * maps only wait for the queue's earlier commands (a clFinish, cheap when
 * nothing is pending) and unmaps do nothing: map + unmap of the pthread
 * device cost two commands' round trips against one finish (`ka-bench
 * hostmem`, docs/BENCHMARKS.md). */
ka_status ka__cl_buffer_map(ka__queue *q, ka__buffer *b, size_t off, size_t n, uint32_t flags, void **ptr, void **token) {
    cl_command_queue main = ka__cl_main_q(q);
    if (b->host && (__atomic_load_n(&b->be_flags, __ATOMIC_ACQUIRE) & KA__CL_IN_PLACE)) {
        KA__CL_CHECK("clFinish", clFinish(main));
        *ptr = (char *)b->host + off;
        *token = (void *)&in_place_map;
        return KA_OK;
    }
    cl_map_flags f = flags & KA_MAP_READ ? CL_MAP_READ | (flags & KA_MAP_WRITE ? CL_MAP_WRITE : 0)
                                         : CL_MAP_WRITE_INVALIDATE_REGION;
    cl_int err;
    void *p = clEnqueueMapBuffer(main, b->native, CL_TRUE, f, off, n, 0, NULL, NULL, &err);
    if (err != CL_SUCCESS) return ka__cl_fail("clEnqueueMapBuffer", err);
    if (b->host && p == (char *)b->host + off) __atomic_fetch_or(&b->be_flags, KA__CL_IN_PLACE, __ATOMIC_RELEASE);
    *ptr = p;
    *token = NULL;
    return KA_OK;
}

/* Waited for here: the API's unmap returns with the buffer up to date. */
ka_status ka__cl_buffer_unmap(ka__queue *q, ka__buffer *b, const struct ka__map *m) {
    if (m->token == &in_place_map) return KA_OK; /* the host's stores are the buffer's */
    cl_event e;
    KA__CL_CHECK("clEnqueueUnmapMemObject", clEnqueueUnmapMemObject(ka__cl_main_q(q), b->native, m->ptr, 0, NULL, &e));
    cl_int err = clWaitForEvents(1, &e);
    clReleaseEvent(e);
    KA__CL_CHECK("clWaitForEvents", err);
    return KA_OK;
}

/* The event is always of a main queue, on the same device (PoCL routing's
 * inline launches have none): no cross-device wait list, which PoCL 3.1 can
 * hang on. */
ka_status ka__cl_queue_wait(ka__queue *q, void *ev) {
    cl_event e = ev;
    KA__CL_CHECK("clEnqueueBarrierWithWaitList", clEnqueueBarrierWithWaitList(ka__cl_main_q(q), 1, &e, NULL));
    return KA_OK;
}
