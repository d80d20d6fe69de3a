/* Issue 17: adaptive PoCL routing. With no limit given, each kernel's
 * measured launch times per size class (log2 of the work-items) choose
 * between `basic` in the calling thread and the threaded device, and probes
 * of the other path move the choice back when times change. The measured
 * times are injected (the link replaces libka's ka__pocl_route_sample with
 * __wrap_ka__pocl_route_sample below, tests/CMakeLists.txt), so no case
 * depends on real timing or load: the cases check that a size class flips
 * to the faster path, flips back when the times change, keeps its own
 * choice per kernel and per size, that a limit from the queue's config or
 * $KA_INLINE_MAX_ITEMS and KA_INLINE_OFF still decide alone, that a launch
 * that chose inline stays on the threaded device behind pending launches
 * nobody waits for, that the adaptive launches allocate nothing, and that
 * threads launching one kernel get correct results. */
#include "test_util.h"

#include "pocl/pocl.h"

#include <pthread.h>

static const char *src = "KA_KERNEL(inc, KA_GLOBAL int *p) { if (ka_in_range()) p[ka_global_linear_id()] += 1; }\n";

#define MAXN 4096

/* The injected times, ns, by path: a fixed cost plus a cost per work-item. */
static _Atomic int64_t fixed_ns[2], item_ns[2];
static _Atomic uint64_t samples;

/* Every timed launch's sample, its measured time replaced. */
void __real_ka__pocl_route_sample(ka__pocl_bucket *b, unsigned path, uint64_t items, int64_t ns);
void __wrap_ka__pocl_route_sample(ka__pocl_bucket *b, unsigned path, uint64_t items, int64_t ns);
void __wrap_ka__pocl_route_sample(ka__pocl_bucket *b, unsigned path, uint64_t items, int64_t ns) {
    (void)ns;
    atomic_fetch_add(&samples, 1);
    __real_ka__pocl_route_sample(b, path, items, atomic_load(&fixed_ns[path]) + atomic_load(&item_ns[path]) * (int64_t)items);
}

static void set_times(int64_t thr_fixed, int64_t thr_item, int64_t inl_fixed, int64_t inl_item) {
    atomic_store(&fixed_ns[KA__PATH_THREADED], thr_fixed);
    atomic_store(&item_ns[KA__PATH_THREADED], thr_item);
    atomic_store(&fixed_ns[KA__PATH_INLINE], inl_fixed);
    atomic_store(&item_ns[KA__PATH_INLINE], inl_item);
}

static ka_program progs[16];
static int nprogs;

static struct {
    ka_device dev;
    ka_program prog;
    ka_buffer buf;
    bool adaptive_default; /* the environment leaves the default queue adaptive */
} F;

static int setup(void **state) {
    (void)state;
    if (ka_device_open(NULL, &F.dev) || ka_program_build(F.dev, src, NULL, &F.prog) ||
        ka_buffer_create(F.dev, MAXN * sizeof(int), &F.buf)) {
        fprintf(stderr, "setup: %s\n", ka_last_error());
        return -1;
    }
    const char *slow = getenv("KA_INLINE_SLOW_US");
    F.adaptive_default = !getenv("KA_INLINE_MAX_ITEMS") && !(slow && !strcmp(slow, "0"));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (int i = 0; i < nprogs; i++) ka_program_release(progs[i]);
    ka_buffer_release(F.buf);
    ka_program_release(F.prog);
    ka_device_close(F.dev);
    return 0;
}

/* A queue with adaptive routing (the default one), or a skip where there is
 * no routing (not PoCL, POCL_DEVICES without `basic`) or the environment
 * fixes the limit. */
static ka_queue adaptive_queue(void) {
    if (!F.adaptive_default) {
        print_message("skipped: KA_INLINE_MAX_ITEMS or KA_INLINE_SLOW_US=0 in the environment fixes the limit\n");
        skip();
    }
    ka_queue q;
    KA_OK_OR_FAIL(ka_queue_create(F.dev, NULL, &q));
    ka_queue_stats s;
    KA_OK_OR_FAIL(ka_queue_get_stats(q, &s));
    if (!s.inline_max_items) {
        ka_queue_release(q);
        print_message("skipped: this device has no PoCL routing\n");
        skip();
    }
    assert_true(s.inline_max_items >= MAXN);
    return q;
}

static uint64_t inline_count(ka_queue q) {
    ka_queue_stats s;
    KA_OK_OR_FAIL(ka_queue_get_stats(q, &s));
    return s.inline_launches;
}

/* n launches of k over `items` work-items: how many ran inline. */
static uint64_t launches(ka_queue q, ka_kernel k, uint32_t items, int n) {
    uint64_t before = inline_count(q);
    ka_arg args[] = {ka_arg_buffer(F.buf)};
    for (int i = 0; i < n; i++) KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {items}}, args, 1, NULL));
    return inline_count(q) - before;
}

/* A kernel of a new program: the routing record lives with the kernel. The
 * programs are released at teardown. */
static ka_kernel new_kernel(void) {
    ka_kernel k;
    assert_true(nprogs < 16);
    KA_OK_OR_FAIL(ka_program_build(F.dev, src, NULL, &progs[nprogs]));
    KA_OK_OR_FAIL(ka_kernel_get(progs[nprogs++], "inc", NULL, &k));
    return k;
}

/* Launches in chunks of 64 until one chunk has at least 56 launches on the
 * wanted path; the number of launches it took, or -1 past `limit`. */
static int until_mostly(ka_queue q, ka_kernel k, uint32_t items, bool want_inline, int limit) {
    for (int done = 0; done < limit; done += 64) {
        uint64_t inl = launches(q, k, items, 64);
        if ((want_inline ? inl : 64 - inl) >= 56) return done + 64;
    }
    return -1;
}

static void flips_to_faster_and_back(void **state) {
    (void)state;
    ka_queue q = adaptive_queue();
    ka_kernel k = new_kernel();
    uint64_t s0 = atomic_load(&samples);
    set_times(10000, 0, 1000000, 0); /* threaded 10 us, inline 1 ms */
    /* 64 items: the seed model starts inline; the warm-up tries both. */
    assert_int_equal(launches(q, k, 64, 4), 2);
    assert_int_equal(atomic_load(&samples) - s0, 2); /* one timed launch on each path */
    uint64_t inl = launches(q, k, 64, 400);
    print_message("threaded faster: %llu of 400 launches inline (probes)\n", (unsigned long long)inl);
    /* A path 100 times slower is probed every 2^10 launches or less often
     * (its probe's extra time at most 1/16 of the time between probes). */
    assert_int_equal(inl, 0);
    /* The times change: inline is now the faster path. */
    set_times(1000000, 0, 10000, 0);
    /* The period between probes grows to 2^13 launches here (2^p launches
     * of 10 us under KA__PROBE_SPAN_NS). */
    int took = until_mostly(q, k, 64, true, 1 << 15);
    print_message("inline faster: moved after %d launches\n", took);
    assert_true(took > 1024); /* probes of a 10-us path rarer than every 2^10 launches */
    inl = launches(q, k, 64, 256);
    assert_true(inl >= 240);
    /* And back again. */
    set_times(10000, 0, 1000000, 0);
    took = until_mostly(q, k, 64, false, 1 << 15);
    print_message("threaded faster again: moved after %d launches\n", took);
    assert_true(took > 0);
    KA_OK_OR_FAIL(ka_queue_release(q));
}

/* Each size class and each kernel keeps its own choice. */
static void per_size_and_kernel(void **state) {
    (void)state;
    ka_queue q = adaptive_queue();
    ka_kernel a = new_kernel(), b = new_kernel();
    /* 100 ns per item inline, 50 us per launch threaded: 64 items (6.4 us)
     * inline, 4096 (410 us) threaded, both seeded inline. */
    set_times(50000, 0, 0, 100);
    uint64_t small = launches(q, a, 64, 200), large = launches(q, a, MAXN, 200);
    print_message("per size: 64 items %llu of 200 inline, 4096 items %llu of 200\n", (unsigned long long)small,
                  (unsigned long long)large);
    assert_true(small >= 180);
    assert_true(large <= 20);
    /* 4096 items is now faster inline, for kernel b alone: a's size class
     * between two probes stays on the threaded device. */
    set_times(50000, 0, 0, 1);
    uint64_t b_large = launches(q, b, MAXN, 40);
    uint64_t a_large = launches(q, a, MAXN, 20); /* launches 201-220: no probe due (every 2^6 or more by now) */
    print_message("kernel b: %llu of 40 inline; kernel a: %llu of 20\n", (unsigned long long)b_large,
                  (unsigned long long)a_large);
    assert_true(b_large >= 30);
    assert_int_equal(a_large, 0);
    KA_OK_OR_FAIL(ka_queue_release(q));
}

/* A limit from the queue's config or the environment is a size rule alone:
 * no timed launches, whatever the times. */
static void limits_still_override(void **state) {
    (void)state;
    set_times(1, 0, 1000000000, 0); /* inline a second: adaptive routing would never run it */
    ka_kernel k = new_kernel();
    ka_queue q;
    uint64_t s0 = atomic_load(&samples);
    KA_OK_OR_FAIL(ka_queue_create(F.dev, &(ka_queue_config){.inline_max_items = 128}, &q));
    ka_queue_stats st;
    KA_OK_OR_FAIL(ka_queue_get_stats(q, &st));
    bool routing = st.inline_max_items != 0;
    assert_int_equal(launches(q, k, 64, 50), routing ? 50 : 0);
    assert_int_equal(launches(q, k, 256, 10), 0);
    KA_OK_OR_FAIL(ka_queue_release(q));
    setenv("KA_INLINE_MAX_ITEMS", "100", 1);
    ka_status cst = ka_queue_create(F.dev, NULL, &q);
    unsetenv("KA_INLINE_MAX_ITEMS");
    KA_OK_OR_FAIL(cst);
    KA_OK_OR_FAIL(ka_queue_get_stats(q, &st));
    assert_int_equal(st.inline_max_items, routing ? 100 : 0);
    assert_int_equal(launches(q, k, 64, 50), routing ? 50 : 0);
    KA_OK_OR_FAIL(ka_queue_release(q));
    KA_OK_OR_FAIL(ka_queue_create(F.dev, &(ka_queue_config){.inline_max_items = KA_INLINE_OFF}, &q));
    set_times(1000000000, 0, 1, 0); /* inline far faster: still never inline */
    assert_int_equal(launches(q, k, 64, 50), 0);
    KA_OK_OR_FAIL(ka_queue_release(q));
    assert_int_equal(atomic_load(&samples), s0);
}

/* A launch that chose inline goes to the threaded device while launches
 * nobody waits for are pending there (an inline launch would finish them
 * first, losing the pipeline's overlap), and inline again once a finish, a
 * wait on an event or a blocking transfer covers them. The order of the
 * increments holds on every path. */
static void pipeline_keeps_threaded(void **state) {
    (void)state;
    ka_queue q = adaptive_queue();
    ka_kernel big = new_kernel(), small = new_kernel();
    /* 100 ns per item inline, 50 us per launch threaded: 4096 items
     * threaded, 64 items inline. */
    set_times(50000, 0, 0, 100);
    int zero = 0;
    KA_OK_OR_FAIL(ka_buffer_fill(q, F.buf, 0, &zero, sizeof zero, MAXN * sizeof(int), NULL));
    assert_true(launches(q, big, MAXN, 200) <= 20);
    assert_true(launches(q, small, 64, 200) >= 180);
    KA_OK_OR_FAIL(ka_queue_finish(q));
    /* A two-kernel step, no waits: launches 200-249 of each size class, no
     * probe due (every 2^7 launches by now), so the small kernel follows the
     * big one onto the threaded device. */
    uint64_t inl = 0;
    for (int i = 0; i < 50; i++) inl += launches(q, big, MAXN, 1) + launches(q, small, 64, 1);
    print_message("pipelined step: %llu of 100 launches inline\n", (unsigned long long)inl);
    assert_int_equal(inl, 0);
    KA_OK_OR_FAIL(ka_queue_finish(q));
    assert_true(launches(q, small, 64, 20) >= 19); /* launch 256: a probe of the threaded path */
    /* The big kernel's launch waited for, or a blocking read after it: the
     * small one runs inline. */
    ka_arg args[] = {ka_arg_buffer(F.buf)};
    ka_range big_r = {.dims = 1, .size = {MAXN}};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(q, big, &big_r, args, 1, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    assert_int_equal(launches(q, small, 64, 1), 1);
    int got[2];
    KA_OK_OR_FAIL(ka_launch(q, big, &big_r, args, 1, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(q, got, F.buf, 0, sizeof got));
    assert_int_equal(launches(q, small, 64, 1), 1);
    /* Every increment arrived, in order: 200 + 50 + 2 big launches, 200 +
     * 50 + 20 + 2 small ones. */
    int *all = malloc(MAXN * sizeof(int));
    assert_non_null(all);
    KA_OK_OR_FAIL(ka_buffer_read(q, all, F.buf, 0, MAXN * sizeof(int)));
    assert_int_equal(got[0], 252 + 271);
    for (uint32_t j = 0; j < MAXN; j++) {
        int want = j < 64 ? 252 + 272 : 252;
        if (all[j] != want) fail_msg("element %u: %d, expected %d", j, all[j], want);
    }
    free(all);
    KA_OK_OR_FAIL(ka_queue_release(q));
}

/* Warm-up, probes, flips and timed launches on both paths allocate nothing
 * in libka. */
static void adaptive_launches_allocate_nothing(void **state) {
    (void)state;
    ka_queue q = adaptive_queue();
    ka_kernel k = new_kernel();
    /* 100 us on the chosen path: probes at least every 2^10 launches, so the
     * choice flips within the 1200 launches below. */
    set_times(100000, 0, 1000000, 0);
    launches(q, k, 64, 8); /* the kernel built for `basic`, the first local size on each device */
    KA_OK_OR_FAIL(ka_queue_finish(q));
    heap_install();
    heap_start();
    uint64_t s0 = atomic_load(&samples);
    uint64_t inl = launches(q, k, 64, 300);
    set_times(1000000, 0, 100000, 0);
    inl += launches(q, k, 64, 1200);
    KA_OK_OR_FAIL(ka_queue_finish(q));
    ka_set_allocator(NULL);
    print_message("%llu timed launches, %llu inline of 1500\n", (unsigned long long)(atomic_load(&samples) - s0),
                  (unsigned long long)inl);
    assert_true(atomic_load(&samples) - s0 >= 4);
    assert_true(inl > 100 && inl < 1500); /* flipped to inline */
    assert_int_equal(heap_stop(), 0);
    KA_OK_OR_FAIL(ka_queue_release(q));
}

#define THREADS 4
#define PER_THREAD 300

typedef struct worker {
    ka_queue q;
    ka_kernel k;
    ka_buffer buf;
    ka_status st;
} worker;

static void *work(void *p) {
    worker *w = p;
    ka_arg args[] = {ka_arg_buffer(w->buf)};
    for (int i = 0; i < PER_THREAD && w->st == KA_OK; i++) {
        uint32_t items = i % 3 == 0 ? MAXN : 64; /* two size classes */
        /* Flips the times now and then: every path and flip taken under races. */
        if (i % 100 == 50) set_times(i % 200 == 50 ? 1000000 : 10000, 0, i % 200 == 50 ? 10000 : 1000000, 0);
        w->st = ka_launch(w->q, w->k, &(ka_range){.dims = 1, .size = {items}}, args, 1, NULL);
    }
    return NULL;
}

/* Threads launch one kernel (one routing record), each on its own queue and
 * buffer: every launch's increments arrive, whichever path it took. */
static void threads_share_a_kernel(void **state) {
    (void)state;
    ka_queue probe = adaptive_queue();
    KA_OK_OR_FAIL(ka_queue_release(probe));
    ka_kernel k = new_kernel();
    set_times(10000, 0, 1000000, 0);
    worker w[THREADS];
    pthread_t t[THREADS];
    int zero = 0;
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.k = k, .st = KA_OK};
        KA_OK_OR_FAIL(ka_queue_create(F.dev, NULL, &w[i].q));
        KA_OK_OR_FAIL(ka_buffer_create(F.dev, MAXN * sizeof(int), &w[i].buf));
        KA_OK_OR_FAIL(ka_buffer_fill(w[i].q, w[i].buf, 0, &zero, sizeof zero, MAXN * sizeof(int), NULL));
        KA_OK_OR_FAIL(ka_queue_finish(w[i].q));
    }
    for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    int *got = malloc(MAXN * sizeof(int));
    for (int i = 0; i < THREADS; i++) {
        KA_OK_OR_FAIL(w[i].st);
        KA_OK_OR_FAIL(ka_buffer_read(w[i].q, got, w[i].buf, 0, MAXN * sizeof(int)));
        for (uint32_t j = 0; j < MAXN; j++) {
            int want = j < 64 ? PER_THREAD : PER_THREAD / 3;
            if (got[j] != want) fail_msg("thread %d, element %u: %d, expected %d", i, j, got[j], want);
        }
        KA_OK_OR_FAIL(ka_buffer_release(w[i].buf));
        KA_OK_OR_FAIL(ka_queue_release(w[i].q));
    }
    free(got);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(flips_to_faster_and_back),
        cmocka_unit_test(per_size_and_kernel),
        cmocka_unit_test(limits_still_override),
        cmocka_unit_test(pipeline_keeps_threaded),
        cmocka_unit_test(adaptive_launches_allocate_nothing),
        cmocka_unit_test(threads_share_a_kernel),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
