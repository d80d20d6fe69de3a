/* The routing layer's launch, the hot path: a small launch runs on PoCL's
 * `basic` device in this thread, the rest takes the plain launch's steps
 * (cl_args.h) and is counted on the main queue. Routing's set-up and policy:
 * pocl_route.c. The hot path's helpers stay static in this file, so they
 * can be inlined. */
#include "pocl.h"
#include "cl_args.h"

/* A small launch on PoCL's `basic` device: it runs inside clFlush, in this
 * thread. Ordering with the threaded device is kept on the host: pending work
 * there is finished first, and the inline launch is complete on return, so
 * later commands anywhere see its results. For the same reason it needs no
 * native event: a launch that asks for one gets *ev = NULL, which the core
 * binds as an event complete at once (saving PoCL's event, a status query and
 * a release per launch + wait). */
/* Always inlined: its other callers (launch_timed, launch_inline_timed)
 * must not make GCC call it out of line from ka__pocl_launch (+30
 * instructions per launch); and its flags are constants at each call.
 * main_done: the caller found nothing pending on the threaded device.
 * timed: the size rule's timing of the launch (few work-items need not mean
 * little work; adaptive routing times its own), whose verdict is
 * ka__pocl_route_timed's. */
static inline __attribute__((always_inline)) ka_status launch_inline(ka__queue *q, ka__kernel *k, const ka__launch *l,
                                                                      const ka_arg *args, uint32_t nargs, void **ev,
                                                                      ka__pocl_queue *rq, ka__pocl_kern *rk,
                                                                      bool main_done, bool timed) {
    ka_status st;
    if (KA_UNLIKELY(!atomic_load_explicit((void *_Atomic *)&rk->inl, memory_order_acquire)) &&
        (st = ka__pocl_make_inline(k, rk)) != KA_OK)
        return st;
    if (!main_done &&
        atomic_load_explicit(&rq->main_enqueued, memory_order_relaxed) !=
            atomic_load_explicit(&rq->main_finished, memory_order_relaxed) &&
        (st = ka__pocl_finish_main(q, rq)) != KA_OK)
        return st;
    ka__spin_lock(&rq->spin);
    ka__spin_lock(&rk->spin);
    int64_t t0 = timed ? ka__now_ns() : 0;
    st = ka__cl_set_args(k, rk->inl, rk->cache, rk->last_nd, l, args, nargs);
    if (KA_UNLIKELY(rk->asserts) && st == KA_OK) st = ka__cl_set_assert(q, k, rk->inl, &rk->arec);
    if (KA_LIKELY(st == KA_OK)) {
        /* A profiling queue keeps the event: it carries the command's times. */
        cl_event *out = KA_UNLIKELY(q->profiling) ? (cl_event *)ev : NULL;
        if (ev) *ev = NULL;
        cl_int err = clEnqueueNDRangeKernel(rq->inl, rk->inl, l->dims, NULL, l->global, l->local, 0, NULL, out);
        if (KA_UNLIKELY(err != CL_SUCCESS)) st = ka__cl_fail("clEnqueueNDRangeKernel(basic)", err);
        else if (KA_UNLIKELY((err = clFlush(rq->inl)) != CL_SUCCESS)) st = ka__cl_fail("clFlush(basic)", err);
    }
    /* Launches that ran inline. Under the queue's inline lock: a plain
     * increment, no locked instruction. */
    if (KA_LIKELY(st == KA_OK))
        atomic_store_explicit(&rq->inline_launches,
                              atomic_load_explicit(&rq->inline_launches, memory_order_relaxed) + 1, memory_order_relaxed);
    if (timed) ka__pocl_route_timed(k, rk, rq, ka__now_ns() - t0);
    ka__spin_unlock(&rk->spin);
    ka__spin_unlock(&rq->spin);
    return st;
}

/* Out of line: the untimed launch keeps no clock and no flag across its calls. */
static __attribute__((noinline)) ka_status launch_inline_timed(ka__queue *q, ka__kernel *k, const ka__launch *l,
                                                                const ka_arg *args, uint32_t nargs, void **ev,
                                                                ka__pocl_queue *rq, ka__pocl_kern *rk) {
    return launch_inline(q, k, l, args, nargs, ev, rq, rk, false, true);
}

/* On the threaded device: the plain launch, counted. */
static inline __attribute__((always_inline)) ka_status launch_threaded(ka__queue *q, ka__kernel *k, const ka__launch *l,
                                                                        const ka_arg *args, uint32_t nargs, void **ev,
                                                                        ka__pocl_queue *rq) {
    ka_status st = ka__cl_launch_main(q, k, l, args, nargs, ev);
    if (KA_LIKELY(st == KA_OK)) {
        ka__pocl_counted(rq);
        if (!ev && rq->adaptive)
            atomic_store_explicit(&rq->main_pipe, atomic_load_explicit(&rq->main_enqueued, memory_order_relaxed),
                                  memory_order_relaxed);
    }
    return st;
}

/* Adaptive routing's choice for this launch (KA__PATH_*, | KA__ROUTE_TIMED
 * for a measured one). The common case, a launch between two probes, counts
 * the bucket's countdown down (a load and a store: no locked instruction, a
 * lost count only shifts a probe) and reads the chosen path; warm-up,
 * probes and seeding are ka__pocl_route_pick_slow's. */
static inline unsigned route_pick(const ka__pocl_queue *rq, ka__pocl_bucket *b, uint64_t items) {
    uint32_t left = atomic_load_explicit(&b->left, memory_order_relaxed);
    if (KA_LIKELY(left)) {
        atomic_store_explicit(&b->left, left - 1, memory_order_relaxed);
        return atomic_load_explicit(&b->state, memory_order_relaxed) & KA__RB_INLINE;
    }
    return ka__pocl_route_pick_slow(rq, b, items);
}

/* A measured launch: the time of this launch alone, from the host's clock,
 * with work already queued on the threaded device finished first. Inline:
 * the call itself (complete on return). Threaded: enqueue to clFinish, which
 * includes the device's wake-up and completion latency that launches queued
 * back to back do not pay. That latency less the round trip of an empty
 * marker underestimated what a pipeline pays per launch of a small kernel
 * (the host's and the device's threads share the cores), and one size class
 * sent threaded on it takes a whole time loop with it (ka__pocl_launch). */
static __attribute__((noinline)) ka_status launch_timed(ka__queue *q, ka__kernel *k, const ka__launch *l,
                                                         const ka_arg *args, uint32_t nargs, void **ev, ka__pocl_queue *rq,
                                                         ka__pocl_kern *rk, ka__pocl_bucket *b, unsigned path) {
    ka_status st;
    if (atomic_load_explicit(&rq->main_enqueued, memory_order_relaxed) !=
            atomic_load_explicit(&rq->main_finished, memory_order_relaxed) &&
        (st = ka__pocl_finish_main(q, rq)) != KA_OK)
        return st;
    int64_t t0 = ka__now_ns();
    if (path == KA__PATH_INLINE) st = launch_inline(q, k, l, args, nargs, ev, rq, rk, true, false); /* main finished above */
    else st = launch_threaded(q, k, l, args, nargs, ev, rq);
    /* A threaded launch is enqueued (its event made) whatever the finish
     * gives: a failed finish costs the sample, and the wait reports it. */
    if (st == KA_OK && (path == KA__PATH_INLINE || ka__pocl_finish_main(q, rq) == KA_OK))
        ka__pocl_route_sample(b, path, l->items, ka__now_ns() - t0);
    return st;
}

ka_status ka__pocl_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs,
                          void **ev) {
    ka__pocl_queue *rq = ka__pocl_queue_of(q);
    if (l->items <= rq->inline_max && !(l->flags & KA_LAUNCH_ASYNC)) {
        ka__pocl_kern *rk = ((ka__cl_kern *)k->bk)->ext;
        if (!rq->adaptive) {
            if (!atomic_load_explicit(&rk->demoted, memory_order_relaxed)) {
                /* The second inline launch of a kernel and every 8th after
                 * are timed (the first may compile), unless demotion is off. */
                uint32_t n = atomic_load_explicit(&rk->count, memory_order_relaxed);
                atomic_store_explicit(&rk->count, n + 1, memory_order_relaxed);
                if (KA_UNLIKELY((n & 7) == 1) && rq->inline_slow_ns)
                    return launch_inline_timed(q, k, l, args, nargs, ev, rq, rk);
                return launch_inline(q, k, l, args, nargs, ev, rq, rk, false, false);
            }
        } else {
            /* items >= 1 here (an empty range never reaches the back-end) and
             * <= KA__ADAPT_MAX, so the index is below KA__POCL_BUCKETS.
             * Unsigned: no sign extension of the index. */
            ka__pocl_bucket *b = &rk->route[63u - (unsigned)__builtin_clzll(l->items | 1)];
            unsigned how = route_pick(rq, b, l->items);
            if (KA_UNLIKELY(how & KA__ROUTE_TIMED)) return launch_timed(q, k, l, args, nargs, ev, rq, rk, b, how & 1);
            /* Inline only when no launch nobody waits for is pending on the
             * threaded device: finishing it first would serialize what the
             * pipeline overlaps (rq->main_pipe). The common case, nothing
             * pending there at all, tests that alone (main_pipe never passes
             * main_enqueued). */
            if (how == KA__PATH_INLINE) {
                uint64_t done = atomic_load_explicit(&rq->main_finished, memory_order_relaxed);
                bool idle = atomic_load_explicit(&rq->main_enqueued, memory_order_relaxed) == done;
                if (idle || atomic_load_explicit(&rq->main_pipe, memory_order_relaxed) <= done)
                    return launch_inline(q, k, l, args, nargs, ev, rq, rk, idle, false);
            }
        }
    }
    if (KA_UNLIKELY(!rq->inline_max)) return ka__cl_launch_main(q, k, l, args, nargs, ev); /* routing off for q */
    return launch_threaded(q, k, l, args, nargs, ev, rq);
}
