/* Host memory on CUDA: page-locked blocks (cuMemHostAlloc), registered user
 * memory (cuMemHostRegister), buffers over host memory that kernels reach
 * over the bus (the registered memory's device pointer), initial contents,
 * maps, and a stream's wait on another queue's event (cuStreamWaitEvent). */
#include "cuda_internal.h"

enum { KA__CU_REGISTERED = 1u }; /* ka__buffer.be_flags: wrap registered the memory, release unregisters */

ka_status ka__cuda_buffer_wrap(ka__buffer *b) {
    ka__cu_dev *nd = b->dev->native;
    ka_status st = ka__cuda_bind(nd);
    if (st != KA_OK) return st;
    int can_map = 0;
    if (ka__cu.cuDeviceGetAttribute(&can_map, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, nd->dev) != CUDA_SUCCESS || !can_map)
        return ka__fail(KA_ERR_UNSUPPORTED, "the device cannot map host memory (ka_buffer_create_with copies it)");
    /* Memory of ka_host_alloc (cuMemHostAlloc) or ka_host_register is
     * page-locked and mapped already: it has a device pointer, and the wrap
     * leaves it alone (registering cuMemHostAlloc memory again is
     * CUDA_ERROR_INVALID_VALUE, not ..._ALREADY_REGISTERED, on the H200's
     * driver 580). Other memory is registered here, unregistered at release. */
    CUdeviceptr p = 0;
    CUresult r = ka__cu.cuMemHostGetDevicePointer(&p, b->host, 0);
    if (r != CUDA_SUCCESS) {
        r = ka__cu.cuMemHostRegister(b->host, b->bytes, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
        if (r == CUDA_SUCCESS) b->be_flags |= KA__CU_REGISTERED;
        else if (r != CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) return ka__cu_fail(r, "cuMemHostRegister");
        if ((r = ka__cu.cuMemHostGetDevicePointer(&p, b->host, 0)) != CUDA_SUCCESS) {
            if (b->be_flags & KA__CU_REGISTERED) ka__cu.cuMemHostUnregister(b->host);
            b->be_flags = 0;
            return ka__cu_fail(r, "cuMemHostGetDevicePointer");
        }
    }
    b->native = (void *)(uintptr_t)p;
    return KA_OK;
}

void ka__cuda_buffer_unwrap(ka__buffer *b) {
    if ((b->be_flags & KA__CU_REGISTERED) && ka__cuda_bind(b->dev->native) == KA_OK) ka__cu.cuMemHostUnregister(b->host);
    b->native = NULL;
}

/* On the legacy default stream, waited for: no queue of the user's here. */
ka_status ka__cuda_buffer_init(ka__buffer *b, const void *src) {
    ka_status st = ka__cuda_bind(b->dev->native);
    if (st != KA_OK) return st;
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)b->native;
    CUresult r = src ? ka__cu.cuMemcpyHtoDAsync(p, src, b->bytes, 0) : ka__cu.cuMemsetD8Async(p, 0, b->bytes, 0);
    if (r != CUDA_SUCCESS) return ka__cu_fail(r, src ? "cuMemcpyHtoDAsync" : "cuMemsetD8Async");
    if ((r = ka__cu.cuStreamSynchronize(0)) != CUDA_SUCCESS) return ka__cu_fail(r, "cuStreamSynchronize");
    return KA_OK;
}

/* KA_DEBUG's guard zone, on the legacy default stream as buffer_init: after
 * the user's wait the kernels that used the buffer are complete. */
ka_status ka__cuda_buffer_guard(ka__buffer *b, void *host, bool write) {
    ka_status st = ka__cuda_bind(b->dev->native);
    if (st != KA_OK) return st;
    CUdeviceptr zone = (CUdeviceptr)(uintptr_t)b->native + (CUdeviceptr)b->bytes;
    CUresult r = write ? ka__cu.cuMemcpyHtoDAsync(zone, host, b->guard, 0)
                       : ka__cu.cuMemcpyDtoHAsync(host, zone, b->guard, 0);
    if (r != CUDA_SUCCESS) return ka__cu_fail(r, write ? "cuMemcpyHtoDAsync (guard zone)" : "cuMemcpyDtoHAsync (guard zone)");
    if ((r = ka__cu.cuStreamSynchronize(0)) != CUDA_SUCCESS) return ka__cu_fail(r, "cuStreamSynchronize");
    return KA_OK;
}

/* A wrapped buffer maps in place once the stream is idle; device memory
 * through a page-locked copy (token), read in for KA_MAP_READ and written
 * back at unmap for KA_MAP_WRITE. */
ka_status ka__cuda_buffer_map(ka__queue *q, ka__buffer *b, size_t off, size_t n, uint32_t flags, void **ptr, void **token) {
    ka__cu_queue *nq = q->native;
    ka_status st = ka__cuda_bind(nq->nd);
    if (st != KA_OK) return st;
    *token = NULL;
    CUresult r;
    if (b->host) {
        if ((r = ka__cu.cuStreamSynchronize(nq->stream)) != CUDA_SUCCESS) return ka__cu_fail(r, "cuStreamSynchronize");
        *ptr = (char *)b->host + off;
        return KA_OK;
    }
    void *stage = NULL;
    if ((r = ka__cu.cuMemAllocHost(&stage, n)) != CUDA_SUCCESS) return ka__cu_fail(r, "cuMemAllocHost");
    if (flags & KA_MAP_READ) r = ka__cu.cuMemcpyDtoHAsync(stage, (CUdeviceptr)(uintptr_t)b->native + off, n, nq->stream);
    if (r == CUDA_SUCCESS) r = ka__cu.cuStreamSynchronize(nq->stream);
    if (r != CUDA_SUCCESS) {
        ka__cu.cuMemFreeHost(stage);
        return ka__cu_fail(r, "cuMemcpyDtoHAsync");
    }
    *ptr = *token = stage;
    return KA_OK;
}

ka_status ka__cuda_buffer_unmap(ka__queue *q, ka__buffer *b, const struct ka__map *m) {
    ka__cu_queue *nq = q->native;
    ka_status st = ka__cuda_bind(nq->nd);
    if (st != KA_OK) return st;
    if (!m->token) return KA_OK; /* in place: the host's stores are the buffer's */
    CUresult r = CUDA_SUCCESS;
    if (m->flags & KA_MAP_WRITE) {
        r = ka__cu.cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)b->native + m->off, m->token, m->n, nq->stream);
        if (r == CUDA_SUCCESS) r = ka__cu.cuStreamSynchronize(nq->stream);
    }
    ka__cu.cuMemFreeHost(m->token);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuMemcpyHtoDAsync");
}

ka_status ka__cuda_queue_wait(ka__queue *q, void *ev) {
    ka__cu_queue *nq = q->native;
    ka_status st = ka__cuda_bind(nq->nd);
    if (st != KA_OK) return st;
    CUresult r = ka__cu.cuStreamWaitEvent(nq->stream, ((ka__cu_event *)ev)->ev, 0);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuStreamWaitEvent");
}

ka_status ka__cuda_host_alloc(ka__device *d, size_t bytes, void **ptr) {
    ka_status st = ka__cuda_bind(d->native);
    if (st != KA_OK) return st;
    CUresult r = ka__cu.cuMemHostAlloc(ptr, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuMemHostAlloc");
}

void ka__cuda_host_free(ka__device *d, void *ptr) {
    if (ka__cuda_bind(d->native) == KA_OK) ka__cu.cuMemFreeHost(ptr);
}

ka_status ka__cuda_host_register(ka__device *d, void *ptr, size_t bytes) {
    ka_status st = ka__cuda_bind(d->native);
    if (st != KA_OK) return st;
    CUresult r = ka__cu.cuMemHostRegister(ptr, bytes, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuMemHostRegister");
}

void ka__cuda_host_unregister(ka__device *d, void *ptr) {
    if (ka__cuda_bind(d->native) == KA_OK) ka__cu.cuMemHostUnregister(ptr);
}
