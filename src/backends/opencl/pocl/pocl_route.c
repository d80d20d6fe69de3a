/* PoCL routing (docs/DESIGN.md, "PoCL routing"): a launch of few work-items
 * runs on PoCL's `basic` device in the calling thread (pocl_launch.c), the
 * rest on the threaded device. Here, off the launch path: the limits,
 * `basic`'s queue, ordering with the main queue, the kernel made on `basic`
 * at its first inline launch, the adaptive policy (each kernel's measured
 * times per size class choose the path) and, under a limit the user set, the
 * demotion of kernels too slow to run inline. */
#include "pocl.h"

#include <errno.h>
#include <stdlib.h>

/* The size rule's limit when adaptive routing is off without a limit from
 * the user ($KA_INLINE_SLOW_US=0): on the 2-core CI machine `basic`'s launch
 * + wait beat the threaded device's below this (`ka-bench route`). */
#define KA__INLINE_DEFAULT 262144
/* An inline launch slower than this would have been faster on the threaded
 * device (its launch + wait costs 20-60 us on PoCL, the work then splits over
 * the cores). */
#define KA__INLINE_SLOW_NS 100000
/* Adaptive routing considers `basic` for launches up to this many
 * work-items; past it the threaded device always wins (ka-bench timeloop:
 * a 1024x1024 step is already faster threaded on 2 cores). */
#define KA__ADAPT_MAX (1u << 22)
/* The seed model, used for a size class's first launches only: a threaded
 * launch + wait costs about KA__THREADED_NS more than an inline one
 * (33-64 us against 0.6-0.9 us on PoCL 3.1, ka-bench route), and
 * a simple kernel about 1 ns per work-item on one core; on c cores inline
 * wins while items * (1 - 1/c) ns < KA__THREADED_NS. */
#define KA__THREADED_NS 20000
/* Probes of the other path come every 2^p launches of a size class: p starts
 * at 2, grows by one each time a probe confirms the choice, up to 10 (a probe
 * of the slower path then costs at most its extra time once per 1024
 * launches) or, for launches short enough, up to the p at which 2^p launches
 * on the chosen path take KA__PROBE_SPAN_NS, at most 15, and falls back to 2
 * when the choice flips; never below period_floor's, for paths far apart.
 * A probe of the threaded device costs more than its
 * own time: PoCL's worker threads stay busy for a while after a command, and
 * the inline launches after it share the cores with them (docs/DESIGN.md,
 * "PoCL routing"). */
#define KA__PERIOD_MIN 2u
#define KA__PERIOD_MAX 10u
#define KA__PERIOD_TOP 15u
#define KA__PROBE_SPAN_NS (1u << 26)

/* A non-negative decimal from the environment, else dflt (a sign, other
 * characters or an overflow also give dflt, with a warning: the setting is
 * ignored). */
static uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *e = getenv(name);
    if (!e || !*e) return dflt;
    char *end;
    errno = 0;
    unsigned long long v = *e >= '0' && *e <= '9' ? strtoull(e, &end, 10) : 0;
    if (*e < '0' || *e > '9' || *end || errno) {
        ka__log(KA_LOG_WARN, "%s='%.32s' is not a non-negative decimal number: ignored", name, e);
        return dflt;
    }
    return (uint64_t)v;
}

/* The limit the user gave (the queue's config, else $KA_INLINE_MAX_ITEMS),
 * or UINT64_MAX for none. */
static uint64_t inline_limit(const ka_queue_config *cfg) {
    int64_t want = cfg ? cfg->inline_max_items : 0;
    if (want > 0) return (uint64_t)want;
    if (want < 0) return 0;
    uint64_t env = env_u64("KA_INLINE_MAX_ITEMS", UINT64_MAX);
    return env;
}

ka_status ka__pocl_route_open(ka__queue *q, const ka_queue_config *cfg) {
    uint64_t limit = inline_limit(cfg);
    /* Past 1000 s is as good as never timed out; clamped, not wrapped. */
    uint64_t slow_us = env_u64("KA_INLINE_SLOW_US", KA__INLINE_SLOW_NS / 1000);
    int64_t slow_ns = (int64_t)(slow_us > 1000000000u ? 1000000000u : slow_us) * 1000;
    /* No limit from the user: adaptive, unless KA_INLINE_SLOW_US=0 asks for
     * a path fixed by size alone (callgrind runs and tests that count inline
     * launches), which keeps the former default limit. */
    bool adaptive = limit == UINT64_MAX && slow_ns;
    uint64_t inline_max = adaptive ? KA__ADAPT_MAX : limit == UINT64_MAX ? KA__INLINE_DEFAULT : limit;
    /* Routing off (a limit of 0): a record all the same, with inline_max 0
     * and no queue on `basic`, so the launch needs no test of the pointer. */
    ka__pocl_queue *rq = ka__calloc(1, sizeof *rq);
    if (!rq) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    rq->inline_max = inline_max;
    rq->adaptive = adaptive;
    rq->inline_slow_ns = adaptive ? 0 : slow_ns; /* adaptive: measured per size class instead of demoted */
    if (adaptive) {
        uint32_t c = q->dev->info.compute_units > 1 ? q->dev->info.compute_units : 2;
        rq->seed_items = (uint64_t)KA__THREADED_NS * c / (c - 1);
    }
    cl_int err = CL_SUCCESS;
    if (inline_max)
        rq->inl = clCreateCommandQueue(ka__cl_dev_of(q->dev)->context, ka__pocl_dev_of(q->dev)->basic,
                                       q->profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
    if (err != CL_SUCCESS) {
        ka__free(rq, sizeof *rq);
        return ka__cl_fail("clCreateCommandQueue(basic)", err);
    }
    ((ka__cl_queue *)q->native)->ext = rq;
    return KA_OK;
}

void ka__pocl_route_close(ka__queue *q) {
    ka__pocl_queue *rq = ka__pocl_queue_of(q);
    if (rq->inl) clReleaseCommandQueue(rq->inl);
    ka__free(rq, sizeof *rq);
}

/* An inline launch calls this only when main_enqueued is ahead of
 * main_finished (ka__pocl_counted). */
ka_status ka__pocl_finish_main(const ka__queue *q, ka__pocl_queue *rq) {
    uint64_t n = atomic_load(&rq->main_enqueued);
    KA__CL_CHECK("clFinish", clFinish(ka__cl_main_q(q)));
    ka__pocl_covered(rq, n);
    return KA_OK;
}

/* Serialized by the kernel's mutex; the program's `basic` build by its own. */
ka_status ka__pocl_make_inline(ka__kernel *k, ka__pocl_kern *rk) {
    void *inl;
    cl_int err;
    ka_status st = KA_OK;
    pthread_mutex_lock(&rk->lock);
    if (rk->inl) goto out;
    if ((st = ka__build_alt(k->prog, k->var, &inl)) != KA_OK) goto out; /* the program for `basic` */
    if (!rk->cache && !(rk->cache = ka__cl_argcache_new(k))) {
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for kernel '%s' on PoCL's basic device", k->name);
        goto out;
    }
    cl_kernel ck = clCreateKernel(inl, k->native_name, &err);
    if (err != CL_SUCCESS) {
        st = ka__cl_fail("clCreateKernel(basic)", err);
        goto out;
    }
    atomic_store_explicit((void *_Atomic *)&rk->inl, ck, memory_order_release);
out:
    pthread_mutex_unlock(&rk->lock);
    return st;
}

/* Two timed launches in a row slower than the queue's limit send the kernel
 * to the threaded device for good. */
void ka__pocl_route_timed(const ka__kernel *k, ka__pocl_kern *rk, const ka__pocl_queue *rq, int64_t ns) {
    rk->slow_streak = ns > rq->inline_slow_ns ? rk->slow_streak + 1 : 0;
    if (rk->slow_streak >= 2) {
        atomic_store_explicit(&rk->demoted, 1, memory_order_relaxed);
        ka__log(KA_LOG_INFO, "kernel '%s' runs longer than %lld us inline: launching it on the threaded device", k->name,
                (long long)(rq->inline_slow_ns / 1000));
    }
}

/* The launches of a size class that ka__pocl_route_pick_slow routes: its
 * first four, then those whose index n has (n & mask) <= 1, mask = 2^period
 * - 1 (the probe and the refresh). After the one of index n, the next: b's
 * countdown then holds how many launches come between. */
static void schedule(ka__pocl_bucket *b, uint32_t n, uint32_t s) {
    uint32_t mask = (1u << KA__RB_PERIOD(s)) - 1, next = n < 3 || !(n & mask) ? n + 1 : (n | mask) + 1;
    atomic_store_explicit(&b->next, next, memory_order_relaxed);
    atomic_store_explicit(&b->left, next - n - 1, memory_order_relaxed);
}

/* A size class's first four launches: twice on the seed model's path (the
 * first untimed: it may build the kernel for `basic` or a new local size),
 * then twice on the other; then, every 2^period launches, one timed on the
 * other path (the probe) and one timed on the chosen path (its refresh).
 * Racing threads may lose counts: a probe then comes a little late, or a
 * launch whose turn has passed goes untimed on the chosen path. */
unsigned ka__pocl_route_pick_slow(const ka__pocl_queue *rq, ka__pocl_bucket *b, uint64_t items) {
    uint32_t n = atomic_load_explicit(&b->next, memory_order_relaxed);
    uint32_t s = atomic_load_explicit(&b->state, memory_order_relaxed);
    if (!(s & KA__RB_SEEDED)) {
        s = KA__RB_SEEDED | (items <= rq->seed_items ? KA__RB_INLINE : 0) | KA__PERIOD_MIN << 4;
        atomic_store_explicit(&b->state, s, memory_order_relaxed);
    }
    schedule(b, n, s);
    unsigned chosen = s & KA__RB_INLINE, other = chosen ^ 1;
    if (n < 4) return (n < 2 ? chosen : other) | (n & 1 ? KA__ROUTE_TIMED : 0);
    uint32_t phase = n & ((1u << KA__RB_PERIOD(s)) - 1);
    return phase == 0 ? other | KA__ROUTE_TIMED : phase == 1 ? chosen | KA__ROUTE_TIMED : chosen;
}

/* The shortest period (log2, launches) at which a period's two timed
 * launches, alt ns on the other path and cur ns on the chosen one, cost at
 * most 1/16 of the time between them. A timed launch finishes the queue
 * first, so besides the probe's extra time (alt - cur) each drains the
 * pipeline behind it, about a launch's time (cur) apiece; and a threaded
 * probe among inline launches leaves PoCL's workers busy, which slows the
 * inline launches after it by several times its own round trip (counted as
 * 8 alt). Paths far apart, and long launches, need few samples. */
static uint32_t period_floor(uint32_t cur, uint32_t alt, bool probe_threaded) {
    uint32_t p = KA__PERIOD_MIN;
    uint64_t cost = (alt > cur ? (uint64_t)alt - cur : 0) + 2 * (uint64_t)cur + (probe_threaded ? 8 * (uint64_t)alt : 0);
    while (p < KA__PERIOD_TOP && cost * 16 > (uint64_t)cur << p) p++;
    return p;
}

/* Whether cur ns on the chosen path against alt ns on the other is worth
 * leaving it: a margin of 1/8 keeps two paths of about the same time from
 * flipping back and forth on noise. (A wider margin to leave inline, as a
 * size class on the threaded device takes the launches after it there too,
 * leaned further inline than the threaded sample already does.) */
static bool leaves(uint32_t cur, uint32_t alt) { return (uint64_t)cur * 8 > (uint64_t)alt * 9; }

void ka__pocl_route_sample(ka__pocl_bucket *b, unsigned path, uint64_t items, int64_t ns) {
    (void)items; /* for a test's replacement times (pocl.h) */
    uint32_t x = ns < 1 ? 1 : ns > (int64_t)(UINT32_MAX / 4) ? UINT32_MAX / 4 : (uint32_t)ns;
    uint32_t s = atomic_load_explicit(&b->state, memory_order_relaxed);
    unsigned chosen = s & KA__RB_INLINE;
    uint32_t old = atomic_load_explicit(&b->ns[path], memory_order_relaxed);
    uint32_t other = atomic_load_explicit(&b->ns[path ^ 1], memory_order_relaxed);
    /* The sample says the times may have changed when the chosen path now
     * takes longer than the other's average, or the other path less than the
     * chosen's, by the margin of a flip (leaves): probe often again. Without the
     * margin, two paths of about the same time reset the probe period on
     * every noisy sample, and 6-9 % of launches were timed. */
    bool changed = old && other && (path == chosen ? leaves(x, other) : leaves(other, x));
    /* The average moves half-way to each sample; one sample counts at most 4
     * times the average (a stray compile or preemption). */
    if (old && x > 4 * old) x = 4 * old;
    uint32_t avg = old ? (uint32_t)(((uint64_t)old + x) / 2) : x;
    atomic_store_explicit(&b->ns[path], avg, memory_order_relaxed);
    if (!other) return;
    uint32_t cur = path == chosen ? avg : other, alt = path == chosen ? other : avg, period = KA__RB_PERIOD(s);
    /* After a flip the inline path is chosen when it was not (chosen ^ 1), so the probe is threaded. */
    uint32_t floor_now = period_floor(cur, alt, chosen), floor_flip = period_floor(alt, cur, !chosen);
    if (leaves(cur, alt)) s = KA__RB_SEEDED | (chosen ^ 1) | floor_flip << 4;
    else if (changed) s = (s & ~(15u << 4)) | floor_now << 4;
    else if (period < floor_now) s = (s & ~(15u << 4)) | floor_now << 4;
    else if (path != chosen && (period < KA__PERIOD_MAX || (period < KA__PERIOD_TOP && (uint64_t)cur << period < KA__PROBE_SPAN_NS)))
        s = (s & ~(15u << 4)) | (period + 1) << 4;
    else return;
    atomic_store_explicit(&b->state, s, memory_order_relaxed);
    /* The period changed: the next probe by the new one, counted from this
     * launch (the one before next, less the launches counted down since). */
    uint32_t left = atomic_load_explicit(&b->left, memory_order_relaxed);
    schedule(b, atomic_load_explicit(&b->next, memory_order_relaxed) - left - 1, s);
}
