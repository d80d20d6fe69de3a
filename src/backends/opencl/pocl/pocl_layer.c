/* The routing layer's table: the OpenCL back-end's, with the hooks that
 * routing changes wrapped. A device opens as a plain OpenCL device; when its
 * context also holds PoCL's `basic` (cl_device.c), it calls through this
 * table from then on (the device_ops hook). Wrapped: the device (its `basic`
 * state), queues (routing's limits and `basic`'s queue), transfers and
 * waits (counted on the main queue, so an inline launch finishes it only
 * when needed), the builds for the alternate target (`basic`), kernels (the
 * twin on `basic` and the routing record) and the launch (pocl_launch.c). */
#include "pocl.h"

ka_status ka__pocl_device_attach(ka__device *d, cl_device_id basic) {
    ka__pocl_dev *rd = ka__calloc(1, sizeof *rd);
    if (!rd) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    rd->basic = basic;
    ka__cl_dev_of(d)->ext = rd;
    return KA_OK;
}

static void device_close(ka__device *d) {
    ka__pocl_dev *rd = ka__pocl_dev_of(d);
    if (rd->guard_q) clReleaseCommandQueue(rd->guard_q);
    ka__free(rd, sizeof *rd);
    ka__cl_device_close(d);
}

static void device_native(ka__device *d, ka_native_device *out) {
    ka__cl_device_native(d, out);
    out->inline_device = ka__pocl_dev_of(d)->basic;
}

/* ---- queues ---- */
static ka_status queue_create(ka__queue *q, const ka_queue_config *cfg) {
    ka_status st = ka__cl_queue_create(q, cfg);
    if (st == KA_OK && (st = ka__pocl_route_open(q, cfg)) != KA_OK) ka__cl_queue_release(q);
    return st;
}

static void queue_release(ka__queue *q) {
    ka__pocl_route_close(q);
    ka__cl_queue_release(q);
}

static ka_status queue_finish(ka__queue *q) {
    ka__pocl_queue *rq = ka__pocl_routed(q);
    if (!rq) return ka__cl_queue_finish(q);
    ka_status st = ka__pocl_finish_main(q, rq);
    if (st != KA_OK) return st;
    KA__CL_CHECK("clFinish(basic)", clFinish(rq->inl));
    return KA_OK;
}

static void queue_native(ka__queue *q, ka_native_queue *out) {
    ka__cl_queue_native(q, out);
    out->inline_queue = ka__pocl_queue_of(q)->inl;
}

static void queue_stats(ka__queue *q, ka_queue_stats *out) {
    ka__pocl_queue *rq = ka__pocl_queue_of(q);
    out->inline_max_items = rq->inline_max;
    out->inline_launches = atomic_load_explicit(&rq->inline_launches, memory_order_relaxed);
}

/* ---- commands on the main queue: counted ---- */
/* The count before a command: once a blocking one returns, those are
 * complete (an in-order queue) and an inline launch need not finish main
 * for them. */
static uint64_t before(const ka__pocl_queue *rq) { return rq ? atomic_load(&rq->main_enqueued) : 0; }

/* After a command that gave st: an asynchronous one counts (once its enqueue
 * has returned: counted before, another thread's ka__pocl_finish_main could
 * take the count, finish before the command is in the queue, and mark it
 * finished), a blocking one covers what was counted before it (n0). */
static ka_status counted(ka__pocl_queue *rq, uint64_t n0, bool block, ka_status st) {
    if (rq && st == KA_OK) {
        if (block) ka__pocl_covered(rq, n0);
        else ka__pocl_counted(rq);
    }
    return st;
}

static ka_status buffer_write(ka__queue *q, ka__buffer *b, size_t off, size_t n, const void *src, void **ev, bool block) {
    ka__pocl_queue *rq = ka__pocl_routed(q);
    uint64_t n0 = before(rq);
    return counted(rq, n0, block, ka__cl_buffer_write(q, b, off, n, src, ev, block));
}

static ka_status buffer_read(ka__queue *q, ka__buffer *b, size_t off, size_t n, void *dst, void **ev, bool block) {
    ka__pocl_queue *rq = ka__pocl_routed(q);
    uint64_t n0 = before(rq);
    return counted(rq, n0, block, ka__cl_buffer_read(q, b, off, n, dst, ev, block));
}

static ka_status buffer_copy(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n, void **ev,
                             bool block) {
    ka__pocl_queue *rq = ka__pocl_routed(q);
    uint64_t n0 = before(rq);
    return counted(rq, n0, block, ka__cl_buffer_copy(q, s, so, d, dof, n, ev, block));
}

static ka_status buffer_fill(ka__queue *q, ka__buffer *b, const void *pat, size_t psz, size_t off, size_t n, void **ev,
                             bool block) {
    ka__pocl_queue *rq = ka__pocl_routed(q);
    uint64_t n0 = before(rq);
    return counted(rq, n0, block, ka__cl_buffer_fill(q, b, pat, psz, off, n, ev, block));
}

/* A map blocks until q's earlier commands are complete. */
static ka_status buffer_map(ka__queue *q, ka__buffer *b, size_t off, size_t n, uint32_t flags, void **ptr, void **token) {
    ka__pocl_queue *rq = ka__pocl_routed(q);
    uint64_t n0 = before(rq);
    return counted(rq, n0, true, ka__cl_buffer_map(q, b, off, n, flags, ptr, token));
}

/* A barrier on main: a later inline launch finishes main, barrier included,
 * before it runs. (The event waited for is never an inline launch's: those
 * have none.) */
static ka_status queue_wait(ka__queue *q, void *ev) {
    return counted(ka__pocl_routed(q), 0, false, ka__cl_queue_wait(q, ev));
}

/* On `basic`: the copy runs in the calling thread, not a round trip through
 * the threaded device's workers. */
static ka_status buffer_guard(ka__buffer *b, void *host, bool write) {
    ka__pocl_dev *rd = ka__pocl_dev_of(b->dev);
    return ka__cl_guard_copy(&rd->guard_q, rd->basic, b, host, write);
}

/* ---- builds: the alternate target is `basic` (ka__build_alt) ---- */
static cl_device_id target(const ka__build *b) {
    const ka__device *d = b->prog->dev;
    return b->target == KA__TARGET_ALT ? ka__pocl_dev_of(d)->basic : ka__cl_dev_of(d)->device;
}

static ka_status build_target(ka__build *b) { return ka__cl_build_target_for(b, target(b)); }

static ka_status compile(ka__build *b, void **binary, size_t *size, void **module) {
    return ka__cl_compile_for(b, target(b), binary, size, module);
}

static ka_status load(ka__build *b, void *binary, size_t size, void **module) {
    return ka__cl_load_for(b, target(b), binary, size, module);
}

/* ---- kernels: the twin on `basic` is made at the first inline launch ---- */
static ka_status kernel_create(ka__kernel *k) {
    ka_status st = ka__cl_kernel_create(k);
    if (st != KA_OK) return st; /* the core calls kernel_release once k->native is set */
    ka__pocl_kern *rk = ka__calloc(1, sizeof *rk);
    if (!rk) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    pthread_mutex_init(&rk->lock, NULL);
    ka__cl_kern *nk = k->bk;
    rk->asserts = nk->asserts;
    nk->ext = rk;
    return KA_OK;
}

static void kernel_release(ka__kernel *k) {
    ka__cl_kern *nk = k->bk;
    ka__pocl_kern *rk = nk ? nk->ext : NULL;
    if (rk) {
        if (rk->inl) clReleaseKernel(rk->inl);
        ka__cl_argcache_free(k, rk->cache);
        pthread_mutex_destroy(&rk->lock);
        ka__free(rk, sizeof *rk);
    }
    ka__cl_kernel_release(k);
}

const ka__backend ka__pocl_backend = {
    .version = KA__BACKEND_VERSION,
    .name = "opencl",
    .kind = KA_BACKEND_OPENCL,
    .flags = KA__BE_SHORT_SYMBOLS,
    .enumerate = ka__cl_enumerate,
    .selects = ka__cl_selects,
    .preferred = ka__cl_preferred,
    .device_open = ka__cl_device_open,
    .device_close = device_close,
    .queue_create = queue_create,
    .queue_release = queue_release,
    .queue_finish = queue_finish,
    .queue_flush = ka__cl_queue_flush,
    .buffer_create = ka__cl_buffer_create,
    .buffer_release = ka__cl_buffer_release,
    .buffer_write = buffer_write,
    .buffer_read = buffer_read,
    .buffer_copy = buffer_copy,
    .buffer_fill = buffer_fill,
    .buffer_wrap = ka__cl_buffer_wrap,
    .buffer_init = ka__cl_buffer_init,
    .buffer_guard = buffer_guard,
    .buffer_map = buffer_map,
    .buffer_unmap = ka__cl_buffer_unmap,
    .queue_wait = queue_wait,
    .prelude = ka__prelude_opencl,
    .source_rewrite = ka__cl_source_rewrite,
    .source_append = ka__cl_source_append,
    .append_file = KA__CL_PROBE_FILE,
    .build_options = ka__cl_build_options,
    .build_target = build_target,
    .compile = compile,
    .load = load,
    .module_release = ka__cl_module_release,
    .kernel_create = kernel_create,
    .kernel_release = kernel_release,
    .launch = ka__pocl_launch,
    .event_query = ka__cl_event_query,
    .event_error = ka__cl_event_error,
    .event_callback = ka__cl_event_callback,
    .event_wait = ka__cl_event_wait,
    .event_release = ka__cl_event_release,
    .event_elapsed = ka__cl_event_elapsed,
    .assert_take = ka__cl_assert_take,
    .device_native = device_native,
    .queue_native = queue_native,
    .queue_stats = queue_stats,
};
