/* The core as a back-end sees it: the objects its hooks are handed (device,
 * queue, buffer, program and its variants, kernel) with what of them it may
 * read and set, the read-only view of a recorded graph, and the services it
 * may call (errors, allocation, the spin lock, the futex, the clock). A
 * back-end includes backend.h (which includes this), and of the core besides
 * only kdecl.h (the KA_KERNEL scanner) and freelist.h (a lock-free free
 * list); the rest, handles and pins, events, graphs, the kernel cache,
 * KA_DEBUG and tracing, is ka_internal.h's, the core's alone. Not installed.
 *
 * Each field is marked: [r] a back-end reads it; [s] a back-end's hook sets
 * it (the hook backend.h names; it may read it after); [c] the core's alone. */
#ifndef KA_OBJECTS_H
#define KA_OBJECTS_H

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
/* Records "<call>: <message>" as the per-thread detail, the call being the
 * public entry this thread is in (the core names it), and returns s, so
 * `return ka__fail(...)`. A message says what went wrong, never a call's name. */
ka_status ka__fail(ka_status s, const char *fmt, ...) KA_PRINTF(2, 3);
/* The status of this thread's last ka__fail: for a failure path that learns
 * only that a helper failed (the helper recorded why). */
ka_status ka__fail_status(void);
/* This thread's last detail without its "<call>: " prefix: what a failure
 * in another thread than the caller's (a worker) hands on to a wait. */
const char *ka__detail_message(void);
/* Appends text (e.g. a build log) to the current detail, truncating. */
void ka__append_detail(const char *text);
/* To the logger; with none, KA_LOG_WARN and KA_LOG_ERROR go to stderr,
 * "libka: " first, each distinct message once per process (every one under
 * KA_DEBUG), $KA_LOG choosing the levels (error.c). Warn of what gives a
 * wrong answer or ignores a request; the rest is KA_LOG_INFO. */
void ka__log(ka_log_level lvl, const char *fmt, ...) KA_PRINTF(2, 3);
/* Case-insensitive substring test (device selectors); false for an empty needle. */
bool ka__icontains(const char *hay, const char *needle);

/* ---- allocation (alloc.c): every libka allocation goes through these ---- */
void *ka__alloc(size_t size);
void *ka__calloc(size_t n, size_t size);
void ka__free(void *p, size_t size);
char *ka__strdup(const char *s);
void ka__strfree(char *s);

/* ---- clock, futex, spin lock (sync.c) ------------------------------------ */
int64_t ka__now_ns(void); /* CLOCK_MONOTONIC */
/* Sleeps while *addr == val, at most timeout_ns (INT64_MAX: no limit; <= 0:
 * returns at once). May return early: callers re-check. */
void ka__futex_wait(_Atomic uint32_t *addr, uint32_t val, int64_t timeout_ns);
void ka__futex_wake_all(_Atomic uint32_t *addr);
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ka__cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define ka__cpu_relax() __asm__ __volatile__("yield")
#else
#define ka__cpu_relax() ((void)0)
#endif
/* A test-and-set lock for the few hundred nanoseconds of set-args + enqueue:
 * cheaper than a mutex uncontended (measured with callgrind), yields when held. */
void ka__spin_wait(_Atomic uint32_t *l);
static inline void ka__spin_lock(_Atomic uint32_t *l) {
    if (KA_UNLIKELY(atomic_exchange_explicit(l, 1, memory_order_acquire))) ka__spin_wait(l);
}
static inline void ka__spin_unlock(_Atomic uint32_t *l) { atomic_store_explicit(l, 0, memory_order_release); }

/* ---- objects ----------------------------------------------------------- */
typedef struct ka__device ka__device;
typedef struct ka__queue ka__queue;
typedef struct ka__buffer ka__buffer;
typedef struct ka__program ka__program;
typedef struct ka__variant ka__variant;
typedef struct ka__kernel ka__kernel;
typedef struct ka__event ka__event;     /* the core's alone (event.h) */
typedef struct ka__graph ka__graph;     /* read through the graph view below */
typedef struct ka__backend ka__backend; /* the back-end contract: backend.h */

struct ka__device {
    uint64_t id;               /* [c] */
    const ka__backend *ops;    /* [c] what calls go through: the back-end, or a layer over it */
    ka_device_info info;       /* [s] device_open */
    void *native;              /* [s] device_open: the back-end's device state */
    _Atomic uint32_t live;     /* [c] queues, buffers, programs alive */
    /* KA_DEBUG, read at open (debug.c): the guarded buffers, their checks
     * and the scratch a check reads a guard zone into, under dbg_lock. */
    bool debug;                /* [c] */
    pthread_mutex_t dbg_lock;  /* [c] */
    ka__buffer *dbg_head;      /* [c] */
    void *dbg_scratch;         /* [c] KA__GUARD_MAX bytes, from the open (a back-end that keeps guard zones) */
};

/* What the dialect headers paste before a KA_KERNEL's name (ka_k_##name): a
 * kernel may be named like a built-in of OpenCL C, CUDA or C (step, min). */
#define KA__KERNEL_PREFIX "ka_k_"
/* A longer kernel name is compiled, on a back-end that asks for short
 * symbols (KA__BE_SHORT_SYMBOLS: OpenCL, whose drivers name files after
 * kernels), under its alias (ka__kernel_alias, kdecl.h): KA__ALIAS_PREFIX and
 * 32 hex digits of the name's hash, so ka_k_ka__h<hex>. A name starting
 * with ka__ is libka's, so no user's kernel shares it. */
#define KA__NAME_DIRECT_MAX 128
#define KA__ALIAS_PREFIX "ka__h"
#define KA__ALIAS_LEN (sizeof KA__ALIAS_PREFIX - 1 + 32)

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
    ka__variant *next;         /* [c] */
    uint32_t wg[3];            /* [c] */
    uint32_t sg;               /* [c] */
    uint64_t nd[3];            /* [c] */
    uint64_t defines_hash;     /* [c] */
    char *defines;             /* [c] */
    char *options;             /* [r] the full build options, every target's */
    char *head;                /* [r] the defines as #define and #undef lines, the program's then the
                                * configuration's, put before the prelude (build.c); NULL: none */
    bool plain;                /* [r] built without the back-end's appendix (with it, the build failed) */
    void *native;              /* [r] the module for the device (compile, load): cl_program / ka__cu_module * */
    void *alt;                 /* [c] the module for the alternate target: ka__build_alt gives it */
    pthread_mutex_t alt_lock;  /* [c] building alt */
};

struct ka__kernel {
    uint64_t id;               /* [r] its handle (ka_assert's record names it) */
    ka__program *prog;         /* [r] */
    ka__variant *var;          /* [r] */
    char *name;                /* [r] the user's: errors, traces */
    char *native_name;         /* [r] the compiled entry's (KA__KERNEL_PREFIX name, or alias): driver lookups */
    uint64_t hash;             /* [c] */
    ka__config_key key;        /* [c] */
    void *native;              /* [s] kernel_create: cl_kernel / CUfunction */
    uint32_t nargs;            /* [s] kernel_create: user arguments */
    ka__argsig *sig;           /* [s] kernel_create (ka__alloc'd, nargs; the core frees it) */
    uint64_t *fast_tag;        /* [c] per argument: the (kind, size) word of a matching ka_arg; kind 0: check fully */
    uint32_t max_wg;           /* [s] kernel_create */
    uint32_t pref_multiple;    /* [s] kernel_create */
    uint64_t local_mem;        /* [s] kernel_create */
    uint32_t auto_wg[3][3];    /* [c] default work-group by dims-1 */
    bool auto_rows;            /* [c] CPU: a default work-group fills dimension 0 first (rows) */
    bool wg_declared;          /* [c] key.wg is the kernel's KA_WORKGROUP */
    _Atomic uint32_t warned;   /* [c] the geometry warning was given (once per kernel) */
    void *bk;                  /* [s] kernel_create: the back-end's own state */
};

struct ka__program {
    uint64_t id;               /* [c] */
    ka__device *dev;           /* [r] */
    char *source;              /* [r] user source, without prelude */
    char *name;                /* [r] ka_build_options.name as a #line file name (escaped), "program" by default */
    char *log;                 /* [c] the scan's warnings (ka_program_build_log), NULL if none */
    size_t log_len;            /* [c] */
    struct ka__wgdecl {        /* [c] the KA_WORKGROUP declarations, by kernel */
        const char *kname;     /* in source */
        size_t len;
        uint32_t wg[3];
    } *wgdecl;
    uint32_t nwgdecl;          /* [c] */
    char *options;             /* [c] base compiler options */
    char *head;                /* [c] ka_build_options.defines as #define lines; NULL: none */
    ka__variant *variants;     /* [c] */
    uint32_t builds;           /* [c] */
    _Atomic uint32_t cache_hits; /* [c] native builds loaded from the persistent cache */
    bool asserts;              /* [r] the source calls ka_assert: kernels take the assertion record last */
    bool includes;             /* [c] the source has an #include: its builds skip the persistent cache */
    pthread_mutex_t lock;      /* [c] kernel table and variants (held around build and kernel hooks) */
    ka__kernel **table;        /* [c] open addressing, power-of-two capacity */
    uint32_t cap, count;       /* [c] */
};

struct ka__buffer {
    uint64_t id;               /* [c] */
    ka__device *dev;           /* [r] */
    size_t bytes;              /* [r] */
    void *native;              /* [s] buffer_create, buffer_wrap: cl_mem / CUdeviceptr */
    void *host;                /* [r] ka_buffer_wrap's host memory, else NULL */
    uint32_t be_flags;         /* [s] the back-end's own (CUDA: it registered host) */
    /* [r] KA_DEBUG: the back-end allocates guard more bytes after `bytes`, a
     * known pattern (debug.c); 0 without KA_DEBUG, for a wrapped buffer, or
     * on a back-end without a buffer_guard hook. [s] buffer_create may lower
     * it (backend.h). */
    size_t guard;
    struct ka__bdbg {          /* [c] KA_DEBUG's record, under the device's dbg_lock */
        ka__buffer *next, *prev;   /* the device's guarded buffers */
        const ka__queue *q;    /* the queue of the last launch naming it since its last check; NULL: none */
        uint32_t arg;          /* that launch's argument index */
        uint64_t kid;          /* that launch's kernel handle, */
        char kernel[64];       /* and its name */
    } dbg;
    /* [c] Live maps (ka_buffer_map), under map_lock; ptr NULL: a free entry.
     * buffer_unmap reads the one it ends. */
    _Atomic uint32_t map_lock;
    struct ka__map {
        void *ptr, *token;     /* what the user got; the back-end's (a staging copy) */
        size_t off, n;
        uint32_t flags;
    } maps[KA_MAX_MAPS];
};

struct ka__queue {
    uint64_t id;               /* [c] */
    ka__device *dev;           /* [r] */
    void *native;              /* [s] queue_create */
    int64_t spin_ns;           /* [c] */
    int efd;                   /* [c] eventfd, -1 until asked for */
    ka__graph *rec;            /* [c] the graph being recorded (ka_graph_begin), else NULL */
    ka__event *events;         /* [c] */
    uint32_t nevents;          /* [r] the queue's event slots: native events it can have pending */
    _Atomic uint64_t free_head; /* [c] tag<<32 | index+1 */
    _Atomic uint32_t callbacks_pending; /* [c] */
    _Atomic uint32_t callbacks_running; /* [c] completion callbacks between their first and last step */
    _Atomic uint64_t waits_polled, waits_slept, callbacks; /* [c] */
    bool profiling;            /* [r] ka_queue_config.profiling: ka_event_elapsed_ns may ask the back-end */
    _Atomic uint32_t hooks;    /* [c] KA__QH_*: what a wait on the queue does besides waiting (one test when none);
                                * a back-end sets KA__QH_ASSERTS through ka__queue_mark_asserts */
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

/* The record a kernel's failing ka_assert fills in the queue's buffer, as
 * 32-bit words: set (the first failure's flag), line, global id x, y, z
 * (64 bits each, low word first), the kernel's handle (64 bits). Written by
 * the dialect's ka__assert_fail (include/ka_kernel_cl.h, ka_kernel_cuda.h);
 * the assert_take hook copies it out. */
#define KA__ASSERT_WORDS 10

/* The completion callback a back-end's event_callback hook is given (cb):
 * ctx is the core's event. */
void ka__event_native_done(void *ctx, ka_status st);

/* ---- recorded graphs (graph_view.c): what the graph hooks read -------------
 * A recording is nodes in order; a back-end reads them through this view
 * and keeps its own per-node state (by node index) in its graph. */
enum ka__gnode_type { KA__GN_LAUNCH = 1, KA__GN_COPY, KA__GN_FILL };
typedef struct ka__gnode_view {
    uint32_t type;             /* enum ka__gnode_type */
    bool work;                 /* it enqueues something (an empty range or transfer does not) */
    /* launch: the kernel (live: checked by the core before graph_make and
     * each replay), its padded geometry as recorded (l->mem: the buffer
     * arguments' natives, current), and the arguments (the graph's copy) */
    ka__kernel *k;
    const struct ka__launch *l;
    const ka_arg *args;
    uint32_t nargs;
    /* copy (mem[0] at off[0] -> mem[1] at off[1]) and fill (mem[0]): the
     * buffers' natives, n bytes; a fill's pattern of psz bytes */
    void *mem[2];
    size_t off[2], n;
    const uint8_t *pattern;
    uint32_t psz;
} ka__gnode_view;
ka__device *ka__graph_device(const ka__graph *g);
uint32_t ka__graph_node_count(const ka__graph *g);
/* Node i (< ka__graph_node_count) into *out. */
void ka__graph_node(const ka__graph *g, uint32_t i, ka__gnode_view *out);
/* The back-end's executable graph: graph_make sets it (NULL: none, the core
 * replays node by node), graph_release clears it. */
void *ka__graph_native(const ka__graph *g);
void ka__graph_set_native(ka__graph *g, void *native);

/* Embedded kernel dialect preludes (generated from include/ka_kernel_*.h):
 * the back-ends' `prelude`. */
extern const char ka__prelude_opencl[];
extern const char ka__prelude_c[];
extern const char ka__prelude_cuda[];

#endif
