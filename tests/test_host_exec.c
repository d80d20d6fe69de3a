/* The host back-end's execution engine (src/backends/host/host_exec.h), on
 * its own: the thread pool (every part once per run, runs started and left
 * to the workers or joined by several threads, long runs of runs, runs from
 * several threads at once, more threads than cores) and the
 * fibers of a work-group (barriers in
 * loops, a work-group reduction through a shared array, divergent barriers
 * refused and the set usable after, sets in pool threads). */
#include "test_util.h"

#include "../src/backends/host/host_exec.h"

#include <fenv.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the pool ------------------------------------------------------------ */

#define MAX_PARTS 64 /* 16 threads of a few parts each */

typedef struct part_log {
    uint32_t nparts;
    uint64_t runs[MAX_PARTS];   /* times each part ran: plain, so TSan checks the run's ordering */
    pthread_t who[MAX_PARTS];   /* the thread that ran each part last */
    uint32_t wrong_n;           /* calls that saw another nparts */
} part_log;

static void log_part(void *ctx, uint32_t part, uint32_t nparts) {
    part_log *l = ctx;
    if (nparts != l->nparts || part >= MAX_PARTS) {
        l->wrong_n++; /* only the caller's part could race here, and then the test fails anyway */
        return;
    }
    l->runs[part]++;
    l->who[part] = pthread_self();
}

/* Every part ran exactly `runs` times. */
static void expect_runs(const part_log *l, uint64_t runs) {
    assert_int_equal(l->wrong_n, 0);
    for (uint32_t i = 0; i < l->nparts; i++) assert_int_equal(l->runs[i], runs);
}

static void pool_parts_once_same_thread(void **state) {
    (void)state;
    static const uint32_t sizes[] = {1, 2, 3, 4, 8, 16};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        uint32_t n = sizes[s];
        ka__pool *p = NULL;
        assert_int_equal(ka__pool_create(n, &p), KA_OK);
        assert_int_equal(ka__pool_size(p), n);
        uint32_t parts = ka__pool_parts(p);
        assert_true(parts >= n && parts <= MAX_PARTS && parts % n == 0);
        part_log l = {.nparts = parts};
        /* Every part once per run, by the caller or a worker (a thread that
         * has finished its own takes the others' untaken ones); with one
         * thread, all by the caller. */
        pthread_t self = pthread_self();
        for (int r = 1; r <= 200; r++) {
            ka__pool_run(p, log_part, &l);
            expect_runs(&l, (uint64_t)r);
            if (n == 1)
                for (uint32_t i = 0; i < parts; i++) assert_true(pthread_equal(l.who[i], self));
            if (r % 50 == 0) usleep(2000); /* let the workers fall asleep: the wake path */
        }
        ka__pool_destroy(p);
    }
}

/* A started run goes on without its starter: the workers finish it, the
 * done hook runs once, before the run counts as finished; joins from
 * several threads, and of a finished run, return. */
typedef struct done_log {
    part_log *l;
    _Atomic uint32_t calls;
    uint64_t runs_seen; /* part 0's count when the hook ran */
} done_log;

static void log_done(void *ctx) {
    done_log *d = ctx;
    d->runs_seen = d->l->runs[0];
    atomic_fetch_add(&d->calls, 1);
}

typedef struct join_arg {
    ka__pool *p;
    uint32_t ticket;
} join_arg;

static void *join_main(void *arg) {
    join_arg *j = arg;
    ka__pool_join(j->p, j->ticket);
    return NULL;
}

static void pool_start_join(void **state) {
    (void)state;
    static const uint32_t sizes[] = {2, 3, 8};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        ka__pool *p = NULL;
        assert_int_equal(ka__pool_create(sizes[s], &p), KA_OK);
        part_log l = {.nparts = ka__pool_parts(p)};
        done_log d = {.l = &l};
        uint32_t t = 0;
        for (uint64_t r = 1; r <= 300; r++) {
            assert_true(ka__pool_start(p, log_part, &l, log_done, &d, &t));
            switch (r % 3) {
            case 0: /* nobody joins: the workers finish it */
                while (!ka__pool_finished(p, t)) sched_yield();
                break;
            case 1: /* the starter joins */
                ka__pool_join(p, t);
                break;
            default: { /* two other threads and the starter join */
                join_arg j = {p, t};
                pthread_t th[2];
                for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, join_main, &j), 0);
                ka__pool_join(p, t);
                for (int i = 0; i < 2; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
            }
            }
            assert_true(ka__pool_finished(p, t));
            ka__pool_join(p, t); /* a finished run: at once */
            expect_runs(&l, r);
            assert_int_equal(atomic_load(&d.calls), r);
            assert_int_equal(d.runs_seen, r); /* the hook ran after every part */
        }
        /* A second start while a run holds the workers is refused. */
        assert_true(ka__pool_start(p, log_part, &l, NULL, NULL, &t));
        uint32_t t2;
        bool second = ka__pool_start(p, log_part, &l, NULL, NULL, &t2);
        ka__pool_join(p, t);
        if (second) ka__pool_join(p, t2); /* the first had already finished */
        ka__pool_destroy(p);
    }
    /* One thread: nothing to start. */
    ka__pool *p = NULL;
    assert_int_equal(ka__pool_create(1, &p), KA_OK);
    uint32_t t;
    part_log l = {.nparts = ka__pool_parts(p)};
    assert_false(ka__pool_start(p, log_part, &l, NULL, NULL, &t));
    ka__pool_destroy(p);
}

static void pool_many_runs(void **state) {
    (void)state;
    static const uint32_t sizes[] = {2, 4, 8};
    static const uint64_t runs[] = {100000, 20000, 5000}; /* fewer where threads outnumber cores */
    for (size_t s = 0; s < 3; s++) {
        ka__pool *p = NULL;
        assert_int_equal(ka__pool_create(sizes[s], &p), KA_OK);
        part_log l = {.nparts = ka__pool_parts(p)};
        for (uint64_t r = 1; r <= runs[s]; r++) {
            ka__pool_run(p, log_part, &l);
            for (uint32_t i = 0; i < l.nparts; i++)
                if (l.runs[i] != r) fail_msg("pool of %u: run %llu: part %u ran %llu times", l.nparts,
                                             (unsigned long long)r, i, (unsigned long long)l.runs[i]);
        }
        expect_runs(&l, runs[s]);
        ka__pool_destroy(p);
    }
}

/* Runs from several threads at once on one pool. */
#define CONC_THREADS 4
#define CONC_RUNS 3000
typedef struct conc_arg {
    ka__pool *pool;
    part_log log;
} conc_arg;

static void *conc_main(void *arg) {
    conc_arg *a = arg;
    for (int r = 0; r < CONC_RUNS; r++) ka__pool_run(a->pool, log_part, &a->log);
    return NULL;
}

static void pool_concurrent_runs(void **state) {
    (void)state;
    static const uint32_t sizes[] = {2, 4, 8};
    for (size_t s = 0; s < 3; s++) {
        ka__pool *p = NULL;
        assert_int_equal(ka__pool_create(sizes[s], &p), KA_OK);
        conc_arg a[CONC_THREADS];
        pthread_t t[CONC_THREADS];
        for (int i = 0; i < CONC_THREADS; i++) {
            memset(&a[i], 0, sizeof a[i]);
            a[i].pool = p;
            a[i].log.nparts = ka__pool_parts(p);
            assert_int_equal(pthread_create(&t[i], NULL, conc_main, &a[i]), 0);
        }
        for (int i = 0; i < CONC_THREADS; i++) {
            assert_int_equal(pthread_join(t[i], NULL), 0);
            expect_runs(&a[i].log, CONC_RUNS);
        }
        ka__pool_destroy(p);
    }
}

/* A part that runs the pool again: the inner run is inline, in order. */
typedef struct nest_ctx {
    ka__pool *pool;
    part_log inner[MAX_PARTS];
} nest_ctx;

static void nest_part(void *ctx, uint32_t part, uint32_t nparts) {
    nest_ctx *c = ctx;
    ka__pool_run(c->pool, log_part, &c->inner[part]);
}

static void pool_nested_run(void **state) {
    (void)state;
    ka__pool *p = NULL;
    assert_int_equal(ka__pool_create(4, &p), KA_OK);
    nest_ctx c = {.pool = p};
    uint32_t parts = ka__pool_parts(p);
    for (uint32_t i = 0; i < parts; i++) c.inner[i].nparts = parts;
    for (int r = 1; r <= 100; r++) {
        ka__pool_run(p, nest_part, &c);
        for (uint32_t i = 0; i < parts; i++) {
            expect_runs(&c.inner[i], (uint64_t)r);
            for (uint32_t j = 0; j < parts; j++) assert_true(pthread_equal(c.inner[i].who[j], c.inner[i].who[0]));
        }
    }
    ka__pool_destroy(p);
}

static void pool_bad_size(void **state) {
    (void)state;
    ka__pool *p = (ka__pool *)&p;
    assert_int_equal(ka__pool_create(0, &p), KA_ERR_INVALID_ARGUMENT);
    assert_null(p);
    assert_int_equal(ka__pool_create(2, NULL), KA_ERR_INVALID_ARGUMENT);
    ka__pool_destroy(NULL);
}

/* ---- fibers ---------------------------------------------------------------- */

#define MAX_ITEMS 1024
#define FIBER_STACK (64 * 1024)

/* A work-group: nbar rounds of write, barrier, read a neighbour's value,
 * barrier; then a tree reduction through the shared array. */
typedef struct group {
    uint32_t n, nbar;
    uint32_t shared[MAX_ITEMS]; /* the group's local memory */
    uint64_t calls[MAX_ITEMS];
    uint32_t bad;               /* values an item saw that were not the ones written before the barrier */
    uint64_t sum;               /* item 0's result of the reduction */
} group;

static void group_item(void *ctx, uint32_t i) {
    group *g = ctx;
    uint32_t n = g->n;
    g->calls[i]++;
    for (uint32_t b = 0; b < g->nbar; b++) {
        g->shared[i] = i * 1000u + b;
        ka__fiber_barrier();
        uint32_t j = (i + 1 + b) % n;
        if (g->shared[j] != j * 1000u + b) g->bad++;
        ka__fiber_barrier();
    }
    if (!g->nbar) return;
    /* Reduction: sum of i over the group. */
    g->shared[i] = i;
    ka__fiber_barrier();
    uint32_t p2 = 1;
    while (p2 < n) p2 <<= 1;
    for (uint32_t s = p2 / 2; s > 0; s /= 2) {
        if (i < s && i + s < n) g->shared[i] += g->shared[i + s];
        ka__fiber_barrier();
    }
    if (i == 0) g->sum = g->shared[0];
}

static void run_group(ka__fiberset *fs, group *g, uint32_t n, uint32_t nbar) {
    memset(g, 0, sizeof *g);
    g->n = n;
    g->nbar = nbar;
    assert_int_equal(ka__fiberset_run(fs, n, group_item, g), KA_OK);
    assert_int_equal(g->bad, 0);
    for (uint32_t i = 0; i < n; i++) assert_int_equal(g->calls[i], 1);
    if (nbar) assert_int_equal(g->sum, (uint64_t)n * (n - 1) / 2);
}

static group g_group;

static void fibers_barriers(void **state) {
    (void)state;
    static const uint32_t sizes[] = {1, 2, 7, 64, 1024};
    static const uint32_t bars[] = {0, 1, 2, 50};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        ka__fiberset *fs = NULL;
        assert_int_equal(ka__fiberset_create(sizes[s], FIBER_STACK, &fs), KA_OK);
        for (size_t b = 0; b < sizeof bars / sizeof *bars; b++)
            for (int rep = 0; rep < 3; rep++) run_group(fs, &g_group, sizes[s], bars[b]);
        run_group(fs, &g_group, sizes[s] > 1 ? sizes[s] - 1 : 1, 3); /* fewer items than the set holds */
        ka__fiberset_destroy(fs);
    }
}

/* Each item keeps values in callee-saved registers and on its stack across
 * barriers, and its own floating-point rounding mode. */
static double __attribute__((noinline)) churn(uint32_t i, double x) {
    volatile double v[8];
    for (int k = 0; k < 8; k++) v[k] = x * k + i;
    ka__fiber_barrier();
    double t = 0;
    for (int k = 0; k < 8; k++) t += v[k];
    return t;
}

typedef struct regs_ctx {
    uint32_t bad;
} regs_ctx;

static void regs_item(void *ctx, uint32_t i) {
    regs_ctx *c = ctx;
    int mode = (i & 1) ? FE_UPWARD : FE_TONEAREST;
    fesetround(mode);
    volatile double one = 1, three = 3;
    double third = one / three; /* rounded by SSE's own control word (fegetround reads x87's) */
    uint64_t a = i * 7u + 1, b = i * 13u + 5, d = i ^ 0x55u;
    double x = i * 0.5;
    for (int r = 0; r < 10; r++) {
        double t = churn(i, x);
        if (t != 28 * x + 8.0 * i) c->bad++;
        if (fegetround() != mode || one / three != third) c->bad++;
        a = a * 3 + 1;
        b = b * 5 + 2;
        d = d * 7 + 3;
    }
    uint64_t ea = i * 7u + 1, eb = i * 13u + 5, ed = i ^ 0x55u;
    for (int r = 0; r < 10; r++) {
        ea = ea * 3 + 1;
        eb = eb * 5 + 2;
        ed = ed * 7 + 3;
    }
    if (a != ea || b != eb || d != ed) c->bad++;
    fesetround(FE_TONEAREST);
}

static void fibers_keep_state(void **state) {
    (void)state;
    ka__fiberset *fs = NULL;
    assert_int_equal(ka__fiberset_create(33, FIBER_STACK, &fs), KA_OK);
    regs_ctx c = {0};
    assert_int_equal(ka__fiberset_run(fs, 33, regs_item, &c), KA_OK);
    assert_int_equal(c.bad, 0);
    assert_int_equal(fegetround(), FE_TONEAREST);
    ka__fiberset_destroy(fs);
}

/* Divergent groups: `ret` returns before the first barrier (or, with late,
 * after the first barrier, before the second). */
typedef struct div_ctx {
    uint32_t ret_lo, ret_hi; /* items in [lo, hi) return early */
    bool late;
    uint32_t after; /* items that got past a barrier they should not have */
} div_ctx;

static void div_item(void *ctx, uint32_t i) {
    div_ctx *c = ctx;
    bool early = i >= c->ret_lo && i < c->ret_hi;
    if (c->late) ka__fiber_barrier();
    if (early) return;
    ka__fiber_barrier();
    c->after++;
    ka__fiber_barrier();
}

static void fibers_divergence(void **state) {
    (void)state;
    static const struct {
        uint32_t n, lo, hi;
        bool late;
    } cases[] = {
        {8, 0, 1, false},  /* item 0 returns, the others wait */
        {8, 0, 3, false},  /* items 0-2 return */
        {8, 7, 8, false},  /* the last returns, item 0 waits: unwound */
        {8, 3, 5, false},  /* items in the middle */
        {8, 1, 8, false},  /* only item 0 waits */
        {64, 0, 1, true},  /* after a first barrier all passed */
        {64, 63, 64, true},
        {64, 10, 20, true},
        {2, 1, 2, false},
    };
    ka__fiberset *fs = NULL;
    assert_int_equal(ka__fiberset_create(64, FIBER_STACK, &fs), KA_OK);
    for (int rep = 0; rep < 3; rep++) {
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            div_ctx c = {.ret_lo = cases[k].lo, .ret_hi = cases[k].hi, .late = cases[k].late};
            assert_int_equal(ka__fiberset_run(fs, cases[k].n, div_item, &c), KA_ERR_KERNEL_FAILED);
            assert_int_equal(c.after, 0);
            assert_non_null(strstr(ka_last_error(), "barrier divergence"));
            run_group(fs, &g_group, 64, 2); /* usable again */
            run_group(fs, &g_group, 5, 0);
        }
    }
    ka__fiberset_destroy(fs);
}

static void rerun_item(void *ctx, uint32_t i) {
    ka__fiberset *fs = *(ka__fiberset **)ctx;
    if (ka__fiberset_run(fs, 1, rerun_item, ctx) != KA_ERR_INVALID_ARGUMENT) *(ka__fiberset **)ctx = NULL;
}

static void fibers_bad_input(void **state) {
    (void)state;
    ka__fiberset *fs = (ka__fiberset *)&fs;
    assert_int_equal(ka__fiberset_create(0, FIBER_STACK, &fs), KA_ERR_INVALID_ARGUMENT);
    assert_null(fs);
    assert_int_equal(ka__fiberset_create(4, 0, &fs), KA_OK); /* a minimum stack */
    group *g = &g_group;
    memset(g, 0, sizeof *g);
    g->n = 5;
    assert_int_not_equal(ka__fiberset_run(fs, 5, group_item, g), KA_OK); /* more items than it holds */
    assert_int_equal(g->calls[0], 0);
    assert_int_equal(ka__fiberset_run(fs, 0, group_item, g), KA_OK);
    run_group(fs, g, 4, 3);
    ka__fiberset *self = fs; /* a set run from one of its own items: refused */
    assert_int_equal(ka__fiberset_run(fs, 2, rerun_item, &self), KA_OK);
    assert_ptr_equal(self, fs);
    ka__fiberset_destroy(fs);
    ka__fiberset_destroy(NULL);
    ka__fiber_barrier(); /* outside a set: nothing to wait for */
}

/* A fiber that overflows its stack faults on the page below it instead of
 * writing into the next stack down. Item 2 of 3 starts on its fiber once
 * items 0 and 1 wait at the barrier, recurses through 1.5 times its stack
 * and returns (a divergence, so item 1, whose stack it would have
 * overwritten, is never resumed): only the guard page stops it. */
#define GUARD_STACK (256 * 1024)
static uint32_t __attribute__((noinline)) deep(uint32_t depth) {
    char buf[1024];
    memset(buf, (int)depth, sizeof buf);
    __asm__ __volatile__("" : : "r"(buf) : "memory"); /* buf is used: a compiler must keep all of it */
    return depth ? deep(depth - 1) + (uint32_t)buf[0] : (uint32_t)buf[sizeof buf - 1];
}

static void overflow_item(void *ctx, uint32_t i) {
    if (i == 2) {
        *(volatile uint32_t *)ctx = deep(GUARD_STACK * 3 / 2 / 1024);
        return;
    }
    ka__fiber_barrier();
}

static void fibers_stack_guard(void **state) {
    (void)state;
    ka__fiberset *fs = NULL;
    assert_int_equal(ka__fiberset_create(3, GUARD_STACK, &fs), KA_OK);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL); /* cmocka's handler would carry on with the tests here */
        signal(SIGBUS, SIG_DFL);
        uint32_t sink = 0;
        ka__fiberset_run(fs, 3, overflow_item, &sink);
        _exit(0); /* no fault: the overflow went unnoticed */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    /* Killed by the fault, or a sanitizer's report of it and its exit status. */
    if (WIFSIGNALED(status)) assert_true(WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGBUS);
    else assert_true(WIFEXITED(status) && WEXITSTATUS(status) != 0);
    ka__fiberset_destroy(fs);
}

/* Each pool thread runs groups on its own set. */
#define POOL_GROUPS 40
typedef struct pool_groups {
    ka__fiberset *sets[MAX_PARTS];
    group groups[MAX_PARTS];
    uint32_t failures[MAX_PARTS];
} pool_groups;

static void groups_part(void *ctx, uint32_t part, uint32_t nparts) {
    pool_groups *pg = ctx;
    group *g = &pg->groups[part];
    for (uint32_t k = 0; k < POOL_GROUPS; k++) {
        uint32_t n = 1 + (k * 37 + part * 11) % 200, nbar = k % 4;
        memset(g, 0, sizeof *g);
        g->n = n;
        g->nbar = nbar;
        if (ka__fiberset_run(pg->sets[part], n, group_item, g) != KA_OK || g->bad ||
            (nbar && g->sum != (uint64_t)n * (n - 1) / 2))
            pg->failures[part]++;
        if (k == POOL_GROUPS / 2) { /* a divergent group in the middle */
            div_ctx c = {.ret_lo = part % 3, .ret_hi = part % 3 + 1};
            if (ka__fiberset_run(pg->sets[part], 3, div_item, &c) != KA_ERR_KERNEL_FAILED) pg->failures[part]++;
        }
    }
}

static void fibers_in_pool_threads(void **state) {
    (void)state;
    static pool_groups pg;
    for (uint32_t n = 1; n <= 8; n *= 2) {
        ka__pool *p = NULL;
        assert_int_equal(ka__pool_create(n, &p), KA_OK);
        memset(&pg, 0, sizeof pg);
        uint32_t parts = ka__pool_parts(p); /* a set per part: the caller may run a worker's part beside it */
        for (uint32_t i = 0; i < parts; i++) assert_int_equal(ka__fiberset_create(200, FIBER_STACK, &pg.sets[i]), KA_OK);
        for (int r = 0; r < 5; r++) ka__pool_run(p, groups_part, &pg);
        for (uint32_t i = 0; i < parts; i++) {
            assert_int_equal(pg.failures[i], 0);
            ka__fiberset_destroy(pg.sets[i]);
        }
        ka__pool_destroy(p);
    }
}

/* Runs allocate nothing through libka's allocator; making and unmaking
 * balance. */
static void exec_allocations(void **state) {
    (void)state;
    heap_start();
    ka__pool *p = NULL;
    ka__fiberset *fs = NULL;
    assert_int_equal(ka__pool_create(4, &p), KA_OK);
    assert_int_equal(ka__fiberset_create(64, FIBER_STACK, &fs), KA_OK);
    uint64_t made = atomic_load(&heap()->allocs);
    assert_true(made > 0);
    part_log l = {.nparts = ka__pool_parts(p)};
    for (int r = 0; r < 1000; r++) ka__pool_run(p, log_part, &l);
    run_group(fs, &g_group, 64, 5);
    div_ctx c = {.ret_lo = 5, .ret_hi = 6};
    assert_int_equal(ka__fiberset_run(fs, 8, div_item, &c), KA_ERR_KERNEL_FAILED);
    assert_int_equal(atomic_load(&heap()->allocs), made);
    assert_int_equal(atomic_load(&heap()->frees), 0);
    ka__fiberset_destroy(fs);
    ka__pool_destroy(p);
    assert_int_equal(atomic_load(&heap()->frees), made);
    heap_stop();
}

/* A generous watchdog: a lost wake-up hangs instead of failing. */
static void watchdog(int sig) {
    (void)sig;
    static const char msg[] = "test_host_exec: watchdog: no progress in 600 s (a lost wake-up?)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

int main(int argc, char **argv) {
    if (argc > 1) cmocka_set_test_filter(argv[1]); /* one case by name */
    heap_install(); /* before libka allocates anything */
    signal(SIGALRM, watchdog);
    alarm(600);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pool_parts_once_same_thread),
        cmocka_unit_test(pool_start_join),
        cmocka_unit_test(pool_many_runs),
        cmocka_unit_test(pool_concurrent_runs),
        cmocka_unit_test(pool_nested_run),
        cmocka_unit_test(pool_bad_size),
        cmocka_unit_test(fibers_barriers),
        cmocka_unit_test(fibers_keep_state),
        cmocka_unit_test(fibers_divergence),
        cmocka_unit_test(fibers_bad_input),
        cmocka_unit_test(fibers_stack_guard),
        cmocka_unit_test(fibers_in_pool_threads),
        cmocka_unit_test(exec_allocations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
