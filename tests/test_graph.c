/* Recorded launch graphs on the default device (PoCL in CI, cuda:0 on a GPU
 * machine through KA_DEVICE) and on the null back-end: a heat-equation time
 * loop replayed 1000 times gives bit for bit the plain loop's result, with
 * arguments changed between replays; recording errors; replays after a
 * buffer or kernel was released; copies and fills; several threads each
 * replaying their own graph. */
#include "test_util.h"

#include <math.h>
#include <pthread.h>

#define N 1000  /* cells: not a multiple of the work-group, so the last group is partial */

static const char *src =
    "KA_KERNEL(heat, KA_GLOBAL const float *u, KA_GLOBAL float *v, float a, uint n) {\n"
    "    if (!ka_in_range()) return;\n"
    "    uint i = (uint)ka_global_id(0);\n"
    "    float l = i > 0 ? u[i - 1] : u[i], r = i + 1 < n ? u[i + 1] : u[i];\n"
    "    v[i] = u[i] + a * (l - 2.0f * u[i] + r);\n"
    "}\n"
    "KA_KERNEL(scale, KA_GLOBAL float *v, float s, uint n) {\n"
    "    if (!ka_in_range()) return;\n"
    "    v[ka_global_id(0)] *= s;\n"
    "}\n"
    "KA_KERNEL(lcopy, KA_GLOBAL float *v, KA_LOCAL_ARG(float) s) {\n"
    "    s[ka_local_id(0)] = ka_in_range() ? v[ka_global_id(0)] : 0.0f;\n"
    "    ka_barrier();\n"
    "    if (ka_in_range()) v[ka_global_id(0)] = s[ka_local_id(0)] + 1.0f;\n"
    "}\n"
    "typedef struct coef { float a; float b; } coef;\n"
    "KA_KERNEL(affine, KA_GLOBAL float *v, coef c) {\n"
    "    if (!ka_in_range()) return;\n"
    "    v[ka_global_id(0)] = c.a * v[ka_global_id(0)] + c.b;\n"
    "}\n";

typedef struct coef {
    float a, b;
} coef;

static ka_device g_dev;
static ka_queue g_q;
static ka_program g_prog;
static ka_kernel g_heat, g_scale, g_affine, g_lcopy;
static const ka_range R = {.dims = 1, .size = {N}, .workgroup = {64}};

static int setup(void **state) {
    (void)state;
    if (ka_device_open(NULL, &g_dev) || ka_queue_create(g_dev, NULL, &g_q) || ka_program_build(g_dev, src, NULL, &g_prog) ||
        ka_kernel_get(g_prog, "heat", NULL, &g_heat) || ka_kernel_get(g_prog, "scale", NULL, &g_scale) ||
        ka_kernel_get(g_prog, "affine", NULL, &g_affine) ||
        ka_kernel_get(g_prog, "lcopy", NULL, &g_lcopy)) {
        fprintf(stderr, "setup: %s\n", ka_last_error());
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ka_program_release(g_prog);
    ka_queue_release(g_q);
    return ka_device_close(g_dev) == KA_OK ? 0 : -1;
}

static void initial(float *u) {
    for (int i = 0; i < N; i++) u[i] = (i > N / 3 && i < N / 2) ? 100.0f : (float)(i % 7);
}

static ka_buffer with(const float *host) {
    ka_buffer b = make_buffer(g_dev, N * sizeof(float));
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, host, N * sizeof(float)));
    return b;
}

static void read_back(ka_buffer b, float *out) { KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, N * sizeof(float))); }

static void heat_step(ka_queue q, ka_buffer from, ka_buffer to, float a) {
    ka_arg args[] = {ka_arg_buffer(from), ka_arg_buffer(to), ka_arg_f32(a), ka_arg_u32(N)};
    KA_OK_OR_FAIL(ka_launch(q, g_heat, &R, args, 4, NULL));
}

/* Two steps, ping-pong, recorded once and replayed 1000 times, against the
 * same 2000 steps launched one by one: the same bits. Half-way, the
 * diffusion coefficient of both nodes changes, in the graph by set_arg. */
static void heat_replay_matches_loop(void **state) {
    (void)state;
    float u0[N], plain[N], replayed[N];
    initial(u0);
    ka_buffer pu = with(u0), pv = with(u0), gu = with(u0), gv = with(u0);
    for (int s = 0; s < 1000; s++) {
        float a = s < 500 ? 0.25f : 0.125f;
        heat_step(g_q, pu, pv, a);
        heat_step(g_q, pv, pu, a);
    }
    read_back(pu, plain);

    KA_OK_OR_FAIL(ka_graph_begin(g_q));
    heat_step(g_q, gu, gv, 0.25f);
    heat_step(g_q, gv, gu, 0.25f);
    ka_graph g;
    KA_OK_OR_FAIL(ka_graph_end(g_q, &g));
    ka_graph_info info;
    KA_OK_OR_FAIL(ka_graph_get_info(g, &info));
    assert_int_equal(info.nodes, 2);
    assert_int_equal(info.launches, 2);
    /* Nothing recorded has run. */
    read_back(gu, replayed);
    assert_memory_equal(replayed, u0, sizeof u0);
    for (int s = 0; s < 1000; s++) {
        if (s == 500) {
            KA_OK_OR_FAIL(ka_graph_set_arg(g, (ka_graph_node){0}, 2, ka_arg_f32(0.125f)));
            KA_OK_OR_FAIL(ka_graph_set_arg(g, (ka_graph_node){1}, 2, ka_arg_f32(0.125f)));
        }
        KA_OK_OR_FAIL(ka_graph_launch(g_q, g, NULL));
    }
    read_back(gu, replayed);
    assert_memory_equal(replayed, plain, sizeof plain);
    assert_true(fabsf(plain[N / 2] - u0[N / 2]) > 1e-3f); /* the loop did something */

    KA_OK_OR_FAIL(ka_graph_release(g));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_graph_release(g));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_graph_launch(g_q, g, NULL));
    ka_buffer_release(pu), ka_buffer_release(pv), ka_buffer_release(gu), ka_buffer_release(gv);
}

/* One step recorded; the ping-pong done by swapping the buffers with
 * set_arg between replays, and the event of the last replay waited on. */
static void ping_pong_by_set_arg(void **state) {
    (void)state;
    float u0[N], plain[N], replayed[N];
    initial(u0);
    ka_buffer pu = with(u0), pv = with(u0), gu = with(u0), gv = with(u0);
    for (int s = 0; s < 300; s++) heat_step(g_q, s & 1 ? pv : pu, s & 1 ? pu : pv, 0.2f);
    read_back(pu, plain);

    KA_OK_OR_FAIL(ka_graph_begin(g_q));
    heat_step(g_q, gu, gv, 0.2f);
    ka_graph g;
    KA_OK_OR_FAIL(ka_graph_end(g_q, &g));
    ka_event ev = {0};
    for (int s = 0; s < 300; s++) {
        KA_OK_OR_FAIL(ka_graph_set_arg(g, (ka_graph_node){0}, 0, ka_arg_buffer(s & 1 ? gv : gu)));
        KA_OK_OR_FAIL(ka_graph_set_arg(g, (ka_graph_node){0}, 1, ka_arg_buffer(s & 1 ? gu : gv)));
        if (ev.id) KA_OK_OR_FAIL(ka_event_release(ev));
        KA_OK_OR_FAIL(ka_graph_launch(g_q, g, &ev));
    }
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    read_back(gu, replayed);
    assert_memory_equal(replayed, plain, sizeof plain);
    KA_OK_OR_FAIL(ka_graph_release(g));
    ka_buffer_release(pu), ka_buffer_release(pv), ka_buffer_release(gu), ka_buffer_release(gv);
}

/* Copies, fills and a struct argument (bytes) recorded with launches. */
static void copies_fills_and_bytes(void **state) {
    (void)state;
    float host[N], out[N];
    for (int i = 0; i < N; i++) host[i] = (float)i;
    ka_buffer a = with(host), b = make_buffer(g_dev, N * sizeof(float));
    const float seven = 7.0f;
    coef c = {2.0f, 1.0f};
    KA_OK_OR_FAIL(ka_graph_begin(g_q));
    KA_OK_OR_FAIL(ka_buffer_fill(g_q, b, 0, &seven, sizeof seven, N * sizeof(float), NULL));   /* node 0 */
    KA_OK_OR_FAIL(ka_buffer_copy(g_q, b, 0, a, 0, (N / 2) * sizeof(float), NULL));            /* node 1 */
    ka_arg args[] = {ka_arg_buffer(b), ka_arg_bytes(&c, sizeof c)};
    KA_OK_OR_FAIL(ka_launch(g_q, g_affine, &R, args, 2, NULL));                               /* node 2 */
    c.a = 1000.0f; /* the graph holds its own copy of the bytes */
    ka_graph g;
    KA_OK_OR_FAIL(ka_graph_end(g_q, &g));
    ka_graph_info info;
    KA_OK_OR_FAIL(ka_graph_get_info(g, &info));
    assert_int_equal(info.nodes, 3);
    assert_int_equal(info.launches, 1);
    for (int rep = 0; rep < 3; rep++) {
        KA_OK_OR_FAIL(ka_graph_launch(g_q, g, NULL));
        read_back(b, out);
        for (int i = 0; i < N; i++) assert_true(out[i] == 2.0f * (i < N / 2 ? (float)i : 7.0f) + 1.0f);
    }
    coef c2 = {3.0f, 0.0f};
    KA_OK_OR_FAIL(ka_graph_set_arg(g, (ka_graph_node){2}, 1, ka_arg_bytes(&c2, sizeof c2)));
    KA_OK_OR_FAIL(ka_graph_launch(g_q, g, NULL));
    read_back(b, out);
    assert_true(out[0] == 0.0f && out[N - 1] == 21.0f);
    /* set_arg on nodes that cannot take it */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_set_arg(g, (ka_graph_node){0}, 0, ka_arg_f32(1)));
    EXPECT_DETAIL("node 0", "fill");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_set_arg(g, (ka_graph_node){1}, 0, ka_arg_f32(1)));
    EXPECT_DETAIL("copy");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_set_arg(g, (ka_graph_node){3}, 0, ka_arg_f32(1)));
    EXPECT_DETAIL("node 3", "has 3");
    KA_EXPECT(KA_ERR_ARG_COUNT, ka_graph_set_arg(g, (ka_graph_node){2}, 2, ka_arg_f32(1)));
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_graph_set_arg(g, (ka_graph_node){2}, 1, ka_arg_bytes(&c2, 4)));
    EXPECT_DETAIL("affine", "size recorded");
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_graph_set_arg(g, (ka_graph_node){2}, 0, ka_arg_f32(1)));
    EXPECT_DETAIL("ka_graph_set_arg", "node 2", "argument 0");
    KA_OK_OR_FAIL(ka_graph_release(g));
    ka_buffer_release(a), ka_buffer_release(b);
}

/* Errors are found when recording: a bad command returns its error and is not
 * recorded; what a graph cannot hold is refused while recording. */
static void recording_errors(void **state) {
    (void)state;
    ka_buffer v = make_buffer(g_dev, N * sizeof(float));
    float host[4] = {0};
    ka_graph g = {77};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_end(g_q, &g)); /* not recording */
    assert_true(g.id == 0);
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_graph_begin(BAD_QUEUE));
    KA_OK_OR_FAIL(ka_graph_begin(g_q));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_begin(g_q));
    EXPECT_DETAIL("already recording");
    ka_arg wrong[] = {ka_arg_buffer(v), ka_arg_f64(1), ka_arg_u32(N)}; /* s is a 4-byte float */
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(g_q, g_scale, &R, wrong, 3, NULL));
    KA_EXPECT(KA_ERR_ARG_COUNT, ka_launch(g_q, g_scale, &R, wrong, 2, NULL));
    ka_arg ok[] = {ka_arg_buffer(v), ka_arg_f32(2), ka_arg_u32(N)};
    KA_EXPECT(KA_ERR_INVALID_RANGE, ka_launch(g_q, g_scale, &(ka_range){.dims = 4, .size = {1}}, ok, 3, NULL));
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP,
              ka_launch(g_q, g_scale, &(ka_range){.dims = 1, .size = {64}, .workgroup = {1u << 20}}, ok, 3, NULL));
    ka_event ev = {5};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_launch(g_q, g_scale, &R, ok, 3, &ev));
    EXPECT_DETAIL("recording a graph", "ka_graph_launch");
    assert_true(ev.id == 0);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(g_q, v, 0, host, sizeof host));
    EXPECT_DETAIL("ka_buffer_write", "host memory");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_read(g_q, host, v, 0, sizeof host));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_queue_finish(g_q));
    EXPECT_DETAIL("ka_queue_finish", "recording");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_queue_flush(g_q));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, v, 4, v, 0, 8, NULL)); /* overlap: checked as always */
    /* The word of an argument whose size libka does not know passes
     * ka_launch's one-compare check (the back-end refuses it at the launch);
     * a recording refuses it at once. */
    ka_arg garbage[] = {ka_arg_buffer(v), {0, 0xffffffffu, {0}}};
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(g_q, g_affine, &R, garbage, 2, NULL));
    EXPECT_DETAIL("affine", "argument 1", "kind 0");
    KA_OK_OR_FAIL(ka_launch(g_q, g_scale, &R, ok, 3, NULL));
    KA_OK_OR_FAIL(ka_graph_end(g_q, &g));
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_graph_set_arg(g, (ka_graph_node){0}, 1, (ka_arg){7, 4, {0}}));
    EXPECT_DETAIL("unknown argument kind 7");
    ka_graph_info info;
    KA_OK_OR_FAIL(ka_graph_get_info(g, &info));
    assert_int_equal(info.nodes, 1); /* only the good launch */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_get_info(g, NULL));
    /* A graph cannot be replayed on a queue that is recording. */
    KA_OK_OR_FAIL(ka_graph_begin(g_q));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_launch(g_q, g, NULL));
    ka_graph empty;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_end(g_q, &empty)); /* nothing recorded */
    EXPECT_DETAIL("nothing was recorded");
    KA_OK_OR_FAIL(ka_graph_begin(g_q));
    KA_OK_OR_FAIL(ka_launch(g_q, g_scale, &R, ok, 3, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_end(g_q, NULL)); /* the recording is discarded */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_end(g_q, &empty));
    EXPECT_DETAIL("not recording");
    /* The queue works as before once recording stopped. */
    KA_OK_OR_FAIL(ka_buffer_write(g_q, v, 0, host, sizeof host));
    KA_OK_OR_FAIL(ka_graph_launch(g_q, g, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
    KA_OK_OR_FAIL(ka_graph_release(g));
    ka_buffer_release(v);
}

/* A 0-byte local memory argument is refused as ka_launch refuses it: when
 * recorded and by ka_graph_set_arg, so no replay can stop half-way at it. */
static void zero_local_refused(void **state) {
    (void)state;
    ka_buffer v = make_buffer(g_dev, N * sizeof(float));
    float host[N], out[N];
    for (int i = 0; i < N; i++) host[i] = (float)i;
    KA_OK_OR_FAIL(ka_buffer_write(g_q, v, 0, host, sizeof host));
    ka_arg zero[] = {ka_arg_buffer(v), ka_arg_local(0)};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_launch(g_q, g_lcopy, &R, zero, 2, NULL));
    EXPECT_DETAIL("lcopy", "argument 1", "0 bytes");
    KA_OK_OR_FAIL(ka_graph_begin(g_q));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_launch(g_q, g_lcopy, &R, zero, 2, NULL));
    EXPECT_DETAIL("0 bytes");
    ka_arg ok[] = {ka_arg_buffer(v), ka_arg_local(64 * sizeof(float))};
    ka_arg sc[] = {ka_arg_buffer(v), ka_arg_f32(2), ka_arg_u32(N)};
    KA_OK_OR_FAIL(ka_launch(g_q, g_scale, &R, sc, 3, NULL)); /* node 0: v *= 2 */
    KA_OK_OR_FAIL(ka_launch(g_q, g_lcopy, &R, ok, 2, NULL)); /* node 1: v += 1 */
    ka_graph g;
    KA_OK_OR_FAIL(ka_graph_end(g_q, &g));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_set_arg(g, (ka_graph_node){1}, 1, ka_arg_local(0)));
    EXPECT_DETAIL("0 bytes");
    /* The refused update left the graph whole: both nodes run. */
    KA_OK_OR_FAIL(ka_graph_launch(g_q, g, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
    read_back(v, out);
    for (int i = 0; i < N; i++) assert_float_equal(out[i], 2.0f * (float)i + 1.0f, 0);
    KA_OK_OR_FAIL(ka_graph_release(g));
    ka_buffer_release(v);
}

/* A replay after a buffer or the kernel it names was released: a clean
 * error and nothing enqueued. */
static void replay_after_release(void **state) {
    (void)state;
    float zeros[N] = {0}, out[N];
    ka_buffer keep = with(zeros), gone = with(zeros);
    KA_OK_OR_FAIL(ka_graph_begin(g_q));
    const float one = 1.0f;
    KA_OK_OR_FAIL(ka_buffer_fill(g_q, keep, 0, &one, sizeof one, N * sizeof(float), NULL));
    heat_step(g_q, keep, gone, 0.1f);
    ka_graph g;
    KA_OK_OR_FAIL(ka_graph_end(g_q, &g));
    KA_OK_OR_FAIL(ka_buffer_release(gone));
    ka_event ev = {9};
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_graph_launch(g_q, g, &ev));
    EXPECT_DETAIL("node 1", "heat", "argument 1", "released");
    assert_true(ev.id == 0);
    read_back(keep, out);
    assert_memory_equal(out, zeros, sizeof zeros); /* the fill before it did not run either */
    /* A new buffer in its place makes the graph good again. */
    ka_buffer fresh = with(zeros);
    KA_OK_OR_FAIL(ka_graph_set_arg(g, (ka_graph_node){1}, 1, ka_arg_buffer(fresh)));
    KA_OK_OR_FAIL(ka_graph_launch(g_q, g, NULL));
    read_back(fresh, out);
    assert_true(out[0] == 1.0f);
    KA_OK_OR_FAIL(ka_graph_release(g));

    /* The kernel's program released. */
    ka_program p;
    ka_kernel k;
    KA_OK_OR_FAIL(ka_program_build(g_dev, src, NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "scale", NULL, &k));
    KA_OK_OR_FAIL(ka_graph_begin(g_q));
    ka_arg args[] = {ka_arg_buffer(keep), ka_arg_f32(2), ka_arg_u32(N)};
    KA_OK_OR_FAIL(ka_launch(g_q, k, &R, args, 3, NULL));
    KA_OK_OR_FAIL(ka_graph_end(g_q, &g));
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_graph_launch(g_q, g, NULL));
    EXPECT_DETAIL("node 0", "kernel", "released");
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_graph_set_arg(g, (ka_graph_node){0}, 1, ka_arg_f32(3)));
    KA_OK_OR_FAIL(ka_graph_release(g));
    ka_buffer_release(keep), ka_buffer_release(fresh);
}

/* A graph belongs to its device: its buffers and its queues. */
static void other_device(void **state) {
    (void)state;
    ka_device nd;
    ka_queue nq;
    ka_buffer nb;
    KA_OK_OR_FAIL(ka_device_open("null", &nd));
    KA_OK_OR_FAIL(ka_queue_create(nd, NULL, &nq));
    KA_OK_OR_FAIL(ka_buffer_create(nd, N * sizeof(float), &nb));
    ka_buffer v = make_buffer(g_dev, N * sizeof(float));
    KA_OK_OR_FAIL(ka_graph_begin(g_q));
    ka_arg args[] = {ka_arg_buffer(v), ka_arg_f32(2), ka_arg_u32(N)};
    KA_OK_OR_FAIL(ka_launch(g_q, g_scale, &R, args, 3, NULL));
    ka_graph g;
    KA_OK_OR_FAIL(ka_graph_end(g_q, &g));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_launch(nq, g, NULL));
    EXPECT_DETAIL("different devices");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_set_arg(g, (ka_graph_node){0}, 0, ka_arg_buffer(nb)));
    EXPECT_DETAIL("ka_graph_set_arg", "another device");
    KA_OK_OR_FAIL(ka_graph_release(g));
    /* A recording discarded with its queue. */
    KA_OK_OR_FAIL(ka_graph_begin(nq));
    KA_OK_OR_FAIL(ka_buffer_fill(nq, nb, 0, &(float){1}, sizeof(float), 64, NULL));
    KA_OK_OR_FAIL(ka_queue_release(nq));
    KA_OK_OR_FAIL(ka_buffer_release(nb));
    KA_OK_OR_FAIL(ka_device_close(nd));
    ka_buffer_release(v);
}

/* The null back-end replays node by node: recording and replay work there too. */
static void null_backend(void **state) {
    (void)state;
    ka_device nd;
    ka_queue nq;
    ka_program np;
    ka_kernel nk;
    ka_buffer nb;
    KA_OK_OR_FAIL(ka_device_open("null", &nd));
    KA_OK_OR_FAIL(ka_queue_create(nd, NULL, &nq));
    KA_OK_OR_FAIL(ka_program_build(nd, src, NULL, &np));
    KA_OK_OR_FAIL(ka_kernel_get(np, "scale", NULL, &nk));
    KA_OK_OR_FAIL(ka_buffer_create(nd, N * sizeof(float), &nb));
    KA_OK_OR_FAIL(ka_graph_begin(nq));
    ka_arg args[] = {ka_arg_buffer(nb), ka_arg_f32(2), ka_arg_u32(N)};
    for (int i = 0; i < 10; i++) KA_OK_OR_FAIL(ka_launch(nq, nk, &R, args, 3, NULL));
    ka_graph g;
    KA_OK_OR_FAIL(ka_graph_end(nq, &g));
    ka_graph_info info;
    KA_OK_OR_FAIL(ka_graph_get_info(g, &info));
    assert_int_equal(info.nodes, 10);
    assert_int_equal(info.native, 0);
    ka_event ev;
    KA_OK_OR_FAIL(ka_graph_launch(nq, g, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_release(nb));
    KA_OK_OR_FAIL(ka_program_release(np));
    KA_OK_OR_FAIL(ka_queue_release(nq));
    KA_EXPECT(KA_ERR_IN_USE, ka_device_close(nd)); /* the graph is the device's */
    KA_OK_OR_FAIL(ka_graph_release(g));
    KA_OK_OR_FAIL(ka_device_close(nd));
}

/* Four threads, each with its own queue, buffer and graph, replay at once;
 * thread t's graph adds t + 1 to every element, 200 times. */
typedef struct worker {
    ka_queue q;
    ka_buffer b;
    ka_graph g;
    ka_status st;
} worker;

static void *replay_many(void *arg) {
    worker *w = arg;
    for (int i = 0; i < 200 && w->st == KA_OK; i++) w->st = ka_graph_launch(w->q, w->g, NULL);
    if (w->st == KA_OK) w->st = ka_queue_finish(w->q);
    return NULL;
}

static void threads_on_their_own_graphs(void **state) {
    (void)state;
    worker w[4];
    float ones[N];
    for (int i = 0; i < N; i++) ones[i] = 1.0f;
    for (int t = 0; t < 4; t++) {
        KA_OK_OR_FAIL(ka_queue_create(g_dev, NULL, &w[t].q));
        w[t].b = with(ones);
        KA_OK_OR_FAIL(ka_graph_begin(w[t].q));
        coef half = {1.0f, 0.5f * (float)(t + 1)};
        ka_arg args[] = {ka_arg_buffer(w[t].b), ka_arg_bytes(&half, sizeof half)};
        KA_OK_OR_FAIL(ka_launch(w[t].q, g_affine, &R, args, 2, NULL));
        KA_OK_OR_FAIL(ka_launch(w[t].q, g_affine, &R, args, 2, NULL));
        KA_OK_OR_FAIL(ka_graph_end(w[t].q, &w[t].g));
        w[t].st = KA_OK;
    }
    pthread_t th[4];
    for (int t = 0; t < 4; t++) assert_int_equal(pthread_create(&th[t], NULL, replay_many, &w[t]), 0);
    for (int t = 0; t < 4; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < 4; t++) {
        if (w[t].st != KA_OK) fail_msg("thread %d: %s %s", t, ka_status_name(w[t].st), ka_last_error());
        float out[N];
        KA_OK_OR_FAIL(ka_buffer_read(w[t].q, out, w[t].b, 0, sizeof out));
        for (int i = 0; i < N; i++)
            if (out[i] != 1.0f + 200.0f * (float)(t + 1)) fail_msg("thread %d, element %d: %g", t, i, (double)out[i]);
        KA_OK_OR_FAIL(ka_graph_release(w[t].g));
        KA_OK_OR_FAIL(ka_buffer_release(w[t].b));
        KA_OK_OR_FAIL(ka_queue_release(w[t].q));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(heat_replay_matches_loop),
        cmocka_unit_test(ping_pong_by_set_arg),
        cmocka_unit_test(copies_fills_and_bytes),
        cmocka_unit_test(recording_errors),
        cmocka_unit_test(zero_local_refused),
        cmocka_unit_test(replay_after_release),
        cmocka_unit_test(other_device),
        cmocka_unit_test(null_backend),
        cmocka_unit_test(threads_on_their_own_graphs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
