/* The launch: the hot path. Arguments are set from the per-kernel cache and
 * the kernel enqueued on the threaded device or, for a small PoCL launch, run
 * in this thread on `basic` (routing's set-up and policy: cl_route.c). The
 * hot path's helpers stay static in this file, so they can be inlined. */
#include "cl_internal.h"

#include <stddef.h>
#include <string.h>

/* Always inlined: called, it cost a launch about 25 instructions of
 * prologue, epilogue and argument passing. */
static inline __attribute__((always_inline)) ka_status set_args(ka__kernel *k, cl_kernel ck, ka__cl_argcache *cache,
                                                                 uint64_t last_nd[4], const ka__launch *l,
                                                                 const ka_arg *args, uint32_t nargs) {
    /* The hidden range argument is set only when it changed: argument values
     * persist on the cl_kernel. */
    if (KA_UNLIKELY((last_nd[0] ^ l->nd[0]) | (last_nd[1] ^ l->nd[1]) | (last_nd[2] ^ l->nd[2]) | (last_nd[3] ^ l->nd[3]))) {
        KA__CL_CHECK("clSetKernelArg(hidden range)", clSetKernelArg(ck, 0, sizeof l->nd, l->nd));
        memcpy(last_nd, l->nd, sizeof l->nd);
    }
    for (uint32_t i = 0; i < nargs; i++) {
        const ka_arg *a = &args[i];
        ka__cl_argcache *c = &cache[i];
        /* An argument as last set (the common case but for the one that
         * changes): kind and size in one compare, then the value. Bytes are
         * never cached (kind 0); a local's value is not its own, so a new one
         * takes the switch, which compares its size alone. */
        uint64_t tag, ctag;
        _Static_assert(offsetof(ka_arg, u) == 8 && offsetof(ka__cl_argcache, v) == 8, "kind and size first");
        memcpy(&tag, a, sizeof tag);
        memcpy(&ctag, c, sizeof ctag);
        uint64_t v = (uint32_t)tag == KA_ARG_BUFFER ? (uint64_t)(uintptr_t)l->mem[i] : a->u.u64;
        if (KA_LIKELY(tag == ctag && v == c->v)) continue;
        cl_int err;
        switch (a->kind) {
        case KA_ARG_BUFFER: /* resolved by the core (v above) */
            err = clSetKernelArg(ck, i + 1, sizeof(cl_mem), &l->mem[i]);
            break;
        case KA_ARG_LOCAL:
            if (c->kind == KA_ARG_LOCAL && c->size == a->size) continue;
            err = clSetKernelArg(ck, i + 1, a->size, NULL);
            break;
        case KA_ARG_BYTES: /* not cached: the bytes live behind a pointer */
            c->kind = 0;
            err = clSetKernelArg(ck, i + 1, a->size, a->u.ptr);
            if (KA_UNLIKELY(err != CL_SUCCESS)) goto fail;
            continue;
        case KA_ARG_INT:
        case KA_ARG_FLOAT:
        case KA_ARG_SCALAR:
            err = clSetKernelArg(ck, i + 1, a->size, &a->u);
            break;
        default: /* reaches here only past the fast check: garbage of exactly an unknown argument's tag */
            c->kind = 0;
            return ka__fail(KA_ERR_ARG_TYPE, "ka_launch: kernel '%s' argument %u ('%s'): unknown argument kind %u",
                            k->name, i, k->sig[i].name, a->kind);
        }
        if (KA_UNLIKELY(err != CL_SUCCESS)) {
        fail:
            c->kind = 0;
            ka_status st = ka__cl_fail("clSetKernelArg", err);
            return ka__fail(st, "ka_launch: kernel '%s' argument %u ('%s'): clSetKernelArg: %s", k->name, i, k->sig[i].name,
                            ka__cl_error_name(err));
        }
        c->v = v;
        c->size = a->size;
        c->kind = a->kind;
    }
    return KA_OK;
}

/* A kernel calling ka_assert: the queue's record and the kernel's handle,
 * its last two arguments, when the record is not the one last set. */
static ka_status __attribute__((noinline)) set_assert(ka__queue *q, const ka__kernel *k, cl_kernel ck, cl_mem *last) {
    ka__cl_queue *cq = q->native;
    if (*last != cq->arec) {
        cl_ulong kid = k->id;
        KA__CL_CHECK("clSetKernelArg(ka_assert record)", clSetKernelArg(ck, k->nargs + 1, sizeof(cl_mem), &cq->arec));
        KA__CL_CHECK("clSetKernelArg(ka_assert kernel)", clSetKernelArg(ck, k->nargs + 2, sizeof kid, &kid));
        *last = cq->arec;
    }
    ka__queue_mark_asserts(q);
    return KA_OK;
}

/* A small launch on PoCL's `basic` device: it runs inside clFlush, in this
 * thread. Ordering with the threaded device is kept on the host: pending work
 * there is finished first, and the inline launch is complete on return, so
 * later commands anywhere see its results. For the same reason it needs no
 * native event: a launch that asks for one gets *ev = NULL, which the core
 * binds as an event complete at once (saving PoCL's event, a status query and
 * a release per launch + wait). */
/* Always inlined: a second caller (launch_timed) must not make GCC call it
 * out of line from ka__cl_launch (+30 instructions per launch); and its
 * flags are constants there. demote: the size rule's timing of inline
 * launches (adaptive routing times its own). main_done: the caller found
 * nothing pending on the threaded device. */
static inline __attribute__((always_inline)) ka_status launch_inline(ka__queue *q, ka__kernel *k, const ka__launch *l,
                                                                      const ka_arg *args, uint32_t nargs, void **ev,
                                                                      bool demote, bool main_done) {
    ka__cl_queue *cq = q->native;
    ka__cl_kern *kk = k->bk;
    ka_status st;
    if (KA_UNLIKELY(!atomic_load_explicit((void *_Atomic *)&kk->inl, memory_order_acquire)) &&
        (st = ka__cl_make_inline(k, kk)) != KA_OK)
        return st;
    if (!main_done &&
        atomic_load_explicit(&cq->main_enqueued, memory_order_relaxed) !=
            atomic_load_explicit(&cq->main_finished, memory_order_relaxed) &&
        (st = ka__cl_finish_main(cq)) != KA_OK)
        return st;
    ka__spin_lock(&cq->inl_spin);
    ka__spin_lock(&kk->inl_spin);
    /* Few work-items need not mean little work: the second inline launch of
     * a kernel and every 8th after are timed (the first may compile); the
     * verdict is ka__cl_route_timed's. */
    bool timed = demote && (kk->inl_count++ & 7) == 1 && cq->inline_slow_ns;
    int64_t t0 = timed ? ka__now_ns() : 0;
    st = set_args(k, kk->inl, kk->inl_cache, kk->inl_nd, l, args, nargs);
    if (KA_UNLIKELY(kk->asserts) && st == KA_OK) st = set_assert(q, k, kk->inl, &kk->inl_arec);
    if (KA_LIKELY(st == KA_OK)) {
        /* A profiling queue keeps the event: it carries the command's times. */
        cl_event *out = KA_UNLIKELY(q->profiling) ? (cl_event *)ev : NULL;
        if (ev) *ev = NULL;
        cl_int err = clEnqueueNDRangeKernel(cq->inl, kk->inl, l->dims, NULL, l->global, l->local, 0, NULL, out);
        if (KA_UNLIKELY(err != CL_SUCCESS)) st = ka__cl_fail("clEnqueueNDRangeKernel(basic)", err);
        else if (KA_UNLIKELY((err = clFlush(cq->inl)) != CL_SUCCESS)) st = ka__cl_fail("clFlush(basic)", err);
    }
    /* Launches that ran inline. Under the queue's inline lock: a plain
     * increment, no locked instruction. */
    if (KA_LIKELY(st == KA_OK))
        atomic_store_explicit(&cq->inline_launches,
                              atomic_load_explicit(&cq->inline_launches, memory_order_relaxed) + 1, memory_order_relaxed);
    if (timed) ka__cl_route_timed(k, kk, cq, ka__now_ns() - t0);
    ka__spin_unlock(&kk->inl_spin);
    ka__spin_unlock(&cq->inl_spin);
    return st;
}

/* On the threaded device. */
static inline __attribute__((always_inline)) ka_status launch_threaded(ka__queue *q, ka__kernel *k, const ka__launch *l,
                                                                        const ka_arg *args, uint32_t nargs, void **ev) {
    ka__cl_kern *kk = k->bk;
    /* clSetKernelArg + enqueue on one cl_kernel must not interleave between
     * threads. */
    ka__spin_lock(&kk->spin);
    ka_status st = set_args(k, k->native, kk->cache, kk->last_nd, l, args, nargs);
    if (KA_UNLIKELY(kk->asserts) && st == KA_OK) st = set_assert(q, k, k->native, &kk->arec);
    if (KA_LIKELY(st == KA_OK)) {
        cl_int err = ka__cl_counted(q, true, clEnqueueNDRangeKernel(ka__cl_main_q(q), k->native, l->dims, NULL, l->global,
                                                                    l->local, 0, NULL, (cl_event *)ev));
        if (KA_UNLIKELY(err != CL_SUCCESS)) st = ka__cl_fail("clEnqueueNDRangeKernel", err);
    }
    ka__spin_unlock(&kk->spin);
    ka__cl_queue *cq = q->native;
    if (!ev && cq->adaptive && KA_LIKELY(st == KA_OK))
        atomic_store_explicit(&cq->main_pipe, atomic_load_explicit(&cq->main_enqueued, memory_order_relaxed),
                              memory_order_relaxed);
    return st;
}

/* Adaptive routing's choice for this launch (KA__PATH_*, | KA__ROUTE_TIMED
 * for a measured one). The common case, a launch between two probes, counts
 * the bucket's countdown down (a load and a store: no locked instruction, a
 * lost count only shifts a probe) and reads the chosen path; warm-up,
 * probes and seeding are ka__cl_route_pick_slow's. */
static inline unsigned route_pick(const ka__cl_queue *cq, ka__cl_bucket *b, uint64_t items) {
    uint32_t left = atomic_load_explicit(&b->left, memory_order_relaxed);
    if (KA_LIKELY(left)) {
        atomic_store_explicit(&b->left, left - 1, memory_order_relaxed);
        return atomic_load_explicit(&b->state, memory_order_relaxed) & KA__RB_INLINE;
    }
    return ka__cl_route_pick_slow(cq, b, items);
}

/* A measured launch: the time of this launch alone, from the host's clock,
 * with work already queued on the threaded device finished first. Inline:
 * the call itself (complete on return). Threaded: enqueue to clFinish, which
 * includes the device's wake-up and completion latency that launches queued
 * back to back do not pay. That latency less the round trip of an empty
 * marker underestimated what a pipeline pays per launch of a small kernel
 * (the host's and the device's threads share the cores), and one size class
 * sent threaded on it takes a whole time loop with it (ka__cl_launch). */
static __attribute__((noinline)) ka_status launch_timed(ka__queue *q, ka__kernel *k, const ka__launch *l,
                                                         const ka_arg *args, uint32_t nargs, void **ev, ka__cl_bucket *b,
                                                         unsigned path) {
    ka__cl_queue *cq = q->native;
    ka_status st;
    if (atomic_load_explicit(&cq->main_enqueued, memory_order_relaxed) !=
            atomic_load_explicit(&cq->main_finished, memory_order_relaxed) &&
        (st = ka__cl_finish_main(cq)) != KA_OK)
        return st;
    int64_t t0 = ka__now_ns();
    if (path == KA__PATH_INLINE) st = launch_inline(q, k, l, args, nargs, ev, false, true); /* main finished above */
    else st = launch_threaded(q, k, l, args, nargs, ev);
    /* A threaded launch is enqueued (its event made) whatever the finish
     * gives: a failed finish costs the sample, and the wait reports it. */
    if (st == KA_OK && (path == KA__PATH_INLINE || ka__cl_finish_main(cq) == KA_OK))
        ka__cl_route_sample(b, path, l->items, ka__now_ns() - t0);
    return st;
}

ka_status ka__cl_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs,
                        void **ev) {
    ka__cl_queue *cq = q->native;
    ka__cl_kern *kk = k->bk;
    if (cq->inl && l->items <= cq->inline_max && !(l->flags & KA_LAUNCH_ASYNC)) {
        if (!cq->adaptive) {
            if (!atomic_load_explicit(&kk->demoted, memory_order_relaxed))
                return launch_inline(q, k, l, args, nargs, ev, true, false);
        } else {
            /* items >= 1 here (an empty range never reaches the back-end) and
             * <= KA__ADAPT_MAX, so the index is below KA__CL_BUCKETS. */
            ka__cl_bucket *b = &kk->route[63 - __builtin_clzll(l->items | 1)];
            unsigned how = route_pick(cq, b, l->items);
            if (KA_UNLIKELY(how & KA__ROUTE_TIMED)) return launch_timed(q, k, l, args, nargs, ev, b, how & 1);
            /* Inline only when no launch nobody waits for is pending on the
             * threaded device: finishing it first would serialize what the
             * pipeline overlaps (cq->main_pipe). The common case, nothing
             * pending there at all, tests that alone (main_pipe never passes
             * main_enqueued). */
            if (how == KA__PATH_INLINE) {
                uint64_t done = atomic_load_explicit(&cq->main_finished, memory_order_relaxed);
                bool idle = atomic_load_explicit(&cq->main_enqueued, memory_order_relaxed) == done;
                if (idle || atomic_load_explicit(&cq->main_pipe, memory_order_relaxed) <= done)
                    return launch_inline(q, k, l, args, nargs, ev, false, idle);
            }
        }
    }
    return launch_threaded(q, k, l, args, nargs, ev);
}
