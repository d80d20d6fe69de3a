/* PoCL routing (docs/DESIGN.md, "PoCL routing"): a launch of few work-items
 * runs on PoCL's `basic` device in the calling thread (cl_launch.c), the rest
 * on the threaded device. Here: the limits, `basic`'s queue, ordering with
 * the main queue, the kernel made on `basic` at its first inline launch, and
 * the demotion of kernels too slow to run inline. */
#include "cl_internal.h"

#include <errno.h>
#include <stdlib.h>

/* Work-items up to which a PoCL launch runs on `basic`, in the calling thread,
 * unless $KA_INLINE_MAX_ITEMS or the queue says otherwise. Measured with
 * `ka-bench route` (docs/BENCHMARKS.md): below this, `basic`'s launch + wait
 * beats the threaded device's. */
#define KA__INLINE_DEFAULT 262144
/* An inline launch slower than this would have been faster on the threaded
 * device (its launch + wait costs 20-60 us on PoCL, the work then splits over
 * the cores). */
#define KA__INLINE_SLOW_NS 100000

/* A non-negative decimal from the environment, else dflt (a sign, other
 * characters or an overflow also give dflt). */
static uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *e = getenv(name);
    if (!e || *e < '0' || *e > '9') return dflt;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(e, &end, 10);
    return *end || errno ? dflt : (uint64_t)v;
}

static uint64_t inline_limit(const ka_queue_config *cfg) {
    int64_t want = cfg ? cfg->inline_max_items : 0;
    if (want > 0) return (uint64_t)want;
    if (want < 0) return 0;
    return env_u64("KA_INLINE_MAX_ITEMS", KA__INLINE_DEFAULT);
}

ka_status ka__cl_route_open(const ka__queue *q, const ka_queue_config *cfg, ka__cl_queue *cq) {
    ka__cl_dev *cd = ka__cl_dev_of(q->dev);
    cq->inline_max = inline_limit(cfg);
    /* Past 1000 s is as good as never timed out; clamped, not wrapped. */
    uint64_t slow_us = env_u64("KA_INLINE_SLOW_US", KA__INLINE_SLOW_NS / 1000);
    cq->inline_slow_ns = (int64_t)(slow_us > 1000000000u ? 1000000000u : slow_us) * 1000;
    if (cd->inline_device && cq->inline_max) {
        cl_int err;
        cq->inl = clCreateCommandQueue(cd->context, cd->inline_device, q->profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
        if (err != CL_SUCCESS) return ka__cl_fail("clCreateCommandQueue(basic)", err);
    }
    return KA_OK;
}

/* An inline launch calls this only when main_enqueued is ahead of
 * main_finished (ka__cl_counted). */
ka_status ka__cl_finish_main(ka__cl_queue *cq) {
    uint64_t n = atomic_load(&cq->main_enqueued);
    KA__CL_CHECK("clFinish", clFinish(cq->main));
    uint64_t done = atomic_load(&cq->main_finished);
    while (done < n && !atomic_compare_exchange_weak(&cq->main_finished, &done, n)) {}
    return KA_OK;
}

/* Serialized by the kernel's mutex; the program's `basic` build by its own. */
ka_status ka__cl_make_inline(ka__kernel *k, ka__cl_kern *kk) {
    ka__cl_prog *cp = k->var->native;
    ka_status st = KA_OK;
    pthread_mutex_lock(&kk->lock);
    if (kk->inl) goto out;
    if ((st = ka__cl_program_inline(k->prog, cp)) != KA_OK) goto out;
    if (!kk->inl_cache && !(kk->inl_cache = ka__cl_argcache_new(k))) {
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_launch: out of memory");
        goto out;
    }
    cl_int err;
    cl_kernel ck = clCreateKernel(cp->inl, k->name, &err);
    if (err != CL_SUCCESS) {
        st = ka__cl_fail("clCreateKernel(basic)", err);
        goto out;
    }
    atomic_store_explicit((void *_Atomic *)&kk->inl, ck, memory_order_release);
out:
    pthread_mutex_unlock(&kk->lock);
    return st;
}

/* Two timed launches in a row slower than the queue's limit send the kernel
 * to the threaded device for good. */
void ka__cl_route_timed(const ka__kernel *k, ka__cl_kern *kk, const ka__cl_queue *cq, int64_t ns) {
    kk->slow_streak = ns > cq->inline_slow_ns ? kk->slow_streak + 1 : 0;
    if (kk->slow_streak >= 2) {
        atomic_store_explicit(&kk->demoted, 1, memory_order_relaxed);
        ka__log(KA_LOG_INFO, "kernel '%s' runs longer than %lld us inline: launching it on the threaded device", k->name,
                (long long)(cq->inline_slow_ns / 1000));
    }
}
