/* PoCL routing: a layer stacked over the OpenCL back-end (README.md here).
 * Its state for each object hangs from the plain object's ext pointer. Not
 * installed. Everything here is ka__pocl_*. */
#ifndef KA_POCL_H
#define KA_POCL_H

#include "cl_internal.h"

/* ka__cl_dev.ext */
typedef struct ka__pocl_dev {
    cl_device_id basic;        /* PoCL's `basic` device, in the device's context */
    cl_command_queue guard_q;  /* KA_DEBUG's guard zones, on basic (the copy runs in the calling thread); made at first use */
} ka__pocl_dev;

/* ka__cl_queue.ext. A queue with routing off (a limit of 0) has inline_max
 * 0 and inl NULL: every hook then passes through to the plain back-end
 * (ka__pocl_routed), its launches and transfers counted nowhere. */
typedef struct ka__pocl_queue {
    cl_command_queue inl;       /* on `basic`: a launch of at most inline_max work-items runs there, in the calling thread */
    uint64_t inline_max;        /* work-items; 0: routing off */
    int64_t inline_slow_ns;     /* a timed inline launch slower than this counts as slow; 0 = never demote */
    /* Adaptive routing (no limit given by the user): each kernel's measured
     * times per size class decide (ka__pocl_route_pick_slow). Off: the size rule. */
    bool adaptive;
    uint64_t seed_items;        /* before any measurement: inline up to this many work-items */
    /* Commands enqueued on main, and how many of them a clFinish has covered:
     * an inline launch finishes main only when they differ. Counters, not a
     * flag, so a command enqueued by another thread during that clFinish is
     * not forgotten; a command counts once its enqueue has returned. */
    _Atomic uint64_t main_enqueued, main_finished;
    /* Adaptive routing: main_enqueued after the last launch enqueued on main
     * without an event (a pipeline nobody waits for yet). While main_finished
     * is behind it, a launch whose size class chose inline goes to main too:
     * inline, it would first finish main and lose the overlap of the host's
     * enqueues with the device's work. */
    _Atomic uint64_t main_pipe;
    _Atomic uint64_t inline_launches;
    /* Inline launches of one queue are serialized: otherwise one thread's
     * clFlush can run another's command, whose launch then returns before its
     * kernel ran; that thread then arms a completion callback while PoCL runs
     * the command, and PoCL 3.1 deadlocks on its event lock (seen in
     * ka_testsuite's concurrent launches). Taken before the kernel's spin. */
    _Atomic uint32_t spin;
} ka__pocl_queue;

/* Adaptive routing's record for one size class of one kernel: launches of
 * 2^b to 2^(b+1)-1 work-items (pocl_route.c). Relaxed atomics, plain loads
 * and stores: a lost update between racing threads only delays a probe or a
 * sample, and the launch path takes no lock for it. */
#define KA__POCL_BUCKETS 23 /* up to 2^23 - 1 work-items: KA__ADAPT_MAX (pocl_route.c) is 2^22 */
typedef struct ka__pocl_bucket {
    /* Launches left before the next one that ka__pocl_route_pick_slow routes
     * (warm-up, probe, refresh): the launch path only counts it down, so a
     * launch between two probes reads no clock and computes no phase. */
    _Atomic uint32_t left;
    _Atomic uint32_t state; /* KA__RB_* bits */
    _Atomic uint32_t next;  /* the index (launches of this class before it) of that launch */
    _Atomic uint32_t ns[2]; /* moving averages of a launch's time, ns: [KA__PATH_THREADED], [KA__PATH_INLINE]; 0 = none yet */
} ka__pocl_bucket;
enum { KA__PATH_THREADED = 0, KA__PATH_INLINE = 1 };
/* ka__pocl_bucket.state: the chosen path, whether seeded, and the log2 of
 * the period (launches) between two probes of the other path, in bits 4-7. */
#define KA__RB_INLINE 1u
#define KA__RB_SEEDED 2u
#define KA__RB_PERIOD(s) (((s) >> 4) & 15u)

/* ka__cl_kern.ext: the kernel's twin on `basic`, what was last set on it,
 * and its routing record. */
typedef struct ka__pocl_kern {
    cl_kernel inl;             /* made at the first inline launch (under lock); NULL before */
    _Atomic uint32_t spin;     /* set-args + enqueue on inl */
    /* Size rule: inline launches, which pick the timed ones (relaxed, no
     * lock: a count lost to a race only shifts one). */
    _Atomic uint32_t count;
    uint32_t slow_streak;      /* consecutive timed inline launches that were slow (under spin) */
    _Atomic uint32_t demoted;  /* too slow inline: always on the threaded device */
    bool asserts;              /* the plain record's, at hand */
    uint64_t last_nd[4];       /* hidden argument last set on inl (under spin) */
    ka__cl_argcache *cache;    /* argument values last set on inl */
    cl_mem arec;               /* ka_assert's record last set on inl (under spin) */
    pthread_mutex_t lock;      /* making inl; off the launch path */
    ka__pocl_bucket route[KA__POCL_BUCKETS]; /* adaptive routing, by log2 of the work-items */
} ka__pocl_kern;

static inline ka__pocl_dev *ka__pocl_dev_of(const ka__device *d) { return ka__cl_dev_of(d)->ext; }
static inline ka__pocl_queue *ka__pocl_queue_of(const ka__queue *q) { return ((ka__cl_queue *)q->native)->ext; }
/* q's routing state, or NULL when routing is off for q. */
static inline ka__pocl_queue *ka__pocl_routed(const ka__queue *q) {
    ka__pocl_queue *rq = ka__pocl_queue_of(q);
    return rq->inl ? rq : NULL;
}

/* A command enqueued on main (asynchronous; once its enqueue returned). */
static inline void ka__pocl_counted(ka__pocl_queue *rq) {
    atomic_fetch_add_explicit(&rq->main_enqueued, 1, memory_order_release);
}

/* Records that the commands counted on main up to n are complete (a finish
 * of main, or a blocking command after them). */
static inline void ka__pocl_covered(ka__pocl_queue *rq, uint64_t n) {
    uint64_t done = atomic_load_explicit(&rq->main_finished, memory_order_relaxed);
    while (done < n && !atomic_compare_exchange_weak(&rq->main_finished, &done, n)) {}
}

/* ---- pocl_launch.c ---- */
ka_status ka__pocl_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs, void **ev);

/* ---- pocl_route.c: routing off the launch path, and its policy ---- */
/* q's routing state (nq->ext): its limits and, unless routing is off for
 * it, its queue on `basic`. */
ka_status ka__pocl_route_open(ka__queue *q, const ka_queue_config *cfg);
void ka__pocl_route_close(ka__queue *q);
/* Finishes q's main queue and records that every command counted before is
 * covered. */
ka_status ka__pocl_finish_main(const ka__queue *q, ka__pocl_queue *rq);
/* First inline launch of k: its program built for `basic`, the kernel made there. */
ka_status ka__pocl_make_inline(ka__kernel *k, ka__pocl_kern *rk);
/* A timed inline launch of k took ns (called under rk->spin): may demote k. */
void ka__pocl_route_timed(const ka__kernel *k, ka__pocl_kern *rk, const ka__pocl_queue *rq, int64_t ns);
/* Adaptive routing: a launch of `items` work-items of a kernel whose record
 * is b, when b's countdown (left) is out: which path, and whether the launch
 * is timed (KA__ROUTE_*); it sets the countdown to the next such launch. The
 * launches between are counted down at the launch (pocl_launch.c). */
enum { KA__ROUTE_TIMED = 2 }; /* | KA__PATH_* */
unsigned ka__pocl_route_pick_slow(const ka__pocl_queue *rq, ka__pocl_bucket *b, uint64_t items);
/* A timed launch on `path` took ns: the record's average, and its choice.
 * Called from pocl_launch.c only, so a test can replace the times it is
 * given by linking with -Wl,--wrap=ka__pocl_route_sample
 * (tests/test_route_calib.c, bench/route_count.c). */
void ka__pocl_route_sample(ka__pocl_bucket *b, unsigned path, uint64_t items, int64_t ns);

#endif
