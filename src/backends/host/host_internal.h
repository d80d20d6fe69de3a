/* The host back-end's state: kernels in libka's dialect compiled by the
 * system C compiler into a shared object, run on the calling thread or a
 * persistent thread pool (host_exec.h). Not installed. */
#ifndef KA_HOST_INTERNAL_H
#define KA_HOST_INTERNAL_H

#include "backend.h"
#include "host_exec.h"

#include <setjmp.h>
#include <stddef.h>

/* A launch of fewer padded work-items runs whole in the calling thread: the
 * pool's wake-up costs more than such a kernel's work. */
#define KA__HOST_INLINE_ITEMS 4096u
/* Work-group limit, and the fiber stack of each item of a group with barriers. */
#define KA__HOST_MAX_WG 1024u
#define KA__HOST_FIBER_STACK (64u * 1024u)
/* Dynamic local memory (ka_arg_local) per thread: the device's local_mem_size. */
#define KA__HOST_LOCAL_MEM (256u * 1024u)
/* Commands an asynchronous queue holds before a further one waits for room. */
#define KA__HOST_RING 64u
/* Bytes of KA_ARG_BYTES values one asynchronous launch may carry. */
#define KA__HOST_BLOB 4096u

/* ---- the device (host_device.c) ------------------------------------------- */
struct ka__hqueue;
struct ka__hdefer;
struct ka__hguard;

/* The compiler's default limits ($KA_CC_TIMEOUT, $KA_CC_MEMORY) and their
 * largest values: room for the primitives' programs on a loaded machine
 * (docs/API.md, "The host back-end: what it runs, its files, its limits",
 * has the measurements behind them). */
#define KA__CC_TIMEOUT_S 300u
#define KA__CC_MEMORY_MIB 4096u
#define KA__CC_TIMEOUT_MAX 1000000u
#define KA__CC_MEMORY_MAX ((uint64_t)1 << 24)

/* What one run of the compiler may take; 0: no limit. */
typedef struct ka__cc_limits {
    uint32_t timeout_s;       /* wall clock, then its process group is killed */
    uint64_t memory_mib;      /* its address space (RLIMIT_AS), each file it writes (RLIMIT_FSIZE),
                               * and the output libka reads back */
} ka__cc_limits;

typedef struct ka__hdev {
    char cc[4096];            /* the compiler's path, chosen at open */
    ka__cc_limits lim;        /* its limits, read at open */
    char target[256];         /* the cache key's target (ka__host_build_target) */
    ka__pool *pool;
    _Atomic uint32_t nqueues; /* alive: with the pool's threads, the fiber sets kept */
    _Atomic uint32_t fs_lock; /* the free fiber sets: */
    uint32_t nfree;
    ka__fiberset *fs_free;    /* last given back first, linked by ka__fiberset_link */
    /* Releases deferred until the commands enqueued before them have run
     * (host_defer.c), and the queues they wait for; under defer_lock. */
    pthread_mutex_t defer_lock;
    struct ka__hqueue *queues;
    uint64_t serials;         /* the queues made: each queue's serial */
    struct ka__hdefer *deferred;
    _Atomic uint32_t ndeferred;
    /* KA_DEBUG: the guarded buffers (host_guard.c), under guard_lock; once
     * one exists, kernels run with a recovery point for their faults. */
    pthread_mutex_t guard_lock;
    struct ka__hguard *guards;
    _Atomic bool guarded;
    /* Completion callbacks run on a thread of their own (host_event.c): a
     * stack of events pushed by the threads that completed them. */
    pthread_t cb_thread;
    bool cb_started;
    _Atomic(struct ka__hev *) cb_head;
    _Atomic uint32_t cb_seq;   /* futex word: bumped at each push */
    _Atomic uint32_t cb_asleep;
    _Atomic bool cb_stop;
} ka__hdev;

/* Resolves the compiler ($KA_CC, else cc, gcc, clang on PATH) into out. */
ka_status ka__host_find_cc(char *out, size_t cap);
/* A fiber set for one thread's run of work-groups of `items` items; given
 * back after. */
ka_status ka__host_fs_take(ka__hdev *hd, uint32_t items, ka__fiberset **out);
void ka__host_fs_give(ka__hdev *hd, ka__fiberset *fs);
/* Frees the free sets beyond what can run at once (a queue was released). */
void ka__host_fs_trim(ka__hdev *hd);

/* ---- programs and kernels (host_program.c, host_source.c) ------------------ */
/* The same layout as ka__hctx of include/ka_kernel_c.h. */
typedef struct ka__hctx {
    uint64_t nd[4];
    uint64_t gsize[3], lsize[3], ngroups[3];
    uint32_t *arec;
    uint64_t akid;
} ka__hctx;

typedef void (*ka__hrows_fn)(const ka__hctx *c, void *const *a, uint64_t r0, uint64_t r1, uint64_t c0, uint64_t c1);
typedef void (*ka__hgroups_fn)(const ka__hctx *c, void *const *a, uint64_t q0, uint64_t q1);
typedef void (*ka__hitem_fn)(const ka__hctx *c, void *const *a, uint64_t g0, uint64_t g1, uint64_t g2);

enum ka__hpath { KA__HP_ROWS, KA__HP_GROUPS, KA__HP_ITEMS };

typedef struct ka__hprog {
    void *dl;               /* dlopen handle */
} ka__hprog;

typedef struct ka__hkern {
    uint8_t path;           /* enum ka__hpath */
    bool has_local_arg;
    union {
        ka__hrows_fn rows;
        ka__hgroups_fn groups;
        ka__hitem_fn item;
    } fn;
    size_t size;            /* of this allocation: the name follows */
    char name[];            /* for a command's failure after the kernel is released */
} ka__hkern;

/* The source the compiler gets (host_source.c): head (the defines' lines,
 * NULL: none), then the scan pass's (pre NULL), or the build pass's with the
 * entries of the kernels the scan found in pre; the user's source under
 * `#line 1 "name"` (name NULL: "<program source>"). */
ka_status ka__host_compose(const char *head, const char *user, const char *pre, const char *name, char **src,
                           size_t *len);
/* Compiles b's program for hd (both passes) with b's options: *bin
 * (ka__alloc'd, *n bytes) the shared object, or KA_ERR_BUILD_FAILED with the
 * compiler's log, or the limit it reached, in the detail. */
ka_status ka__host_compile(const ka__hdev *hd, const ka__build *b, void **bin, size_t *n);
/* Writes bin to a file in a private temporary directory and loads it
 * (RTLD_NOW | RTLD_LOCAL); failures through ka__build_fail (a cached
 * object's are only logged). */
ka_status ka__host_load(const ka__build *b, const void *bin, size_t n, ka__hprog **out);

/* The build hooks (backend.h, "builds"). */
ka_status ka__host_build_target(ka__build *b);
ka_status ka__host_compile_hook(ka__build *b, void **binary, size_t *size, void **module);
ka_status ka__host_load_hook(ka__build *b, void *binary, size_t size, void **module);
void ka__host_module_release(ka__program *p, void *module, uint32_t target);
ka_status ka__host_kernel_create(ka__kernel *k);
void ka__host_kernel_release(ka__kernel *k);

/* ---- queues, commands and events (host_queue.c, host_event.c) --------------- */
typedef struct ka__hev {
    _Atomic uint32_t state;  /* 0 pending, 1 complete: the futex word */
    _Atomic uint32_t waiters;
    _Atomic int32_t status;
    _Atomic uint32_t refs;   /* the core's and the command's */
    _Atomic uint32_t lock;   /* callback registration against completion */
    ka__native_cb cb;        /* registered, not yet run (under lock) */
    void *cb_ctx;
    ka__native_cb run_cb;    /* taken at settle, for the callback thread */
    void *run_ctx;
    struct ka__hev *cb_next; /* the device's callback stack */
    int64_t t0, t1;          /* profiling queues: the command's start and end */
    uint32_t ticket;         /* a pool run's: a wait joins it (pooled) */
    bool pooled;
    char why[192];           /* the command's failure, for the wait that reports it */
    struct ka__hev *next_free;
    struct ka__hqueue *q;
} ka__hev;

enum ka__hcmd_kind { KA__HC_LAUNCH, KA__HC_WAIT };

typedef struct ka__hcmd {
    uint8_t kind;
    ka__hev *ev;             /* completed after the command; NULL: none */
    uint64_t after;          /* a pool run of the queue's to join first (KA__HOST_TICKET | ticket), or 0 */
    /* launch */
    const ka__hkern *hk;     /* not the ka__kernel: the program may be released before the command runs */
    ka__hctx ctx;
    uint64_t items;
    bool spread;             /* KA_LAUNCH_SPREAD: the pool runs it whatever its size */
    void *argv[KA_MAX_ARGS];
    uint64_t vals[KA_MAX_ARGS];
    unsigned char blob[KA__HOST_BLOB];
    /* wait: another queue's event */
    ka__hev *dep;
} ka__hcmd;

/* A launch's run over the pool or in one thread (host_launch.c). */
typedef struct ka__hrun {
    ka__hdev *hd;
    struct ka__hqueue *hq;
    const ka__hkern *hk;
    const ka__hctx *c;
    void *const *argv;
    uint64_t rows, cols, groups, group_items;
    _Atomic int32_t status; /* the first failure of a part */
    char why[160];          /* its message, written by the part that set status */
} ka__hrun;

/* The queue's pool launch in flight: ka_launch starts it and returns. */
typedef struct ka__hprun {
    ka__hcmd cmd;            /* the arguments, copied */
    ka__hrun r;
    ka__hev *ev;
    struct ka__hqueue *hq;
} ka__hprun;

/* A ticket as a queue keeps it: 0 is none. */
#define KA__HOST_TICKET (1ull << 32)

typedef struct ka__hqueue {
    ka__queue *q;
    ka__pool *pool;                  /* the device's */
    uint32_t arec[KA__ASSERT_WORDS]; /* ka_assert's record */
    /* The failure of a command that had no event to carry it, for the next
     * wait on the queue (assert_take); under fail_lock. */
    _Atomic uint32_t fail_lock;
    ka_status fail_st;
    char fail_why[224];
    /* The pool launch in flight, if any (KA__HOST_TICKET | its ticket), and
     * the lock that orders the launches that start one. */
    _Atomic uint64_t prun_ticket;
    _Atomic uint32_t prun_lock;
    ka__hprun *prun;
    /* Commands enqueued (ring or pool) and completed: a deferred release
     * waits until `done` reaches what `subm` was. */
    _Atomic uint64_t subm, done;
    /* Completions still under way: pool runs' after steps, callbacks on the
     * callback thread; the queue's release waits for both. */
    _Atomic uint32_t afters, cb_inflight;
    struct ka__hqueue *next_q;       /* the device's queues (defer_lock) */
    uint64_t serial;                 /* its place among them, in the order made */
    /* Commands given to the worker: slots [tail, head) of ring, under lock. */
    pthread_mutex_t lock;
    pthread_cond_t more, room;
    ka__hcmd *ring;
    uint32_t head, tail;
    _Atomic uint32_t pending;        /* commands in the ring or running */
    _Atomic uint32_t drained;        /* futex word: bumped when pending reaches 0 */
    bool stop;
    /* inline_max_items: launches of more padded work-items go to the
     * worker (UINT64_MAX: none; 0 with KA_INLINE_OFF: every one). */
    uint64_t sync_max_items;
    pthread_t worker;
    /* Native events: a free list grown by chunks, under ev_lock. */
    _Atomic uint32_t ev_lock;
    ka__hev *ev_free;
    struct ka__hev_chunk *chunks;
} ka__hqueue;

ka_status ka__host_queue_create(ka__queue *q, const ka_queue_config *cfg);
void ka__host_queue_release(ka__queue *q);
ka_status ka__host_queue_finish(ka__queue *q);
ka_status ka__host_queue_flush(ka__queue *q);
ka_status ka__host_queue_wait(ka__queue *q, void *ev);
ka_status ka__host_assert_take(ka__queue *q, uint32_t *rec);
/* Before a command that runs in the calling thread: the queue's earlier
 * (asynchronous) commands complete first; the calling thread helps run the
 * queue's pool launch in flight. */
void ka__host_drain(ka__hqueue *hq);
/* A free command slot of the ring (waits for room), to fill and submit. */
ka__hcmd *ka__host_cmd_begin(ka__hqueue *hq);
void ka__host_cmd_submit(ka__hqueue *hq);
/* Runs a launch command (in the worker or the caller), the pool's parts
 * joined: its status, and on failure its message in why (NULL: the
 * calling thread's detail). helper: the queue's worker, which may help
 * another queue's run finish first; the caller runs all parts itself then. */
ka_status ka__host_run_launch(struct ka__hqueue *hq, ka__hcmd *c, char *why, size_t cap, bool helper);
/* An asynchronous command has completed with st (why: its message), in two
 * steps: settle records it (the event's status, else the queue's record of
 * failures) and counts it completed; finish, once the queue no longer
 * counts it pending, completes the event (its callback may use the queue)
 * and frees the deferred releases it held back. */
void ka__host_cmd_settle(ka__hqueue *hq, ka__hev *e, ka_status st, const char *why);
void ka__host_cmd_finish(ka__hdev *hd, ka__hev *e);
/* A failure for the queue's next wait to return (once): a command's that
 * had no event, or a fault KA_DEBUG caught. Any thread. */
void ka__host_record_failure(ka__hqueue *hq, ka_status st, const char *why);

/* ---- deferred releases (host_defer.c) ---------------------------------------
 * A buffer's memory, a program's module or a kernel released while a
 * command enqueued before may still use it is freed once every queue of
 * the device has completed what it had enqueued at the release, as OpenCL
 * keeps a released object alive for its commands. */
enum ka__hdefer_kind { KA__HD_MEMORY, KA__HD_MODULE, KA__HD_KERNEL, KA__HD_MAPPING };
void ka__host_defer(ka__hdev *hd, enum ka__hdefer_kind kind, void *obj, size_t size);
/* Frees the deferred releases whose commands have completed. */
void ka__host_reclaim(ka__hdev *hd);
void ka__host_queue_listed(ka__hdev *hd, ka__hqueue *hq, bool add);
void ka__host_defer_fini(ka__hdev *hd); /* at device close: frees what is left */

ka_status ka__host_ev_new(ka__hqueue *hq, ka__hev **out);
void ka__host_ev_complete(ka__hev *e, ka_status st); /* settle, then finish */
/* A command's end in two steps: settle, in the thread that finished it,
 * while what it used is still the queue's: its status (and failure's
 * message), complete, waiters woken; then finish: its callback, if any, to
 * the device's callback thread, which drops the command's reference after
 * it (else dropped here). */
void ka__host_ev_settle(ka__hev *e, ka_status st, const char *why);
void ka__host_ev_finish(ka__hev *e);
/* The device's callback thread (started at open, stopped at close). */
ka_status ka__host_cb_start(ka__hdev *hd);
void ka__host_cb_stop(ka__hdev *hd);
void ka__host_ev_unref(ka__hev *e);
ka_status ka__host_events_init(ka__hqueue *hq); /* the first chunk of events */
void ka__host_events_fini(ka__hqueue *hq);
int ka__host_event_query(void *ev, ka_status *st);
ka_status ka__host_event_callback(void *ev, ka__native_cb cb, void *ctx);
ka_status ka__host_event_wait(void *ev);
ka_status ka__host_event_elapsed(void *ev, uint64_t *ns);
/* A command run in the calling thread that asked for an event: NULL (it is
 * complete on return), or on a profiling queue a complete event timing it
 * from t0 to now. */
ka_status ka__host_done_event(ka__queue *q, int64_t t0, ka_status st, void **ev);
void ka__host_event_release(void *ev);
const char *ka__host_event_error(void *ev); /* a failed command's message */

/* ---- KA_DEBUG's guarded buffers and faults (host_guard.c) -------------------- */
/* ThreadSanitizer's signal handling does not survive a jump out of a
 * handler: its builds keep the plain guard zones (writes only). */
#if defined(__SANITIZE_THREAD__)
#define KA__HOST_GUARD_PAGES 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KA__HOST_GUARD_PAGES 0
#endif
#endif
#ifndef KA__HOST_GUARD_PAGES
#define KA__HOST_GUARD_PAGES 1
#endif
/* A kernel's fault caught by the handler: where the thread jumps back to. */
typedef struct ka__hfault {
    sigjmp_buf jb;
    void *addr; /* the address accessed */
    int sig;    /* SIGSEGV or SIGBUS */
    int write;  /* 1 a write, 0 a read, -1 not known */
} ka__hfault;
/* The buffer (b->guard > 0: a debug device's) in a mapping of its own whose
 * end touches inaccessible pages; b->guard becomes the padding to 64 bytes. */
ka_status ka__host_guard_alloc(ka__buffer *b);
/* Frees (deferred) a guarded buffer's mapping; false if b is not one. */
bool ka__host_guard_free(ka__buffer *b);
void ka__host_guard_fini(ka__hdev *hd);
/* This thread's recovery point while it runs a kernel's part: the previous
 * one, to give back to disarm. */
ka__hfault *ka__host_fault_arm(ka__hfault *f);
void ka__host_fault_disarm(ka__hfault *outer);
/* Before a launch on a device with guarded buffers: the fault handler is
 * ours again if the application replaced it since. */
void ka__host_fault_ready(void);
/* What kernel's caught fault touched: the buffer and the offset, or no buffer. */
void ka__host_fault_message(ka__hdev *hd, const ka__hfault *f, const char *kernel, char *out, size_t cap);

/* ---- launch and memory (host_launch.c, host_memory.c) ----------------------- */
ka_status ka__host_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs, void **ev);
ka_status ka__host_buffer_create(ka__buffer *b);
void ka__host_buffer_release(ka__buffer *b);
void ka__host_buffer_native(ka__buffer *b, ka_native_buffer *out);
ka_status ka__host_buffer_write(ka__queue *q, ka__buffer *b, size_t off, size_t n, const void *src, void **ev, bool block);
ka_status ka__host_buffer_read(ka__queue *q, ka__buffer *b, size_t off, size_t n, void *dst, void **ev, bool block);
ka_status ka__host_buffer_copy(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n, void **ev, bool block);
ka_status ka__host_buffer_fill(ka__queue *q, ka__buffer *b, const void *pat, size_t psz, size_t off, size_t n, void **ev, bool block);
ka_status ka__host_buffer_wrap(ka__buffer *b);
ka_status ka__host_buffer_init(ka__buffer *b, const void *src);
ka_status ka__host_buffer_guard(ka__buffer *b, void *host, bool write);
ka_status ka__host_buffer_map(ka__queue *q, ka__buffer *b, size_t off, size_t n, uint32_t flags, void **ptr, void **token);
ka_status ka__host_buffer_unmap(ka__queue *q, ka__buffer *b, const struct ka__map *m);

ka_status ka__host_enumerate(ka_device_info *out, uint32_t cap, uint32_t *n);
ka_status ka__host_device_open(ka__device *d, uint32_t index);
void ka__host_device_close(ka__device *d);

#endif
