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
    ka__cudev *d = b->dev->native;
    ka_status st = ka__cuda_bind(d);
    if (st != KA_OK) return st;
    CUdeviceptr p = 0;
    CUresult r = ka__cu.cuMemAlloc(&p, b->bytes + b->guard);
    if (r != CUDA_SUCCESS) return ka__fail(ka__cu_status(r), "cuMemAlloc(%zu bytes): %s", b->bytes, ka__cu_name(r));
    b->native = (void *)(uintptr_t)p;
    return KA_OK;
}

void ka__cuda_buffer_release(ka__buffer *b) {
    if (b->host) { /* the caller's memory: cuda_hostmem.c */
        ka__cuda_buffer_unwrap(b);
        return;
    }
    if (!b->native) return;
    ka__cudev *d = b->dev->native;
    if (ka__cuda_bind(d) == KA_OK) ka__cu.cuMemFree((CUdeviceptr)(uintptr_t)b->native);
    b->native = NULL;
}

/* Before a command: the event it will record when one is asked for
 * (popped first, so a profiling queue's start precedes the command). */
#define BEGIN(q, ev, e)                                                                                  \
    ka__cuev *e = NULL;                                                                                  \
    if ((ev) && !(e = ka__cuda_event_pop(q))) return KA_ERR_EVENT_POOL_EXHAUSTED

/* After a command is enqueued: event out, or wait. */
static ka_status finish(ka__cuq *q, ka__cuev *e, CUresult r, const char *call, void **ev, bool block) {
    if (ev) return ka__cuda_event_after(e, r, call, ev);
    if (r != CUDA_SUCCESS) return ka__cu_fail(r, call);
    if (!block) return KA_OK;
    r = ka__cu.cuStreamSynchronize(q->stream);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuStreamSynchronize");
}

ka_status ka__cuda_buffer_write(ka__queue *kq, ka__buffer *b, size_t off, size_t n, const void *src, void **ev, bool block) {
    ka__cuq *q = kq->native;
    ka_status st = ka__cuda_bind(q->d);
    if (st != KA_OK) return st;
    BEGIN(q, ev, e);
    return finish(q, e, ka__cu.cuMemcpyHtoDAsync(DPTR(b, off), src, n, q->stream), "cuMemcpyHtoDAsync", ev, block);
}

ka_status ka__cuda_buffer_read(ka__queue *kq, ka__buffer *b, size_t off, size_t n, void *dst, void **ev, bool block) {
    ka__cuq *q = kq->native;
    ka_status st = ka__cuda_bind(q->d);
    if (st != KA_OK) return st;
    BEGIN(q, ev, e);
    return finish(q, e, ka__cu.cuMemcpyDtoHAsync(dst, DPTR(b, off), n, q->stream), "cuMemcpyDtoHAsync", ev, block);
}

ka_status ka__cuda_buffer_copy(ka__queue *kq, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n,
                               void **ev, bool block) {
    ka__cuq *q = kq->native;
    ka_status st = ka__cuda_bind(q->d);
    if (st != KA_OK) return st;
    BEGIN(q, ev, e);
    return finish(q, e, ka__cu.cuMemcpyDtoDAsync(DPTR(d, dof), DPTR(s, so), n, q->stream), "cuMemcpyDtoDAsync", ev, block);
}

size_t ka__cuda_fill_period(const unsigned char *p, size_t psz) {
    for (size_t per = 1; per <= 4 && per < psz; per *= 2) {
        size_t i = per;
        while (i < psz && p[i] == p[i - per]) i++;
        if (i == psz) return per;
    }
    return psz;
}

unsigned int ka__cuda_fill_value(const unsigned char *p, size_t per) {
    if (per == 1) return p[0];
    if (per == 2) {
        uint16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

ka_status ka__cuda_buffer_fill(ka__queue *kq, ka__buffer *b, const void *pat, size_t psz, size_t off, size_t n,
                               void **ev, bool block) {
    ka__cuq *q = kq->native;
    ka_status st = ka__cuda_bind(q->d);
    if (st != KA_OK) return st;
    BEGIN(q, ev, e);
    const unsigned char *p = pat;
    CUdeviceptr dst = DPTR(b, off);
    size_t per = ka__cuda_fill_period(p, psz);
    CUresult r;
    unsigned int v = per <= 4 ? ka__cuda_fill_value(p, per) : 0;
    if (per == 1) return finish(q, e, ka__cu.cuMemsetD8Async(dst, (unsigned char)v, n, q->stream), "cuMemsetD8Async", ev, block);
    if (per == 2) return finish(q, e, ka__cu.cuMemsetD16Async(dst, (unsigned short)v, n / 2, q->stream), "cuMemsetD16Async", ev, block);
    if (per == 4) return finish(q, e, ka__cu.cuMemsetD32Async(dst, v, n / 4, q->stream), "cuMemsetD32Async", ev, block);
    /* psz is 8..128 and a power of two: 4096 is a whole number of patterns. */
    size_t tile = n < 4096 ? n : 4096;
    for (size_t w = 0; w < psz / 4; w++) {
        r = ka__cu.cuMemsetD2D32Async(dst + 4 * w, psz, ka__cuda_fill_value(p + 4 * w, 4), 1, tile / psz, q->stream);
        if (r != CUDA_SUCCESS) return finish(q, e, r, "cuMemsetD2D32Async", ev, block);
    }
    for (size_t done = tile; done < n;) {
        size_t c = n - done < done ? n - done : done;
        r = ka__cu.cuMemcpyDtoDAsync(dst + done, dst, c, q->stream);
        if (r != CUDA_SUCCESS) return finish(q, e, r, "cuMemcpyDtoDAsync", ev, block);
        done += c;
    }
    return finish(q, e, CUDA_SUCCESS, "", ev, block);
}
