/* Buffers of the host device: host memory, 64-byte aligned (a cache line;
 * whole vectors for the kernels' loops). A wrapped buffer is the caller's
 * memory itself; a map is the buffer's own bytes. Transfers run in the
 * calling thread after the queue's earlier commands. */
#include "host_internal.h"

#include <string.h>

#define ALIGN 64u

ka_status ka__host_buffer_create(ka__buffer *b) {
    if (b->guard && KA__HOST_GUARD_PAGES) return ka__host_guard_alloc(b); /* KA_DEBUG: inaccessible pages past the end */
    if (b->bytes > SIZE_MAX - ALIGN - b->guard)
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "%zu bytes is too large", b->bytes);
    unsigned char *raw = ka__alloc(b->bytes + b->guard + ALIGN);
    if (!raw) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for %zu bytes", b->bytes);
    /* The offset to the aligned start (1 to ALIGN) sits in the byte before it. */
    unsigned off = ALIGN - (unsigned)((uintptr_t)raw % ALIGN);
    raw[off - 1] = (unsigned char)off;
    b->native = raw + off;
    return KA_OK;
}

void ka__host_buffer_release(ka__buffer *b) {
    if (b->host) return; /* the caller's memory */
    if (ka__host_guard_free(b)) return;
    unsigned char *p = b->native;
    /* A command enqueued before may still use it. */
    ka__host_defer(b->dev->native, KA__HD_MEMORY, p - p[-1], b->bytes + b->guard + ALIGN);
}

/* KA_DEBUG's guard zone: the bytes after the buffer's. */
ka_status ka__host_buffer_guard(ka__buffer *b, void *host, bool write) {
    char *zone = (char *)b->native + b->bytes;
    if (write) memcpy(zone, host, b->guard);
    else memcpy(host, zone, b->guard);
    return KA_OK;
}

void ka__host_buffer_native(ka__buffer *b, ka_native_buffer *out) { out->address = b->native; }

ka_status ka__host_buffer_wrap(ka__buffer *b) {
    b->native = b->host;
    return KA_OK;
}

ka_status ka__host_buffer_init(ka__buffer *b, const void *src) {
    if (src) memcpy(b->native, src, b->bytes);
    else memset(b->native, 0, b->bytes);
    return KA_OK;
}

/* A transfer: after the queue's earlier commands, in this thread, so it is
 * complete on return whether or not the caller asked to block. */
#define TRANSFER(q, ev, body)                            \
    do {                                                 \
        (void)block;                                     \
        ka__host_drain((q)->native);                     \
        int64_t t0_ = (q)->profiling ? ka__now_ns() : 0; \
        body;                                            \
        return ka__host_done_event(q, t0_, KA_OK, ev);   \
    } while (0)

ka_status ka__host_buffer_write(ka__queue *q, ka__buffer *b, size_t off, size_t n, const void *src, void **ev, bool block) {
    TRANSFER(q, ev, memcpy((char *)b->native + off, src, n));
}

ka_status ka__host_buffer_read(ka__queue *q, ka__buffer *b, size_t off, size_t n, void *dst, void **ev, bool block) {
    TRANSFER(q, ev, memcpy(dst, (char *)b->native + off, n));
}

ka_status ka__host_buffer_copy(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n, void **ev, bool block) {
    TRANSFER(q, ev, memmove((char *)d->native + dof, (char *)s->native + so, n));
}

/* The pattern once, then the filled part doubled until n bytes. */
static void fill(char *p, const void *pat, size_t psz, size_t n) {
    if (psz == 1 || n == 0) {
        memset(p, n ? *(const unsigned char *)pat : 0, n);
        return;
    }
    size_t done = psz < n ? psz : n;
    memcpy(p, pat, done);
    while (done < n) {
        size_t c = done < n - done ? done : n - done;
        memcpy(p + done, p, c);
        done += c;
    }
}

ka_status ka__host_buffer_fill(ka__queue *q, ka__buffer *b, const void *pat, size_t psz, size_t off, size_t n, void **ev, bool block) {
    TRANSFER(q, ev, fill((char *)b->native + off, pat, psz, n));
}

ka_status ka__host_buffer_map(ka__queue *q, ka__buffer *b, size_t off, size_t n, uint32_t flags, void **ptr, void **token) {
    (void)n;
    (void)flags;
    ka__host_drain(q->native);
    *ptr = (char *)b->native + off;
    *token = NULL;
    return KA_OK;
}

ka_status ka__host_buffer_unmap(ka__queue *q, ka__buffer *b, const struct ka__map *m) {
    (void)q;
    (void)b;
    (void)m;
    return KA_OK;
}
