/* The core's own: handles and pins, KA_DEBUG, the kernel cache, and
 * the core's helpers, over objects.h (the objects and services back-ends
 * share). Core files only: a back-end includes backend.h, never this. Not
 * installed. */
#ifndef KA_INTERNAL_H
#define KA_INTERNAL_H
#ifdef KA__BACKEND_FILE
#error "ka_internal.h is the core's own: a back-end includes backend.h (objects.h), kdecl.h and freelist.h only"
#endif

#include "objects.h"

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


/* ---- KA_DEBUG (debug.c) ------------------------------------------------- */
/* Whether KA_DEBUG is set (not "", "0", "off", "no" or "false"). Read at each
 * call: devices read it once, at open (ka__device.debug). */
int ka__debug_enabled(void);
/* A warning for the user: ka__log at KA_LOG_WARN, which with no logger set
 * prints it to stderr as "libka: ..." (once per message; every time under
 * KA_DEBUG). Never on a hot path. */
void ka__warn(const char *fmt, ...) KA_PRINTF(1, 2);
/* Whether ka__log prints every warning and error, not only the first of
 * each, when no logger is set: KA_DEBUG is on in the environment, or for a
 * device open. */
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
 * marked on q checked; the first overrun's KA_ERR_OUT_OF_BOUNDS. The caller
 * has named the call (KA__ENTRY): every overrun is logged as found. */
ka_status ka__debug_check(ka__queue *q);
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

#endif
