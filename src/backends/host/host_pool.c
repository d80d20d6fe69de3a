/* The host back-end's persistent thread pool (host_exec.h).
 *
 * A run is one cache line of state: the starter writes (fn, ctx, done), resets
 * the count of slices done and bumps the generation; workers watch the
 * generation. A worker that finds no new run spins for a bounded time (pause
 * instructions, the clock read every few dozen), then sleeps on the
 * generation's futex; a run makes the wake system call only when a worker
 * counts itself asleep.
 *
 * Each of the n parts of a run (part 0 the starter's, part t worker t's) is
 * POOL_SLICES consecutive slices, taken in order from a counter of the part's
 * own. A worker runs its own slices, then takes the slices still untaken of
 * part 0, and, once POOL_START_NS have passed since the start, of the other
 * parts, one at a time; so does a thread that joins the run (ka__pool_join):
 * part 0's first, the others' after POOL_START_NS. A run started by a launch that returned so goes on
 * without its starter, and one whose starter comes back soon (the next launch
 * of a time loop, a wait) runs as before: each thread on the same slices, so
 * the same slab of data, every run. A worker that is asleep or waits for a
 * core (an oversubscribed machine, an OpenMP team beside us) costs the run at
 * most a slice's time beyond its share, never a wake-up or a time slice, and
 * one that wakes late still runs the rest of its part.
 *
 * The slices done are counted (one add per thread and run); the add that
 * counts the last slice completes the run: the hooks' settle, then the
 * run's generation stored in `completed` and the next run let start, then
 * the hooks' after (which may itself start or join runs).
 * Joiners spin a bounded time on `completed`, then sleep on it, and the
 * completion wakes them only when one says it sleeps. Runs are sequential
 * (one holds the workers at a time), so a run whose generation is no longer
 * the current one is complete: a ticket never goes stale, however many runs
 * pass.
 *
 * Memory order: the generation's bump releases the starter's writes (the
 * kernel's arguments, fn, ctx) to the workers that acquire it; each add to
 * the done count releases its thread's writes to the completing thread,
 * whose store of `completed` (and of `busy`) releases them to joiners and to
 * the next starter. The sleep/wake handshakes are store-then-load on two
 * words from both sides (sequentially consistent), so one side always sees
 * the other. */
#define _GNU_SOURCE /* pthread_setname_np */
#include "host_exec.h"

#include <limits.h>
#include <signal.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* How long a thread spins before it sleeps: long enough to cover the host
 * code between two launches of a time loop, short enough that an idle or
 * oversubscribed pool gives its cores back soon. */
#define POOL_SPIN_NS 50000
/* How long after the bump the caller leaves a worker's slices to it: a
 * spinning worker starts in well under a microsecond; one that has not by
 * then is asleep or waits for a core. */
#define POOL_START_NS 3000
/* Slices per thread: what the caller may take of a late worker's part at a time. */
#define POOL_SLICES 4
/* Pause instructions between two clock reads while spinning. */
#define POOL_SPIN_CHECK 32

typedef struct pool_worker {
    /* The run (high 32 bits: its generation) and the next of this worker's
     * slices to take (low 32 bits). */
    alignas(64) _Atomic uint64_t next;
    ka__pool *pool;
    uint32_t part;
    pthread_t thread;
} pool_worker;

struct ka__pool {
    /* The run, written by the starter, read by every worker. */
    alignas(64) _Atomic uint32_t gen; /* futex word of the workers */
    ka__pool_fn fn;
    void *ctx;
    const ka__pool_done *done_hooks;
    void *done_ctx;
    _Atomic int64_t start_ns; /* when the run was started */
    _Atomic bool stop; /* set with the last bump: workers exit; read by workers that took no part in a run */
    /* Part 0's slices: the starter's, taken first by any joiner. */
    alignas(64) _Atomic uint64_t next0;
    /* Completion, written by the threads that run slices. */
    alignas(64) _Atomic uint32_t done;      /* slices done in this run */
    _Atomic uint32_t completed;             /* the last complete run's generation (futex word of joiners) */
    _Atomic uint32_t joiners_asleep;        /* joiners sleeping on completed: the completion wakes them */
    /* Rarely written. */
    alignas(64) _Atomic uint32_t sleepers; /* workers asleep on gen (or about to be) */
    _Atomic uint32_t busy;                 /* a run holds the workers, from its start to its completion */
    uint32_t n;
    uint32_t started; /* worker threads created (n - 1 once made) */
    pool_worker *workers; /* n - 1, cache-line aligned */
    void *raw, *wraw;     /* the allocations these were aligned in */
};

/* Spins while *word == val, until the clock reads `until`; returns its last value. */
static uint32_t spin_while(_Atomic uint32_t *word, uint32_t val, int64_t until) {
    for (;;) {
        for (int i = 0; i < POOL_SPIN_CHECK; i++) {
            ka__cpu_relax();
            uint32_t v = atomic_load_explicit(word, memory_order_acquire);
            if (v != val) return v;
        }
        if (ka__now_ns() >= until) return val;
    }
}

/* The counter of part t's slices. */
static _Atomic uint64_t *counter(ka__pool *p, uint32_t t) { return t ? &p->workers[t - 1].next : &p->next0; }

/* Takes the next untaken slice of a part for run g: its index in the part
 * (0 to POOL_SLICES - 1), or -1 when none is left. A thread that read g,
 * then lost its core while later runs went by, finds a newer run in the
 * counter and takes nothing under g's name. */
static int take(_Atomic uint64_t *next, uint32_t g) {
    uint64_t v = atomic_load_explicit(next, memory_order_relaxed);
    for (;;) {
        uint32_t vg = (uint32_t)(v >> 32), k = (uint32_t)v;
        if (vg != g && (int32_t)(vg - g) > 0) return -1; /* a newer run */
        if (vg != g) k = 0;                               /* an earlier run: g's first slice */
        if (k >= POOL_SLICES) return -1;
        if (atomic_compare_exchange_weak(next, &v, (uint64_t)g << 32 | (k + 1))) return (int)k;
    }
}

/* The pool whose part this thread runs now, if any: a part that runs the
 * pool again must not wait for the run it is part of. */
static _Thread_local const ka__pool *in_part;

/* Runs part t's untaken slices of run g; how many it ran. Run g cannot
 * complete while this thread holds a slice it has not counted, so fn and
 * ctx are g's throughout. */
static uint32_t run_part(ka__pool *p, uint32_t t, uint32_t g) {
    uint32_t d = 0, parts = p->n * POOL_SLICES;
    const ka__pool *outer = in_part;
    in_part = p;
    for (int k; (k = take(counter(p, t), g)) >= 0; d++) p->fn(p->ctx, t * POOL_SLICES + (uint32_t)k, parts);
    in_part = outer;
    return d;
}

/* Whether run g is over: it is not the current run, or it completed. */
static bool complete(ka__pool *p, uint32_t g) {
    return atomic_load_explicit(&p->gen, memory_order_acquire) != g ||
           atomic_load_explicit(&p->completed, memory_order_acquire) == g;
}

/* Adds d slices to run g's done count; the add that counts the last slice
 * completes the run: the hooks' settle, then `completed` and `busy` (after
 * which another run may start and reuse fn, ctx and the counters), a wake
 * of sleeping joiners (seq_cst: a joiner counts itself asleep, then
 * re-reads completed), then the hooks' after, which may start or join runs
 * of its own. */
static void add_done(ka__pool *p, uint32_t d, uint32_t g) {
    if (!d || atomic_fetch_add(&p->done, d) + d != p->n * POOL_SLICES) return;
    const ka__pool_done *h = p->done_hooks;
    void *keep[2] = {NULL, NULL};
    if (h) h->settle(p->done_ctx, keep);
    atomic_store(&p->completed, g);
    atomic_store_explicit(&p->busy, 0, memory_order_release);
    if (atomic_load(&p->joiners_asleep)) ka__futex_wake_all(&p->completed);
    if (h && h->after) h->after(keep);
}

static void *worker_main(void *arg) {
    pool_worker *w = arg;
    ka__pool *p = w->pool;
    uint32_t seen = 0; /* the generation the pool was created with */
    for (;;) {
        uint32_t g = atomic_load_explicit(&p->gen, memory_order_acquire);
        if (g == seen) g = spin_while(&p->gen, seen, ka__now_ns() + POOL_SPIN_NS);
        while (g == seen) {
            atomic_fetch_add(&p->sleepers, 1); /* seq_cst: then re-read gen */
            if (atomic_load(&p->gen) == seen) ka__futex_wait(&p->gen, seen, INT64_MAX);
            atomic_fetch_sub_explicit(&p->sleepers, 1, memory_order_relaxed);
            g = atomic_load_explicit(&p->gen, memory_order_acquire);
        }
        seen = g;
        if (atomic_load_explicit(&p->stop, memory_order_relaxed)) return NULL; /* ordered by the gen acquire */
        /* Its own part, then what is left of part 0 (the starter may be
         * away), counted at once; the others' only once POOL_START_NS have
         * passed and the run is not over: a look at every counter is a cache
         * miss each, on the run's critical path, and a worker that has not
         * started by then is asleep or has no core. */
        add_done(p, run_part(p, w->part, g) + run_part(p, 0, g), g);
        int64_t sweep = atomic_load_explicit(&p->start_ns, memory_order_relaxed) + POOL_START_NS;
        while (!complete(p, g) && ka__now_ns() < sweep) ka__cpu_relax();
        uint32_t d = 0;
        if (!complete(p, g))
            for (uint32_t i = 1; i < p->n; i++) {
                uint32_t t = (w->part + i) % p->n;
                if (t) d += run_part(p, t, g);
            }
        add_done(p, d, g);
    }
}

/* Stops and joins the started workers. */
static void stop_workers(ka__pool *p) {
    if (!p->started) return;
    atomic_store_explicit(&p->stop, true, memory_order_relaxed); /* released by the bump below */
    atomic_fetch_add(&p->gen, 1);
    if (atomic_load(&p->sleepers)) ka__futex_wake_all(&p->gen);
    for (uint32_t i = 0; i < p->started; i++) pthread_join(p->workers[i].thread, NULL);
    p->started = 0;
}

/* The first cache line boundary in an allocation 63 bytes larger than
 * needed: ka__alloc promises no alignment beyond malloc's. */
static void *line_up(void *raw) { return (void *)(((uintptr_t)raw + 63) & ~(uintptr_t)63); }

static void free_pool(ka__pool *p) {
    if (p->wraw) ka__free(p->wraw, (size_t)(p->n - 1) * sizeof *p->workers + 63);
    ka__free(p->raw, sizeof *p + 63);
}

ka_status ka__pool_create(uint32_t nthreads, ka__pool **out) {
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "pool: out is NULL");
    *out = NULL;
    if (nthreads < 1 || nthreads > 65536)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "host pool: %u threads (1 to 65536)", nthreads);
    void *raw = ka__alloc(sizeof(ka__pool) + 63);
    if (!raw) return ka__fail(KA_ERR_OUT_OF_MEMORY, "host pool: out of memory");
    ka__pool *p = line_up(raw);
    memset(p, 0, sizeof *p);
    p->raw = raw;
    p->n = nthreads;
    if (nthreads == 1) {
        *out = p;
        return KA_OK;
    }
    p->wraw = ka__calloc(1, (size_t)(nthreads - 1) * sizeof *p->workers + 63);
    p->workers = p->wraw ? line_up(p->wraw) : NULL;
    if (!p->workers) {
        free_pool(p);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "host pool: out of memory");
    }
    /* Workers block every signal: the application's handlers run in its own
     * threads, never in the middle of a kernel's part. But a fault's: a
     * blocked SIGSEGV would end the process where KA_DEBUG's handler turns
     * a kernel's into an error. */
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = 0;
    for (uint32_t i = 0; i < nthreads - 1; i++) {
        pool_worker *w = &p->workers[i];
        w->pool = p;
        w->part = i + 1;
        err = pthread_create(&w->thread, NULL, worker_main, w);
        if (err) break;
        p->started++;
        char name[16];
        snprintf(name, sizeof name, "ka-host-%u", (unsigned)(uint16_t)(i + 1)); /* parts < 65536 */
        pthread_setname_np(w->thread, name); /* a name is a convenience: failure is harmless */
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        stop_workers(p);
        free_pool(p);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "host pool: cannot create thread %u of %u: %s", p->started + 1,
                        nthreads, strerror(err));
    }
    *out = p;
    return KA_OK;
}

void ka__pool_destroy(ka__pool *p) {
    if (!p) return;
    stop_workers(p);
    free_pool(p);
}

uint32_t ka__pool_size(const ka__pool *p) { return p->n; }

uint32_t ka__pool_parts(const ka__pool *p) { return p->n * POOL_SLICES; }

bool ka__pool_start(ka__pool *p, ka__pool_fn fn, void *ctx, const ka__pool_done *done, void *done_ctx, uint32_t *ticket) {
    if (p->n == 1 || atomic_exchange_explicit(&p->busy, 1, memory_order_acquire)) return false;
    p->fn = fn;
    p->ctx = ctx;
    p->done_hooks = done;
    p->done_ctx = done_ctx;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_store_explicit(&p->start_ns, ka__now_ns(), memory_order_relaxed);
    uint32_t g = atomic_fetch_add(&p->gen, 1) + 1; /* seq_cst: publishes the run, then reads sleepers */
    if (atomic_load(&p->sleepers)) ka__futex_wake_all(&p->gen);
    *ticket = g;
    return true;
}

bool ka__pool_finished(ka__pool *p, uint32_t ticket) { return complete(p, ticket); }

bool ka__pool_inside(const ka__pool *p) { return in_part == p; }

bool ka__pool_help(ka__pool *p) {
    if (p->n == 1 || in_part == p) return false;
    uint32_t g = atomic_load_explicit(&p->gen, memory_order_acquire);
    if (atomic_load_explicit(&p->busy, memory_order_acquire)) ka__pool_join(p, g);
    return true;
}

void ka__pool_join(ka__pool *p, uint32_t g) {
    if (complete(p, g)) return;
    /* Part 0's slices, then, after POOL_START_NS (a spinning worker has
     * started its own by then), the slices no worker has taken. */
    add_done(p, run_part(p, 0, g), g); /* counted now: the run may complete without us */
    int64_t start = atomic_load_explicit(&p->start_ns, memory_order_relaxed);
    while (ka__now_ns() - start < POOL_START_NS && !complete(p, g)) ka__cpu_relax();
    uint32_t d = 0;
    for (uint32_t t = 1; t < p->n; t++) d += run_part(p, t, g);
    add_done(p, d, g);
    /* Until the last slice is counted: spin, then sleep until the completion wakes us. */
    int64_t until = ka__now_ns() + POOL_SPIN_NS;
    while (!complete(p, g)) {
        uint32_t c = atomic_load_explicit(&p->completed, memory_order_relaxed);
        if (ka__now_ns() < until) {
            spin_while(&p->completed, c, until);
            continue;
        }
        atomic_fetch_add(&p->joiners_asleep, 1); /* seq_cst: then re-read, seq_cst too */
        if (atomic_load(&p->gen) == g && atomic_load(&p->completed) != g) ka__futex_wait(&p->completed, c, INT64_MAX);
        atomic_fetch_sub_explicit(&p->joiners_asleep, 1, memory_order_relaxed);
    }
}

void ka__pool_try_run(ka__pool *p, ka__pool_fn fn, void *ctx) {
    uint32_t g;
    if (ka__pool_start(p, fn, ctx, NULL, NULL, &g)) {
        ka__pool_join(p, g);
        return;
    }
    uint32_t parts = p->n * POOL_SLICES;
    for (uint32_t i = 0; i < parts; i++) fn(ctx, i, parts);
}

void ka__pool_run(ka__pool *p, ka__pool_fn fn, void *ctx) {
    uint32_t g;
    /* One run at a time holds the workers: help the one in flight finish,
     * then start. A part that runs the pool again does every part itself,
     * in order: its own run cannot finish before it returns. */
    while (!ka__pool_start(p, fn, ctx, NULL, NULL, &g))
        if (!ka__pool_help(p)) {
            uint32_t parts = p->n * POOL_SLICES;
            for (uint32_t i = 0; i < parts; i++) fn(ctx, i, parts);
            return;
        }
    ka__pool_join(p, g);
}
