/* Buffers and transfers. */
#include "event.h"
#include "graph.h"

#include <string.h>

ka__queue *ka__queue_of(ka_queue q);

/* What a new buffer starts as. */
enum make_mode { MAKE_PLAIN, MAKE_ZEROED, MAKE_WITH, MAKE_WRAP };

static ka_status make(ka_device dev, size_t bytes, enum make_mode mode, void *host, ka_buffer *out) {
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "out is NULL");
    out->id = 0;
    ka__device *d = ka__resolve(dev.id, KA__T_DEVICE);
    if (!d) return ka__fail_handle(KA__T_DEVICE, ka__call);
    if (bytes == 0) return ka__fail(KA_ERR_INVALID_ARGUMENT, "size is 0");
    if ((mode == MAKE_WITH || mode == MAKE_WRAP) && !host)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s is NULL", mode == MAKE_WRAP ? "host" : "src");
    if ((mode == MAKE_WITH || mode == MAKE_WRAP) && bytes > UINTPTR_MAX - (uintptr_t)host)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "[%p, +%zu) wraps around the end of the address space", host,
                        bytes);
    if (d->info.max_alloc_size && bytes > d->info.max_alloc_size)
        return ka__fail(KA_ERR_DEVICE_OUT_OF_MEMORY, "%zu bytes exceeds the device's largest allocation (%llu)",
                        bytes, (unsigned long long)d->info.max_alloc_size);
    ka__buffer *b = ka__calloc(1, sizeof *b);
    if (!b) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    b->dev = d;
    b->bytes = bytes;
    b->host = mode == MAKE_WRAP ? host : NULL;
    /* KA_DEBUG: a guard zone past the end; the user's memory (a wrap) has none. */
    b->guard = mode == MAKE_WRAP ? 0 : ka__debug_guard_size(d, bytes);
    ka_status st = mode == MAKE_WRAP ? ka__be_buffer_wrap(b) : ka__be_buffer_create(b);
    if (st != KA_OK) {
        ka__free(b, sizeof *b);
        return st;
    }
    if (mode == MAKE_ZEROED || mode == MAKE_WITH) st = ka__be_buffer_init(b, host);
    if (st == KA_OK && !(b->id = ka__handle_new(KA__T_BUFFER, b)))
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for a handle");
    /* Last: a listed buffer is one the user has. */
    if (st == KA_OK && b->guard && (st = ka__debug_buffer_made(b)) != KA_OK) ka__handle_free(b->id);
    if (st != KA_OK) {
        ka__be_buffer_release(b);
        ka__free(b, sizeof *b);
        return st;
    }
    atomic_fetch_add(&d->live, 1);
    out->id = b->id;
    return KA_OK;
}

ka_status ka_buffer_create(ka_device dev, size_t bytes, ka_buffer *out) {
    KA__ENTRY();
    return make(dev, bytes, MAKE_PLAIN, NULL, out);
}

ka_status ka_buffer_create_zeroed(ka_device dev, size_t bytes, ka_buffer *out) {
    KA__ENTRY();
    return make(dev, bytes, MAKE_ZEROED, NULL, out);
}

ka_status ka_buffer_create_with(ka_device dev, size_t bytes, const void *src, ka_buffer *out) {
    KA__ENTRY();
    /* Only read: the back-end's init takes it as const. */
    return make(dev, bytes, MAKE_WITH, (void *)(uintptr_t)src, out);
}

ka_status ka_buffer_wrap(ka_device dev, void *host, size_t bytes, ka_buffer *out) {
    KA__ENTRY();
    return make(dev, bytes, MAKE_WRAP, host, out);
}

static bool mapped(ka__buffer *b) {
    ka__spin_lock(&b->map_lock);
    bool any = false;
    for (uint32_t i = 0; i < KA_MAX_MAPS; i++) any |= b->maps[i].ptr != NULL;
    ka__spin_unlock(&b->map_lock);
    return any;
}

ka_status ka_buffer_release(ka_buffer buf) {
    KA__ENTRY();
    /* Pinned for the map check: a release racing in another thread cannot
     * free the buffer under it (the retire below waits for the pin). */
    KA__PIN(ka__buffer, b, bs, buf, KA__T_BUFFER);
    bool busy = mapped(b);
    ka__unpin(bs);
    if (busy) return ka__fail(KA_ERR_IN_USE, "the buffer is mapped (ka_buffer_unmap first)");
    /* Transfers on the buffer in other threads return first. */
    if (!ka__handle_retire(buf.id))
        return ka__fail_handle(KA__T_BUFFER, __func__);
    ka__handle_free(b->id);
    /* KA_DEBUG: an overrun not yet reported fails the release, which still
     * releases the buffer. */
    ka_status st = b->guard ? ka__debug_buffer_release(b) : KA_OK;
    ka__be_buffer_release(b);
    atomic_fetch_sub(&b->dev->live, 1);
    ka__free(b, sizeof *b);
    return st;
}

ka_status ka_buffer_size(ka_buffer buf, size_t *bytes) {
    KA__ENTRY();
    if (!bytes) return ka__fail(KA_ERR_INVALID_ARGUMENT, "bytes is NULL");
    KA__PIN(ka__buffer, b, bs, buf, KA__T_BUFFER);
    *bytes = b->bytes;
    ka__unpin(bs);
    return KA_OK;
}

ka_status ka_buffer_get_native(ka_buffer buf, ka_native_buffer *out) {
    KA__ENTRY();
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "out is NULL");
    memset(out, 0, sizeof *out);
    KA__PIN(ka__buffer, b, bs, buf, KA__T_BUFFER);
    ka__be_buffer_native(b, out);
    out->bytes = b->bytes;
    ka__unpin(bs);
    return KA_OK;
}

/* The objects a transfer pins (queue, one or two buffers) for the call, so
 * a release in another thread waits for it; done() unpins them. */
typedef struct pins {
    ka__slot *s[3];
    uint32_t n;
} pins;

static ka_status done(pins *pn, ka_status st) {
    while (pn->n) ka__unpin(pn->s[--pn->n]);
    return st;
}

/* Shared checks of a transfer; pins the queue (when *q is still NULL) and
 * the buffer. */
static ka_status prep(ka_queue queue, ka_buffer buf, size_t off, size_t n, ka__queue **q,
                      ka__buffer **b, pins *pn) {
    if (!*q) {
        if (!(*q = ka__pin(queue.id, KA__T_QUEUE, &pn->s[pn->n])))
            return ka__fail_handle(KA__T_QUEUE, ka__call);
        pn->n++;
    }
    if (!(*b = ka__pin(buf.id, KA__T_BUFFER, &pn->s[pn->n])))
        return ka__fail_handle(KA__T_BUFFER, ka__call);
    pn->n++;
    if ((*b)->dev != (*q)->dev) return ka__fail(KA_ERR_INVALID_ARGUMENT, "buffer and queue are on different devices");
    if (off > (*b)->bytes || n > (*b)->bytes - off)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "range [%zu, %zu) outside the buffer's %zu bytes", off, off + n,
                        (*b)->bytes);
    return KA_OK;
}

/* Event plumbing around one asynchronous command. */
typedef struct pending {
    ka__event *e;
    void *native;
} pending;

/* Host memory in a recorded graph would have to outlive it: transfers to and
 * from the host stay outside graphs. */
static ka_status not_recordable(void) {
    return ka__fail(KA_ERR_INVALID_ARGUMENT,
                    "the queue is recording a graph, which holds copies and fills between buffers but no transfer "
                    "from or to host memory (do it before ka_graph_begin or after ka_graph_end)");
}

static ka_status begin(ka__queue *q, ka_event *ev, pending *p) {
    p->e = NULL;
    p->native = NULL;
    if (ev) {
        ev->id = 0;
        return ka__event_acquire(q, &p->e);
    }
    return KA_OK;
}

static ka_status end(ka_status st, ka_event *ev, pending *p) { return ka__event_publish(p->e, st, p->native, ev); }

/* An empty transfer is a no-op whose event (if any) is already complete.
 * Runs call with the event plumbing, unpins, returns the status. A blocking
 * transfer has waited for the queue's earlier commands: under KA_DEBUG their
 * guard zones are checked then, as at a wait. */
#define KA__TRANSFER_BLOCK(pn, q, ev, call, block)                                                      \
    do {                                                                                                \
        pending p;                                                                                      \
        ka_status st_ = begin(q, ev, &p);                                                               \
        if (st_ == KA_OK) {                                                                             \
            st_ = n ? (call) : KA_OK;                                                                   \
            st_ = end(st_, ev, &p);                                                                     \
        }                                                                                               \
        if ((block) && st_ == KA_OK &&                                                                  \
            KA_UNLIKELY(atomic_load_explicit(&(q)->hooks, memory_order_relaxed) & KA__QH_DEBUG))        \
            st_ = ka__debug_check(q);                                                             \
        return done(pn, st_);                                                                           \
    } while (0)
#define KA__TRANSFER(pn, q, ev, call) KA__TRANSFER_BLOCK(pn, q, ev, call, false)

/* The blocking call and its _async twin share one body; block implies no ev. */
static ka_status write_(ka_queue queue, ka_buffer dst, size_t offset, const void *src, size_t n,
                        ka_event *ev, bool block) {
    if (ev) ev->id = 0; /* a failed call leaves no event to release */
    ka__queue *q = NULL;
    ka__buffer *b = NULL;
    pins pn = {{NULL}, 0};
    ka_status st = prep(queue, dst, offset, n, &q, &b, &pn);
    if (st == KA_OK && !src && n) st = ka__fail(KA_ERR_INVALID_ARGUMENT, "src is NULL");
    if (st == KA_OK && q->rec) st = not_recordable();
    if (st != KA_OK) return done(&pn, st);
    KA__TRANSFER_BLOCK(&pn, q, ev, ka__be_buffer_write(q, b, offset, n, src, ev ? &p.native : NULL, block), block);
}

static ka_status read_(ka_queue queue, void *dst, ka_buffer src, size_t offset, size_t n, ka_event *ev,
                       bool block) {
    if (ev) ev->id = 0;
    ka__queue *q = NULL;
    ka__buffer *b = NULL;
    pins pn = {{NULL}, 0};
    ka_status st = prep(queue, src, offset, n, &q, &b, &pn);
    if (st == KA_OK && !dst && n) st = ka__fail(KA_ERR_INVALID_ARGUMENT, "dst is NULL");
    if (st == KA_OK && q->rec) st = not_recordable();
    if (st != KA_OK) return done(&pn, st);
    KA__TRANSFER_BLOCK(&pn, q, ev, ka__be_buffer_read(q, b, offset, n, dst, ev ? &p.native : NULL, block), block);
}

ka_status ka_buffer_write(ka_queue queue, ka_buffer dst, size_t dst_offset, const void *src, size_t bytes) {
    KA__ENTRY();
    return write_(queue, dst, dst_offset, src, bytes, NULL, true);
}

ka_status ka_buffer_write_async(ka_queue queue, ka_buffer dst, size_t dst_offset, const void *src, size_t bytes,
                                ka_event *ev) {
    KA__ENTRY();
    return write_(queue, dst, dst_offset, src, bytes, ev, false);
}

ka_status ka_buffer_read(ka_queue queue, void *dst, ka_buffer src, size_t src_offset, size_t bytes) {
    KA__ENTRY();
    return read_(queue, dst, src, src_offset, bytes, NULL, true);
}

ka_status ka_buffer_read_async(ka_queue queue, void *dst, ka_buffer src, size_t src_offset, size_t bytes, ka_event *ev) {
    KA__ENTRY();
    return read_(queue, dst, src, src_offset, bytes, ev, false);
}

ka_status ka_buffer_copy(ka_queue queue, ka_buffer dst, size_t dof, ka_buffer src, size_t so, size_t n, ka_event *ev) {
    KA__ENTRY();
    if (ev) ev->id = 0; /* a failed call leaves no event to release */
    ka__queue *q = NULL;
    ka__buffer *s = NULL, *d = NULL;
    pins pn = {{NULL}, 0};
    ka_status st = prep(queue, dst, dof, n, &q, &d, &pn);
    if (st == KA_OK) st = prep(queue, src, so, n, &q, &s, &pn);
    if (st == KA_OK && s == d && so < dof + n && dof < so + n)
        st = ka__fail(KA_ERR_INVALID_ARGUMENT, "source and destination ranges overlap");
    if (st != KA_OK) return done(&pn, st);
    if (q->rec) return done(&pn, ka__graph_add_copy(q, s, so, d, dof, n, ev));
    KA__TRANSFER(&pn, q, ev, ka__be_buffer_copy(q, s, so, d, dof, n, ev ? &p.native : NULL, false));
}

ka_status ka_buffer_fill(ka_queue queue, ka_buffer dst, size_t offset, const void *pattern, size_t psz, size_t n,
                         ka_event *ev) {
    KA__ENTRY();
    if (ev) ev->id = 0; /* a failed call leaves no event to release */
    ka__queue *q = NULL;
    ka__buffer *b = NULL;
    pins pn = {{NULL}, 0};
    ka_status st = prep(queue, dst, offset, n, &q, &b, &pn);
    if (st == KA_OK && !pattern) st = ka__fail(KA_ERR_INVALID_ARGUMENT, "pattern is NULL");
    if (st == KA_OK && (psz == 0 || psz > 128 || (psz & (psz - 1))))
        st = ka__fail(KA_ERR_INVALID_ARGUMENT, "pattern size %zu is not 1, 2, 4, ..., 128", psz);
    if (st == KA_OK && (offset % psz || n % psz))
        st = ka__fail(KA_ERR_INVALID_ARGUMENT, "offset and size must be multiples of the pattern size");
    if (st != KA_OK) return done(&pn, st);
    if (q->rec) return done(&pn, ka__graph_add_fill(q, b, pattern, psz, offset, n, ev));
    KA__TRANSFER(&pn, q, ev, ka__be_buffer_fill(q, b, pattern, psz, offset, n, ev ? &p.native : NULL, false));
}

/* Maps: a record per live map in the buffer (no allocation), so an unmap of a
 * pointer that was not mapped is refused here, not left to the driver. */
ka_status ka_buffer_map(ka_queue queue, ka_buffer buf, size_t offset, size_t n, uint32_t flags, void **ptr) {
    KA__ENTRY();
    if (!ptr) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ptr is NULL");
    *ptr = NULL;
    ka__queue *q = NULL;
    ka__buffer *b = NULL;
    pins pn = {{NULL}, 0};
    ka_status st = prep(queue, buf, offset, n, &q, &b, &pn);
    if (st == KA_OK && n == 0) st = ka__fail(KA_ERR_INVALID_ARGUMENT, "size is 0");
    if (st == KA_OK && (!flags || (flags & ~(KA_MAP_READ | KA_MAP_WRITE))))
        st = ka__fail(KA_ERR_INVALID_ARGUMENT, "flags 0x%x: KA_MAP_READ, KA_MAP_WRITE or both", flags);
    if (st == KA_OK && q->rec) st = not_recordable();
    if (st != KA_OK) return done(&pn, st);
    /* The entry is claimed (ptr set to a placeholder) before the driver's
     * call, which may block: other maps of the buffer go on meanwhile. */
    struct ka__map *m = NULL;
    ka__spin_lock(&b->map_lock);
    for (uint32_t i = 0; i < KA_MAX_MAPS && !m; i++)
        if (!b->maps[i].ptr) {
            m = &b->maps[i];
            m->ptr = m;
        }
    ka__spin_unlock(&b->map_lock);
    if (!m) return done(&pn, ka__fail(KA_ERR_IN_USE, "the buffer has %d maps already (KA_MAX_MAPS)", KA_MAX_MAPS));
    void *p = NULL, *token = NULL;
    st = ka__be_buffer_map(q, b, offset, n, flags, &p, &token);
    ka__spin_lock(&b->map_lock);
    if (st == KA_OK) {
        m->token = token;
        m->off = offset;
        m->n = n;
        m->flags = flags;
        m->ptr = p;
    } else {
        m->ptr = NULL;
    }
    ka__spin_unlock(&b->map_lock);
    if (st == KA_OK) *ptr = p;
    return done(&pn, st);
}

ka_status ka_buffer_unmap(ka_queue queue, ka_buffer buf, void *ptr) {
    KA__ENTRY();
    ka__queue *q = NULL;
    ka__buffer *b = NULL;
    pins pn = {{NULL}, 0};
    ka_status st = prep(queue, buf, 0, 0, &q, &b, &pn);
    if (st == KA_OK && !ptr) st = ka__fail(KA_ERR_INVALID_ARGUMENT, "ptr is NULL");
    if (st == KA_OK && q->rec) st = not_recordable();
    if (st != KA_OK) return done(&pn, st);
    /* Taken out of the table first: a second unmap of ptr is refused. */
    struct ka__map m = {0};
    uint32_t i = 0;
    ka__spin_lock(&b->map_lock);
    while (i < KA_MAX_MAPS && b->maps[i].ptr != ptr) i++;
    if (i < KA_MAX_MAPS) {
        m = b->maps[i];
        b->maps[i].ptr = &b->maps[i]; /* still taken until the driver is done */
    }
    ka__spin_unlock(&b->map_lock);
    if (!m.ptr) return done(&pn, ka__fail(KA_ERR_INVALID_ARGUMENT, "%p is not a live map of the buffer", ptr));
    st = ka__be_buffer_unmap(q, b, &m);
    ka__spin_lock(&b->map_lock);
    b->maps[i].ptr = NULL; /* the map ends even if the driver failed: its detail says why */
    ka__spin_unlock(&b->map_lock);
    return done(&pn, st);
}
