/* Core types shared by the core and the back-ends. Not installed. */
#ifndef KA_INTERNAL_H
#define KA_INTERNAL_H

#include "ka.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdarg.h>

#if defined(__GNUC__)
#define KA_LIKELY(x) __builtin_expect(!!(x), 1)
#define KA_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define KA_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define KA_HIDDEN __attribute__((visibility("hidden")))
#else
#define KA_LIKELY(x) (x)
#define KA_UNLIKELY(x) (x)
#define KA_PRINTF(a, b)
#define KA_HIDDEN
#endif

/* ---- errors (error.c) -------------------------------------------------- */
/* The public call this thread is in, for the detail's "<call>: " prefix.
 * Initial-exec: a store is one instruction past a GOT load, no
 * __tls_get_addr. */
extern _Thread_local const char *ka__call KA_HIDDEN __attribute__((tls_model("initial-exec")));
/* First statement of every public ka_status function: names the call, so
 * helpers fail with what went wrong and the prefix cannot be mistyped. The
 * hot entries (launch, waits, release, finish) name themselves on their
 * failure branches instead: KA__FAILED. */
#define KA__ENTRY() ((void)(ka__call = __func__))
/* Records "<call>: <message>" as the per-thread detail and returns s, so
 * `return ka__fail(...)`. Helpers write what went wrong, not a call's name. */
ka_status ka__fail(ka_status s, const char *fmt, ...) KA_PRINTF(2, 3);
/* Names the failure s being returned as call's (the detail's prefix is
 * rewritten; with no detail, the status's text) and makes call the current
 * call again. Cold; for failure branches only. */
ka_status ka__named(ka_status s, const char *call);
/* What a hot entry returns: st, its failure named after the calling function
 * whatever the helper that failed saw as the current call. */
#define KA__FAILED(st) (KA_UNLIKELY((st) != KA_OK) ? ka__named((st), __func__) : (st))
/* Fails call with KA_ERR_INVALID_HANDLE: "invalid or released <type>" (events:
 * "invalid, released or stale event"). Names the call itself: a hot entry's
 * pin comes before anything records it. */
ka_status ka__fail_handle(int type, const char *call);
/* The current detail without its "<call>: " prefix (to quote in another). */
const char *ka__detail_message(void);
/* Appends text (e.g. a build log) to the current detail, truncating. */
void ka__append_detail(const char *text);
/* To the logger; with none, silent, but for KA_LOG_WARN and KA_LOG_ERROR
 * under KA_DEBUG: stderr, "libka: " first (debug.c). */
void ka__log(ka_log_level lvl, const char *fmt, ...) KA_PRINTF(2, 3);
/* Case-insensitive substring test (device selectors); false for an empty needle. */
bool ka__icontains(const char *hay, const char *needle);

/* ---- allocation (alloc.c): every libka allocation goes through these ---- */
void *ka__alloc(size_t size);
void *ka__calloc(size_t n, size_t size);
void ka__free(void *p, size_t size);
char *ka__strdup(const char *s);
void ka__strfree(char *s);

/* ---- handles (handle.c) ------------------------------------------------ */
enum ka__type {
    KA__T_FREE = 0, KA__T_DEVICE, KA__T_QUEUE, KA__T_BUFFER, KA__T_PROGRAM, KA__T_KERNEL, KA__T_EVENT, KA__T_GRAPH
};
typedef struct ka__slot {
    _Atomic uint32_t gen;
    _Atomic uint32_t type;
    void *_Atomic obj;
    uint32_t next_free;
    _Atomic uint32_t pins;     /* calls using the object now (ka__pin) */
} ka__slot;

#define KA__CHUNK_BITS 8u
#define KA__CHUNK_SIZE (1u << KA__CHUNK_BITS)
#define KA__MAX_CHUNKS 4096u
extern ka__slot *_Atomic ka__chunks[KA__MAX_CHUNKS];

/* New handle for obj; 0 on allocation failure. */
uint64_t ka__handle_new(enum ka__type type, void *obj);
/* Makes every outstanding id of the slot stale and frees the slot. */
void ka__handle_free(uint64_t id);
/* Makes id stale but keeps the slot bound to obj; returns the new id, or 0
 * when id was already stale (another thread renewed or retired it first). */
uint64_t ka__handle_renew(uint64_t id);
/* Makes id stale at once and waits until no call has its object pinned; the
 * object can then be freed, and the slot with ka__handle_free. False (and
 * nothing done) for a stale id, or when another thread retired it first. */
bool ka__handle_retire(uint64_t id);
/* For slots whose generation renews per use (events): makes every id of the
 * slot stale and waits until no call has it pinned. */
void ka__handle_drain(uint64_t id);

/* Index 0 passes (one compare less a lookup): its slot is never handed out
 * (handle.c's grow), so its type never matches. */
static inline ka__slot *ka__slot_of(uint64_t id) {
    uint32_t idx = (uint32_t)id;
    if (KA_UNLIKELY(idx >= KA__MAX_CHUNKS * KA__CHUNK_SIZE)) return NULL;
    ka__slot *c = atomic_load_explicit(&ka__chunks[idx >> KA__CHUNK_BITS], memory_order_acquire);
    return c ? &c[idx & (KA__CHUNK_SIZE - 1)] : NULL;
}
/* The object behind a live handle of that type, else NULL. */
static inline void *ka__resolve(uint64_t id, enum ka__type type) {
    ka__slot *s = ka__slot_of(id);
    if (KA_UNLIKELY(!s)) return NULL;
    if (KA_UNLIKELY(atomic_load_explicit(&s->gen, memory_order_acquire) != (uint32_t)(id >> 32))) return NULL;
    if (KA_UNLIKELY(atomic_load_explicit(&s->type, memory_order_relaxed) != (uint32_t)type)) return NULL;
    return atomic_load_explicit(&s->obj, memory_order_relaxed);
}

/* The object behind a live handle, pinned for the length of a call: its
 * release (ka__handle_retire) in another thread waits until ka__unpin. The
 * count goes up before the generation is checked, and retire stores the
 * generation before it reads the count (both sequentially consistent), so
 * either the call sees the handle stale or the release sees the pin. */
static inline void *ka__pin(uint64_t id, enum ka__type type, ka__slot **sp) {
    ka__slot *s = ka__slot_of(id);
    if (KA_UNLIKELY(!s)) return NULL;
    atomic_fetch_add_explicit(&s->pins, 1, memory_order_seq_cst);
    if (KA_UNLIKELY(atomic_load_explicit(&s->gen, memory_order_seq_cst) != (uint32_t)(id >> 32) ||
                    atomic_load_explicit(&s->type, memory_order_relaxed) != (uint32_t)type)) {
        atomic_fetch_sub_explicit(&s->pins, 1, memory_order_release);
        return NULL;
    }
    *sp = s;
    return atomic_load_explicit(&s->obj, memory_order_relaxed);
}
static inline void ka__unpin(ka__slot *s) { atomic_fetch_sub_explicit(&s->pins, 1, memory_order_release); }
/* The prologue of a call on one handle: declares `T *var` pinned (slot in
 * `slot`, ka__unpin it before returning), or returns KA_ERR_INVALID_HANDLE
 * with "<call>: invalid or released <type>". */
#define KA__PIN(T, var, slot, handle, type)                               \
    ka__slot *slot;                                                       \
    T *var = ka__pin((handle).id, type, &slot);                           \
    if (KA_UNLIKELY(!var)) return ka__fail_handle(type, __func__)

/* ---- objects ----------------------------------------------------------- */
typedef struct ka__device ka__device;
typedef struct ka__queue ka__queue;
typedef struct ka__buffer ka__buffer;
typedef struct ka__program ka__program;
typedef struct ka__variant ka__variant;
typedef struct ka__kernel ka__kernel;
typedef struct ka__event ka__event;
typedef struct ka__graph ka__graph;
typedef struct ka__backend ka__backend; /* the back-end contract: backend.h */

struct ka__device {
    uint64_t id;
    const ka__backend *ops;    /* what calls go through: the back-end, or a layer over it */
    ka_device_info info;
    void *native;              /* back-end's device state */
    _Atomic uint32_t live;     /* queues, buffers, programs alive */
    /* KA_DEBUG, read at open (debug.c): the guarded buffers, their checks
     * and the scratch a check reads a guard zone into, under dbg_lock. */
    bool debug;
    pthread_mutex_t dbg_lock;
    ka__buffer *dbg_head;
    void *dbg_scratch;         /* KA__GUARD_MAX bytes, from the open (a back-end that keeps guard zones) */
};

/* What the dialect headers paste before a KA_KERNEL's name (ka_k_##name): a
 * kernel may be named like a built-in of OpenCL C, CUDA or C (step, min). */
#define KA__KERNEL_PREFIX "ka_k_"

/* Argument signature entry, read once per kernel. */
enum ka__sig { KA__SIG_UNKNOWN = 0, KA__SIG_BUFFER, KA__SIG_SCALAR, KA__SIG_LOCAL };
/* A by-value parameter's type class, from its KA_KERNEL declaration. */
enum ka__cls { KA__CLS_UNKNOWN = 0, KA__CLS_INT, KA__CLS_FLOAT };
typedef struct ka__argsig {
    uint8_t kind;      /* enum ka__sig */
    uint8_t cls;       /* enum ka__cls: KA_ARG_INT / KA_ARG_FLOAT must match it when known */
    uint32_t size;     /* expected value size, 0 = not known */
    char name[32];
    char type[24];     /* the declared type as written (messages), "" if not read */
} ka__argsig;

/* Normalized configuration: the compiled-kernel table's key (with the name). */
typedef struct ka__config_key {
    uint32_t wg[3];
    uint32_t sg;
    uint64_t nd[3];
    uint64_t defines_hash;     /* hash of cfg->defines, 0 if none */
} ka__config_key;

struct ka__variant {           /* one native build of a program (build.c) */
    ka__variant *next;
    uint32_t wg[3];
    uint32_t sg;
    uint64_t nd[3];
    uint64_t defines_hash;
    char *defines;
    char *options;             /* the full build options, every target's */
    bool plain;                /* built without the back-end's appendix (with it, the build failed) */
    void *native;              /* the module for the device: cl_program / ka__cumod * */
    void *alt;                 /* the module for the alternate target (PoCL's `basic`), once asked for */
    pthread_mutex_t alt_lock;  /* building alt */
};

struct ka__kernel {
    uint64_t id;
    ka__program *prog;
    ka__variant *var;
    char *name;                /* the user's: errors, traces */
    char *native_name;         /* the compiled entry's (KA__KERNEL_PREFIX name): driver lookups */
    uint64_t hash;
    ka__config_key key;
    void *native;              /* cl_kernel / CUfunction */
    uint32_t nargs;            /* user arguments */
    ka__argsig *sig;
    uint64_t *fast_tag;        /* per argument: the (kind, size) word of a matching ka_arg; kind 0: check fully */
    uint32_t max_wg;
    uint32_t pref_multiple;
    uint64_t local_mem;
    uint32_t auto_wg[3][3];    /* default work-group by dims-1 */
    bool auto_rows;            /* CPU: a default work-group fills dimension 0 first (rows) */
    bool wg_declared;          /* key.wg is the kernel's KA_WORKGROUP */
    _Atomic uint32_t warned;   /* the geometry warning was given (once per kernel) */
    void *bk;                  /* the back-end's own state */
};

struct ka__program {
    uint64_t id;
    ka__device *dev;
    char *source;              /* user source, without prelude */
    char *name;                /* ka_build_options.name as a #line file name (escaped), "program" by default */
    char *log;                 /* the scan's warnings (ka_program_build_log), NULL if none */
    size_t log_len;
    struct ka__wgdecl {        /* the KA_WORKGROUP declarations, by kernel */
        const char *kname;     /* in source */
        size_t len;
        uint32_t wg[3];
    } *wgdecl;
    uint32_t nwgdecl;
    char *options;             /* base compiler options (with defines) */
    ka__variant *variants;
    uint32_t builds;
    _Atomic uint32_t cache_hits; /* native builds loaded from the persistent cache */
    bool asserts;              /* the source calls ka_assert: kernels take the assertion record last */
    bool includes;             /* the source has an #include: its builds skip the persistent cache */
    pthread_mutex_t lock;      /* kernel table and variants */
    ka__kernel **table;        /* open addressing, power-of-two capacity */
    uint32_t cap, count;
};

struct ka__buffer {
    uint64_t id;
    ka__device *dev;
    size_t bytes;
    void *native;              /* cl_mem / CUdeviceptr */
    void *host;                /* ka_buffer_wrap's host memory, else NULL */
    uint32_t be_flags;         /* the back-end's own (CUDA: it registered host) */
    /* KA_DEBUG: the back-end allocated guard more bytes after `bytes`, a
     * known pattern (debug.c); 0 without KA_DEBUG, for a wrapped buffer, or
     * on a back-end without a buffer_guard hook. */
    size_t guard;
    struct ka__bdbg {          /* KA_DEBUG's record, under the device's dbg_lock */
        ka__buffer *next, *prev;   /* the device's guarded buffers */
        const ka__queue *q;    /* the queue of the last launch naming it since its last check; NULL: none */
        uint32_t arg;          /* that launch's argument index */
        uint64_t kid;          /* that launch's kernel handle, */
        char kernel[64];       /* and its name */
    } dbg;
    /* Live maps (ka_buffer_map), under map_lock; ptr NULL: a free entry. */
    _Atomic uint32_t map_lock;
    struct ka__map {
        void *ptr, *token;     /* what the user got; the back-end's (a staging copy) */
        size_t off, n;
        uint32_t flags;
    } maps[KA_MAX_MAPS];
};

enum ka__ev_state { KA__EV_FREE = 0, KA__EV_PENDING, KA__EV_DONE };

struct ka__event {
    uint64_t id;               /* current handle (renewed on release) */
    ka__queue *q;
    void *native;              /* native event, NULL for a no-op launch */
    void *stale_native;        /* released when the slot is next used */
    _Atomic uint32_t state;    /* futex word */
    _Atomic uint32_t sleepers; /* threads in futex_wait on state: wake only then */
    _Atomic int32_t status;    /* ka_status once done */
    _Atomic uint32_t refs;
    _Atomic uint32_t cb_armed; /* driver callback registered for this use */
    _Atomic uint32_t user_cb;  /* 0 none, 1 armed, 2 fired */
    _Atomic uint32_t notify;   /* 1: write the queue's eventfd on completion */
    _Atomic uint32_t released; /* the user released it; a callback may still hold it */
    ka_event_fn fn;
    void *fn_user;
    /* Free-list link (index+1). Atomic (relaxed) because a pop reads the link
     * of a slot another thread may be popping and pushing back at that moment:
     * the tagged compare-exchange then fails and the value is dropped, but the
     * read itself must not be a data race. */
    _Atomic uint32_t next;
};

struct ka__queue {
    uint64_t id;
    ka__device *dev;
    void *native;
    int64_t spin_ns;
    int efd;                   /* eventfd, -1 until asked for */
    ka__graph *rec;            /* the graph being recorded (ka_graph_begin), else NULL */
    ka__event *events;
    uint32_t nevents;
    _Atomic uint64_t free_head; /* tag<<32 | index+1 */
    _Atomic uint32_t callbacks_pending;
    _Atomic uint32_t callbacks_running; /* completion callbacks between their first and last step */
    _Atomic uint64_t waits_polled, waits_slept, callbacks;
    bool profiling;            /* ka_queue_config.profiling: ka_event_elapsed_ns may ask the back-end */
    _Atomic uint32_t hooks;    /* KA__QH_*: what a wait on the queue does besides waiting (one test when none) */
};
enum {
    KA__QH_TRACED = 1u << 0,   /* the queue's device is traced: waits are spans (trace.c) */
    KA__QH_ASSERTS = 1u << 1,  /* a kernel calling ka_assert was launched: waits read the record */
    KA__QH_DEBUG = 1u << 2,    /* the device opened under KA_DEBUG: full launch checks, guard zones checked at waits */
};
/* Back-ends, at an asserting kernel's launch: a store only the first time. */
static inline void ka__queue_mark_asserts(ka__queue *q) {
    if (KA_UNLIKELY(!(atomic_load_explicit(&q->hooks, memory_order_relaxed) & KA__QH_ASSERTS)))
        atomic_fetch_or_explicit(&q->hooks, KA__QH_ASSERTS, memory_order_relaxed);
}

/* ---- ka_assert (kassert.c) ---------------------------------------------- */
/* The record a kernel's failing ka_assert fills in the queue's buffer, as
 * 32-bit words: set (the first failure's flag), line, global id x, y, z
 * (64 bits each, low word first), the kernel's handle (64 bits). Written by
 * the dialect's ka__assert_fail (include/ka_kernel_cl.h, ka_kernel_cuda.h). */
#define KA__ASSERT_WORDS 10
/* After a successful wait on q: KA_ERR_KERNEL_FAILED with the failure's
 * detail when a kernel's ka_assert failed since the last check (the record
 * is cleared), else KA_OK. Only for queues with KA__QH_ASSERTS set. */
ka_status ka__assert_check(ka__queue *q, const char *call);

/* ---- KA_DEBUG (debug.c) ------------------------------------------------- */
/* Whether KA_DEBUG is set (not "", "0", "off", "no" or "false"). Read at each
 * call: devices read it once, at open (ka__device.debug). */
int ka__debug_enabled(void);
/* A warning for the user: ka__log at KA_LOG_WARN, which with no logger set
 * and KA_DEBUG on prints it to stderr as "libka: ...". Never on a hot path. */
void ka__warn(const char *fmt, ...) KA_PRINTF(1, 2);
/* Whether ka__log prints warnings and errors when no logger is set: KA_DEBUG
 * is on in the environment, or for a device open. */
bool ka__debug_printing(void);
/* The largest guard zone (the device's scratch is this size). */
#define KA__GUARD_MAX ((size_t)1 << 20)
/* At device open: d->debug from KA_DEBUG, and then the lock and the scratch
 * (KA_ERR_OUT_OF_MEMORY without it). At close: both gone. */
ka_status ka__debug_device_open(ka__device *d);
void ka__debug_device_close(ka__device *d);
/* b->guard for a new (not wrapped) buffer of d: 0 when d is not in debug
 * mode or its back-end keeps no guards. */
size_t ka__debug_guard_size(const ka__device *d, size_t bytes);
/* After the back-end made b (b->guard > 0): the pattern written, b listed. */
ka_status ka__debug_buffer_made(ka__buffer *b);
/* At release (b->guard > 0): b unlisted, its guard checked; KA_OK or
 * KA_ERR_OUT_OF_BOUNDS naming the buffer and its last kernel. */
ka_status ka__debug_buffer_release(ka__buffer *b);
/* After a launch (or a graph's launch node) on q of a debug device: its
 * buffer arguments are marked for the next check on q. */
void ka__debug_note_launch(ka__queue *q, const ka__kernel *k, const ka_arg *args, uint32_t nargs);
/* After a successful wait on q (KA__QH_DEBUG): the guards of the buffers
 * marked on q checked; the first overrun's KA_ERR_OUT_OF_BOUNDS. call (if
 * not NULL) becomes the current call: the checks log what they find. */
ka_status ka__debug_check(ka__queue *q, const char *call);
/* The checks a wait on a queue with hooks runs after it succeeded: ka_assert's
 * record, then the guard zones. */
static inline ka_status ka__wait_checks(ka__queue *q, const char *call) {
    uint32_t h = atomic_load_explicit(&q->hooks, memory_order_relaxed);
    ka_status st = KA_OK;
    if (h & KA__QH_ASSERTS) st = ka__assert_check(q, call);
    if ((h & KA__QH_DEBUG) && st == KA_OK) st = ka__debug_check(q, call);
    return st;
}

/* A test-and-set lock for the few hundred nanoseconds of set-args + enqueue:
 * cheaper than a mutex uncontended (measured with callgrind), yields when held. */
void ka__spin_wait(_Atomic uint32_t *l);
static inline void ka__spin_lock(_Atomic uint32_t *l) {
    if (KA_UNLIKELY(atomic_exchange_explicit(l, 1, memory_order_acquire))) ka__spin_wait(l);
}
static inline void ka__spin_unlock(_Atomic uint32_t *l) { atomic_store_explicit(l, 0, memory_order_release); }

/* ---- core helpers ------------------------------------------------------ */
void ka__event_native_done(void *ctx, ka_status st);
ka_status ka__event_acquire(ka__queue *q, ka__event **out);
void ka__event_bind(ka__event *e, void *native);
void ka__event_abandon(ka__event *e);
/* The end of an enqueue that asked for an event (e from ka__event_acquire,
 * NULL when none was asked): on success binds the native event and gives the
 * caller its handle; on failure gives the slot back. Returns st. */
static inline ka_status ka__event_publish(ka__event *e, ka_status st, void *native, ka_event *ev) {
    if (!e) return st;
    if (KA_UNLIKELY(st != KA_OK)) {
        ka__event_abandon(e);
        return st;
    }
    ka__event_bind(e, native);
    ev->id = e->id;
    return KA_OK;
}
ka_status ka__events_init(ka__queue *q, uint32_t n);
void ka__events_fini(ka__queue *q);
void ka__queue_wait_callbacks(ka__queue *q);

int64_t ka__now_ns(void);
uint64_t ka__hash(const void *p, size_t n, uint64_t seed);

/* ---- persistent kernel cache (kcache.c) --------------------------------- */
/* Compiled binaries on disk, keyed by a 128-bit hash of everything that makes
 * them (docs/DESIGN.md, "Persistent kernel cache"). A failure here never fails
 * a build: load misses, store does nothing; details go to ka__log only (the
 * per-thread error detail is left alone). */
typedef struct ka__kcache_key {
    uint64_t lo, hi;
    int lock; /* the entry's lock file while this process compiles it, else -1 */
    int dir;  /* while lock >= 0: the cache directory, where the lock file is unlinked */
} ka__kcache_key;
/* false when KA_CACHE is "0", "off", "no" or "false". Read at each call. */
bool ka__kcache_enabled(void);
/* Key over libka's version, the back-end, d's name, vendor, platform, version
 * and driver version, target (what the back-end compiles for beyond d->info:
 * the actual OpenCL device, the CUDA architecture and compiler version), the
 * full source and the full options. */
void ka__kcache_key_make(const ka__device *d, const char *target, const char *source, const char *options,
                         ka__kcache_key *key);
void ka__kcache_key_hex(const ka__kcache_key *key, char out[33]);
/* A size as KA_CACHE_MAX_BYTES gives it: decimal bytes, optionally followed
 * by K, M, G or T (either case; binary multiples), then optionally "B" or
 * "iB". false when malformed or over 2^64 - 1. */
bool ka__kcache_parse_size(const char *s, uint64_t *out);
/* KA_OK: *data (ka__alloc'd, *size bytes; the caller frees it with ka__free)
 * holds a verified entry. Anything else is a miss: absent, corrupt, truncated,
 * untrusted (owner, mode), cache off, or I/O trouble. On a miss the entry's
 * lock is taken first (it waits while another process or thread compiles the
 * same entry, then loads what that one stored): the caller compiles, then
 * ka__kcache_store or ka__kcache_unlock releases it. */
ka_status ka__kcache_load(ka__kcache_key *key, void **data, size_t *size);
/* Writes the entry atomically (temp file, fsync, rename); silently does
 * nothing on any failure, or when an untrusted entry is in the way. Then
 * evicts least recently used entries if the directory may be over
 * KA_CACHE_MAX_BYTES (never this one), and releases the entry's lock
 * (unlinking its lock file). */
void ka__kcache_store(ka__kcache_key *key, const void *data, size_t size);
/* Releases the entry's lock if a miss of ka__kcache_load left it held (the
 * build failed, or its result is not stored), unlinking its lock file first.
 * Idempotent. */
void ka__kcache_unlock(ka__kcache_key *key);

/* Embedded kernel dialect preludes (generated from include/ka_kernel_*.h). */
extern const char ka__prelude_opencl[];
extern const char ka__prelude_c[];
extern const char ka__prelude_cuda[];

#endif
