/* The host back-end's persistent thread pool (host_exec.h).
 *
 * A run is one cache line of state: the caller writes (fn, ctx), resets the
 * count of parts done and bumps the generation; workers watch the
 * generation. A worker that finds no new run spins for a bounded time (pause
 * instructions, the clock read every few dozen), then sleeps on the
 * generation's futex; a run makes the wake system call only when a worker
 * counts itself asleep.
 *
 * Each worker's part has a claim word: whoever swaps the run's generation
 * into it first runs the part, the worker or the caller. The caller runs
 * part 0, waits briefly for every worker to claim its own part, then runs
 * the parts still unclaimed itself: a worker that is asleep or waits for a
 * core (an oversubscribed machine, an OpenMP team beside us) costs the run
 * its part's time, never a wake-up's or a time slice's. Parts workers run
 * the caller waits for by spinning a bounded time, then sleeping on the
 * done counter, which the last part wakes only when the caller says it
 * sleeps. Parts keep their threads while workers keep up, so each thread
 * sees the same slab of data every run.
 *
 * Memory order: the generation's bump releases the caller's writes (the
 * kernel's arguments, fn, ctx) to the workers that acquire it; each part's
 * increment of the done counter releases its writes to the caller. The
 * sleep/wake handshakes are store-then-load on two words from both sides
 * (sequentially consistent), so one side always sees the other. */
#define _GNU_SOURCE /* pthread_setname_np */
#include "host_exec.h"

#include "event.h" /* ka__futex_wait, ka__futex_wake_all, ka__cpu_relax, ka__now_ns */

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
/* How long after the bump the caller waits for workers to claim their
 * parts: a spinning worker claims in well under a microsecond; one that has
 * not by then is asleep or waits for a core, and the caller runs its part. */
#define POOL_START_NS 3000
/* Pause instructions between two clock reads while spinning. */
#define POOL_SPIN_CHECK 32

typedef struct pool_worker {
    alignas(64) _Atomic uint32_t claim; /* the generation of the last run whose part was claimed */
    ka__pool *pool;
    uint32_t part;
    pthread_t thread;
} pool_worker;

struct ka__pool {
    /* The run, written by the caller, read by every worker. */
    alignas(64) _Atomic uint32_t gen; /* futex word of the workers */
    ka__pool_fn fn;
    void *ctx;
    bool stop; /* set with the last bump: workers exit */
    /* Completion, written by the workers, read by the caller. */
    alignas(64) _Atomic uint32_t done;    /* parts done in this run (futex word of the caller) */
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

/* Claims part w for run g: true for the first claimant, worker or caller.
 * A compare-exchange, never a plain swap: a worker that read g, then lost
 * its core while the caller finished g and later runs, must not claim a
 * later run's part under g's name. */
static bool claim(pool_worker *w, uint32_t g) {
    uint32_t old = atomic_load_explicit(&w->claim, memory_order_relaxed);
    while ((int32_t)(g - old) > 0) /* wrap-safe: old is an earlier run */
        if (atomic_compare_exchange_weak(&w->claim, &old, g)) return true;
    return false;
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
        if (p->stop) return NULL;
        /* Claimed: run g cannot end before this part is done, so fn and
         * ctx are g's. Not claimed: the caller ran it (g may be over). */
        if (!claim(w, g)) continue;
        p->fn(p->ctx, w->part, p->n);
        /* The last part wakes the caller if it sleeps (seq_cst: the caller
         * sets caller_asleep, then re-reads done). */
        if (atomic_fetch_add(&p->done, 1) + 1 == p->n - 1 && atomic_load(&p->caller_asleep))
            ka__futex_wake_all(&p->done);
    }
}

/* Stops and joins the started workers. */
static void stop_workers(ka__pool *p) {
    if (!p->started) return;
    p->stop = true;
    atomic_fetch_add(&p->gen, 1);
    if (atomic_load(&p->sleepers)) ka__futex_wake_all(&p->gen);
    for (uint32_t i = 0; i < p->started; i++) pthread_join(p->workers[i].thread, NULL);
    p->started = 0;
}

static void free_pool(ka__pool *p) {
    if (p->wraw) ka__free(p->wraw, (size_t)(p->n - 1) * sizeof *p->workers + 63);
    ka__free(p->raw, sizeof *p + 63);
}

ka_status ka__pool_create(uint32_t nthreads, ka__pool **out) {
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka__pool_create: out is NULL");
    *out = NULL;
    if (nthreads < 1 || nthreads > 65536)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "host pool: %u threads (1 to 65536)", nthreads);
    /* ka__alloc promises no alignment beyond malloc's: align by hand. */
    void *raw = ka__alloc(sizeof(ka__pool) + 63);
    if (!raw) return ka__fail(KA_ERR_OUT_OF_MEMORY, "host pool: out of memory");
    ka__pool *p = (ka__pool *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    memset(p, 0, sizeof *p);
    p->raw = raw;
    p->n = nthreads;
    if (nthreads == 1) {
        *out = p;
        return KA_OK;
    }
    p->wraw = ka__calloc(1, (size_t)(nthreads - 1) * sizeof *p->workers + 63);
    p->workers = p->wraw ? (pool_worker *)(((uintptr_t)p->wraw + 63) & ~(uintptr_t)63) : NULL;
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

void ka__pool_run(ka__pool *p, ka__pool_fn fn, void *ctx) {
    uint32_t n = p->n;
    /* One run at a time holds the workers; another (a second thread, or a
     * part that runs the pool again) does every part itself, in order. */
    if (n == 1 || atomic_exchange_explicit(&p->busy, 1, memory_order_acquire)) {
        for (uint32_t i = 0; i < n; i++) fn(ctx, i, n);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    uint32_t g = atomic_fetch_add(&p->gen, 1) + 1; /* seq_cst: publishes the run, then reads sleepers */
    if (atomic_load(&p->sleepers)) ka__futex_wake_all(&p->gen);
    int64_t until = ka__now_ns() + POOL_START_NS;

    fn(ctx, 0, n);

    /* Parts not claimed by the deadline: their workers are not running. */
    uint32_t want = n - 1, d = 0, next = 0;
    while (next < want) {
        if (atomic_load_explicit(&p->workers[next].claim, memory_order_relaxed) == g) {
            next++;
            continue;
        }
        if (ka__now_ns() < until) {
            ka__cpu_relax();
            continue;
        }
        for (; next < want; next++)
            if (claim(&p->workers[next], g)) {
                fn(ctx, next + 1, n);
                d++;
            }
    }
    /* The workers' parts: spin, then sleep until the last one wakes us. */
    if (d) atomic_fetch_add(&p->done, d);
    d = atomic_load_explicit(&p->done, memory_order_acquire);
    if (d != want) {
        until = ka__now_ns() + POOL_SPIN_NS;
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
