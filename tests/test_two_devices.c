/* Two devices in one process, each with its own queue, programs and events:
 * launches on both waited together (ka_wait_all, ka_wait_any), every handle
 * of one device refused by the other with a clear error, a copy between them
 * the documented way (map on one, write on the other), and one device closed
 * while the other goes on.
 *
 * The devices: the default one ($KA_DEVICE, else PoCL) and $KA_DEVICE_2; or,
 * without it, cuda:N+1 after cuda:N, else the host back-end after any other,
 * else PoCL after the host back-end. Skipped, saying why, where no second
 * device opens. */
#include "test_util.h"

static const char *src =
    "KA_KERNEL(fill, KA_GLOBAL float *x, float v, uint n) {\n"
    "    size_t i = ka_global_id(0);\n"
    "    if (i < n) x[i] = v + (float)i;\n"
    "}\n";

enum { N = 4096 };

typedef struct side {
    ka_device dev;
    ka_queue q;
    ka_program p;
    ka_kernel k;
    ka_buffer b;
    char sel[32];
} side;

static side A, B;
static char why[160];

static int open_side(side *s, const char *sel) {
    if (ka_device_open(sel, &s->dev) != KA_OK) return -1;
    const ka_device_info *info;
    if (ka_device_get_info(s->dev, &info) != KA_OK || ka_queue_create(s->dev, NULL, &s->q) != KA_OK ||
        ka_program_build(s->dev, src, NULL, &s->p) != KA_OK || ka_kernel_get(s->p, "fill", NULL, &s->k) != KA_OK ||
        ka_buffer_create(s->dev, N * sizeof(float), &s->b) != KA_OK)
        return -2;
    snprintf(s->sel, sizeof s->sel, "%s", info->selector);
    return 0;
}

static void close_side(side *s) {
    if (!s->dev.id) return;
    ka_buffer_release(s->b);
    ka_program_release(s->p);
    ka_queue_release(s->q);
    ka_device_close(s->dev);
    memset(s, 0, sizeof *s);
}

/* The second device's selector, given the first's. */
static void second_of(const ka_device_info *a, char *out, size_t len) {
    const char *env = getenv("KA_DEVICE_2");
    if (env && *env) snprintf(out, len, "%s", env);
    else if (a->backend == KA_BACKEND_CUDA) snprintf(out, len, "cuda:%d", atoi(a->selector + 5) + 1);
    else if (a->backend != KA_BACKEND_HOST) snprintf(out, len, "host");
    else snprintf(out, len, "pocl");
}

static int setup(void **state) {
    (void)state;
    int rc = open_side(&A, "");
    if (rc) {
        snprintf(why, sizeof why, "the default device does not open: %s", ka_last_error());
        return 0;
    }
    const ka_device_info *a;
    ka_device_get_info(A.dev, &a);
    char sel[64];
    second_of(a, sel, sizeof sel);
    rc = open_side(&B, sel);
    if (rc == -1) snprintf(why, sizeof why, "no second device: '%s' does not open beside %s (%s)", sel, A.sel, ka_last_error());
    else if (rc) fail_msg("second device %s: %s", sel, ka_last_error());
    else if (!strcmp(A.sel, B.sel)) snprintf(why, sizeof why, "'%s' is the first device again (%s)", sel, A.sel);
    else printf("two devices: %s and %s\n", A.sel, B.sel);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    close_side(&B);
    close_side(&A);
    return 0;
}

static void need_two(void) {
    if (!why[0]) return;
    printf("skipped: %s\n", why);
    skip();
}

static ka_status fill(side *s, float v, ka_event *ev) {
    ka_arg args[] = {ka_arg_buffer(s->b), ka_arg_f32(v), ka_arg_u32(N)};
    ka_range r = {.dims = 1, .size = {N}};
    return ka_launch(s->q, s->k, &r, args, 3, ev);
}

static void check_fill(side *s, float v) {
    static float h[N];
    KA_OK_OR_FAIL(ka_buffer_read(s->q, h, s->b, 0, sizeof h));
    for (int i = 0; i < N; i++)
        if (h[i] != v + (float)i) fail_msg("%s: x[%d] = %g, want %g", s->sel, i, (double)h[i], (double)(v + (float)i));
}

/* Launches on both, waited together: all, then any (an index of a done one). */
static void test_wait_across_devices(void **state) {
    (void)state;
    need_two();
    ka_event ev[2];
    KA_OK_OR_FAIL(fill(&A, 1.0f, &ev[0]));
    KA_OK_OR_FAIL(fill(&B, 2.0f, &ev[1]));
    KA_OK_OR_FAIL(ka_wait_all(ev, 2, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev[0]));
    KA_OK_OR_FAIL(ka_event_release(ev[1]));
    check_fill(&A, 1.0f);
    check_fill(&B, 2.0f);

    KA_OK_OR_FAIL(fill(&A, 3.0f, &ev[0]));
    KA_OK_OR_FAIL(fill(&B, 4.0f, &ev[1]));
    uint32_t at = 99;
    KA_OK_OR_FAIL(ka_wait_any(ev, 2, KA_WAIT_FOREVER, &at));
    assert_true(at < 2);
    KA_OK_OR_FAIL(ka_event_wait(ev[at], 0)); /* the one reported is done */
    KA_OK_OR_FAIL(ka_event_wait(ev[1 - at], KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev[0]));
    KA_OK_OR_FAIL(ka_event_release(ev[1]));
    check_fill(&A, 3.0f);
    check_fill(&B, 4.0f);
}

/* Each handle of one device used with the other's queue: a clear error, and
 * nothing done. */
static void test_foreign_handles_refused(void **state) {
    (void)state;
    need_two();
    static float h[N];
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(A.q, B.b, 0, h, sizeof h));
    EXPECT_DETAIL("ka_buffer_write", "different devices");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_read(B.q, h, A.b, 0, sizeof h));
    EXPECT_DETAIL("ka_buffer_read", "different devices");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(A.q, B.b, 0, A.b, 0, sizeof h, NULL));
    EXPECT_DETAIL("ka_buffer_copy", "different devices");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(A.q, A.b, 0, B.b, 0, sizeof h, NULL));
    EXPECT_DETAIL("ka_buffer_copy", "different devices");
    /* A kernel of B on A's queue; A's kernel with B's buffer. */
    ka_arg args[] = {ka_arg_buffer(A.b), ka_arg_f32(0), ka_arg_u32(N)};
    ka_range r = {.dims = 1, .size = {N}};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_launch(A.q, B.k, &r, args, 3, NULL));
    EXPECT_DETAIL("ka_launch", "different devices");
    args[0] = ka_arg_buffer(B.b);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_launch(A.q, A.k, &r, args, 3, NULL));
    EXPECT_DETAIL("ka_launch", "another device");
    /* A dependency on the other device's event is the host's to wait for. */
    ka_event ev;
    KA_OK_OR_FAIL(fill(&B, 5.0f, &ev));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_queue_wait_event(A.q, ev));
    EXPECT_DETAIL("ka_queue_wait_event", "another device");
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    check_fill(&B, 5.0f);
}

/* A copy between devices as docs/API.md shows it: map the source for
 * reading, write the mapped bytes into the other device's buffer, unmap. */
static void test_copy_between_devices(void **state) {
    (void)state;
    need_two();
    KA_OK_OR_FAIL(fill(&A, 7.0f, NULL));
    KA_OK_OR_FAIL(fill(&B, 0.0f, NULL));
    void *p = NULL;
    KA_OK_OR_FAIL(ka_buffer_map(A.q, A.b, 0, N * sizeof(float), KA_MAP_READ, &p));
    KA_OK_OR_FAIL(ka_buffer_write(B.q, B.b, 0, p, N * sizeof(float)));
    KA_OK_OR_FAIL(ka_buffer_unmap(A.q, A.b, p));
    check_fill(&B, 7.0f);
}

/* Closing one device leaves the other working; the closed one's handles are
 * stale. Last: it ends the first device. */
static void test_close_one(void **state) {
    (void)state;
    need_two();
    ka_queue qa = A.q;
    close_side(&A);
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_finish(qa));
    ka_event ev;
    KA_OK_OR_FAIL(fill(&B, 9.0f, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    check_fill(&B, 9.0f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_across_devices),
        cmocka_unit_test(test_foreign_handles_refused),
        cmocka_unit_test(test_copy_between_devices),
        cmocka_unit_test(test_close_one),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
