/* The host back-end's execution engine: a persistent thread pool per device
 * and the fibers that run the work-items of one work-group when its kernel
 * has barriers. host_pool.c and host_fiber.c implement it; the launch path
 * (host_launch.c) is its only user. Nothing here allocates once created. */
#ifndef KA_HOST_EXEC_H
#define KA_HOST_EXEC_H

#include "objects.h"

/* ---- the pool -------------------------------------------------------------
 * n threads in all: n - 1 workers, and part 0 for the thread that starts or
 * joins a run. Workers spin for a while after a run, then sleep on a futex;
 * a run wakes only sleeping workers. */
typedef struct ka__pool ka__pool;
typedef void (*ka__pool_fn)(void *ctx, uint32_t part, uint32_t nparts);
/* A run's completion, in the thread that finishes its last part: settle(ctx,
 * keep) while the run is still the pool's (ctx and what the parts read are
 * intact), storing in keep what the second step needs; then the run counts
 * as finished (another may start, ctx may be reused) and after(keep) runs
 * (may be NULL), which may call the application, start or join runs. */
typedef struct ka__pool_done {
    void (*settle)(void *ctx, void *keep[2]);
    void (*after)(void *keep[2]);
} ka__pool_done;

/* nthreads >= 1 (1: no worker thread, every run is inline). */
ka_status ka__pool_create(uint32_t nthreads, ka__pool **out);
void ka__pool_destroy(ka__pool *p); /* no run in progress */
uint32_t ka__pool_size(const ka__pool *p);  /* threads */
uint32_t ka__pool_parts(const ka__pool *p); /* parts of a run: a few per thread */
/* Starts a run that calls fn(ctx, i, n) once for every part i in [0, n), n =
 * ka__pool_parts(p), and returns at once with its ticket; the workers run it
 * whether or not anyone joins. done (may be NULL) is its completion, with
 * done_ctx. false when another run holds the workers (or n is 1): nothing
 * started. Thread t's parts are the t-th n / ka__pool_size(p) consecutive
 * ones, thread 0 a joiner: the same parts go to the same thread on every
 * run while the workers keep up (a static partition keeps each thread's
 * slab of data in its cache). Never allocates. */
bool ka__pool_start(ka__pool *p, ka__pool_fn fn, void *ctx, const ka__pool_done *done, void *done_ctx, uint32_t *ticket);
/* Runs the parts of run `ticket` that no thread has started (part 0's
 * first, the others' soon after the start), then returns once the run is
 * finished (its settle done; its after may still be running). Any thread,
 * any number at once; at once for a finished run. */
void ka__pool_join(ka__pool *p, uint32_t ticket);
/* Whether run `ticket` is finished (a ticket never goes stale). */
bool ka__pool_finished(ka__pool *p, uint32_t ticket);
/* After a start that found the workers held: joins the run in flight so a
 * retry can start; false where that would wait for the caller itself (a
 * part of p runs in this thread) or n is 1: run inline instead. */
bool ka__pool_help(ka__pool *p);
/* Whether this thread runs a part of p now. */
bool ka__pool_inside(const ka__pool *p);
/* Start and join; when another run holds the workers, helps it finish
 * first; inside a part of p (or with one thread) runs all n parts itself,
 * in order. */
void ka__pool_run(ka__pool *p, ka__pool_fn fn, void *ctx);
/* Start and join when the workers are free; else all n parts here, in
 * order: never waits for another run (whose kernel may wait for the caller). */
void ka__pool_try_run(ka__pool *p, ka__pool_fn fn, void *ctx);

/* ---- fibers ---------------------------------------------------------------
 * A fiber set runs the work-items of one work-group in one thread, each on
 * its own small stack; ka__fiber_barrier() inside an item suspends it until
 * every item of the group has reached a barrier, then all continue. A set
 * holds the stacks of groups of up to max_items items, in one mapping made
 * at its creation; the launch takes a set per part of its run from the
 * device's free list (host_device.c). */
typedef struct ka__fiberset ka__fiberset;
typedef void (*ka__item_fn)(void *ctx, uint32_t item);

/* What stands below each stack to catch an overflow (host_fiber.c says what
 * each catches and what it costs in mappings). */
enum ka__fiber_guard {
    KA__FG_AUTO,     /* MARKERS where the kernel has them, else PAGES */
    KA__FG_MARKERS,  /* a guard page as a page-table marker (Linux 6.13); fails where there is none */
    KA__FG_PAGES,    /* a PROT_NONE guard page while the process's budget of mappings allows, else CANARIES */
    KA__FG_CANARIES, /* a pattern at each stack's low end, checked at every switch */
};

ka_status ka__fiberset_create(uint32_t max_items, size_t stack_bytes, enum ka__fiber_guard guard,
                              ka__fiberset **out);
void ka__fiberset_destroy(ka__fiberset *fs);
uint32_t ka__fiberset_items(const ka__fiberset *fs);             /* max_items */
/* The guard its stacks got; AUTO for a set of one item, which has none. */
enum ka__fiber_guard ka__fiberset_guard(const ka__fiberset *fs);
/* A link the engine never reads: the owner's free list. */
ka__fiberset **ka__fiberset_link(ka__fiberset *fs);
/* The sets alive in the process (for tests). */
uint32_t ka__fiberset_alive(void);
/* Runs item(ctx, i) for every i in [0, n), n <= max_items, as fibers of the
 * calling thread; returns when all have returned. KA_ERR_KERNEL_FAILED when
 * the items did not all reach the same barriers (some returned while others
 * wait at a barrier), or an item overflowed its stack: the waiting ones are
 * abandoned, never resumed. */
ka_status ka__fiberset_run(ka__fiberset *fs, uint32_t n, ka__item_fn item, void *ctx);
/* Called by a kernel's ka_barrier() in fiber mode; in the thread running a set. */
void ka__fiber_barrier(void);
/* KA_DEBUG's fault handler is about to jump from the work-item running now
 * back to the thread's own stack, below the set's run: tells the
 * sanitizers (async-signal context; nothing to do off a fiber). */
void ka__fiber_escape(void);
/* After such a jump: the set left as after a divergence (its items
 * abandoned, never resumed), ready for another run; the thread no longer
 * runs it. */
void ka__fiberset_abandon(ka__fiberset *fs);

#endif
