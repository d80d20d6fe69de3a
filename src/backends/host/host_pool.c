/* The host back-end's persistent thread pool (host_exec.h).
 *
 * A run is one cache line of state: the caller writes (fn, ctx), resets the
 * count of slices done and bumps the generation; workers watch the
 * generation. A worker that finds no new run spins for a bounded time (pause
 * instructions, the clock read every few dozen), then sleeps on the
 * generation's futex; a run makes the wake system call only when a worker
 * counts itself asleep.
 *
 * Each thread's part of a run is POOL_SLICES consecutive slices. A worker
 * takes its slices in order from a counter of its own; the caller runs its
 * own slices, then, once POOL_START_NS have passed since the bump, takes
 * the slices still untaken from the same counters, one at a time. A worker
 * that is asleep or waits for a core (an oversubscribed machine, an OpenMP
 * team beside us) so costs the run at most a slice's time beyond its share,
 * never a wake-up's or a time slice's; one that wakes late still runs the
 * rest of its part. While the workers keep up, each thread runs the same
 * slices every run, so it sees the same slab of data.
 *
 * The slices done are counted (one add per thread and run); the caller
 * spins a bounded time for the count, then sleeps on it, and the last add
 * wakes it only when it says it sleeps.
 *
 * Memory order: the generation's bump releases the caller's writes (the
 * kernel's arguments, fn, ctx) to the workers that acquire it; each add to
 * the done count releases its thread's writes to the caller. The sleep/wake
 * handshakes are store-then-load on two words from both sides (sequentially
 * consistent), so one side always sees the other. */
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
    /* The run, written by the caller, read by every worker. */
    alignas(64) _Atomic uint32_t gen; /* futex word of the workers */
    ka__pool_fn fn;
    void *ctx;
    _Atomic bool stop; /* set with the last bump: workers exit; read by workers that took no part in a run */
    /* Completion, written by the workers, read by the caller. */
    alignas(64) _Atomic uint32_t done;    /* workers' slices done in this run (futex word of the caller) */
    _Atomic uint32_t caller_asleep;       /* the caller sleeps on done: the last part wakes it */
    /* Rarely written. */
    alignas(64) _Atomic uint32_t sleepers; /* workers asleep on gen (or about to be) */
    _Atomic uint32_t busy;                 /* a run holds the workers */
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

/* Takes the next untaken slice of worker w's part for run g: its index in
 * the part (0 to POOL_SLICES - 1), or -1 when none is left. A worker that
 * read g, then lost its core while later runs went by, finds a newer run
 * in the counter and takes nothing under g's name. */
static int take(pool_worker *w, uint32_t g) {
    uint64_t v = atomic_load_explicit(&w->next, memory_order_relaxed);
    for (;;) {
        uint32_t vg = (uint32_t)(v >> 32), k = (uint32_t)v;
        if (vg != g && (int32_t)(vg - g) > 0) return -1; /* a newer run */
        if (vg != g) k = 0;                               /* an earlier run: g's first slice */
        if (k >= POOL_SLICES) return -1;
        if (atomic_compare_exchange_weak(&w->next, &v, (uint64_t)g << 32 | (k + 1))) return (int)k;
    }
}

/* The slices of a run that the workers own: what the done count reaches. */
static uint32_t workers_slices(const ka__pool *p) { return (p->n - 1) * POOL_SLICES; }

/* Adds d slices to the run's done count; wakes the caller if the run is
 * complete and the caller sleeps (seq_cst: it sets caller_asleep, then
 * re-reads done). */
static void add_done(ka__pool *p, uint32_t d) {
    if (atomic_fetch_add(&p->done, d) + d == workers_slices(p) && atomic_load(&p->caller_asleep)) ka__futex_wake_all(&p->done);
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
        /* Run g cannot end before a slice taken under g is counted, so fn
         * and ctx are g's while this thread holds one. */
        uint32_t d = 0;
        for (int k; (k = take(w, g)) >= 0; d++) p->fn(p->ctx, w->part * POOL_SLICES + (uint32_t)k, p->n * POOL_SLICES);
        if (d) add_done(p, d);
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
     * threads, never in the middle of a kernel's part. */
    sigset_t all, old;
    sigfillset(&all);
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

void ka__pool_run(ka__pool *p, ka__pool_fn fn, void *ctx) {
    uint32_t n = p->n, parts = n * POOL_SLICES;
    /* One run at a time holds the workers; another (a second thread, or a
     * part that runs the pool again) does every part itself, in order. */
    if (n == 1 || atomic_exchange_explicit(&p->busy, 1, memory_order_acquire)) {
        for (uint32_t i = 0; i < parts; i++) fn(ctx, i, parts);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    uint32_t g = atomic_fetch_add(&p->gen, 1) + 1; /* seq_cst: publishes the run, then reads sleepers */
    if (atomic_load(&p->sleepers)) ka__futex_wake_all(&p->gen);
    int64_t start = ka__now_ns();

    for (uint32_t i = 0; i < POOL_SLICES; i++) fn(ctx, i, parts);

    /* The slices of workers that have not taken them: one at a time, after
     * POOL_START_NS (a spinning worker has started by then). */
    uint32_t want = workers_slices(p), d = 0;
    while (ka__now_ns() - start < POOL_START_NS && atomic_load_explicit(&p->done, memory_order_relaxed) != want)
        ka__cpu_relax();
    for (uint32_t w = 0; w < n - 1; w++)
        for (int k; (k = take(&p->workers[w], g)) >= 0; d++) fn(ctx, (w + 1) * POOL_SLICES + (uint32_t)k, parts);
    /* The workers' slices: spin, then sleep until the last add wakes us. */
    if (d) atomic_fetch_add(&p->done, d);
    d = atomic_load_explicit(&p->done, memory_order_acquire);
    if (d != want) {
        int64_t until = ka__now_ns() + POOL_SPIN_NS;
        while (d != want) {
            uint32_t before = d;
            d = spin_while(&p->done, before, until);
            if (d != before) continue; /* progress: spin on, until `until` */
            atomic_store(&p->caller_asleep, 1); /* seq_cst: then re-read done */
            d = atomic_load(&p->done);
            if (d != want) ka__futex_wait(&p->done, d, INT64_MAX);
            atomic_store_explicit(&p->caller_asleep, 0, memory_order_relaxed);
            d = atomic_load_explicit(&p->done, memory_order_acquire);
        }
    }
    atomic_store_explicit(&p->busy, 0, memory_order_release);
}
