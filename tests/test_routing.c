/* Issue 7: on PoCL, small launches run inline on the `basic` device and large
 * ones on the threaded device, behind one in-order queue. Sequences of small
 * and large kernels that each read the previous one's output are checked
 * element by element, on the routed queue and with routing off; waits,
 * callbacks and eventfd notifications work on inline launches. The cases that
 * need routing skip (cmocka skip, with a message) where the device has none
 * (not PoCL, or POCL_DEVICES set by the user without `basic`). */
#include "test_util.h"

#include <poll.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static const char *src =
    /* dst[i] = src[i] * 3 + step over the first n elements */
    "KA_KERNEL(advance, KA_GLOBAL int *dst, KA_GLOBAL const int *src, int k) {\n"
    "    if (!ka_in_range()) return;\n"
    "    size_t i = ka_global_id(0);\n"
    "    dst[i] = src[i] * 3 + k;\n"
    "}\n"
    /* a small kernel that reads far-apart elements a large one wrote */
    "KA_KERNEL(gather, KA_GLOBAL int *dst, KA_GLOBAL const int *src, uint stride) {\n"
    "    if (!ka_in_range()) return;\n"
    "    size_t i = ka_global_id(0);\n"
    "    dst[i] = src[i * stride];\n"
    "}\n";

#define BIG (1u << 20)
#define SMALL 64u

static struct {
    ka_device dev;
    ka_queue routed, direct;
    ka_program prog;
    ka_kernel step, gather;
    ka_buffer a, b, g;
    uint64_t limit;
} F;

static int setup(void **state) {
    (void)state;
    ka_queue_config off = {.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF};
    /* The tests count exactly which launches ran inline: the routed queue has
     * a fixed limit (the default queue's adaptive choice depends on measured
     * times: test_route_calib tests it) and never demotes a kernel (a loaded
     * machine can make two timed launches slow); slow_small_kernel_demoted
     * tests demotion on a queue of its own. */
    ka_queue_config fixed = {.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = 262144};
    setenv("KA_INLINE_SLOW_US", "0", 1);
    int bad = ka_device_open(NULL, &F.dev) || ka_queue_create(F.dev, &fixed, &F.routed);
    unsetenv("KA_INLINE_SLOW_US");
    if (bad ||
        ka_queue_create(F.dev, &off, &F.direct) || ka_program_build(F.dev, src, NULL, &F.prog) ||
        ka_kernel_get(F.prog, "advance", NULL, &F.step) || ka_kernel_get(F.prog, "gather", NULL, &F.gather) ||
        ka_buffer_create(F.dev, BIG * sizeof(int), &F.a) || ka_buffer_create(F.dev, BIG * sizeof(int), &F.b) ||
        ka_buffer_create(F.dev, BIG * sizeof(int), &F.g)) {
        fprintf(stderr, "setup: %s\n", ka_last_error());
        return -1;
    }
    ka_queue_stats s;
    ka_queue_get_stats(F.routed, &s);
    F.limit = s.inline_max_items;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ka_buffer_release(F.a);
    ka_buffer_release(F.b);
    ka_buffer_release(F.g);
    ka_program_release(F.prog);
    ka_queue_release(F.routed);
    ka_queue_release(F.direct);
    ka_device_close(F.dev);
    return 0;
}

static void need_routing(void) {
    if (F.limit < SMALL || F.limit >= BIG) {
        print_message("skipped: this device has no PoCL routing (limit %llu)\n", (unsigned long long)F.limit);
        skip();
    }
}

static uint64_t inline_count(ka_queue q) {
    ka_queue_stats s;
    KA_OK_OR_FAIL(ka_queue_get_stats(q, &s));
    return s.inline_launches;
}

static void run_step(ka_queue q, ka_buffer dst, ka_buffer srcb, uint32_t n, int k) {
    ka_arg args[] = {ka_arg_buffer(dst), ka_arg_buffer(srcb), ka_arg_i32(k)};
    KA_OK_OR_FAIL(ka_launch(q, F.step, &(ka_range){.dims = 1, .size = {n}}, args, 3, NULL));
}

/* Interleaves small and large steps, ping-ponging a and b, with no waits in
 * between: each launch must see the previous one's results. */
static void sequence(ka_queue q) {
    int *host = malloc(BIG * sizeof(int)), *got = malloc(BIG * sizeof(int));
    for (uint32_t i = 0; i < BIG; i++) host[i] = (int)(i % 1000);
    KA_OK_OR_FAIL(ka_buffer_write(q, F.a, 0, host, BIG * sizeof(int)));
    KA_OK_OR_FAIL(ka_buffer_write(q, F.b, 0, host, BIG * sizeof(int)));
    ka_buffer cur = F.a, other = F.b;
    static const uint32_t sizes[] = {SMALL, BIG, SMALL, SMALL, BIG, BIG, SMALL, 1000, BIG, 7, SMALL, BIG};
    /* model: element i of the buffer that holds the latest values */
    int *model_cur = malloc(BIG * sizeof(int)), *model_other = malloc(BIG * sizeof(int));
    memcpy(model_cur, host, BIG * sizeof(int));
    memcpy(model_other, host, BIG * sizeof(int));
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        uint32_t n = sizes[s];
        int k = (int)s + 1;
        run_step(q, other, cur, n, k); /* other[i] = cur[i]*3 + k for i < n */
        for (uint32_t i = 0; i < n; i++) model_other[i] = model_cur[i] * 3 + k;
        ka_buffer t = cur;
        cur = other;
        other = t;
        int *m = model_cur;
        model_cur = model_other;
        model_other = m;
    }
    KA_OK_OR_FAIL(ka_buffer_read(q, got, cur, 0, BIG * sizeof(int)));
    for (uint32_t i = 0; i < BIG; i++)
        if (got[i] != model_cur[i]) fail_msg("element %u: %d, expected %d", i, got[i], model_cur[i]);
    KA_OK_OR_FAIL(ka_buffer_read(q, got, other, 0, BIG * sizeof(int)));
    for (uint32_t i = 0; i < BIG; i++)
        if (got[i] != model_other[i]) fail_msg("other buffer, element %u: %d, expected %d", i, got[i], model_other[i]);
    free(host);
    free(got);
    free(model_cur);
    free(model_other);
}

static void routed_sequence(void **state) {
    (void)state;
    need_routing();
    uint64_t before = inline_count(F.routed);
    sequence(F.routed);
    uint64_t inl = inline_count(F.routed) - before;
    print_message("%llu of 12 launches ran inline\n", (unsigned long long)inl);
    assert_int_equal(inl, 7); /* the seven launches of at most 1000 items */
}

static void direct_sequence(void **state) {
    (void)state;
    uint64_t before = inline_count(F.direct);
    sequence(F.direct);
    assert_int_equal(inline_count(F.direct), before);
}

/* A small inline kernel gathers what a large threaded one just wrote, and a
 * large one then overwrites what the small one read from. */
static void small_reads_large(void **state) {
    (void)state;
    need_routing();
    int zero = 0;
    KA_OK_OR_FAIL(ka_buffer_fill(F.routed, F.a, 0, &zero, sizeof zero, BIG * sizeof(int), NULL));
    for (int round = 1; round <= 5; round++) {
        run_step(F.routed, F.b, F.a, BIG, round); /* b = a*3 + round, threaded */
        ka_arg args[] = {ka_arg_buffer(F.g), ka_arg_buffer(F.b), ka_arg_u32(BIG / SMALL)};
        KA_OK_OR_FAIL(ka_launch(F.routed, F.gather, &(ka_range){.dims = 1, .size = {SMALL}}, args, 3, NULL)); /* inline */
        run_step(F.routed, F.a, F.b, BIG, 0); /* a = b*3, threaded */
        int g[SMALL];
        KA_OK_OR_FAIL(ka_buffer_read(F.routed, g, F.g, 0, sizeof g));
        /* a is uniform, so every gathered element is the same */
        int a_prev = 0;
        for (int r = 1; r < round; r++) a_prev = (a_prev * 3 + r) * 3;
        for (uint32_t i = 0; i < SMALL; i++)
            if (g[i] != a_prev * 3 + round) fail_msg("round %d, element %u: %d, expected %d", round, i, g[i], a_prev * 3 + round);
    }
}

static void on_done(ka_status st, void *user) {
    if (st == KA_OK) atomic_fetch_add((_Atomic int *)user, 1);
}

static void waits_on_inline_launches(void **state) {
    (void)state;
    need_routing();
    uint64_t before = inline_count(F.routed);
    ka_arg args[] = {ka_arg_buffer(F.b), ka_arg_buffer(F.a), ka_arg_i32(1)};
    ka_range r = {.dims = 1, .size = {SMALL}};
    ka_event ev[4];
    for (int i = 0; i < 4; i++) KA_OK_OR_FAIL(ka_launch(F.routed, F.step, &r, args, 3, &ev[i]));
    KA_OK_OR_FAIL(ka_event_wait(ev[0], 0)); /* inline: complete on return, a poll suffices */
    KA_OK_OR_FAIL(ka_wait_all(ev, 4, KA_WAIT_FOREVER));
    uint32_t idx = 99;
    KA_OK_OR_FAIL(ka_wait_any(ev, 4, 0, &idx));
    assert_true(idx < 4);
    _Atomic int fired = 0;
    KA_OK_OR_FAIL(ka_event_on_complete(ev[1], on_done, &fired));
    assert_int_equal(atomic_load(&fired), 1);
    int fd;
    KA_OK_OR_FAIL(ka_queue_fd(F.routed, &fd));
    KA_OK_OR_FAIL(ka_event_notify(ev[2]));
    struct pollfd p = {fd, POLLIN, 0};
    assert_int_equal(poll(&p, 1, 1000), 1);
    uint64_t cnt;
    assert_int_equal(read(fd, &cnt, sizeof cnt), sizeof cnt);
    for (int i = 0; i < 4; i++) KA_OK_OR_FAIL(ka_event_release(ev[i]));
    assert_int_equal(inline_count(F.routed) - before, 4);
}

/* A kernel of few work-items but much work is sent to the threaded device
 * after two slow inline launches. */
static void slow_small_kernel_demoted(void **state) {
    (void)state;
    need_routing();
    static const char *slow = "KA_KERNEL(slow, KA_GLOBAL float *p, uint iters) {\n"
                              "    if (!ka_in_range()) return;\n"
                              "    float x = p[ka_global_id(0)];\n"
                              "    for (uint i = 0; i < iters; i++) x = x * 0.999f + 0.5f;\n"
                              "    p[ka_global_id(0)] = x;\n"
                              "}\n";
    ka_program p;
    ka_kernel k;
    ka_queue dq; /* a limit set (demotion is for fixed limits), the default threshold (100 us) */
    KA_OK_OR_FAIL(ka_queue_create(F.dev, &(ka_queue_config){.inline_max_items = 262144}, &dq));
    KA_OK_OR_FAIL(ka_program_build(F.dev, slow, NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "slow", NULL, &k));
    ka_arg args[] = {ka_arg_buffer(F.a), ka_arg_u32(200000)}; /* milliseconds per launch */
    ka_range r = {.dims = 1, .size = {SMALL}};
    uint64_t before = inline_count(dq);
    for (int i = 0; i < 80; i++) KA_OK_OR_FAIL(ka_launch(dq, k, &r, args, 2, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(dq));
    uint64_t inl = inline_count(dq) - before;
    print_message("%llu of 80 slow launches ran inline\n", (unsigned long long)inl);
    assert_true(inl >= 2 && inl < 80);
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_OK_OR_FAIL(ka_queue_release(dq));
    /* KA_INLINE_SLOW_US=0 (read at ka_queue_create, as for F.routed): never
     * demoted. A new program, since demotion sticks to the kernel. */
    ka_queue q = F.routed;
    KA_OK_OR_FAIL(ka_program_build(F.dev, slow, NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "slow", NULL, &k));
    before = inline_count(q);
    for (int i = 0; i < 24; i++) KA_OK_OR_FAIL(ka_launch(q, k, &r, args, 2, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(q));
    assert_int_equal(inline_count(q) - before, 24);
    KA_OK_OR_FAIL(ka_program_release(p));
}

/* $KA_INLINE_MAX_ITEMS, read at each ka_queue_create whose config leaves the
 * limit at 0: a plain decimal sets it (0 turns routing off), anything else
 * gives the default (adaptive routing, whose limit is the largest launch it
 * may run inline). */
static void knob_from_environment(void **state) {
    (void)state;
    need_routing();
    static const struct {
        const char *value;
        uint64_t want; /* 0: routing off; UINT64_MAX: the default (a queue's limit without the variable) */
    } cases[] = {{"100", 100}, {"0", 0}, {"-1", UINT64_MAX}, {"+5", UINT64_MAX}, {" 100", UINT64_MAX},
                 {"12abc", UINT64_MAX}, {"", UINT64_MAX}, {"99999999999999999999999", UINT64_MAX}};
    if (getenv("KA_INLINE_MAX_ITEMS")) { /* the fixture's limit must be the default */
        print_message("skipped: KA_INLINE_MAX_ITEMS is set in the environment\n");
        skip();
    }
    ka_queue dq;
    ka_queue_stats ds;
    KA_OK_OR_FAIL(ka_queue_create(F.dev, NULL, &dq));
    KA_OK_OR_FAIL(ka_queue_get_stats(dq, &ds));
    KA_OK_OR_FAIL(ka_queue_release(dq));
    assert_true(ds.inline_max_items > F.limit); /* adaptive: up to 2^22 work-items may run inline */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        setenv("KA_INLINE_MAX_ITEMS", cases[c].value, 1);
        ka_queue q;
        ka_status st = ka_queue_create(F.dev, NULL, &q);
        unsetenv("KA_INLINE_MAX_ITEMS");
        KA_OK_OR_FAIL(st);
        ka_queue_stats s;
        KA_OK_OR_FAIL(ka_queue_get_stats(q, &s));
        uint64_t want = cases[c].want == UINT64_MAX ? ds.inline_max_items : cases[c].want;
        if (s.inline_max_items != want)
            fail_msg("KA_INLINE_MAX_ITEMS=\"%s\": limit %llu, expected %llu", cases[c].value,
                     (unsigned long long)s.inline_max_items, (unsigned long long)want);
        if (want == 100) { /* 64 items run inline, 128 (over the limit) on the threaded device */
            uint64_t n0 = inline_count(q);
            run_step(q, F.b, F.a, 64, 1);
            assert_int_equal(inline_count(q) - n0, 1);
            run_step(q, F.b, F.a, 128, 1);
            assert_int_equal(inline_count(q) - n0, 1);
        }
        KA_OK_OR_FAIL(ka_queue_finish(q));
        KA_OK_OR_FAIL(ka_queue_release(q));
    }
}

static void knob_off_by_config(void **state) {
    (void)state;
    ka_queue_stats s;
    KA_OK_OR_FAIL(ka_queue_get_stats(F.direct, &s));
    assert_int_equal(s.inline_max_items, 0);
    ka_queue q;
    KA_OK_OR_FAIL(ka_queue_create(F.dev, &(ka_queue_config){.inline_max_items = 128}, &q));
    KA_OK_OR_FAIL(ka_queue_get_stats(q, &s));
    if (F.limit) assert_int_equal(s.inline_max_items, 128);
    KA_OK_OR_FAIL(ka_queue_release(q));
}

/* The user's POCL_DEVICES, as the process started (libka sets it when unset). */
static const char *user_pocl_devices;

/* A POCL_DEVICES the user set is left alone: without `basic` there is no
 * routing (ctest runs this program once more as test_routing_user_pocl_devices,
 * with POCL_DEVICES=pthread). */
static void user_pocl_devices_respected(void **state) {
    (void)state;
    if (!user_pocl_devices) {
        print_message("skipped: POCL_DEVICES unset (test_routing_user_pocl_devices sets it)\n");
        skip();
    }
    const ka_device_info *di;
    KA_OK_OR_FAIL(ka_device_get_info(F.dev, &di));
    if (di->backend != KA_BACKEND_OPENCL) {
        print_message("skipped: the default device is not an OpenCL device (%s)\n", di->selector);
        skip();
    }
    const char *now = getenv("POCL_DEVICES");
    assert_non_null(now);
    assert_string_equal(now, user_pocl_devices);
    ka_native_device nat;
    KA_OK_OR_FAIL(ka_device_get_native(F.dev, &nat));
    if (!strstr(user_pocl_devices, "basic")) {
        assert_null(nat.inline_device);
        assert_int_equal(F.limit, 0);
        uint64_t n0 = inline_count(F.routed);
        run_step(F.routed, F.b, F.a, SMALL, 1);
        KA_OK_OR_FAIL(ka_queue_finish(F.routed));
        assert_int_equal(inline_count(F.routed), n0);
    }
}

int main(void) {
    user_pocl_devices = getenv("POCL_DEVICES");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(routed_sequence),
        cmocka_unit_test(direct_sequence),
        cmocka_unit_test(small_reads_large),
        cmocka_unit_test(waits_on_inline_launches),
        cmocka_unit_test(slow_small_kernel_demoted),
        cmocka_unit_test(knob_off_by_config),
        cmocka_unit_test(knob_from_environment),
        cmocka_unit_test(user_pocl_devices_respected),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
