/* The OpenCL back-end's own objects and the functions its files share. Not
 * installed. Everything here is ka__cl_*: Khronos owns cl_ and CL_. */
#ifndef KA_CL_INTERNAL_H
#define KA_CL_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include "backend.h"

/* Returns the failure of an OpenCL call as a status (ka__cl_fail). */
#define KA__CL_CHECK(call, expr)                                             \
    do {                                                                     \
        cl_int err_ = (expr);                                                \
        if (KA_UNLIKELY(err_ != CL_SUCCESS)) return ka__cl_fail(call, err_); \
    } while (0)

/* ka__device.native */
typedef struct ka__cl_dev {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    int cl_version;      /* device OpenCL version * 10, e.g. 30 */
    char std_option[24]; /* "-cl-std=CL3.0" */
    char build_options[48]; /* every build's first: std_option -cl-kernel-arg-info */
    bool pocl;           /* on PoCL's platform: builds add the size probes */
    cl_device_id inline_device; /* PoCL's `basic` device in the same context, or NULL */
    cl_command_queue guard_q;   /* KA_DEBUG's guard zones (buffer_guard), made at first use; else NULL */
} ka__cl_dev;

/* ka__queue.native: the device's own queue, and for PoCL a second one on
 * `basic`, where a launch of at most inline_max work-items runs in the
 * calling thread (cl_route.c). */
typedef struct ka__cl_queue {
    cl_command_queue main;
    cl_command_queue inl;       /* NULL: no routing */
    uint64_t inline_max;        /* work-items; 0 = routing off */
    int64_t inline_slow_ns;     /* a timed inline launch slower than this counts as slow; 0 = never demote */
    /* Adaptive routing (no limit given by the user): each kernel's measured
     * times per size class decide (ka__cl_route_pick). Off: the size rule. */
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
     * ka_testsuite's concurrent launches). Taken before the kernel's lock. */
    _Atomic uint32_t inl_spin;
    cl_mem arec;                /* ka_assert's record (KA__ASSERT_WORDS words), zeroed */
    /* Where waits read and clear arec: a queue of its own, so a wait does
     * not also wait for the commands enqueued on main after its event. */
    cl_command_queue aux;
} ka__cl_queue;

/* Argument values last set on a cl_kernel (values persist there): a launch
 * skips clSetKernelArg for an argument that did not change. One per user
 * argument (ka__cl_argcache_new). */
typedef struct ka__cl_argcache {
    uint32_t kind; /* KA_ARG_*, 0 = never set */
    uint32_t size; /* kind and size: laid out as ka_arg's, so set_args compares both in one */
    uint64_t v;
} ka__cl_argcache;

/* Adaptive routing's record for one size class of one kernel: launches of
 * 2^b to 2^(b+1)-1 work-items (cl_route.c). Relaxed atomics, plain loads and
 * stores: a lost update between racing threads only delays a probe or a
 * sample, and the launch path takes no lock for it. */
#define KA__CL_BUCKETS 23 /* up to 2^23 - 1 work-items: KA__ADAPT_MAX (cl_route.c) is 2^22 */
typedef struct ka__cl_bucket {
    /* Launches left before the next one that ka__cl_route_pick_slow routes
     * (warm-up, probe, refresh): the launch path only counts it down, so a
     * launch between two probes reads no clock and computes no phase. */
    _Atomic uint32_t left;
    _Atomic uint32_t state; /* KA__RB_* bits (cl_route.c) */
    _Atomic uint32_t next;  /* the index (launches of this class before it) of that launch */
    _Atomic uint32_t ns[2]; /* moving averages of a launch's time, ns: [KA__PATH_THREADED], [KA__PATH_INLINE]; 0 = none yet */
} ka__cl_bucket;
enum { KA__PATH_THREADED = 0, KA__PATH_INLINE = 1 };
/* ka__cl_bucket.state: the chosen path, whether seeded, and the log2 of the
 * period (launches) between two probes of the other path, in bits 4-7. */
#define KA__RB_INLINE 1u
#define KA__RB_SEEDED 2u
#define KA__RB_PERIOD(s) (((s) >> 4) & 15u)

/* ka__kernel.bk: the argument caches of the main and inline cl_kernels. */
typedef struct ka__cl_kern {
    _Atomic uint32_t spin;     /* set-args + enqueue on the cl_kernel must not interleave */
    uint64_t last_nd[4];       /* hidden argument last set on the cl_kernel (under spin) */
    pthread_mutex_t lock;      /* making inl; off the launch path */
    cl_kernel inl;             /* created on first inline launch */
    uint64_t inl_nd[4];        /* hidden argument last set on inl */
    _Atomic uint32_t inl_spin;
    uint32_t inl_count;        /* inline launches (under inl_spin) */
    uint32_t slow_streak;      /* consecutive timed inline launches that were slow */
    _Atomic uint32_t demoted;  /* too slow inline: always on the threaded device */
    ka__cl_argcache *cache, *inl_cache;
    bool asserts;              /* the program calls ka_assert: two hidden arguments last */
    cl_mem arec, inl_arec;     /* the record last set on the cl_kernel and on inl (under their spins) */
    ka__cl_bucket route[KA__CL_BUCKETS]; /* adaptive routing, by log2 of the work-items */
} ka__cl_kern;

static inline ka__cl_dev *ka__cl_dev_of(const ka__device *d) { return d->native; }
static inline cl_command_queue ka__cl_main_q(const ka__queue *q) { return ((ka__cl_queue *)q->native)->main; }

/* Wraps every enqueue on main: ka__cl_counted(q, async, clEnqueue...(ka__cl_main_q(q), ...)).
 * An asynchronous command counts once its enqueue has returned: counted
 * before, another thread's ka__cl_finish_main could take the count, finish
 * before the command is in the queue, and mark it finished. A blocking one is
 * complete on return, and so is all before it (an in-order queue): not counted. */
static inline cl_int ka__cl_counted(ka__queue *q, bool async, cl_int err) {
    if (KA_LIKELY(err == CL_SUCCESS) && async)
        atomic_fetch_add_explicit(&((ka__cl_queue *)q->native)->main_enqueued, 1, memory_order_release);
    return err;
}

/* Records that the commands counted on main up to n are complete (a finish
 * of main, or a blocking command after them). */
static inline void ka__cl_covered(ka__cl_queue *cq, uint64_t n) {
    uint64_t done = atomic_load_explicit(&cq->main_finished, memory_order_relaxed);
    while (done < n && !atomic_compare_exchange_weak(&cq->main_finished, &done, n)) {}
}

/* ---- cl_errors.c ---- */
const char *ka__cl_error_name(cl_int err);
/* Maps an OpenCL error to a status and records "call: CL_NAME" in the detail. */
ka_status ka__cl_fail(const char *call, cl_int err);

/* ---- cl_device.c ---- */
ka_status ka__cl_enumerate(ka_device_info *out, uint32_t cap, uint32_t *n);
/* Selector words of the OpenCL back-end ("pocl"), and the default device. */
bool ka__cl_selects(const char *sel, const ka_device_info *d);
bool ka__cl_preferred(const ka_device_info *d);
ka_status ka__cl_device_open(ka__device *d, uint32_t index);
void ka__cl_device_close(ka__device *d);
void ka__cl_device_native(ka__device *d, ka_native_device *out);

/* ---- cl_queue.c ---- */
ka_status ka__cl_queue_create(ka__queue *q, const ka_queue_config *cfg);
void ka__cl_queue_release(ka__queue *q);
ka_status ka__cl_queue_finish(ka__queue *q);
ka_status ka__cl_queue_flush(ka__queue *q);
void ka__cl_queue_native(ka__queue *q, ka_native_queue *out);
void ka__cl_queue_stats(ka__queue *q, ka_queue_stats *out);

/* ---- cl_memory.c ---- */
ka_status ka__cl_buffer_create(ka__buffer *b);
void ka__cl_buffer_release(ka__buffer *b);
ka_status ka__cl_buffer_write(ka__queue *q, ka__buffer *b, size_t off, size_t n, const void *src, void **ev, bool block);
ka_status ka__cl_buffer_read(ka__queue *q, ka__buffer *b, size_t off, size_t n, void *dst, void **ev, bool block);
ka_status ka__cl_buffer_copy(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n, void **ev, bool block);
ka_status ka__cl_buffer_fill(ka__queue *q, ka__buffer *b, const void *pat, size_t psz, size_t off, size_t n, void **ev, bool block);

/* ---- cl_hostmem.c ---- */
ka_status ka__cl_buffer_wrap(ka__buffer *b);
ka_status ka__cl_buffer_init(ka__buffer *b, const void *src);
ka_status ka__cl_buffer_guard(ka__buffer *b, void *host, bool write);
ka_status ka__cl_buffer_map(ka__queue *q, ka__buffer *b, size_t off, size_t n, uint32_t flags, void **ptr, void **token);
ka_status ka__cl_buffer_unmap(ka__queue *q, ka__buffer *b, const struct ka__map *m);
ka_status ka__cl_queue_wait(ka__queue *q, void *ev);

/* ---- cl_program.c: the build hooks (src/core/build.c runs them) ---- */
size_t ka__cl_source_rewrite(const ka__program *p, char *out);
size_t ka__cl_source_append(const ka__program *p, char *out);
const char *ka__cl_build_options(const ka__device *d);
ka_status ka__cl_compile(ka__build *b, void **binary, size_t *size, void **module);
void ka__cl_module_release(ka__program *p, void *module, uint32_t target);
/* The file name of the size probes' #line, so a build log that names it is theirs. */
#define KA__CL_PROBE_FILE "libka-size-probes"
/* The cl_device_id a build is for: the opened device, or `basic`. */
static inline cl_device_id ka__cl_target_device(const ka__build *b) {
    const ka__cl_dev *cd = ka__cl_dev_of(b->prog->dev);
    return b->target == KA__TARGET_ALT ? cd->inline_device : cd->device;
}

/* ---- cl_kernel.c ---- */
ka_status ka__cl_kernel_create(ka__kernel *k);
void ka__cl_kernel_release(ka__kernel *k);
/* A zeroed argument cache for k (NULL when out of memory). */
ka__cl_argcache *ka__cl_argcache_new(const ka__kernel *k);

/* ---- cl_launch.c ---- */
ka_status ka__cl_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs, void **ev);

/* ---- cl_route.c: PoCL routing, off the launch path ---- */
/* Sets q's routing limits and, where the device has `basic`, its queue there. */
ka_status ka__cl_route_open(const ka__queue *q, const ka_queue_config *cfg, ka__cl_queue *cq);
/* Finishes main and records that every command counted before is covered. */
ka_status ka__cl_finish_main(ka__cl_queue *cq);
/* First inline launch of k: its program built for `basic`, the kernel made there. */
ka_status ka__cl_make_inline(ka__kernel *k, ka__cl_kern *kk);
/* A timed inline launch of k took ns (under kk->inl_spin): may demote k. */
void ka__cl_route_timed(const ka__kernel *k, ka__cl_kern *kk, const ka__cl_queue *cq, int64_t ns);
/* Adaptive routing: a launch of `items` work-items of a kernel whose record
 * is b, when b's countdown (left) is out: which path, and whether the launch
 * is timed (KA__ROUTE_*); it sets the countdown to the next such launch. The
 * launches between are counted down at the launch (cl_launch.c). */
enum { KA__ROUTE_TIMED = 2 }; /* | KA__PATH_* */
unsigned ka__cl_route_pick_slow(const ka__cl_queue *cq, ka__cl_bucket *b, uint64_t items);
/* A timed launch on `path` took ns: the record's average, and its choice. */
void ka__cl_route_sample(ka__cl_bucket *b, unsigned path, uint64_t items, int64_t ns);
/* Tests only: when set, replaces each measured time (ns) of a timed launch of
 * `items` work-items on `path`, so tests of the policy need no real timing. */
extern int64_t (*_Atomic ka__cl_route_sample_hook)(unsigned path, uint64_t items, int64_t ns);

/* ---- cl_event.c ---- */
int ka__cl_event_query(void *ev, ka_status *st);
const char *ka__cl_event_error(void *ev);
ka_status ka__cl_event_callback(void *ev, ka__native_cb cb, void *ctx);
ka_status ka__cl_event_wait(void *ev);
void ka__cl_event_release(void *ev);
ka_status ka__cl_event_elapsed(void *ev, uint64_t *ns);
ka_status ka__cl_assert_take(ka__queue *q, uint32_t *rec);

/* ---- cl_kcache.c: program binaries for the persistent kernel cache ---- */
/* The target device's name, version and driver (PoCL's `basic` differs from the device opened). */
ka_status ka__cl_build_target(ka__build *b);
/* A program from a binary, built with b->options. */
ka_status ka__cl_load(ka__build *b, void *binary, size_t size, void **module);
/* The binary of prog for dev (ka__alloc'd), or NULL when the driver gives none. */
void *ka__cl_program_binary(cl_program prog, cl_device_id dev, size_t *size);

#endif
