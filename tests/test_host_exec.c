/* The host back-end's execution engine (src/backends/host/host_exec.h), on
 * its own: the thread pool (every part once per run, the same thread for a
 * part on every run, long runs of runs, runs from several threads at once,
 * more threads than cores) and the fibers of a work-group (barriers in
 * loops, a work-group reduction through a shared array, divergent barriers
 * refused and the set usable after, sets in pool threads). */
#include "test_util.h"

#include "../src/backends/host/host_exec.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

/* ---- the pool ------------------------------------------------------------ */

#define MAX_PARTS 16

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
        part_log l = {.nparts = n};
        ka__pool_run(p, log_part, &l);
        expect_runs(&l, 1);
        pthread_t first[MAX_PARTS];
        memcpy(first, l.who, sizeof first);
        assert_true(pthread_equal(first[0], pthread_self())); /* part 0 is the caller */
        for (uint32_t i = 1; i < n; i++) /* a worker each */
            for (uint32_t j = 0; j < i; j++) assert_false(pthread_equal(first[i], first[j]));
        for (int r = 2; r <= 200; r++) {
            ka__pool_run(p, log_part, &l);
            expect_runs(&l, (uint64_t)r);
            for (uint32_t i = 0; i < n; i++) assert_true(pthread_equal(l.who[i], first[i]));
            if (r % 50 == 0) usleep(2000); /* let the workers fall asleep: the wake path */
        }
        ka__pool_destroy(p);
    }
}

static void pool_many_runs(void **state) {
    (void)state;
    static const uint32_t sizes[] = {2, 4, 8};
    static const uint64_t runs[] = {100000, 20000, 5000}; /* fewer where threads outnumber cores */
    for (size_t s = 0; s < 3; s++) {
        ka__pool *p = NULL;
        assert_int_equal(ka__pool_create(sizes[s], &p), KA_OK);
        part_log l = {.nparts = sizes[s]};
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
            a[i].log.nparts = sizes[s];
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
    for (int i = 0; i < 4; i++) c.inner[i].nparts = 4;
    for (int r = 1; r <= 100; r++) {
        ka__pool_run(p, nest_part, &c);
        for (int i = 0; i < 4; i++) {
            expect_runs(&c.inner[i], (uint64_t)r);
            for (int j = 0; j < 4; j++) assert_true(pthread_equal(c.inner[i].who[j], c.inner[i].who[0]));
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

/* A generous watchdog: a lost wake-up hangs instead of failing. */
static void watchdog(int sig) {
    (void)sig;
    static const char msg[] = "test_host_exec: watchdog: no progress in 600 s (a lost wake-up?)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

int main(void) {
    signal(SIGALRM, watchdog);
    alarm(600);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pool_parts_once_same_thread),
        cmocka_unit_test(pool_many_runs),
        cmocka_unit_test(pool_concurrent_runs),
        cmocka_unit_test(pool_nested_run),
        cmocka_unit_test(pool_bad_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
