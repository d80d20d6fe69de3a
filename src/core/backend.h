/* The back-end contract: what the core asks of OpenCL, CUDA, host and null,
 * and the only way it asks (the inline ka__be_* wrappers below; the build
 * hooks from the build pipeline, build.c, alone). Not installed.
 *
 * What a back-end includes: this header, which brings objects.h (the core's
 * objects with what a back-end may read and set of each, marked field by
 * field; the view of a recorded graph; errors, allocation, the clock, the
 * futex, the spin lock), and of the core besides only kdecl.h (the
 * KA_KERNEL scanner) and freelist.h. Never ka_internal.h, event.h, graph.h
 * or trace.h: handles and pins, events, graphs, the kernel cache, KA_DEBUG
 * and tracing are the core's alone, and a back-end file that reaches for
 * them does not compile.
 *
 * Threads and locks. Every hook may be called from any user thread, and
 * concurrently for different objects, unless its entry says otherwise. The
 * core holds no lock of its own around a hook except where noted (build
 * and kernel hooks run under the program's mutex, a build for the alternate
 * target under its variant's lock). Objects a hook is given are alive
 * for the whole call: the core pins their handles (ka__pin) and a release
 * waits for the pins, so a *_release hook never runs while another hook
 * uses the same object. Exceptions: the buffers named in a launch's
 * arguments (resolved and checked live, not pinned), and the kernels and
 * buffers of a graph's nodes (checked live before graph_make and each
 * replay, not pinned): releasing one during that call is the user's race
 * (docs/API.md, threading rules). A hook that fails returns the status through
 * ka__fail (the per-thread detail names the native call); release hooks
 * cannot fail. Launch, enqueue, graph replay and event hooks are the hot
 * path: no heap allocation of libka's once a kernel is made, but for the
 * first inline launch of a kernel on PoCL (tests/test_zero_alloc.c).
 *
 * Required unless marked "may be NULL"; ka__backend_check() refuses a table
 * that lacks one, or whose version is not KA__BACKEND_VERSION, when a device
 * of it is opened. */
#ifndef KA_BACKEND_H
#define KA_BACKEND_H

#include "objects.h"

#include <string.h>

/* Raised whenever a hook's signature or meaning changes. */
#define KA__BACKEND_VERSION 8u

enum {
    /* Not enumerated (ka_device_count does not see it); opened by its bare
     * name as the selector (the null back-end: "null"). */
    KA__BE_UNLISTED = 1u << 0,
    /* event_wait sleeps in the driver (a blocking-sync event), or does the
     * command's work itself (the host back-end joins its pool run), so an
     * unbounded wait goes there rather than through a completion callback. */
    KA__BE_WAIT_SLEEPS = 1u << 1,
    /* Kernels whose name is over KA__NAME_DIRECT_MAX characters are looked
     * up by their alias (objects.h): source_rewrite compiles them so. PoCL
     * 3.1 names a file after a kernel's symbol and aborts the process when
     * that file's name is over 255 bytes (a symbol over 252). */
    KA__BE_SHORT_SYMBOLS = 1u << 2,
};

/* A launch as the back-end sees it: validated and padded; the calling
 * thread's geometry cache (ka_launch) or a graph's node (replays). */
typedef struct ka__launch {
    uint32_t dims;
    size_t global[3];
    size_t local[3];
    uint64_t nd[4];            /* logical range + dims: the hidden argument */
    uint64_t items;            /* global[0] * global[1] * global[2], checked not to overflow */
    uint32_t flags;            /* the range's KA_LAUNCH_* (KA_LAUNCH_ASYNC: never in the calling thread) */
    void *const *mem;          /* by argument: a buffer argument's native object (others undefined) */
    /* NULL, or, when every argument is a buffer or a scalar: argp[1 + i] points
     * to argument i's value as a driver takes it (a buffer: &mem[i]; a scalar:
     * its bytes in the caller's ka_arg); argp[0] and the two slots after the
     * last argument are the hook's to fill (CUDA: the range, ka_assert's
     * record), so the array can be a driver's parameter list as it is. Set by
     * ka_launch for its hook's call only (NULL in a graph's recorded launch). */
    void **argp;
} ka__launch;

/* Work-groups a GPU grid holds at most in dimensions 1 and 2 (CUDA's limit):
 * the core's work-group choice keeps within it, the CUDA launch checks it. */
#define KA__GRID_YZ_MAX 65535u

typedef void (*ka__native_cb)(void *ctx, ka_status st);

/* What a build is for: the opened device, or the back-end's alternate
 * target (PoCL's `basic` device, built for when routing first needs it). */
enum { KA__TARGET_DEVICE = 0, KA__TARGET_ALT = 1 };

/* One build of a variant for one target, as the build hooks see it: the
 * core's pipeline (src/core/build.c) fills it and passes it to each hook in
 * turn; it lives on the core's stack for the build's length. */
typedef struct ka__build {
    ka__program *prog;
    ka__variant *var;
    uint32_t target;           /* KA__TARGET_* */
    const char *source;        /* composed: prelude, #line, the user's source (rewritten), the appendix */
    const char *options;       /* var->options: the full options */
    bool cache;                /* build_target sets it false for a build that must not be cached */
    bool want_binary;          /* compile: the binary is stored (false: the hook need not produce one) */
    bool from_cache;           /* load: the binary came from the cache (ka__build_fail then only logs) */
    bool kept;                 /* load sets it: the module keeps the binary (module_release frees it) */
    char target_name[512];     /* build_target: what is compiled for beyond the device's info (in the cache key);
                                * room for OpenCL's name, version and driver uncut: a cut one could merge keys */
    char be_text[64];          /* the back-end's, shared by the hooks of one build (CUDA: the architecture option) */
    uint32_t be_flags;         /* the back-end's, likewise (CUDA: a cubin) */
} ka__build;

struct ka__backend {
    uint32_t version;          /* KA__BACKEND_VERSION */
    const char *name;          /* "opencl": selectors "name:N", ka_backend_name(), logs */
    ka_backend kind;
    uint32_t flags;            /* KA__BE_* */

    /* ---- devices: any thread; enumerate once per process (pthread_once) ---- */
    /* Devices this back-end offers; fills up to cap infos (selector, name,
     * limits), sets *n to the total. A missing driver is n = 0 and KA_OK;
     * a failure lists nothing, and ka_device_open of the back-end's name
     * ("host", "host:0") calls it again and returns its status and detail
     * (the host back-end: no C compiler, and why). */
    ka_status (*enumerate)(ka_device_info *out, uint32_t cap, uint32_t *n);
    /* May be NULL. A back-end's own selector words ("pocl"): true when sel
     * names device d (an entry of enumerate). Tried before name matching. */
    bool (*selects)(const char *sel, const ka_device_info *d);
    /* May be NULL. True for the device an empty selector should open when
     * KA_DEVICE is unset (PoCL's threaded CPU device). */
    bool (*preferred)(const ka_device_info *d);
    /* Opens device number local_index of enumerate: fills d->info and
     * d->native. On failure nothing is left to close. */
    ka_status (*device_open)(ka__device *d, uint32_t local_index);
    void (*device_close)(ka__device *d); /* no queue, buffer or program is left */
    /* May be NULL. Right after a successful device_open: the table d calls
     * through from then on, this one or a layer of the back-end's own over
     * it (OpenCL: PoCL routing, for a device with PoCL's `basic`); NULL:
     * this one. The core stacks its own layers (ka__backend_layer) over what
     * it returns; that table's device_close closes d. */
    const ka__backend *(*device_ops)(const ka__device *d);
    /* May be NULL (then KA_ERR_UNSUPPORTED). Fills the driver's objects. */
    void (*device_native)(ka__device *d, ka_native_device *out);

    /* ---- queues ---------------------------------------------------------- */
    /* Sets q->native (q->spin_ns and q->nevents are set). cfg is the
     * user's (may be NULL): what it says to a back-end (PoCL routing's
     * inline_max_items) the back-end keeps in its own queue state. */
    ka_status (*queue_create)(ka__queue *q, const ka_queue_config *cfg);
    void (*queue_release)(ka__queue *q);     /* after queue_finish and every event's release */
    ka_status (*queue_finish)(ka__queue *q); /* blocks until every command completed */
    ka_status (*queue_flush)(ka__queue *q);  /* submits; must not block on the device */
    void (*queue_native)(ka__queue *q, ka_native_queue *out);  /* may be NULL */
    void (*queue_stats)(ka__queue *q, ka_queue_stats *out);    /* may be NULL: back-end fields */

    /* ---- buffers: ranges and devices checked by the core ------------------ */
    /* b->bytes > 0; sets b->native to b->bytes + b->guard bytes (the guard:
     * KA_DEBUG's zone past the end, 0 unless buffer_guard is set). May lower
     * b->guard (to 0 too) where it protects the memory past the zone by other
     * means (the host back-end's inaccessible pages). */
    ka_status (*buffer_create)(ka__buffer *b);
    void (*buffer_release)(ka__buffer *b);
    /* May be NULL: no guard zones (b->guard stays 0). Blocking copy between
     * host and b's guard zone, bytes [b->bytes, b->bytes + b->guard): write
     * (host to buffer) or read, on no queue of the user's. Called with the
     * device's dbg_lock held (one call per device at a time), after the
     * buffer is made, and after a wait that covered the launches using it. */
    ka_status (*buffer_guard)(ka__buffer *b, void *host, bool write);
    /* May be NULL: then out->mem is b->native and out->address NULL (the
     * core sets out->bytes). Fills what other libraries (MPI) use. */
    void (*buffer_native)(ka__buffer *b, ka_native_buffer *out);
    /* Transfers. block: return once the command is complete (ev is then
     * NULL). Otherwise enqueue, and may complete before return or later (the
     * queue orders it); *ev gets a native event when ev != NULL. */
    ka_status (*buffer_write)(ka__queue *q, ka__buffer *b, size_t off, size_t n, const void *src, void **ev, bool block);
    ka_status (*buffer_read)(ka__queue *q, ka__buffer *b, size_t off, size_t n, void *dst, void **ev, bool block);
    ka_status (*buffer_copy)(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n, void **ev, bool block);
    ka_status (*buffer_fill)(ka__queue *q, ka__buffer *b, const void *pat, size_t psz, size_t off, size_t n, void **ev, bool block);
    /* b->bytes > 0, b->host set: sets b->native to a buffer over the host
     * memory, used in place where the device can. */
    ka_status (*buffer_wrap)(ka__buffer *b);
    /* Right after buffer_create: the bytes at src, or zeros when src is
     * NULL, in place on return (blocks; no queue of the user's). */
    ka_status (*buffer_init)(ka__buffer *b, const void *src);
    /* Blocking host access to [off, off + n) after q's earlier commands:
     * *ptr the bytes (flags KA_MAP_*), *token anything unmap needs. */
    ka_status (*buffer_map)(ka__queue *q, ka__buffer *b, size_t off, size_t n, uint32_t flags, void **ptr, void **token);
    /* Ends a map buffer_map made (m: its record); blocks until the buffer
     * holds what the host wrote. */
    ka_status (*buffer_unmap)(ka__queue *q, ka__buffer *b, const struct ka__map *m);
    /* Commands enqueued on q after this wait for native event ev (of a queue
     * of q's device, still pending when checked). No host wait, no allocation. */
    ka_status (*queue_wait)(ka__queue *q, void *ev);
    /* ---- host memory: all four NULL (the core gives KA_HOST_ALIGN-aligned
     * plain memory and records registrations), or all four set ---- */
    ka_status (*host_alloc)(ka__device *d, size_t bytes, void **ptr);
    void (*host_free)(ka__device *d, void *ptr);
    ka_status (*host_register)(ka__device *d, void *ptr, size_t bytes);
    void (*host_unregister)(ka__device *d, void *ptr);

    /* ---- builds: the core composes the source, keys and locks the
     * persistent cache, loads or compiles, stores (src/core/build.c); these
     * hooks are its back-end steps. Under the program's mutex, or, for the
     * alternate target (ka__build_alt), under the variant's alt_lock, so
     * concurrently with another variant's build. A module is the back-end's
     * loaded program (a cl_program, a ka__cu_module *), a binary opaque bytes
     * (ka__alloc'd, the core frees them unless load kept them). ---------- */
    const char *prelude;       /* the kernel dialect, put before the user's source */
    const char *source_file;   /* may be NULL: the file name of the user's source in its #line */
    /* May be NULL (the user's source as it is). The text that stands for
     * p->source, written into out when out is not NULL (no NUL); returns its
     * length. Adds or removes no newline (log lines stay the user's). */
    size_t (*source_rewrite)(const ka__program *p, char *out);
    /* May be NULL, with append_file. Text after the user's source, under
     * `#line 1 "append_file"`, written as source_rewrite; 0: nothing. When a
     * build with it fails (not for memory) and the detail names append_file,
     * the core builds the variant again without it (v->plain), for every
     * target. */
    size_t (*source_append)(const ka__program *p, char *out);
    const char *append_file;
    /* May be NULL. Options put before each build's own (OpenCL's -cl-std and
     * -cl-kernel-arg-info); a string alive as long as d. */
    const char *(*build_options)(const ka__device *d);
    /* First in every build, cache on or off: fills b->target_name (the
     * compile target for the cache key: OpenCL's cl_device_id, CUDA's
     * architecture and NVRTC version), may set b->cache false and readies
     * b->be_* for compile and load. A failure fails the build. */
    ka_status (*build_target)(ka__build *b);
    /* Compiles b->source with b->options. Success: *module the loaded module,
     * or NULL (then the core calls load on the binary, required then);
     * *binary (ka__alloc'd, *size bytes) what the cache stores, or NULL for
     * nothing (with a module, only asked for when b->want_binary). Failure: the compiler's log in the detail,
     * nothing left behind. */
    ka_status (*compile)(ka__build *b, void **binary, size_t *size, void **module);
    /* A module from a binary (the cache's, b->from_cache, or compile's). May
     * keep the bytes in the module (sets b->kept). A failure goes through
     * ka__build_fail: for a cached binary it is only logged and the core
     * compiles instead. */
    ka_status (*load)(ka__build *b, void *binary, size_t size, void **module);
    /* Releases a module load or compile made for target. */
    void (*module_release)(ka__program *p, void *module, uint32_t target);

    /* ---- kernels: under the program's mutex -------------------------------- */
    /* Creates k->native and k->bk and fills nargs, sig, max_wg,
     * pref_multiple, local_mem. On failure, kernel_release cleans up once
     * k->native is set; before that, the hook leaves nothing behind. */
    ka_status (*kernel_create)(ka__kernel *k);
    void (*kernel_release)(ka__kernel *k);

    /* ---- launch: the hot path; any thread, concurrently on one kernel ----- */
    /* Arguments are checked against k->sig (kind, size) by the core, and
     * l->mem[i] holds the native object of every buffer argument i (resolved
     * and checked to be of q's device by the core). Sets the arguments and
     * enqueues; *ev gets a native event when ev != NULL, or NULL for a
     * command already complete on return. Six parameters: all in registers. */
    ka_status (*launch)(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs, void **ev);

    /* ---- native events: any thread ---------------------------------------- */
    /* 1 done, 0 pending, <0 failed (status in *st). Must not block. */
    int (*event_query)(void *ev, ka_status *st);
    /* Registers cb(ctx, status) to run once, in any thread (a driver thread,
     * or this one if already complete); cb is ka__event_native_done. */
    ka_status (*event_callback)(void *ev, ka__native_cb cb, void *ctx);
    ka_status (*event_wait)(void *ev); /* blocks until complete */
    void (*event_release)(void *ev);
    /* May be NULL. The driver's name for a failed event's error, a static
     * string; off the hot path (a failed wait's detail). */
    const char *(*event_error)(void *ev);
    /* May be NULL (ka_assert's record is then never read). After a wait on
     * q: copies q's assertion record into rec (KA__ASSERT_WORDS words; rec[0]
     * == 0: no failure) and clears it. May instead return (and clear) the
     * failure of a command that had no event to carry it, with its detail
     * set; the back-end sets KA__QH_ASSERTS (ka__queue_mark_asserts) so the
     * waits ask. */
    ka_status (*assert_take)(ka__queue *q, uint32_t *rec);
    /* May be NULL (then KA_ERR_UNSUPPORTED). The device time of a complete
     * command of a profiling queue (q->profiling), start to end, in ns. */
    ka_status (*event_elapsed)(void *ev, uint64_t *ns);

    /* ---- graphs: all four NULL (the core replays node by node through
     * launch, buffer_copy and buffer_fill), or all four set ------------------ */
    /* After recording (objects.h's graph view: ka__graph_node for each
     * node's kind, kernel, geometry, args and resolved buffers): builds the
     * driver's executable graph and sets it with ka__graph_set_native.
     * KA_ERR_UNSUPPORTED: the core replays node by node instead. */
    ka_status (*graph_make)(ka__graph *g);
    /* Replays ka__graph_native(g) on q after q's earlier commands; *ev a native event
     * when ev != NULL. The core has checked every node's kernel and buffers
     * live. No allocation; one replay of g at a time. */
    ka_status (*graph_launch)(ka__queue *q, ka__graph *g, void **ev);
    /* Launch node `node`'s args and mem changed (ka_graph_set_arg). */
    ka_status (*graph_update)(ka__graph *g, uint32_t node);
    void (*graph_release)(ka__graph *g);
};

extern const ka__backend ka__opencl_backend;
extern const ka__backend ka__null_backend;
extern const ka__backend ka__host_backend;
#ifdef KA_HAVE_CUDA
extern const ka__backend ka__cuda_backend;
#endif

/* Every back-end built in, in enumeration order (backend.c). */
extern const ka__backend *const ka__backends[];
extern const uint32_t ka__nbackends;

/* ---- the build pipeline (build.c) ----------------------------------------- */
/* Builds variant v of p for the device into v->native (v->options set),
 * falling back to a build without the appendix as source_append says.
 * Under the program's mutex. */
ka_status ka__build_variant(ka__program *p, ka__variant *v);
/* v's module for the back-end's alternate target, built at the first call
 * (under v->alt_lock): PoCL routing's `basic` build. */
ka_status ka__build_alt(ka__program *p, ka__variant *v, void **module);
/* A load hook's failure: the build's (ka__fail) for a fresh binary; for one
 * from the cache a WARN to the logger only (the core then compiles). */
ka_status ka__build_fail(const ka__build *b, ka_status st, const char *fmt, ...) KA_PRINTF(3, 4);
/* Releases v's modules (variant release). */
void ka__build_release(ka__program *p, ka__variant *v);

/* KA_OK, or KA_ERR_UNSUPPORTED naming the back-end and the version or the
 * missing hook. At device open. */
ka_status ka__backend_check(const ka__backend *be);

/* The table a device calls through: the back-end's own in the library; the
 * fault-injection build of the tests links a layer over it instead
 * (tests/fault_layer.c). Chosen once, at device open: no cost per call. */
const ka__backend *ka__backend_layer(const ka__backend *be);

/* ---- the wrappers: every call into a back-end goes through one of these -- */
/* Device discovery and selection run before any device exists: they take
 * the back-end's own table (checked by ka__backend_check first). */
static inline ka_status ka__be_enumerate(const ka__backend *be, ka_device_info *out, uint32_t cap, uint32_t *n) {
    return be->enumerate(out, cap, n);
}
static inline bool ka__be_selects(const ka__backend *be, const char *sel, const ka_device_info *d) {
    return be->selects && be->selects(sel, d);
}
static inline bool ka__be_preferred(const ka__backend *be, const ka_device_info *d) {
    return be->preferred && be->preferred(d);
}
static inline ka_status ka__be_device_open(const ka__backend *be, ka__device *d, uint32_t i) { return be->device_open(d, i); }
/* The table an opened device of be calls through, before the core's layers. */
static inline const ka__backend *ka__be_device_ops(const ka__backend *be, const ka__device *d) {
    const ka__backend *ops = be->device_ops ? be->device_ops(d) : NULL;
    return ops ? ops : be;
}
static inline void ka__be_device_close(ka__device *d) { d->ops->device_close(d); }
static inline ka_status ka__be_queue_create(ka__queue *q, const ka_queue_config *cfg) {
    return q->dev->ops->queue_create(q, cfg);
}
static inline void ka__be_queue_release(ka__queue *q) { q->dev->ops->queue_release(q); }
static inline ka_status ka__be_queue_finish(ka__queue *q) { return q->dev->ops->queue_finish(q); }
static inline ka_status ka__be_queue_flush(ka__queue *q) { return q->dev->ops->queue_flush(q); }
static inline ka_status ka__be_buffer_create(ka__buffer *b) { return b->dev->ops->buffer_create(b); }
static inline void ka__be_buffer_release(ka__buffer *b) { b->dev->ops->buffer_release(b); }
static inline ka_status ka__be_buffer_write(ka__queue *q, ka__buffer *b, size_t off, size_t n, const void *src, void **ev, bool block) {
    return q->dev->ops->buffer_write(q, b, off, n, src, ev, block);
}
static inline ka_status ka__be_buffer_read(ka__queue *q, ka__buffer *b, size_t off, size_t n, void *dst, void **ev, bool block) {
    return q->dev->ops->buffer_read(q, b, off, n, dst, ev, block);
}
static inline ka_status ka__be_buffer_copy(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n,
                                           void **ev, bool block) {
    return q->dev->ops->buffer_copy(q, s, so, d, dof, n, ev, block);
}
static inline ka_status ka__be_buffer_fill(ka__queue *q, ka__buffer *b, const void *pat, size_t psz, size_t off, size_t n,
                                           void **ev, bool block) {
    return q->dev->ops->buffer_fill(q, b, pat, psz, off, n, ev, block);
}
static inline bool ka__be_has_guards(const ka__device *d) { return d->ops->buffer_guard != NULL; }
static inline ka_status ka__be_buffer_guard(ka__buffer *b, void *host, bool write) {
    return b->dev->ops->buffer_guard(b, host, write);
}
static inline ka_status ka__be_buffer_wrap(ka__buffer *b) { return b->dev->ops->buffer_wrap(b); }
static inline ka_status ka__be_buffer_init(ka__buffer *b, const void *src) { return b->dev->ops->buffer_init(b, src); }
static inline ka_status ka__be_buffer_map(ka__queue *q, ka__buffer *b, size_t off, size_t n, uint32_t flags, void **ptr,
                                          void **token) {
    return q->dev->ops->buffer_map(q, b, off, n, flags, ptr, token);
}
static inline ka_status ka__be_buffer_unmap(ka__queue *q, ka__buffer *b, const struct ka__map *m) {
    return q->dev->ops->buffer_unmap(q, b, m);
}
static inline ka_status ka__be_queue_wait(ka__queue *q, void *ev) { return q->dev->ops->queue_wait(q, ev); }
static inline bool ka__be_has_host_memory(const ka__device *d) { return d->ops->host_alloc != NULL; }
static inline ka_status ka__be_host_alloc(ka__device *d, size_t bytes, void **ptr) { return d->ops->host_alloc(d, bytes, ptr); }
static inline void ka__be_host_free(ka__device *d, void *ptr) { d->ops->host_free(d, ptr); }
static inline ka_status ka__be_host_register(ka__device *d, void *ptr, size_t bytes) {
    return d->ops->host_register(d, ptr, bytes);
}
static inline void ka__be_host_unregister(ka__device *d, void *ptr) { d->ops->host_unregister(d, ptr); }
/* The back-end's name (messages, the cache key) and its dialect. */
static inline const char *ka__be_name(const ka__device *d) { return d->ops->name; }
static inline const char *ka__be_prelude(const ka__device *d) { return d->ops->prelude; }
static inline const char *ka__be_source_file(const ka__device *d) { return d->ops->source_file; }
static inline const char *ka__be_append_file(const ka__device *d) { return d->ops->append_file; }
/* The options put before each build's own; NULL when none. */
static inline const char *ka__be_build_options(const ka__device *d) {
    return d->ops->build_options ? d->ops->build_options(d) : NULL;
}
/* The text that stands for p->source, into out when not NULL (no NUL); its
 * length. The user's source as it is when the back-end has no rewrite. */
static inline size_t ka__be_source_rewrite(const ka__program *p, char *out) {
    if (p->dev->ops->source_rewrite) return p->dev->ops->source_rewrite(p, out);
    size_t n = strlen(p->source);
    if (out) memcpy(out, p->source, n);
    return n;
}
/* The appendix, likewise; 0 when the back-end has none. */
static inline size_t ka__be_source_append(const ka__program *p, char *out) {
    return p->dev->ops->source_append ? p->dev->ops->source_append(p, out) : 0;
}
/* The build hooks: build.c's pipeline alone calls them. */
static inline ka_status ka__be_build_target(ka__build *b) { return b->prog->dev->ops->build_target(b); }
static inline ka_status ka__be_compile(ka__build *b, void **binary, size_t *size, void **module) {
    return b->prog->dev->ops->compile(b, binary, size, module);
}
static inline ka_status ka__be_load(ka__build *b, void *binary, size_t size, void **module) {
    return b->prog->dev->ops->load(b, binary, size, module);
}
static inline void ka__be_module_release(ka__program *p, void *module, uint32_t target) {
    p->dev->ops->module_release(p, module, target);
}
static inline ka_status ka__be_kernel_create(ka__kernel *k) { return k->prog->dev->ops->kernel_create(k); }
static inline void ka__be_kernel_release(ka__kernel *k) { k->prog->dev->ops->kernel_release(k); }
static inline ka_status ka__be_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args,
                                      uint32_t nargs, void **ev) {
    return q->dev->ops->launch(q, k, l, args, nargs, ev);
}
static inline int ka__be_event_query(const ka__queue *q, void *ev, ka_status *st) { return q->dev->ops->event_query(ev, st); }
static inline ka_status ka__be_event_callback(const ka__queue *q, void *ev, ka__native_cb cb, void *ctx) {
    return q->dev->ops->event_callback(ev, cb, ctx);
}
static inline ka_status ka__be_event_wait(const ka__queue *q, void *ev) { return q->dev->ops->event_wait(ev); }
static inline void ka__be_event_release(const ka__queue *q, void *ev) { q->dev->ops->event_release(ev); }
static inline const char *ka__be_event_error(const ka__queue *q, void *ev) {
    return q->dev->ops->event_error ? q->dev->ops->event_error(ev) : NULL;
}
static inline ka_status ka__be_event_elapsed(const ka__queue *q, void *ev, uint64_t *ns) {
    if (!q->dev->ops->event_elapsed)
        return ka__fail(KA_ERR_UNSUPPORTED, "the %s back-end does not time commands", q->dev->ops->name);
    return q->dev->ops->event_elapsed(ev, ns);
}
/* ka_assert's record of q into rec (zeroed when the back-end keeps none). */
static inline ka_status ka__be_assert_take(ka__queue *q, uint32_t *rec) {
    return q->dev->ops->assert_take ? q->dev->ops->assert_take(q, rec) : KA_OK;
}
/* The optional hooks: false when the back-end has none. */
static inline bool ka__be_device_native(ka__device *d, ka_native_device *out) {
    if (!d->ops->device_native) return false;
    d->ops->device_native(d, out);
    return true;
}
static inline void ka__be_buffer_native(ka__buffer *b, ka_native_buffer *out) {
    out->mem = b->native;
    out->address = NULL;
    if (b->dev->ops->buffer_native) b->dev->ops->buffer_native(b, out);
}
static inline bool ka__be_queue_native(ka__queue *q, ka_native_queue *out) {
    if (!q->dev->ops->queue_native) return false;
    q->dev->ops->queue_native(q, out);
    return true;
}
static inline bool ka__be_has_graphs(const ka__device *d) { return d->ops->graph_make != NULL; }
/* The graph hooks' wrappers are in graph.h, beside struct ka__graph. */
static inline void ka__be_queue_stats(ka__queue *q, ka_queue_stats *out) {
    if (q->dev->ops->queue_stats) q->dev->ops->queue_stats(q, out);
}
static inline bool ka__be_has_timing(const ka__device *d) { return d->ops->event_elapsed != NULL; }
static inline bool ka__be_wait_sleeps(const ka__device *d) { return d->ops->flags & KA__BE_WAIT_SLEEPS; }

#endif
