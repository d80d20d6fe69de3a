/* A serial stand-in for the execution engine of host_exec.h: a pool of one
 * thread (every run inline in the caller) and fibers on ucontext. Replaced by
 * host_pool.c and host_fiber.c. */
#include "host_exec.h"

#include <ucontext.h>

struct ka__pool {
    uint32_t n;
};

ka_status ka__pool_create(uint32_t nthreads, ka__pool **out) {
    (void)nthreads;
    ka__pool *p = ka__calloc(1, sizeof *p);
    if (!p) return ka__fail(KA_ERR_OUT_OF_MEMORY, "host: out of memory for the thread pool");
    p->n = 1;
    *out = p;
    return KA_OK;
}
void ka__pool_destroy(ka__pool *p) { ka__free(p, sizeof *p); }
uint32_t ka__pool_size(const ka__pool *p) { return p->n; }
void ka__pool_run(ka__pool *p, ka__pool_fn fn, void *ctx) { fn(ctx, 0, p->n); }

enum { F_RUN, F_BARRIER, F_DONE };
struct ka__fiberset {
    uint32_t max;
    size_t stack;
    char *stacks;
    ucontext_t main, *ctx;
    uint8_t *state;
    uint32_t cur;
    ka__item_fn fn;
    void *arg;
};
static _Thread_local ka__fiberset *current;

ka_status ka__fiberset_create(uint32_t max_items, size_t stack_bytes, ka__fiberset **out) {
    ka__fiberset *fs = ka__calloc(1, sizeof *fs);
    if (!fs) return ka__fail(KA_ERR_OUT_OF_MEMORY, "host: out of memory for fibers");
    fs->max = max_items;
    fs->stack = stack_bytes;
    fs->stacks = ka__alloc((size_t)max_items * stack_bytes);
    fs->ctx = ka__calloc(max_items, sizeof *fs->ctx);
    fs->state = ka__calloc(max_items, 1);
    if (!fs->stacks || !fs->ctx || !fs->state) {
        ka__fiberset_destroy(fs);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "host: out of memory for fibers");
    }
    *out = fs;
    return KA_OK;
}

void ka__fiberset_destroy(ka__fiberset *fs) {
    if (fs->stacks) ka__free(fs->stacks, (size_t)fs->max * fs->stack);
    if (fs->ctx) ka__free(fs->ctx, fs->max * sizeof *fs->ctx);
    if (fs->state) ka__free(fs->state, fs->max);
    ka__free(fs, sizeof *fs);
}

static void trampoline(void) {
    ka__fiberset *fs = current;
    uint32_t i = fs->cur;
    fs->fn(fs->arg, i);
    fs->state[i] = F_DONE;
    /* returns to uc_link: main */
}

void ka__fiber_barrier(void) {
    ka__fiberset *fs = current;
    uint32_t i = fs->cur;
    fs->state[i] = F_BARRIER;
    swapcontext(&fs->ctx[i], &fs->main);
}

/* Apart from the loop: getcontext returns twice, which the caller's
 * variables must not live across. */
static __attribute__((noinline)) void make_item(ka__fiberset *fs, uint32_t i) {
    getcontext(&fs->ctx[i]);
    fs->ctx[i].uc_stack.ss_sp = fs->stacks + (size_t)i * fs->stack;
    fs->ctx[i].uc_stack.ss_size = fs->stack;
    fs->ctx[i].uc_link = &fs->main;
    makecontext(&fs->ctx[i], trampoline, 0);
    fs->state[i] = F_RUN;
}

ka_status ka__fiberset_run(ka__fiberset *fs, uint32_t n, ka__item_fn item, void *ctx) {
    ka__fiberset *saved = current;
    current = fs;
    fs->fn = item;
    fs->arg = ctx;
    for (uint32_t i = 0; i < n; i++) make_item(fs, i);
    ka_status st = KA_OK;
    for (;;) {
        uint32_t at_barrier = 0, done = 0;
        for (uint32_t i = 0; i < n; i++) {
            fs->cur = i;
            fs->state[i] = F_RUN;
            swapcontext(&fs->main, &fs->ctx[i]);
            at_barrier += fs->state[i] == F_BARRIER;
            done += fs->state[i] == F_DONE;
        }
        if (done == n) break;
        if (at_barrier != n) {
            st = KA_ERR_KERNEL_FAILED;
            break;
        }
    }
    current = saved;
    return st;
}
