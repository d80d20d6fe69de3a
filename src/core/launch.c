/* ka_launch: validation, work-group choice, padding, then one back-end call.
 * Everything lives on the stack: no allocation, no device query. */
#include "args.h"
#include "event.h"
#include "graph.h"

static inline uint32_t pow2ceil(uint64_t n) {
    uint32_t p = 1;
    while (p < n) p <<= 1;
    return p;
}

static ka_status choose_workgroup(const ka__kernel *k, const ka_range *r, const ka__launch *l, size_t local[3]) {
    const uint32_t *given = r->workgroup;
    uint32_t dims = l->dims;
    bool any = false;
    for (uint32_t d = 0; d < dims; d++) any |= given[d] != 0;
    if (k->key.wg[0]) { /* static */
        for (uint32_t d = 0; d < 3; d++) {
            uint32_t g = d < dims ? given[d] : 0;
            if (any && g != k->key.wg[d] && !(d >= dims && g == 0))
                return ka__fail(KA_ERR_INVALID_WORKGROUP,
                                "kernel '%s' has a %s work-group (%u,%u,%u); the launch asked for (%u,%u,%u)",
                                k->name, k->wg_declared ? "declared (KA_WORKGROUP)" : "static", k->key.wg[0],
                                k->key.wg[1], k->key.wg[2], given[0], given[1], given[2]);
            if (d >= dims && k->key.wg[d] != 1)
                return ka__fail(KA_ERR_INVALID_WORKGROUP, "kernel '%s' has a static %u-D work-group, the range is %u-D",
                                k->name, k->key.wg[2] != 1 ? 3 : 2, dims);
            local[d] = k->key.wg[d];
        }
        return KA_OK;
    }
    if (any) {
        uint64_t prod = 1;
        const ka_device_info *di = &k->prog->dev->info;
        for (uint32_t d = 0; d < 3; d++) {
            uint32_t g = d < dims ? given[d] : 1;
            if (g == 0)
                return ka__fail(KA_ERR_INVALID_WORKGROUP, "workgroup[%u] is 0 (give all of them, or none)", d);
            if (di->max_workgroup[d] && g > di->max_workgroup[d])
                return ka__fail(KA_ERR_INVALID_WORKGROUP, "workgroup[%u] = %u exceeds the device's %u", d, g,
                                di->max_workgroup[d]);
            prod *= g;
            local[d] = g;
        }
        if (prod > k->max_wg)
            return ka__fail(KA_ERR_INVALID_WORKGROUP, "work-group of %llu items exceeds kernel '%s''s limit of %u",
                            (unsigned long long)prod, k->name, k->max_wg);
        return KA_OK;
    }
    if (KA_UNLIKELY(k->local_mem) && !atomic_exchange_explicit(&((ka__kernel *)k)->warned, 1, memory_order_relaxed))
        ka__warn("ka_launch: kernel '%s' has %llu bytes of KA_LOCAL memory and no work-group size: libka chooses the "
                 "launch's, smaller on small ranges; declare KA_WORKGROUP(x, y, z) or pass range.workgroup if the "
                 "arrays assume one", k->name, (unsigned long long)k->local_mem);
    /* Chosen: the kernel's default for this dimensionality, shrunk to the
     * next power of two of a small range so a 7-item launch is not padded to
     * 256 (powers of two bound the local sizes a driver compiles for). */
    const uint32_t *w = k->auto_wg[dims - 1], *dmax = k->prog->dev->info.max_workgroup;
    bool cpu = k->auto_rows;
    /* CPU (auto_rows): dimension 0 takes up to w[0] items; the next ones
     * share what is left of that product (a 16-wide row leaves 16 rows).
     * GPU: dimension 0 takes up to w[0], the next ones what is left of the
     * default's product, so a narrow range (4 x N) still gets a full group. */
    uint32_t room = cpu ? w[0] : w[0] * w[1] * w[2];
    for (uint32_t d = 0; d < 3; d++) {
        uint64_t n = l->nd[d];
        uint32_t cap = cpu || d == 0 ? (w[d] < room ? w[d] : room) : room;
        if (!cpu && dmax[d] && cap > dmax[d]) cap = dmax[d];
        uint32_t p2 = n < cap ? pow2ceil(n) : cap;
        local[d] = p2 < cap ? p2 : cap; /* cap need not be a power of two */
        room /= (uint32_t)local[d];
        if (!room) room = 1;
    }
    /* GPU: dimensions 1 and 2 count at most 65535 groups (CUDA's grid): a
     * tall range takes items from the earlier dimensions' share. */
    for (uint32_t d = 1; !cpu && d < 3; d++)
        while (l->nd[d] > (uint64_t)local[d] * KA__GRID_YZ_MAX && (!dmax[d] || local[d] * 2 <= dmax[d])) {
            uint32_t from = local[0] > 1 ? 0 : d == 2 && local[1] > 1 ? 1 : d;
            if (from == d) break;
            local[from] /= 2;
            local[d] *= 2;
        }
    return KA_OK;
}

static inline bool same_range(const ka_range *a, const ka_range *b) {
    return a->dims == b->dims && a->size[0] == b->size[0] && a->size[1] == b->size[1] && a->size[2] == b->size[2] &&
           a->workgroup[0] == b->workgroup[0] && a->workgroup[1] == b->workgroup[1] && a->workgroup[2] == b->workgroup[2] &&
           a->flags == b->flags;
}

/* Validates the range against the kernel and fills the padded launch; an
 * empty range (a size of 0) gets items = 0: nothing runs. */
static ka_status geometry(const ka__kernel *k, const ka_range *r, ka__launch *lp) {
    ka__launch l;
    ka_status st;
    if (KA_UNLIKELY(r->flags & ~(KA_LAUNCH_ASYNC | KA_LAUNCH_SPREAD)))
        return ka__fail(KA_ERR_INVALID_ARGUMENT,
                        "unknown flags 0x%x in the range (KA_LAUNCH_ASYNC is 0x%x, KA_LAUNCH_SPREAD 0x%x)",
                        r->flags, KA_LAUNCH_ASYNC, KA_LAUNCH_SPREAD);
    l.dims = r->dims;
    l.flags = r->flags;
    l.items = 0;
    bool empty = false;
    for (uint32_t d = 0; d < 3; d++) {
        uint64_t n = d < r->dims ? r->size[d] : 1;
        empty |= n == 0;
        l.nd[d] = n;
    }
    l.nd[3] = r->dims;
    if (KA_UNLIKELY(k->key.nd[0]) && !empty)
        for (uint32_t d = 0; d < 3; d++)
            if (l.nd[d] != k->key.nd[d])
                return ka__fail(KA_ERR_INVALID_RANGE,
                                "kernel '%s' has a static ndrange (%llu,%llu,%llu); the launch asked for (%llu,%llu,%llu)",
                                k->name, (unsigned long long)k->key.nd[0], (unsigned long long)k->key.nd[1],
                                (unsigned long long)k->key.nd[2], (unsigned long long)l.nd[0],
                                (unsigned long long)l.nd[1], (unsigned long long)l.nd[2]);
    if (!empty) {
        st = choose_workgroup(k, r, &l, l.local);
        if (KA_UNLIKELY(st != KA_OK)) return st;
        /* Padded up to whole groups; a range whose padding or whose total of
         * work-items does not fit 64 bits is refused (it would wrap to a
         * small or empty launch). */
        uint64_t total = 1;
        for (uint32_t d = 0; d < 3; d++) {
            uint64_t groups = l.nd[d] / l.local[d] + (l.nd[d] % l.local[d] != 0), padded;
            if (KA_UNLIKELY(__builtin_mul_overflow(groups, (uint64_t)l.local[d], &padded) || padded > SIZE_MAX ||
                            __builtin_mul_overflow(total, padded, &total)))
                return ka__fail(KA_ERR_INVALID_RANGE,
                                "kernel '%s': the range (%llu,%llu,%llu) padded to work-groups of (%zu,%zu,%zu) "
                                "overflows 64 bits (dimension %u)",
                                k->name, (unsigned long long)l.nd[0], (unsigned long long)l.nd[1],
                                (unsigned long long)l.nd[2], l.local[0], l.local[1], l.local[2], d);
            l.global[d] = (size_t)padded;
        }
        l.items = total;
    }
    *lp = l;
    return KA_OK;
}

static inline __attribute__((always_inline)) ka_status launch(ka__queue *q, ka__kernel *k, ka_kernel kernel, const ka_range *r, const ka_arg *args,
                        uint32_t nargs, ka_event *ev, bool debug);

/* KA_DEBUG's launch (a queue with KA__QH_DEBUG): every argument checked in
 * full, a mapped buffer argument warned of, and the buffer arguments marked
 * for the guard-zone check of the next wait (debug.c). */
static ka_status __attribute__((noinline, cold)) launch_debug(ka__queue *q, ka__kernel *k, ka_kernel kernel,
                                                             const ka_range *r, const ka_arg *args, uint32_t nargs,
                                                             ka_event *ev) {
    for (uint32_t i = 0; args && i < nargs && i < k->nargs; i++) {
        if (args[i].kind != KA_ARG_BUFFER) continue;
        ka__buffer *b = ka__resolve(args[i].u.buffer, KA__T_BUFFER);
        if (!b) continue; /* the check's error follows */
        bool mapped = false;
        ka__spin_lock(&b->map_lock);
        for (uint32_t m = 0; m < KA_MAX_MAPS; m++) mapped |= b->maps[m].ptr != NULL;
        ka__spin_unlock(&b->map_lock);
        if (mapped)
            ka__warn("ka_launch: kernel '%s' argument %u ('%s'): buffer 0x%llx is mapped (ka_buffer_map); what the "
                     "kernel and the host see of it is undefined until ka_buffer_unmap",
                     k->name, i, k->sig[i].name, (unsigned long long)b->id);
    }
    return launch(q, k, kernel, r, args, nargs, ev, true);
}

/* A failed launch: no event, and the failure named after the call (the
 * checks and the back-end fail under whatever call was current). Here, not
 * up front, so a launch pays neither a store of its name nor a clear of *ev. */
static __attribute__((cold, noinline)) ka_status launch_failed(ka_status st, ka_event *ev, const char *call) {
    if (ev) ev->id = 0;
    return ka__named(st, call);
}

/* Queue and kernel are pinned for the call: a release of either (or of the
 * kernel's program) in another thread waits for it to return. */
ka_status ka_launch(ka_queue queue, ka_kernel kernel, const ka_range *r, const ka_arg *args, uint32_t nargs,
                    ka_event *ev) {
    ka__slot *qs, *ks;
    ka__queue *q = ka__pin(queue.id, KA__T_QUEUE, &qs);
    if (KA_UNLIKELY(!q)) return launch_failed(ka__fail_handle(KA__T_QUEUE, __func__), ev, __func__);
    ka__kernel *k = ka__pin(kernel.id, KA__T_KERNEL, &ks);
    if (KA_UNLIKELY(!k)) {
        ka__unpin(qs);
        return launch_failed(ka__fail_handle(KA__T_KERNEL, __func__), ev, __func__);
    }
    ka_status st = launch(q, k, kernel, r, args, nargs, ev, false);
    ka__unpin(ks);
    ka__unpin(qs);
    if (KA_UNLIKELY(st != KA_OK)) return launch_failed(st, ev, __func__);
    return KA_OK;
}

static inline __attribute__((always_inline)) ka_status launch(ka__queue *q, ka__kernel *k, ka_kernel kernel, const ka_range *r, const ka_arg *args,
                        uint32_t nargs, ka_event *ev, bool debug) {
    /* The one test KA_DEBUG costs a launch without it: a flag the queue has from its device's open. */
    if (!debug && KA_UNLIKELY(atomic_load_explicit(&q->hooks, memory_order_relaxed) & KA__QH_DEBUG))
        return launch_debug(q, k, kernel, r, args, nargs, ev);
    if (KA_UNLIKELY(!r)) return ka__fail(KA_ERR_INVALID_ARGUMENT, "range is NULL");
    if (KA_UNLIKELY(k->prog->dev != q->dev))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "kernel and queue are on different devices");
    if (KA_UNLIKELY(r->dims < 1 || r->dims > 3))
        return ka__fail(KA_ERR_INVALID_RANGE, "a %u-dimensional ndrange; 1, 2 or 3 dimensions are supported",
                        r->dims);
    void *mem[KA_MAX_ARGS]; /* native buffers by argument (buffer arguments only); k->nargs <= KA_MAX_ARGS */
    void *argp[KA_MAX_ARGS + 3]; /* ka__launch.argp */
    bool plain = true;
    ka_status st = ka__args_check(k, q->dev, args, nargs, mem, argp, &plain, debug);
    if (KA_UNLIKELY(st != KA_OK)) return st;

    /* The geometry of recent launches on this thread, a slot per kernel
     * (direct-mapped): a time loop launches the same ranges again and again,
     * and comparing is cheaper than validating and padding. */
    static _Thread_local __attribute__((tls_model("initial-exec"))) struct {
        uint64_t kernel;
        ka_range r;
        ka__launch l;      /* items == 0: an empty range, nothing to run */
    } recent[8];
    __typeof__(recent[0]) *c = &recent[(uint32_t)kernel.id & 7];
    if (KA_UNLIKELY(c->kernel != kernel.id || !same_range(&c->r, r))) {
        st = geometry(k, r, &c->l); /* leaves c->l alone on failure: c->r still matches it */
        if (KA_UNLIKELY(st != KA_OK)) return st;
        c->kernel = kernel.id;
        c->r = *r;
    }
    /* The back-end reads the cached geometry in place, not a copy: only this
     * thread uses it, and no user code runs in it during the hook (a logger
     * or allocator must not call libka: docs/API.md). */
    ka__launch *l = &c->l;
    l->mem = mem; /* this call's stack: set on every launch */
    l->argp = plain ? argp : NULL;
    if (KA_UNLIKELY(q->rec)) return ka__graph_add_launch(q, k, kernel.id, l, args, nargs, ev); /* ka_graph_begin */

    ka__event *e = NULL;
    if (ev && (st = ka__event_acquire(q, &e)) != KA_OK) return st;
    void *native = NULL;
    if (KA_LIKELY(l->items)) st = ka__be_launch(q, k, l, args, nargs, e ? &native : NULL);
    if (debug && st == KA_OK) ka__debug_note_launch(q, k, args, nargs); /* before the event is the user's */
    return ka__event_publish(e, st, native, ev);
}
