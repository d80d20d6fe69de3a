/* Two devices in one process, each with its own queue, programs and events:
 * launches on both waited together (ka_wait_all, ka_wait_any), every handle
 * of one device refused by the other with a clear error, a copy between them
 * the documented way (map on one, write on the other), and one device closed
 * while the other goes on.
 *
 * The devices: the default one ($KA_DEVICE, else PoCL) and the one
 * open_both picks. Skipped (77), saying why, where no second device exists;
 * failed where one given or found cannot be used. */
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
static char g_detail[256]; /* why open_side failed */

static void close_side(side *s) {
    if (!s->dev.id) return;
    /* What opened is released; a handle that never was is 0, refused harmlessly. */
    ka_buffer_release(s->b);
    ka_program_release(s->p);
    ka_queue_release(s->q);
    ka_device_close(s->dev);
    memset(s, 0, sizeof *s);
}

/* 0 open and ready; -1 the device does not open, -3 it runs no kernels (the
 * null back-end), -2 it opens but cannot run the kernel; g_detail says why. */
static int open_side(side *s, const char *sel) {
    if (ka_device_open(sel, &s->dev) != KA_OK) {
        snprintf(g_detail, sizeof g_detail, "%s", ka_last_error());
        return -1;
    }
    const ka_device_info *info;
    int rc = 0;
    if (ka_device_get_info(s->dev, &info) != KA_OK || ka_queue_create(s->dev, NULL, &s->q) != KA_OK ||
        ka_program_build(s->dev, src, NULL, &s->p) != KA_OK || ka_kernel_get(s->p, "fill", NULL, &s->k) != KA_OK ||
        ka_buffer_create(s->dev, N * sizeof(float), &s->b) != KA_OK) {
        snprintf(g_detail, sizeof g_detail, "%s", ka_last_error());
        rc = -2;
    } else if (info->backend == KA_BACKEND_NULL) {
        snprintf(g_detail, sizeof g_detail, "%s is the null back-end, which runs no kernels", info->selector);
        rc = -3;
    }
    if (rc) close_side(s);
    else snprintf(s->sel, sizeof s->sel, "%s", info->selector);
    return rc;
}

/* Opens the two devices before the cases run. Returns 0 with both open,
 * 77 (skipped, said why) where no second device exists, 1 where one that
 * should work does not (an explicit KA_DEVICE_2 that does not open, or a
 * device that opens but cannot build the kernel). Without KA_DEVICE_2 the
 * second is cuda:N+1 after cuda:N, else the host back-end (a CUDA device
 * with a CPU one still tests waits and copies across back-ends), and PoCL
 * after the host back-end. */
static int open_both(void) {
    int rc = open_side(&A, "");
    if (rc == -1 || rc == -3) {
        printf("skipped: the default device: %s\n", g_detail);
        return 77;
    }
    if (rc) {
        printf("the default device opens but cannot run the kernel: %s\n", g_detail);
        return 1;
    }
    const ka_device_info *a;
    ka_device_get_info(A.dev, &a);
    const char *env = getenv("KA_DEVICE_2");
    bool given = env && *env;
    char tries[2][32] = {"", ""};
    if (given) snprintf(tries[0], sizeof tries[0], "%s", env);
    else if (a->backend == KA_BACKEND_CUDA) {
        snprintf(tries[0], sizeof tries[0], "cuda:%d", atoi(a->selector + 5) + 1);
        snprintf(tries[1], sizeof tries[1], "host");
    } else snprintf(tries[0], sizeof tries[0], a->backend == KA_BACKEND_HOST ? "pocl" : "host");
    char why[512] = "";
    for (int i = 0; i < 2 && tries[i][0]; i++) {
        rc = open_side(&B, tries[i]);
        if (rc == 0 && !strcmp(A.sel, B.sel)) {
            close_side(&B);
            if (given) {
                printf("KA_DEVICE_2=%s is the first device again (%s)\n", env, A.sel);
                return 1;
            }
            snprintf(why + strlen(why), sizeof why - strlen(why), "%s'%s' is %s again", *why ? "; " : "", tries[i], A.sel);
            continue;
        }
        if (rc == 0) {
            printf("two devices: %s and %s\n", A.sel, B.sel);
            return 0;
        }
        if (rc == -2 || given) {
            printf("second device %s: %s\n", tries[i], g_detail);
            return 1;
        }
        snprintf(why + strlen(why), sizeof why - strlen(why), "%s'%s': %.150s", *why ? "; " : "", tries[i], g_detail);
    }
    printf("skipped: no second device beside %s: %s\n", A.sel, why);
    return 77;
}

static int teardown(void **state) {
    (void)state;
    close_side(&B);
    close_side(&A);
    return 0;
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
    int rc = open_both();
    if (rc) {
        teardown(NULL);
        return rc;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_across_devices),
        cmocka_unit_test(test_foreign_handles_refused),
        cmocka_unit_test(test_copy_between_devices),
        cmocka_unit_test(test_close_one),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
