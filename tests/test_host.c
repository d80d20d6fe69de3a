/* The host back-end's own behaviour: a compile error is KA_ERR_BUILD_FAILED
 * with the compiler's message; $KA_CC naming no program is a clear error at
 * open, one that fails at build a clear build error; a kernel with barriers
 * (a block reduction in local memory), one with local memory and none, and a
 * barrier-free saxpy are correct across odd sizes and several work-group
 * sizes; dynamic local memory; two threads running one barrier kernel at
 * once keep their groups' local memory apart; an asynchronous launch returns before its
 * kernel, which waits on a host flag, completes; a work-item's stack overflow
 * fails the launch, naming it. Skipped when no C compiler is found (the
 * device is not listed). */
#include "test_util.h"

#include <pthread.h>
#include <unistd.h>

static ka_device g_dev;
static ka_queue g_q;

static const char *src =
    "KA_KERNEL(saxpy, KA_GLOBAL float *y, KA_CONST(float) x, float a) {\n"
    "    if (!ka_in_range()) return;\n"
    "    ka_size_t i = ka_global_id(0);\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n"
    "#ifndef WG\n#define WG 1024\n#endif\n"
    /* sums of each group's in-range items, by a tree in local memory */
    "KA_KERNEL(block_sum, KA_GLOBAL long *out, KA_CONST(int) in) {\n"
    "    KA_LOCAL long part[WG];\n"
    "    ka_size_t l = ka_local_id(0), n = ka_group_size(0);\n"
    "    part[l] = ka_in_range() ? in[ka_global_id(0)] : 0;\n"
    "    ka_barrier();\n"
    "    for (ka_size_t s = 1; s < n; s *= 2) {\n"
    "        if (l % (2 * s) == 0 && l + s < n) part[l] += part[l + s];\n"
    "        ka_barrier();\n"
    "    }\n"
    "    if (l == 0) out[ka_group_id(0)] = part[0];\n"
    "}\n"
    /* the same through dynamic local memory */
    "KA_KERNEL(block_sum_dyn, KA_GLOBAL long *out, KA_CONST(int) in, KA_LOCAL_ARG(long) part) {\n"
    "    ka_size_t l = ka_local_id(0), n = ka_group_size(0);\n"
    "    part[l] = ka_in_range() ? in[ka_global_id(0)] : 0;\n"
    "    ka_barrier();\n"
    "    if (l == 0) { long s = 0; for (ka_size_t j = 0; j < n; j++) s += part[j]; out[ka_group_id(0)] = s; }\n"
    "}\n"
    /* local memory, no barrier: each group counts its items in a local counter */
    "KA_KERNEL(group_count, KA_GLOBAL uint *out) {\n"
    "    KA_LOCAL uint cnt[1];\n"
    "    if (ka_local_linear_id() == 0) cnt[0] = 0;\n"
    "    ka_atomic_add(&cnt[0], 1u);\n"
    "    if (ka_local_linear_id() == ka_group_linear_size() - 1) out[ka_group_linear_id()] = cnt[0];\n"
    "}\n"
    "KA_KERNEL(hold, KA_GLOBAL volatile uint *flag, KA_GLOBAL uint *done) {\n"
    "    while (flag[0] == 0) {}\n"
    "    done[0] = 1;\n"
    "}\n";

static int setup(void **state) {
    (void)state;
    if (ka_device_open("host", &g_dev) != KA_OK) {
        fprintf(stderr, "test_host: no host device (%s): skipped\n", ka_last_error());
        return 0;
    }
    return ka_queue_create(g_dev, NULL, &g_q) == KA_OK ? 0 : -1;
}
static int teardown(void **state) {
    (void)state;
    if (!g_dev.id) return 0;
    ka_queue_release(g_q);
    return ka_device_close(g_dev) == KA_OK ? 0 : -1;
}
#define NEED_DEVICE() \
    do { if (!g_dev.id) skip(); } while (0)

static ka_program build(const char *s, const char *define) {
    ka_program p;
    ka_build_options o = {.defines = &define, .num_defines = 1};
    ka_status st = ka_program_build(g_dev, s, define ? &o : NULL, &p);
    if (st != KA_OK) fail_msg("ka_program_build: %s", ka_last_error());
    return p;
}

static void test_compile_error(void **state) {
    (void)state;
    NEED_DEVICE();
    ka_program p;
    KA_EXPECT(KA_ERR_BUILD_FAILED,
              ka_program_build(g_dev, "KA_KERNEL(bad, KA_GLOBAL int *a) {\n a[0] = no_such_name_here;\n}\n", NULL, &p));
    /* the compiler's own message, naming the identifier and the user's line */
    EXPECT_DETAIL("build log", "no_such_name_here", ":2:");
}

static void test_missing_compiler(void **state) {
    (void)state;
    NEED_DEVICE();
    const char *old = getenv("KA_CC");
    char *saved = old ? strdup(old) : NULL;
    setenv("KA_CC", "/nonexistent/libka-test-cc", 1);
    ka_device d;
    KA_EXPECT(KA_ERR_BACKEND_UNAVAILABLE, ka_device_open("host", &d));
    EXPECT_DETAIL("KA_CC", "/nonexistent/libka-test-cc", "not an executable");
    /* a program that runs but fails: a build error naming it */
    setenv("KA_CC", "false", 1);
    KA_OK_OR_FAIL(ka_device_open("host", &d));
    ka_program p;
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(d, src, NULL, &p));
    EXPECT_DETAIL("C compiler", "false", "exit status 1");
    KA_OK_OR_FAIL(ka_device_close(d));
    if (saved) setenv("KA_CC", saved, 1);
    else unsetenv("KA_CC");
    free(saved);
}

/* KA_NUM_THREADS sizes the pool (compute_units); a value that is not a
 * thread count is a clear error at open: plain digits, a blank on either
 * side refused alike. A pool of 3 runs a large saxpy right, on as many
 * threads as it has. */
static void test_num_threads(void **state) {
    (void)state;
    NEED_DEVICE();
    const char *old = getenv("KA_NUM_THREADS");
    char *saved = old ? strdup(old) : NULL;
    static const char *bad[] = {"0", "abc", "-2", "65537", "3x", "99999999999999999999", " 4", "4 ", "+4", "\t4"};
    ka_device d;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("KA_NUM_THREADS", bad[i], 1);
        KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_device_open("host", &d));
        EXPECT_DETAIL("KA_NUM_THREADS", bad[i], "1 to 65536");
    }
    setenv("KA_NUM_THREADS", "3", 1);
    KA_OK_OR_FAIL(ka_device_open("host", &d));
    const ka_device_info *di;
    KA_OK_OR_FAIL(ka_device_get_info(d, &di));
    assert_int_equal(di->compute_units, 3);
    ka_queue q;
    KA_OK_OR_FAIL(ka_queue_create(d, NULL, &q));
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(d, src, NULL, &p));
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "saxpy", NULL, &k));
    enum { N = 100003 };
    float *h = malloc(N * sizeof *h);
    for (int i = 0; i < N; i++) h[i] = (float)i;
    ka_buffer x, y;
    KA_OK_OR_FAIL(ka_buffer_create(d, N * sizeof *h, &x));
    KA_OK_OR_FAIL(ka_buffer_create(d, N * sizeof *h, &y));
    KA_OK_OR_FAIL(ka_buffer_write(q, x, 0, h, N * sizeof *h));
    KA_OK_OR_FAIL(ka_buffer_write(q, y, 0, h, N * sizeof *h));
    ka_arg a[] = {ka_arg_buffer(y), ka_arg_buffer(x), ka_arg_f32(2.0f)};
    KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {N}}, a, 3, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(q, h, y, 0, N * sizeof *h));
    for (int i = 0; i < N; i++)
        if (h[i] != 3.0f * (float)i) fail_msg("saxpy on 3 threads: y[%d] = %g, want %g", i, h[i], 3.0 * i);
    free(h);
    ka_buffer_release(x);
    ka_buffer_release(y);
    ka_program_release(p);
    ka_queue_release(q);
    KA_OK_OR_FAIL(ka_device_close(d));
    if (saved) setenv("KA_NUM_THREADS", saved, 1);
    else unsetenv("KA_NUM_THREADS");
    free(saved);
}

static void test_saxpy_sizes(void **state) {
    (void)state;
    NEED_DEVICE();
    ka_program p = build(src, NULL);
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "saxpy", NULL, &k));
    const uint32_t sizes[] = {1, 7, 64, 1000, 4099, 100003};
    const uint32_t wgs[] = {0, 1, 3, 64, 256};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t w = 0; w < sizeof wgs / sizeof wgs[0]; w++) {
            uint32_t n = sizes[s];
            float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
            for (uint32_t i = 0; i < n; i++) x[i] = (float)i, y[i] = (float)(i % 13);
            ka_buffer bx, by;
            KA_OK_OR_FAIL(ka_buffer_create_with(g_dev, n * sizeof *x, x, &bx));
            KA_OK_OR_FAIL(ka_buffer_create_with(g_dev, n * sizeof *y, y, &by));
            ka_arg a[] = {ka_arg_buffer(by), ka_arg_buffer(bx), ka_arg_f32(2.0f)};
            KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {n}, .workgroup = {wgs[w]}}, a, 3, NULL));
            KA_OK_OR_FAIL(ka_buffer_read(g_q, y, by, 0, n * sizeof *y));
            for (uint32_t i = 0; i < n; i++)
                if (y[i] != 2.0f * (float)i + (float)(i % 13)) fail_msg("n %u wg %u: y[%u] = %g", n, wgs[w], i, y[i]);
            ka_buffer_release(bx);
            ka_buffer_release(by);
            free(x);
            free(y);
        }
    ka_program_release(p);
}

/* block_sum (fibers) and block_sum_dyn (fibers, ka_arg_local) against the host's sums. */
static void test_block_reduction(void **state) {
    (void)state;
    NEED_DEVICE();
    const uint32_t sizes[] = {1, 5, 64, 1000, 4097, 20011};
    const uint32_t wgs[] = {1, 3, 16, 100, 256};
    for (size_t w = 0; w < sizeof wgs / sizeof wgs[0]; w++) {
        char opts[32];
        snprintf(opts, sizeof opts, "WG=%u", wgs[w]);
        ka_program p = build(src, opts);
        ka_kernel k, kd;
        KA_OK_OR_FAIL(ka_kernel_get(p, "block_sum", NULL, &k));
        KA_OK_OR_FAIL(ka_kernel_get(p, "block_sum_dyn", NULL, &kd));
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            uint32_t n = sizes[s], wg = wgs[w], ng = (n + wg - 1) / wg;
            int *in = malloc(n * sizeof *in);
            long *out = calloc(ng, sizeof *out);
            for (uint32_t i = 0; i < n; i++) in[i] = (int)(i * 7 % 101) - 50;
            ka_buffer bi, bo;
            KA_OK_OR_FAIL(ka_buffer_create_with(g_dev, n * sizeof *in, in, &bi));
            KA_OK_OR_FAIL(ka_buffer_create_zeroed(g_dev, ng * sizeof *out, &bo));
            for (int dyn = 0; dyn < 2; dyn++) {
                ka_arg a[] = {ka_arg_buffer(bo), ka_arg_buffer(bi), ka_arg_local(wg * sizeof(long))};
                KA_OK_OR_FAIL(ka_launch(g_q, dyn ? kd : k, &(ka_range){.dims = 1, .size = {n}, .workgroup = {wg}}, a,
                                        dyn ? 3 : 2, NULL));
                KA_OK_OR_FAIL(ka_buffer_read(g_q, out, bo, 0, ng * sizeof *out));
                for (uint32_t g = 0; g < ng; g++) {
                    long want = 0;
                    for (uint32_t i = g * wg; i < n && i < (g + 1) * wg; i++) want += in[i];
                    if (out[g] != want) fail_msg("%s n %u wg %u: group %u sum %ld, want %ld", dyn ? "dyn" : "static", n, wg, g,
                                                 out[g], want);
                }
            }
            ka_buffer_release(bi);
            ka_buffer_release(bo);
            free(in);
            free(out);
        }
        ka_program_release(p);
    }
}

/* Local memory without barriers (the group loop), 2-D groups of odd shapes. */
static void test_group_local(void **state) {
    (void)state;
    NEED_DEVICE();
    ka_program p = build(src, NULL);
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "group_count", NULL, &k));
    const uint32_t shapes[][4] = {{10, 7, 3, 2}, {100, 50, 16, 4}, {129, 65, 8, 8}, {5000, 3, 1, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const uint32_t *sh = shapes[s];
        uint32_t ng = ((sh[0] + sh[2] - 1) / sh[2]) * ((sh[1] + sh[3] - 1) / sh[3]);
        ka_buffer bo;
        KA_OK_OR_FAIL(ka_buffer_create_zeroed(g_dev, ng * 4, &bo));
        ka_arg a[] = {ka_arg_buffer(bo)};
        KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 2, .size = {sh[0], sh[1]}, .workgroup = {sh[2], sh[3]}}, a, 1, NULL));
        uint32_t *out = malloc(ng * 4);
        KA_OK_OR_FAIL(ka_buffer_read(g_q, out, bo, 0, ng * 4));
        for (uint32_t g = 0; g < ng; g++)
            if (out[g] != sh[2] * sh[3]) fail_msg("shape %zu: group %u counted %u, want %u", s, g, out[g], sh[2] * sh[3]);
        free(out);
        ka_buffer_release(bo);
    }
    ka_program_release(p);
}

/* Two threads, each with its own queue, run the same barrier kernel of one
 * program at once: a work-group's local array is its thread's own. */
typedef struct conc {
    ka_kernel k;
    uint32_t seed;
    int bad;
} conc;

static void *conc_run(void *arg) {
    conc *c = arg;
    enum { N = 8192, WGS = 64, NG = N / WGS };
    ka_queue q;
    if (ka_queue_create(g_dev, NULL, &q) != KA_OK) {
        c->bad = -1;
        return NULL;
    }
    int *in = malloc(N * sizeof *in);
    long *out = malloc(NG * sizeof *out);
    ka_buffer bi, bo;
    if (ka_buffer_create_zeroed(g_dev, N * sizeof *in, &bi) != KA_OK || ka_buffer_create_zeroed(g_dev, NG * sizeof *out, &bo) != KA_OK) {
        c->bad = -1;
        return NULL;
    }
    for (int round = 0; round < 40; round++) {
        for (int i = 0; i < N; i++) in[i] = (int)((i * 2654435761u + c->seed + (unsigned)round) % 1000);
        ka_arg a[] = {ka_arg_buffer(bo), ka_arg_buffer(bi)};
        if (ka_buffer_write(q, bi, 0, in, N * sizeof *in) != KA_OK ||
            ka_launch(q, c->k, &(ka_range){.dims = 1, .size = {N}, .workgroup = {WGS}}, a, 2, NULL) != KA_OK ||
            ka_buffer_read(q, out, bo, 0, NG * sizeof *out) != KA_OK) {
            c->bad = -1;
            break;
        }
        for (int g = 0; g < NG; g++) {
            long want = 0;
            for (int i = g * WGS; i < (g + 1) * WGS; i++) want += in[i];
            c->bad += out[g] != want;
        }
    }
    ka_buffer_release(bi);
    ka_buffer_release(bo);
    ka_queue_release(q);
    free(in);
    free(out);
    return NULL;
}

static void test_concurrent_groups(void **state) {
    (void)state;
    NEED_DEVICE();
    ka_program p = build(src, "WG=64");
    conc c[2] = {{.seed = 1}, {.seed = 7}};
    KA_OK_OR_FAIL(ka_kernel_get(p, "block_sum", NULL, &c[0].k));
    c[1].k = c[0].k;
    pthread_t t[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, conc_run, &c[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    if (c[0].bad || c[1].bad) fail_msg("wrong group sums: %d and %d (-1: a call failed)", c[0].bad, c[1].bad);
    ka_program_release(p);
}

/* A work-item that reaches a barrier from a frame larger than its fiber
 * stack (a private array of 300 KiB, in a helper: item 40 of each group of
 * 64 only) fails the launch with KA_ERR_KERNEL_FAILED naming the kernel and
 * the overflow, whichever pool thread met it first (reported by the next
 * wait: the launch is over the pool and returned first); the device runs the next
 * launch right. Only the array's top byte is written: the frame skips the
 * guard below the stack, and the barrier finds it. */
static const char *deep_src =
    /* GCC with stack-clash protection (Ubuntu's default) would probe every
     * page of the frame, and the probes fault on the guard pages instead of
     * skipping them: the case here is a frame that skips them. */
    "#pragma GCC optimize(\"no-stack-clash-protection\")\n"
    "static __attribute__((noinline)) int deep_barrier(void) {\n"
    "    volatile char big[300 * 1024];\n"
    "    big[sizeof big - 1] = 1;\n"
    "    __asm__ __volatile__(\"\" : : \"r\"(big) : \"memory\");\n" /* the whole frame: Clang would keep one byte */
    "    ka_barrier();\n"
    "    return big[sizeof big - 1];\n"
    "}\n"
    "KA_KERNEL(deep_frame, KA_GLOBAL int *out) {\n"
    "    int v = 0;\n"
    "    if (ka_local_id(0) == 40) v = deep_barrier();\n"
    "    else ka_barrier();\n"
    "    out[ka_global_id(0)] = v;\n"
    "}\n";

static void test_stack_overflow(void **state) {
    (void)state;
    NEED_DEVICE();
    ka_program p = build(deep_src, NULL);
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "deep_frame", NULL, &k));
    enum { N = 64 * 128 }; /* over the pool */
    ka_buffer bo;
    KA_OK_OR_FAIL(ka_buffer_create_zeroed(g_dev, N * sizeof(int), &bo));
    ka_arg a[] = {ka_arg_buffer(bo)};
    for (int rep = 0; rep < 2; rep++) {
        /* A launch over the pool returns first: the next wait reports it. */
        KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {N}, .workgroup = {64}}, a, 1, NULL));
        KA_EXPECT(KA_ERR_KERNEL_FAILED, ka_queue_finish(g_q));
        EXPECT_DETAIL("ka_queue_finish", "kernel 'deep_frame'", "stack overflow", "item 40 of a work-group of 64");
    }
    print_message("%s\n", ka_last_error());
    ka_buffer_release(bo);
    ka_program_release(p);
    test_block_reduction(state); /* the sets serve the next launches */
}

static void *watchdog(void *arg) {
    uint32_t *flag = arg;
    for (int i = 0; i < 600 && !__atomic_load_n(flag, __ATOMIC_ACQUIRE); i++) usleep(100000);
    __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
    return NULL;
}

/* KA_LAUNCH_ASYNC returns while the kernel waits for a flag only the host
 * sets after the launch returned; the event completes after. */
static void test_async(void **state) {
    (void)state;
    NEED_DEVICE();
    ka_program p = build(src, NULL);
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "hold", NULL, &k));
    uint32_t *flag;
    KA_OK_OR_FAIL(ka_host_alloc(g_dev, KA_HOST_ALIGN, (void **)&flag));
    memset(flag, 0, KA_HOST_ALIGN);
    ka_buffer fb, db;
    KA_OK_OR_FAIL(ka_buffer_wrap(g_dev, flag, KA_HOST_ALIGN, &fb));
    KA_OK_OR_FAIL(ka_buffer_create_zeroed(g_dev, 4, &db));
    pthread_t dog;
    assert_int_equal(pthread_create(&dog, NULL, watchdog, flag), 0);
    ka_arg a[] = {ka_arg_buffer(fb), ka_arg_buffer(db)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {1}, .flags = KA_LAUNCH_ASYNC}, a, 2, &ev));
    ka_status before = ka_event_wait(ev, 0); /* the host has not set the flag: still running */
    __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    uint32_t done = 0;
    KA_OK_OR_FAIL(ka_buffer_read(g_q, &done, db, 0, 4));
    pthread_join(dog, NULL);
    assert_int_equal(before, KA_ERR_TIMEOUT);
    assert_int_equal(done, 1);
    KA_OK_OR_FAIL(ka_event_release(ev));
    ka_buffer_release(fb);
    ka_buffer_release(db);
    KA_OK_OR_FAIL(ka_host_free(g_dev, flag));
    ka_program_release(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compile_error), cmocka_unit_test(test_missing_compiler),
        cmocka_unit_test(test_saxpy_sizes),   cmocka_unit_test(test_block_reduction),
        cmocka_unit_test(test_group_local),   cmocka_unit_test(test_concurrent_groups),
        cmocka_unit_test(test_async),         cmocka_unit_test(test_num_threads),
        cmocka_unit_test(test_stack_overflow),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
