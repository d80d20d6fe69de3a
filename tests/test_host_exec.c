/* The host back-end's execution engine (src/backends/host/host_exec.h), on
 * its own: the thread pool (every part once per run, runs started and left
 * to the workers or joined by several threads, long runs of runs, runs from
 * several threads at once, more threads than cores) and the
 * fibers of a work-group (barriers in loops, a work-group reduction through a
 * shared array, divergent barriers refused and the set usable after, sets in
 * pool threads) with each guard below the stacks: an overflow faults on a
 * guard page or fails the group, never resumes an item whose stack it wrote;
 * the process's budget of guard pages; a failing mapping names its cause.
 * Then the device's fiber sets: sized to the group launched, a mapping or two
 * each, not two per stack, at most one kept per pool thread and queue; 64
 * pool threads running groups of 1024. */
#include "test_util.h"

#include "../src/backends/host/host_exec.h"

#include <errno.h>
#include <fenv.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
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
 * settle hook runs once, before the run counts as finished, and the after
 * hook once, after: it runs the pool again (the pool is free by then, or
 * held by the next run, which it helps finish); joins from several threads,
 * and of a finished run, return. */
typedef struct done_log {
    ka__pool *pool;
    part_log *l;
    _Atomic uint32_t calls, afters;
    uint64_t runs_seen; /* part 0's count when the settle hook ran */
    part_log inner;     /* the after hook's runs */
} done_log;

static void log_settle(void *ctx, void *keep[2]) {
    done_log *d = ctx;
    d->runs_seen = d->l->runs[0];
    atomic_fetch_add(&d->calls, 1);
    keep[0] = d;
}

static void log_after(void *keep[2]) {
    done_log *d = keep[0];
    ka__pool_run(d->pool, log_part, &d->inner);
    atomic_fetch_add(&d->afters, 1);
}

static const ka__pool_done log_hooks = {log_settle, log_after};

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
        done_log d = {.pool = p, .l = &l, .inner = {.nparts = ka__pool_parts(p)}};
        uint32_t t = 0;
        for (uint64_t r = 1; r <= 300; r++) {
            while (!ka__pool_start(p, log_part, &l, &log_hooks, &d, &t)) /* an after hook's run holds it */
                assert_true(ka__pool_help(p));
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
        while (atomic_load(&d.afters) != 300) sched_yield(); /* each after hook ran once, and its run */
        expect_runs(&d.inner, 300);
        /* A second start while a run holds the workers is refused. */
        while (!ka__pool_start(p, log_part, &l, NULL, NULL, &t)) assert_true(ka__pool_help(p));
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

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(ASAN)
#define ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(TSAN)
#define TSAN 1
#endif
#ifndef ASAN
#define ASAN 0
#endif
#ifndef TSAN
#define TSAN 0
#endif
#define SANITIZED (ASAN || TSAN)

/* Every guard a set can be asked for. */
static const enum ka__fiber_guard guards[] = {KA__FG_AUTO, KA__FG_MARKERS, KA__FG_PAGES, KA__FG_CANARIES};
static const char *const guard_names[] = {"auto", "markers", "pages", "canaries"};
#define NGUARDS (sizeof guards / sizeof *guards)

/* A set with the guard asked (AUTO: whichever it got); false where this
 * kernel has no guard-page markers (Linux before 6.13), said on stderr. */
static bool make_set(uint32_t n, size_t stack, enum ka__fiber_guard g, ka__fiberset **fs) {
    ka_status st = ka__fiberset_create(n, stack, g, fs);
    if (st == KA_ERR_UNSUPPORTED && g == KA__FG_MARKERS) {
        static bool said;
        if (!said) fprintf(stderr, "test_host_exec: %s: the cases of MARKERS sets are skipped\n", ka_last_error());
        said = true;
        return false;
    }
    if (st != KA_OK) fail_msg("a %s set of %u items: %s", guard_names[g], n, ka_last_error());
    enum ka__fiber_guard got = ka__fiberset_guard(*fs);
    if (g != KA__FG_AUTO && n > 1 && got != g && !(g == KA__FG_PAGES && got == KA__FG_CANARIES)) /* past the budget */
        fail_msg("a %s set of %u items got %s", guard_names[g], n, guard_names[got]);
    assert_int_equal(ka__fiberset_items(*fs), n);
    return true;
}

/* Whether this build's mappings are the program's own: TSan maps state of
 * its own for every fiber (and keeps it), so under TSan the checks of
 * mapping counts and sizes are left to the other builds (said once). */
static bool maps_are_ours(void) {
    static bool said;
    if (TSAN && !said) fprintf(stderr, "test_host_exec: under TSan, the counts of mappings are not checked\n");
    said = true;
    return !TSAN;
}

/* Lines of /proc/self/maps: the process's mappings. */
static long maps_lines(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    long n = 0;
    for (int c; (c = getc(f)) != EOF;) n += c == '\n';
    fclose(f);
    return n;
}

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
    for (size_t g = 0; g < NGUARDS; g++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            ka__fiberset *fs = NULL;
            if (!make_set(sizes[s], FIBER_STACK, guards[g], &fs)) continue;
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
    assert_int_equal(ka__fiberset_create(33, FIBER_STACK, KA__FG_AUTO, &fs), KA_OK);
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
    assert_int_equal(ka__fiberset_create(64, FIBER_STACK, KA__FG_AUTO, &fs), KA_OK);
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
    assert_int_equal(ka__fiberset_create(0, FIBER_STACK, KA__FG_AUTO, &fs), KA_ERR_INVALID_ARGUMENT);
    assert_null(fs);
    fs = (ka__fiberset *)&fs;
    assert_int_equal(ka__fiberset_create(4, FIBER_STACK, (enum ka__fiber_guard)(KA__FG_CANARIES + 1), &fs),
                     KA_ERR_INVALID_ARGUMENT);
    assert_null(fs);
    assert_int_equal(ka__fiberset_create(4, 0, KA__FG_AUTO, &fs), KA_OK); /* a minimum stack */
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

/* Overflows. Item 2 of 3 starts on its fiber once items 0 and 1 wait at the
 * barrier (its stack is not the lowest: item 1's lies below) and recurses
 * through 1.5 times its stack, writing every frame whole. */
#define GUARD_STACK (256 * 1024)
static uint32_t __attribute__((noinline)) deep(uint32_t depth) {
    char buf[1024];
    memset(buf, (int)depth, sizeof buf);
    __asm__ __volatile__("" : : "r"(buf) : "memory"); /* buf is used: a compiler must keep all of it */
    return depth ? deep(depth - 1) + (uint32_t)buf[0] : (uint32_t)buf[sizeof buf - 1];
}

/* Item 2 recurses, then every item reaches the barrier: an item resumed on a
 * stack the recursion wrote would crash or run on garbage. */
static void overflow_item(void *ctx, uint32_t i) {
    if (i == 2) *(volatile uint32_t *)ctx = deep(GUARD_STACK * 3 / 2 / 1024);
    ka__fiber_barrier();
    ka__fiber_barrier();
}

/* Item 2 reaches the barrier from a frame larger than its stack, of which
 * nothing is written but its top: the frame skips the guard page or the
 * canary below the stack, and the barrier's own frame lies below both. */
#define BIG_FRAME (GUARD_STACK + 32 * 1024)
static void __attribute__((noinline)) barrier_in_big_frame(void) {
    volatile char big[BIG_FRAME];
    big[BIG_FRAME - 1] = 1;
    ka__fiber_barrier();
    __asm__ __volatile__("" : : "r"(big) : "memory");
}

static void big_frame_item(void *ctx, uint32_t i) {
    (void)ctx;
    if (i == 2) barrier_in_big_frame();
    else ka__fiber_barrier();
}

/* Runs a group of 3 with fn in a child process: the child's exit status (0:
 * the run failed with KA_ERR_KERNEL_FAILED naming item 2's stack overflow,
 * and the set then ran a good group; CHILD_WRONG: the run did something
 * else; another: a sanitizer's report), or the signal that killed it
 * (negative). */
#define CHILD_WRONG 3
static int overflow_in_child(ka__fiberset *fs, ka__item_fn fn) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL); /* cmocka's handler would carry on with the tests here */
        signal(SIGBUS, SIG_DFL);
        uint32_t sink = 0;
        ka_status st = ka__fiberset_run(fs, 3, fn, &sink);
        bool named = strstr(ka_last_error(), "stack overflow") && strstr(ka_last_error(), "item 2 of");
        if (st != KA_ERR_KERNEL_FAILED || !named) {
            fprintf(stderr, "overflow run: %s: %s\n", ka_status_name(st), ka_last_error());
            _exit(CHILD_WRONG);
        }
        memset(&g_group, 0, sizeof g_group);
        g_group.n = 3;
        g_group.nbar = 2;
        st = ka__fiberset_run(fs, 3, group_item, &g_group); /* canaries written again, stacks usable */
        _exit(st == KA_OK && !g_group.bad && g_group.sum == 3 ? 0 : CHILD_WRONG);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) ? -WTERMSIG(status) : WEXITSTATUS(status);
}

/* A guard page stops the recursion (a fault, as a thread's overflow, or a
 * sanitizer's report of it); a canary stops the group before item 1 resumes
 * on its overwritten stack (under ASan, the recursion's writes over item 1's
 * frames may be reported first: ASan poisons their redzones). */
static void fibers_stack_overflow(void **state) {
    (void)state;
    for (size_t g = 0; g < NGUARDS; g++) {
        ka__fiberset *fs = NULL;
        if (!make_set(3, GUARD_STACK, guards[g], &fs)) continue;
        int r = overflow_in_child(fs, overflow_item);
        bool reported = SANITIZED && r > 0 && r != CHILD_WRONG;
        if (ka__fiberset_guard(fs) == KA__FG_CANARIES) {
            if (r != 0 && !(reported && ASAN))
                fail_msg("canaries: the overflow gave %d, not a clean failure", r);
        } else if (r != -SIGSEGV && r != -SIGBUS && !reported) {
            fail_msg("%s: the overflow gave %d, not a fault", guard_names[g], r);
        }
        ka__fiberset_destroy(fs);
    }
}

/* A barrier below the stack fails the group with every guard: the frame
 * wrote nothing a guard or canary sees (a compiler that probes large
 * frames, -fstack-clash-protection, would fault on a guard page instead:
 * not the case of the compilers this suite is built with). */
static void fibers_barrier_below_stack(void **state) {
    (void)state;
    for (size_t g = 0; g < NGUARDS; g++) {
        ka__fiberset *fs = NULL;
        if (!make_set(3, GUARD_STACK, guards[g], &fs)) continue;
        int r = overflow_in_child(fs, big_frame_item);
        if (r != 0) fail_msg("%s: a barrier below the stack gave %d, not a clean failure", guard_names[g], r);
        ka__fiberset_destroy(fs);
    }
}

/* PAGES sets take two mappings a stack from a budget of a quarter of
 * vm.max_map_count shared by the process; past it they get canaries. */
static void fibers_guard_budget(void **state) {
    (void)state;
    long limit = 65530;
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    if (f) {
        assert_int_equal(fscanf(f, "%ld", &limit), 1);
        fclose(f);
    }
    long expect = limit / 4 / 2046; /* 2 mappings a stack */
    if (expect > 256) {
        fprintf(stderr, "test_host_exec: vm.max_map_count = %ld: the budget of PAGES sets is not exhausted here "
                        "(skipped)\n", limit);
        skip();
    }
    ka__fiberset *sets[258];
    long before = maps_lines();
    int n = 0;
    for (;;) {
        assert_true(n <= expect);
        assert_true(make_set(1024, FIBER_STACK, KA__FG_PAGES, &sets[n]));
        if (ka__fiberset_guard(sets[n++]) == KA__FG_CANARIES) break;
    }
    run_group(sets[0], &g_group, 1024, 2); /* not all: TSan counts each item's fiber as a thread, 8128 at most */
    long pages_sets = n - 1, grown = maps_lines() - before;
    print_message("%ld PAGES sets of 1023 stacks under vm.max_map_count = %ld, then CANARIES; %ld mappings more\n",
                  pages_sets, limit, grown);
    assert_int_equal(pages_sets, expect);
    if (maps_are_ours()) assert_true(grown <= limit / 4 + 16);
    run_group(sets[n - 1], &g_group, 1024, 2);
    for (int i = 0; i < n; i++) ka__fiberset_destroy(sets[i]);
    if (maps_are_ours()) assert_true(maps_lines() <= before + 16);
    /* The budget is back. */
    assert_true(make_set(1024, FIBER_STACK, KA__FG_PAGES, &sets[0]));
    assert_int_equal(ka__fiberset_guard(sets[0]), KA__FG_PAGES);
    ka__fiberset_destroy(sets[0]);
}

/* A set that cannot be mapped says why: with the process at its limit of
 * mappings, that limit and the count; out of address space, the limit
 * (ulimit -v). Each in a child, which exits 0 when the message is right. */
static int in_child(void (*fn)(void)) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) fn();
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Fills the process's mappings up (a page each: alternate protections never
 * merge), then makes a set; then again with one mapping free: the set's own
 * fits, the split its guard needs does not. */
static void at_map_limit(void) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    long held = 0;
    void *last = MAP_FAILED;
    for (;; held++) {
        void *m = mmap(NULL, page, (held & 1) ? PROT_READ : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) break;
        last = m;
    }
    int err = errno;
    ka__fiberset *fs = NULL;
    ka_status st = ka__fiberset_create(8, FIBER_STACK, KA__FG_CANARIES, &fs);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ka_last_error());
    bool ok = err == ENOMEM && st == KA_ERR_OUT_OF_MEMORY && strstr(msg, "vm.max_map_count") && strstr(msg, "limit") &&
              strstr(msg, "cannot map");
    fprintf(stderr, "after %ld mappings (%s): %s: %s\n", held, strerror(err), ka_status_name(st), msg);
    ok = ok && last != MAP_FAILED && munmap(last, page) == 0;
    st = ka__fiberset_create(8, FIBER_STACK, KA__FG_CANARIES, &fs);
    snprintf(msg, sizeof msg, "%s", ka_last_error());
    ok = ok && st == KA_ERR_OUT_OF_MEMORY && strstr(msg, "vm.max_map_count") && strstr(msg, "cannot make the guard");
    fprintf(stderr, "with one mapping free: %s: %s\n", ka_status_name(st), msg);
    _exit(ok ? 0 : 1);
}

/* ulimit -v a little over what the process has: a set of 1023 stacks. */
static void under_ulimit(void) {
    unsigned long long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    bool ok = f && fscanf(f, "%llu", &pages) == 1;
    if (f) fclose(f);
    struct rlimit as = {.rlim_cur = pages * (unsigned long long)sysconf(_SC_PAGESIZE) + (16u << 20)};
    as.rlim_max = as.rlim_cur;
    ok = ok && setrlimit(RLIMIT_AS, &as) == 0;
    ka__fiberset *fs = NULL;
    ka_status st = ka__fiberset_create(1024, FIBER_STACK, KA__FG_AUTO, &fs);
    ok = ok && st == KA_ERR_OUT_OF_MEMORY && strstr(ka_last_error(), "address space") &&
         strstr(ka_last_error(), "ulimit -v");
    fprintf(stderr, "under ulimit -v: %s: %s\n", ka_status_name(st), ka_last_error());
    _exit(ok ? 0 : 1);
}

static void fibers_map_failure_named(void **state) {
    (void)state;
    ka__fiberset *warm = NULL; /* the children's allocations of a set, made before their mappings run out */
    assert_int_equal(ka__fiberset_create(8, FIBER_STACK, KA__FG_CANARIES, &warm), KA_OK);
    ka__fiberset_destroy(warm);
    if (maps_are_ours()) assert_int_equal(in_child(at_map_limit), 0); /* TSan itself needs mappings to go on */
    assert_int_equal(in_child(under_ulimit), 0);
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
        for (uint32_t i = 0; i < parts; i++) assert_int_equal(ka__fiberset_create(200, FIBER_STACK, KA__FG_AUTO, &pg.sets[i]), KA_OK);
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
    assert_int_equal(ka__fiberset_create(64, FIBER_STACK, KA__FG_AUTO, &fs), KA_OK);
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

/* ---- the device's fiber sets ------------------------------------------------ */

/* Per-group sums through dynamic local memory: a kernel with barriers, any
 * group size. */
static const char *bsum_src =
    "KA_KERNEL(bsum, KA_GLOBAL long *out, KA_CONST(int) in, KA_LOCAL_ARG(long) part) {\n"
    "    ka_size_t l = ka_local_id(0), n = ka_group_size(0);\n"
    "    part[l] = in[ka_global_id(0)];\n"
    "    ka_barrier();\n"
    "    for (ka_size_t s = 1; s < n; s *= 2) {\n"
    "        if (l % (2 * s) == 0 && l + s < n) part[l] += part[l + s];\n"
    "        ka_barrier();\n"
    "    }\n"
    "    if (l == 0) out[ka_group_id(0)] = part[0];\n"
    "}\n";

typedef struct bsum_dev {
    ka_device dev;
    ka_queue q;
    ka_program p;
    ka_kernel k;
} bsum_dev;

/* The host device with a pool of `threads` (KA_NUM_THREADS), bsum built;
 * false (said on stderr) where there is no host device. */
static bool bsum_open(bsum_dev *b, const char *threads) {
    const char *old = getenv("KA_NUM_THREADS");
    char *saved = old ? strdup(old) : NULL;
    setenv("KA_NUM_THREADS", threads, 1);
    ka_status st = ka_device_open("host", &b->dev);
    if (saved) setenv("KA_NUM_THREADS", saved, 1);
    else unsetenv("KA_NUM_THREADS");
    free(saved);
    if (st != KA_OK) {
        fprintf(stderr, "test_host_exec: no host device (%s): the device's cases are skipped\n", ka_last_error());
        return false;
    }
    KA_OK_OR_FAIL(ka_queue_create(b->dev, NULL, &b->q));
    KA_OK_OR_FAIL(ka_program_build(b->dev, bsum_src, NULL, &b->p));
    KA_OK_OR_FAIL(ka_kernel_get(b->p, "bsum", NULL, &b->k));
    return true;
}

static void bsum_close(bsum_dev *b) {
    ka_program_release(b->p);
    ka_queue_release(b->q);
    KA_OK_OR_FAIL(ka_device_close(b->dev));
}

/* Launches bsum over `groups` groups of wg items and checks every sum. */
static void bsum_run(bsum_dev *b, uint32_t wg, uint32_t groups) {
    size_t n = (size_t)wg * groups;
    int *in = malloc(n * sizeof *in);
    long *out = calloc(groups, sizeof *out);
    assert_non_null(in);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) in[i] = (int)(i * 2654435761u % 1001) - 500;
    ka_buffer bi, bo;
    KA_OK_OR_FAIL(ka_buffer_create_with(b->dev, n * sizeof *in, in, &bi));
    KA_OK_OR_FAIL(ka_buffer_create_zeroed(b->dev, groups * sizeof *out, &bo));
    ka_arg a[] = {ka_arg_buffer(bo), ka_arg_buffer(bi), ka_arg_local(wg * sizeof(long))};
    KA_OK_OR_FAIL(ka_launch(b->q, b->k, &(ka_range){.dims = 1, .size = {n}, .workgroup = {wg}}, a, 3, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(b->q, out, bo, 0, groups * sizeof *out));
    for (uint32_t g = 0; g < groups; g++) {
        long want = 0;
        for (size_t i = (size_t)g * wg; i < (size_t)(g + 1) * wg; i++) want += in[i];
        if (out[g] != want) fail_msg("groups of %u: group %u sum %ld, want %ld", wg, g, out[g], want);
    }
    ka_buffer_release(bi);
    ka_buffer_release(bo);
    free(in);
    free(out);
}

/* Bytes of all the process's mappings. */
static uint64_t maps_bytes(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[4096];
    uint64_t sum = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi;
        if (sscanf(line, "%llx-%llx", &lo, &hi) == 2) sum += hi - lo;
    }
    fclose(f);
    return sum;
}

/* Whether this kernel has guard-page markers: then a set is one mapping. */
static bool have_markers(void) {
    ka__fiberset *fs = NULL;
    if (ka__fiberset_create(2, FIBER_STACK, KA__FG_MARKERS, &fs) != KA_OK) return false;
    ka__fiberset_destroy(fs);
    return true;
}

/* The bytes a set of the device's own takes (its stacks and guards). */
static uint64_t device_set_bytes(uint32_t items) {
    uint64_t before = maps_bytes();
    ka__fiberset *fs = NULL;
    assert_int_equal(ka__fiberset_create(items, 64 * 1024, KA__FG_AUTO, &fs), KA_OK);
    uint64_t bytes = maps_bytes() - before;
    ka__fiberset_destroy(fs);
    return bytes;
}

/* One pool thread: the launch's set is made for the group launched (a
 * 64-item group maps 63 stacks, not 1023) and is a mapping or two, not two a
 * stack; a launch of larger groups replaces it. */
static void device_sets_sized(void **state) {
    (void)state;
    bsum_dev b;
    if (!bsum_open(&b, "1")) skip();
    bool markers = have_markers();
    long lines0 = maps_lines();
    uint64_t bytes0 = maps_bytes();
    bsum_run(&b, 64, 64);
    long lines1 = maps_lines();
    uint64_t bytes1 = maps_bytes();
    bsum_run(&b, 1024, 16);
    long lines2 = maps_lines();
    uint64_t bytes2 = maps_bytes();
    bsum_run(&b, 64, 64); /* the larger set serves smaller groups */
    if (!maps_are_ours()) {
        bsum_close(&b);
        return;
    }
    print_message("groups of 64: %+ld mappings, %+lld KiB; then of 1024: %+ld mappings, %+lld KiB (%s)\n",
                  lines1 - lines0, (long long)(bytes1 - bytes0) / 1024, lines2 - lines1,
                  (long long)(bytes2 - bytes1) / 1024, markers ? "guard-page markers" : "no markers: PAGES sets");
    /* The set, and the kernel's thread-local area (ka_arg_local's) this first launch makes. */
    assert_true(lines1 - lines0 < 16);
    assert_true(bytes1 - bytes0 <= device_set_bytes(64) + (4u << 20));
    assert_true(bytes1 - bytes0 < device_set_bytes(1024) / 4);
    assert_true(lines2 - lines1 < (markers ? 16 : 2 * 1023 + 16));
    assert_int_equal(maps_lines(), lines2);
    bsum_close(&b);
}

/* 64 pool threads on this small machine, groups of 1024 with barriers:
 * right sums, at most a set per pool thread and queue (the caller may run
 * late workers' parts: how many sets are made is not fixed), and a mapping
 * or two each, not two a stack. */
static void device_many_threads(void **state) {
    (void)state;
    bsum_dev b;
    if (!bsum_open(&b, "64")) skip();
    bool markers = have_markers();
    /* TSan counts each item's fiber as a thread (8128 at most): 64 sets of 63 there. */
    uint32_t wg = TSAN ? 64 : 1024;
    uint32_t sets0 = ka__fiberset_alive();
    long lines0 = maps_lines();
    for (int r = 0; r < 3; r++) bsum_run(&b, wg, 256);
    long grown = maps_lines() - lines0;
    uint32_t sets = ka__fiberset_alive() - sets0;
    print_message("64 threads, groups of %u: %u sets, %+ld mappings\n", wg, sets, grown);
    assert_true(sets >= 1 && sets <= 64 + 1);
    /* Each set's mapping, and a thread-local area and heap of each thread that ran the kernel first. */
    if (maps_are_ours()) assert_true(grown <= (long)sets * (markers ? 1 : 2 * (long)(wg - 1)) + 2 * 64 + 16);
    bsum_close(&b);
    assert_int_equal(ka__fiberset_alive(), sets0);
}

/* Threads that launch at once each hold a set; once their queues are gone
 * the device keeps a set per pool thread and queue, no more. Each of MEET
 * threads, its own queue, launches a group whose item 0 waits until all
 * have arrived (each thread holds its set then), before its barrier. */
#define MEET 6
static const char *meet_src =
    "KA_KERNEL(meet, KA_GLOBAL int *count, int want) {\n"
    "    if (ka_local_id(0) == 0) {\n"
    "        ka_atomic_add(&count[0], 1);\n"
    "        while (((volatile int *)count)[0] < want) {}\n"
    "    }\n"
    "    ka_barrier();\n"
    "}\n";

typedef struct meet_arg {
    ka_device dev;
    ka_kernel k;
    ka_buffer count;
    ka_status st;
} meet_arg;

static void *meet_main(void *p) {
    meet_arg *a = p;
    ka_queue q;
    a->st = ka_queue_create(a->dev, NULL, &q);
    if (a->st != KA_OK) return NULL;
    ka_arg args[] = {ka_arg_buffer(a->count), ka_arg_i32(MEET)};
    a->st = ka_launch(q, a->k, &(ka_range){.dims = 1, .size = {2}, .workgroup = {2}}, args, 2, NULL);
    ka_queue_release(q);
    return NULL;
}

static void device_sets_trimmed(void **state) {
    (void)state;
    bsum_dev b;
    if (!bsum_open(&b, "2")) skip();
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(b.dev, meet_src, NULL, &p));
    meet_arg a[MEET];
    ka_buffer count;
    KA_OK_OR_FAIL(ka_buffer_create_zeroed(b.dev, sizeof(int), &count));
    uint32_t sets0 = ka__fiberset_alive();
    pthread_t t[MEET];
    for (int i = 0; i < MEET; i++) {
        a[i] = (meet_arg){.dev = b.dev, .count = count};
        KA_OK_OR_FAIL(ka_kernel_get(p, "meet", NULL, &a[i].k));
        assert_int_equal(pthread_create(&t[i], NULL, meet_main, &a[i]), 0);
    }
    for (int i = 0; i < MEET; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        if (a[i].st != KA_OK) fail_msg("thread %d: %s", i, ka_status_name(a[i].st));
    }
    uint32_t kept = ka__fiberset_alive() - sets0;
    print_message("%d threads met in their launches; sets kept after: %u\n", MEET, kept);
    assert_true(kept <= 2 + 1); /* the pool's 2 threads and bsum_open's queue */
    ka_buffer_release(count);
    ka_program_release(p);
    bsum_close(&b);
    assert_int_equal(ka__fiberset_alive(), sets0);
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
        cmocka_unit_test(fibers_stack_overflow),
        cmocka_unit_test(fibers_barrier_below_stack),
        cmocka_unit_test(fibers_guard_budget),
        cmocka_unit_test(fibers_map_failure_named),
        cmocka_unit_test(fibers_in_pool_threads),
        cmocka_unit_test(exec_allocations),
        cmocka_unit_test(device_sets_sized),
        cmocka_unit_test(device_many_threads),
        cmocka_unit_test(device_sets_trimmed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
