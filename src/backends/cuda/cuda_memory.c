/* Buffers and transfers. Every command goes on the queue's stream; with ev
 * NULL the call waits for the stream (the API's blocking form), else it
 * records a pooled event.
 *
 * Fill: patterns that repeat every 1, 2 or 4 bytes use cuMemsetD8/16/32.
 * Longer ones (8..128 bytes) write the first tile of up to 4 KiB with one
 * strided cuMemsetD2D32Async per 32-bit word of the pattern (pitch = pattern
 * size, one word wide), then double it with device-to-device copies of the
 * filled prefix: psz/4 + log2(bytes/4 KiB) commands, no kernel, no host
 * staging memory that would have to outlive the call. */
#include "cuda_internal.h"

#include <string.h>

#define DPTR(b, off) ((CUdeviceptr)(uintptr_t)(b)->native + (CUdeviceptr)(off))

ka_status ka__cuda_buffer_create(ka__buffer *b) {
    ka__cu_dev *nd = b->dev->native;
    ka_status st = ka__cuda_bind(nd);
    if (st != KA_OK) return st;
    CUdeviceptr ptr = 0;
    CUresult r = ka__cu.cuMemAlloc(&ptr, b->bytes + b->guard);
    if (r != CUDA_SUCCESS) return ka__fail(ka__cu_status(r), "cuMemAlloc(%zu bytes): %s", b->bytes, ka__cu_name(r));
    b->native = (void *)(uintptr_t)ptr;
    return KA_OK;
}

void ka__cuda_buffer_release(ka__buffer *b) {
    if (b->host) { /* the caller's memory: cuda_hostmem.c */
        ka__cuda_buffer_unwrap(b);
        return;
    }
    if (!b->native) return;
    ka__cu_dev *nd = b->dev->native;
    if (ka__cuda_bind(nd) == KA_OK) ka__cu.cuMemFree((CUdeviceptr)(uintptr_t)b->native);
    b->native = NULL;
}

/* After a command is enqueued: event out, or wait. */
static ka_status finish(ka__cu_queue *nq, ka__cu_event *ne, CUresult r, const char *call, void **ev, bool block) {
    if (ev) return ka__cuda_event_after(ne, r, call, ev);
    if (r != CUDA_SUCCESS) return ka__cu_fail(r, call);
    if (!block) return KA_OK;
    r = ka__cu.cuStreamSynchronize(nq->stream);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuStreamSynchronize");
}

ka_status ka__cuda_buffer_write(ka__queue *q, ka__buffer *b, size_t off, size_t n, const void *src, void **ev, bool block) {
    ka__cu_queue *nq = q->native;
    ka_status st = ka__cuda_bind(nq->nd);
    if (st != KA_OK) return st;
    KA__CU_EVENT_BEGIN(nq, ev, ne);
    return finish(nq, ne, ka__cu.cuMemcpyHtoDAsync(DPTR(b, off), src, n, nq->stream), "cuMemcpyHtoDAsync", ev, block);
}

ka_status ka__cuda_buffer_read(ka__queue *q, ka__buffer *b, size_t off, size_t n, void *dst, void **ev, bool block) {
    ka__cu_queue *nq = q->native;
    ka_status st = ka__cuda_bind(nq->nd);
    if (st != KA_OK) return st;
    KA__CU_EVENT_BEGIN(nq, ev, ne);
    return finish(nq, ne, ka__cu.cuMemcpyDtoHAsync(dst, DPTR(b, off), n, nq->stream), "cuMemcpyDtoHAsync", ev, block);
}

ka_status ka__cuda_buffer_copy(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n,
                               void **ev, bool block) {
    ka__cu_queue *nq = q->native;
    ka_status st = ka__cuda_bind(nq->nd);
    if (st != KA_OK) return st;
    KA__CU_EVENT_BEGIN(nq, ev, ne);
    return finish(nq, ne, ka__cu.cuMemcpyDtoDAsync(DPTR(d, dof), DPTR(s, so), n, nq->stream), "cuMemcpyDtoDAsync", ev, block);
}

size_t ka__cuda_fill_period(const unsigned char *pat, size_t psz) {
    for (size_t per = 1; per <= 4 && per < psz; per *= 2) {
        size_t i = per;
        while (i < psz && pat[i] == pat[i - per]) i++;
        if (i == psz) return per;
    }
    return psz;
}

unsigned int ka__cuda_fill_value(const unsigned char *pat, size_t per) {
    if (per == 1) return pat[0];
    if (per == 2) {
        uint16_t v;
        memcpy(&v, pat, 2);
        return v;
    }
    uint32_t v;
    memcpy(&v, pat, 4);
    return v;
}

ka_status ka__cuda_buffer_fill(ka__queue *q, ka__buffer *b, const void *pat, size_t psz, size_t off, size_t n,
                               void **ev, bool block) {
    ka__cu_queue *nq = q->native;
    ka_status st = ka__cuda_bind(nq->nd);
    if (st != KA_OK) return st;
    KA__CU_EVENT_BEGIN(nq, ev, ne);
    const unsigned char *bytes = pat;
    CUdeviceptr dst = DPTR(b, off);
    size_t per = ka__cuda_fill_period(bytes, psz);
    CUresult r;
    unsigned int v = per <= 4 ? ka__cuda_fill_value(bytes, per) : 0;
    if (per == 1) return finish(nq, ne, ka__cu.cuMemsetD8Async(dst, (unsigned char)v, n, nq->stream), "cuMemsetD8Async", ev, block);
    if (per == 2) return finish(nq, ne, ka__cu.cuMemsetD16Async(dst, (unsigned short)v, n / 2, nq->stream), "cuMemsetD16Async", ev, block);
    if (per == 4) return finish(nq, ne, ka__cu.cuMemsetD32Async(dst, v, n / 4, nq->stream), "cuMemsetD32Async", ev, block);
    /* psz is 8..128 and a power of two: 4096 is a whole number of patterns. */
    size_t tile = n < 4096 ? n : 4096;
    for (size_t w = 0; w < psz / 4; w++) {
        r = ka__cu.cuMemsetD2D32Async(dst + 4 * w, psz, ka__cuda_fill_value(bytes + 4 * w, 4), 1, tile / psz, nq->stream);
        if (r != CUDA_SUCCESS) return finish(nq, ne, r, "cuMemsetD2D32Async", ev, block);
    }
    for (size_t done = tile; done < n;) {
        size_t c = n - done < done ? n - done : done;
        r = ka__cu.cuMemcpyDtoDAsync(dst + done, dst, c, nq->stream);
        if (r != CUDA_SUCCESS) return finish(nq, ne, r, "cuMemcpyDtoDAsync", ev, block);
        done += c;
    }
    return finish(nq, ne, CUDA_SUCCESS, "", ev, block);
}

/* The device pointer is both: what the driver calls the buffer and the
 * address a CUDA-aware MPI (or a kernel of the user's) uses. */
void ka__cuda_buffer_native(ka__buffer *b, ka_native_buffer *out) { out->address = b->native; }
