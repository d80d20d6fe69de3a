/* Bad input to the launch path: each case a clean status naming the
 * argument or the sizes, never a crash (PoCL asserts on some of these when
 * they reach the driver), on the routed queue (small launches inline on
 * PoCL) and on the threaded one, with and without an event. */
#define _GNU_SOURCE
#include "test_util.h"
#include <stdint.h>
#include <string.h>


static const char *src =
    "typedef struct pair { float a; float b; int c; int d; } pair;\n"
    "KA_KERNEL(with_struct, KA_GLOBAL float *y, pair p) {\n"
    "    if (!ka_in_range()) return;\n"
    "    y[ka_global_id(0)] = p.a + p.b + (float)(p.c + p.d);\n"
    "}\n"
    "KA_KERNEL(scaled, KA_GLOBAL float *y, float s) {\n"
    "    if (!ka_in_range()) return;\n"
    "    y[ka_global_id(0)] = s;\n"
    "}\n";

typedef struct pair {
    float a, b;
    int32_t c, d;
} pair;

static ka_device g_dev;
static ka_queue g_q[2]; /* routed (default), threaded */
static ka_program g_prog;
static ka_buffer g_y;
static const ka_device_info *g_info;

static int setup(void **state) {
    (void)state;
    static const ka_queue_config threaded = {.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF};
    if (ka_device_open(NULL, &g_dev) || ka_device_get_info(g_dev, &g_info) || ka_queue_create(g_dev, NULL, &g_q[0]) ||
        ka_queue_create(g_dev, &threaded, &g_q[1]) || ka_buffer_create(g_dev, 4096, &g_y)) {
        fprintf(stderr, "setup: %s\n", ka_last_error());
        return -1;
    }
    if (ka_program_build(g_dev, src, NULL, &g_prog)) {
        fprintf(stderr, "build: %s\n", ka_last_error());
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ka_buffer_release(g_y);
    ka_program_release(g_prog);
    ka_queue_release(g_q[0]);
    ka_queue_release(g_q[1]);
    return ka_device_close(g_dev) == KA_OK ? 0 : -1;
}

static ka_kernel kernel(const char *name) {
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(g_prog, name, NULL, &k));
    return k;
}

/* Launches on both queues, with and without an event; each must return st. */
static void expect_everywhere(ka_status st, ka_kernel k, const ka_range *r, const ka_arg *args, uint32_t n) {
    for (int qi = 0; qi < 2; qi++)
        for (int with_ev = 0; with_ev < 2; with_ev++) {
            ka_event ev = {42};
            ka_status got = ka_launch(g_q[qi], k, r, args, n, with_ev ? &ev : NULL);
            if (got != st)
                fail_msg("queue %d, event %d: %s, expected %s\n%s", qi, with_ev, ka_status_name(got), ka_status_name(st),
                         ka_last_error());
            if (with_ev && st != KA_OK) assert_true(ev.id == 0);
            if (with_ev && st == KA_OK) {
                KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
                KA_OK_OR_FAIL(ka_event_release(ev));
            }
        }
}

static float first_y(void) {
    float v = -1;
    KA_OK_OR_FAIL(ka_buffer_read(g_q[0], &v, g_y, 0, sizeof v));
    return v;
}

/* `ka_arg args[2] = {ka_arg_buffer(y)};` leaves the second zeroed: kind 0.
 * Before the fix a struct parameter's fast tag was 0 too, the check was
 * skipped and PoCL asserted in clSetKernelArg on a size of 0. */
static void zeroed_arg(void **state) {
    (void)state;
    const ka_range r = {.dims = 1, .size = {64}};
    ka_arg a[2] = {ka_arg_buffer(g_y)};
    expect_everywhere(KA_ERR_ARG_TYPE, kernel("with_struct"), &r, a, 2);
    EXPECT_DETAIL("with_struct", "argument 1", "unknown argument kind 0");
    expect_everywhere(KA_ERR_ARG_TYPE, kernel("scaled"), &r, a, 2); /* a float parameter */
    EXPECT_DETAIL("scaled", "argument 1", "'s'", "kind 0");
    ka_arg b[2] = {{0}, ka_arg_f32(1)}; /* where the buffer goes */
    expect_everywhere(KA_ERR_ARG_TYPE, kernel("scaled"), &r, b, 2);
    EXPECT_DETAIL("argument 0", "'y'");
    /* Any other unknown kind, whatever its size. */
    for (uint32_t kind = 5; kind < 8; kind++) {
        ka_arg c[2] = {ka_arg_buffer(g_y), ka_arg_u32(1)};
        c[1].kind = kind;
        expect_everywhere(KA_ERR_ARG_TYPE, kernel("with_struct"), &r, c, 2);
        ka_arg d[2] = {ka_arg_buffer(g_y), {kind, 0xffffffffu, {0}}};
        expect_everywhere(KA_ERR_ARG_TYPE, kernel("with_struct"), &r, d, 2);
    }
    /* Garbage of exactly the word an unknown-size parameter is tagged with
     * passes the one-compare check; the back-end still refuses the kind. */
    ka_arg e[2] = {ka_arg_buffer(g_y), {0, 0xffffffffu, {0}}};
    expect_everywhere(KA_ERR_ARG_TYPE, kernel("with_struct"), &r, e, 2);
    EXPECT_DETAIL("argument 1", "unknown argument kind 0");
    /* The right arguments still run. */
    pair p = {1.0f, 2.0f, 3, 4};
    ka_arg ok[2] = {ka_arg_buffer(g_y), ka_arg_bytes(&p, sizeof p)};
    expect_everywhere(KA_OK, kernel("with_struct"), &r, ok, 2);
    assert_true(first_y() == 10.0f);
}

/* Buffer arguments are resolved once, by the core, for every back-end: a
 * buffer of another device is KA_ERR_INVALID_ARGUMENT and a released one
 * KA_ERR_INVALID_HANDLE, on PoCL and on the null back-end alike, also for an
 * empty range (which runs nothing). */
static void foreign_and_released_buffers(void **state) {
    (void)state;
    const ka_range r = {.dims = 1, .size = {64}}, empty = {.dims = 1, .size = {0}};
    ka_device nd;
    ka_queue nq;
    ka_program np;
    ka_kernel nk;
    ka_buffer nb, gone;
    KA_OK_OR_FAIL(ka_device_open("null", &nd));
    KA_OK_OR_FAIL(ka_queue_create(nd, NULL, &nq));
    KA_OK_OR_FAIL(ka_program_build(nd, src, NULL, &np));
    KA_OK_OR_FAIL(ka_kernel_get(np, "scaled", NULL, &nk));
    KA_OK_OR_FAIL(ka_buffer_create(nd, 4096, &nb));
    KA_OK_OR_FAIL(ka_buffer_create(g_dev, 4096, &gone));
    KA_OK_OR_FAIL(ka_buffer_release(gone));

    ka_arg foreign[2] = {ka_arg_buffer(nb), ka_arg_f32(1)};
    expect_everywhere(KA_ERR_INVALID_ARGUMENT, kernel("scaled"), &r, foreign, 2);
    EXPECT_DETAIL("scaled", "argument 0", "'y'", "another device");
    expect_everywhere(KA_ERR_INVALID_ARGUMENT, kernel("scaled"), &empty, foreign, 2);
    ka_arg released[2] = {ka_arg_buffer(gone), ka_arg_f32(1)};
    expect_everywhere(KA_ERR_INVALID_HANDLE, kernel("scaled"), &r, released, 2);
    EXPECT_DETAIL("scaled", "argument 0", "released");
    expect_everywhere(KA_ERR_INVALID_HANDLE, kernel("scaled"), &empty, released, 2);

    ka_arg pocl_on_null[2] = {ka_arg_buffer(g_y), ka_arg_f32(1)};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_launch(nq, nk, &r, pocl_on_null, 2, NULL));
    EXPECT_DETAIL("another device");
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch(nq, nk, &r, released, 2, NULL));
    ka_arg own[2] = {ka_arg_buffer(nb), ka_arg_f32(1)};
    KA_OK_OR_FAIL(ka_launch(nq, nk, &r, own, 2, NULL));

    KA_OK_OR_FAIL(ka_buffer_release(nb));
    KA_OK_OR_FAIL(ka_program_release(np));
    KA_OK_OR_FAIL(ka_queue_release(nq));
    KA_OK_OR_FAIL(ka_device_close(nd));
}

/* KA_ARG_BYTES: the parameter's size where the signature knows it, and
 * always the device's max_arg_bytes; never 0 bytes or a NULL pointer. */
static void bytes_sizes(void **state) {
    (void)state;
    const ka_range r = {.dims = 1, .size = {64}};
    ka_kernel ks = kernel("with_struct");
    static char big[1 << 20];
    const uint32_t limit = g_info->max_arg_bytes;
    assert_true(limit > 0);
    size_t too_big[] = {(size_t)limit + 1, 2000 > limit ? 2000 : (size_t)limit + 8, sizeof big};
    for (size_t i = 0; i < sizeof too_big / sizeof too_big[0]; i++) {
        ka_arg a[2] = {ka_arg_buffer(g_y), ka_arg_bytes(big, too_big[i])};
        expect_everywhere(KA_ERR_ARG_TYPE, ks, &r, a, 2);
        EXPECT_DETAIL("with_struct", "argument 1", "'p'", "bytes");
    }
    ka_arg z[2] = {ka_arg_buffer(g_y), ka_arg_bytes(big, 0)};
    expect_everywhere(KA_ERR_ARG_TYPE, ks, &r, z, 2);
    ka_arg np[2] = {ka_arg_buffer(g_y), ka_arg_bytes(NULL, sizeof(pair))};
    expect_everywhere(KA_ERR_ARG_TYPE, ks, &r, np, 2);
    EXPECT_DETAIL("argument 1", "NULL");
    /* The struct's own size where the back-end can tell it. */
    ka_kernel_info ki;
    KA_OK_OR_FAIL(ka_kernel_get_info(ks, &ki));
    pair p = {1.0f, 1.0f, 1, 1};
    for (size_t n = 4; n <= 32; n += 4) {
        ka_arg a[2] = {ka_arg_buffer(g_y), ka_arg_bytes(big, n)};
        memcpy(big, &p, sizeof p);
        ka_status st = ka_launch(g_q[0], ks, &r, a, 2, NULL);
        if (n == sizeof p) KA_OK_OR_FAIL(st);
        else KA_EXPECT(KA_ERR_ARG_TYPE, st);
        if (st != KA_OK) EXPECT_DETAIL("argument 1", "'p'"); /* libka's check names the size; a driver's may not */
        if (st != KA_OK && g_info->backend != KA_BACKEND_OPENCL) EXPECT_DETAIL("16 bytes");
        if (st != KA_OK && strstr(g_info->platform, "Portable Computing Language")) EXPECT_DETAIL("16 bytes");
    }
    KA_OK_OR_FAIL(ka_queue_finish(g_q[0]));
    assert_true(first_y() == 4.0f);
    /* A scalar parameter: exactly its size. */
    double d = 1.0;
    ka_arg s8[2] = {ka_arg_buffer(g_y), ka_arg_bytes(&d, sizeof d)};
    expect_everywhere(KA_ERR_ARG_TYPE, kernel("scaled"), &r, s8, 2);
    EXPECT_DETAIL("'s'", "got bytes of 8 bytes, expected a value of 4 bytes");
}

/* The wording of a mismatch on a parameter of unknown size (it read
 * "expected a value of any size0 bytes"). */
static void mismatch_message(void **state) {
    (void)state;
    const ka_range r = {.dims = 1, .size = {64}};
    ka_arg a[2] = {ka_arg_buffer(g_y), ka_arg_buffer(g_y)};
    expect_everywhere(KA_ERR_ARG_TYPE, kernel("with_struct"), &r, a, 2);
    EXPECT_DETAIL("argument 1", "got buffer of 8 bytes, expected a value of");
    assert_null(strstr(ka_last_error(), "size0"));
    assert_null(strstr(ka_last_error(), "any size"));
}

/* Ranges whose padding or work-item total does not fit 64 bits: refused
 * with the sizes, never wrapped to an empty or a small launch. */
static void huge_ranges(void **state) {
    (void)state;
    ka_kernel k = kernel("scaled");
    ka_arg a[2] = {ka_arg_buffer(g_y), ka_arg_f32(1)};
    ka_range r1 = {.dims = 1, .size = {UINT64_MAX}};
    expect_everywhere(KA_ERR_INVALID_RANGE, k, &r1, a, 2);
    EXPECT_DETAIL("scaled", "18446744073709551615", "overflows");
    ka_range r1w = {.dims = 1, .size = {UINT64_MAX - 3}, .workgroup = {8}};
    expect_everywhere(KA_ERR_INVALID_RANGE, k, &r1w, a, 2);
    /* 2^32 x 2^32: the product wrapped to 0 and ran inline before. */
    ka_range r2 = {.dims = 2, .size = {1ull << 32, 1ull << 32}, .workgroup = {1, 1}};
    expect_everywhere(KA_ERR_INVALID_RANGE, k, &r2, a, 2);
    EXPECT_DETAIL("4294967296", "overflows");
    ka_range r3 = {.dims = 3, .size = {1ull << 22, 1ull << 22, 1ull << 22}, .workgroup = {1, 1, 1}};
    expect_everywhere(KA_ERR_INVALID_RANGE, k, &r3, a, 2);
    /* The cached geometry of a good launch does not let a bad one through. */
    ka_range good = {.dims = 1, .size = {64}};
    expect_everywhere(KA_OK, k, &good, a, 2);
    expect_everywhere(KA_ERR_INVALID_RANGE, k, &r1, a, 2);
}

/* The struct-size probes the OpenCL back-end appends never break a build
 * nor show in a user's build log. */
static void size_probes_stay_hidden(void **state) {
    (void)state;
    /* A declaration the preprocessor drops names a type that does not exist
     * (libka's scan sees it: a probe for it fails, the build is redone
     * without probes); one in a comment is not scanned at all. */
    const char *ghost = "#if 0\nKA_KERNEL(ghost, no_such_type t) { }\n#endif\n"
                        "/* KA_KERNEL(ghost2, no_such_type t) */\n"
                        "KA_KERNEL(real, KA_GLOBAL float *y, float v) { if (ka_in_range()) y[ka_global_id(0)] = v; }\n";
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, ghost, NULL, &p));
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "real", NULL, &k));
    ka_arg a[2] = {ka_arg_buffer(g_y), ka_arg_f32(7)};
    KA_OK_OR_FAIL(ka_launch(g_q[0], k, &(ka_range){.dims = 1, .size = {4}}, a, 2, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(g_q[0]));
    assert_true(first_y() == 7.0f);
    KA_OK_OR_FAIL(ka_program_release(p));
    /* A user's error: the log is of the user's source alone. */
    const char *bad = "KA_KERNEL(broken, KA_GLOBAL float *y, undeclared_t s) { y[0] = 1; }\n";
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(g_dev, bad, NULL, &p));
    EXPECT_DETAIL("undeclared_t");
    assert_null(strstr(ka_last_error(), "libka-size-probes"));
    assert_null(strstr(ka_last_error(), "ka__sizeof"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(zeroed_arg),
        cmocka_unit_test(bytes_sizes),
        cmocka_unit_test(mismatch_message),
        cmocka_unit_test(huge_ranges),
        cmocka_unit_test(foreign_and_released_buffers),
        cmocka_unit_test(size_probes_stay_hidden),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
