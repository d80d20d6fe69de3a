/* The one way to read the API (docs/API.md, "Conventions"): destination
 * first, each buffer followed by its offset, the count last; a call with an
 * event never blocks and a call that blocks has none. The signatures are
 * pinned at compile time, then each rule is run: blocking and _async
 * transfers, copy and fill at offsets, primitives at offsets, graph nodes
 * named by ka_graph_last_node (a ka_reduce recorded between two launches),
 * and programs built from files with #include. */
#define KA_TEST_FIXTURE
#include "test_util.h"
#include <ka_prims.h>

#include <sys/stat.h>
#include <unistd.h>

/* A signature that drifts from the rule fails to compile here. */
static ka_status (*const pin_write)(ka_queue, ka_buffer, size_t, const void *, size_t) = ka_buffer_write;
static ka_status (*const pin_read)(ka_queue, void *, ka_buffer, size_t, size_t) = ka_buffer_read;
static ka_status (*const pin_write_async)(ka_queue, ka_buffer, size_t, const void *, size_t, ka_event *) =
    ka_buffer_write_async;
static ka_status (*const pin_read_async)(ka_queue, void *, ka_buffer, size_t, size_t, ka_event *) = ka_buffer_read_async;
static ka_status (*const pin_copy)(ka_queue, ka_buffer, size_t, ka_buffer, size_t, size_t, ka_event *) = ka_buffer_copy;
static ka_status (*const pin_fill)(ka_queue, ka_buffer, size_t, const void *, size_t, size_t, ka_event *) =
    ka_buffer_fill;
static ka_status (*const pin_reduce)(ka_queue, ka_prims_plan *, ka_buffer, size_t, ka_buffer, size_t, size_t,
                                     ka_reduce_op, ka_event *) = ka_reduce;
static ka_status (*const pin_scan)(ka_queue, ka_prims_plan *, ka_buffer, size_t, ka_buffer, size_t, size_t, int,
                                   ka_event *) = ka_scan;
static ka_status (*const pin_sort)(ka_queue, ka_prims_plan *, ka_buffer, size_t, ka_buffer, size_t, size_t,
                                   ka_event *) = ka_sort;
static ka_status (*const pin_set_arg)(ka_graph, ka_graph_node, uint32_t, ka_arg) = ka_graph_set_arg;

static void test_signatures_pinned(void **state) {
    (void)state;
    assert_non_null(pin_write);
    assert_non_null(pin_read);
    assert_non_null(pin_write_async);
    assert_non_null(pin_read_async);
    assert_non_null(pin_copy);
    assert_non_null(pin_fill);
    assert_non_null(pin_reduce);
    assert_non_null(pin_scan);
    assert_non_null(pin_sort);
    assert_non_null(pin_set_arg);
}

static void test_transfers_destination_first(void **state) {
    (void)state;
    enum { N = 256 };
    int32_t h[N], back[N];
    for (int i = 0; i < N; i++) h[i] = i * 7 - 3;
    ka_buffer a = make_buffer(g_dev, N * 4), b = make_buffer(g_dev, N * 4);
    /* Blocking: the host array may change right after the call. */
    KA_OK_OR_FAIL(ka_buffer_write(g_q, a, 0, h, sizeof h));
    int32_t keep = h[5];
    h[5] = -1;
    KA_OK_OR_FAIL(ka_buffer_read(g_q, back, a, 0, sizeof back));
    assert_int_equal(back[5], keep);
    h[5] = keep;
    /* _async with an event, and with none (the queue's finish covers it). */
    ka_event ev;
    KA_OK_OR_FAIL(ka_buffer_write_async(g_q, b, 0, h, sizeof h, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    memset(back, 0, sizeof back);
    KA_OK_OR_FAIL(ka_buffer_read_async(g_q, back, b, 8, sizeof back - 8, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
    for (int i = 0; i < N - 2; i++) assert_int_equal(back[i], h[i + 2]);
    /* copy(dst, dst_offset, src, src_offset, bytes): b[16..] = a[0..] */
    KA_OK_OR_FAIL(ka_buffer_copy(g_q, b, 64, a, 0, 64, NULL));
    /* fill(dst, dst_offset, pattern, pattern_size, bytes): a[0..4) = 9 */
    int32_t nine = 9;
    KA_OK_OR_FAIL(ka_buffer_fill(g_q, a, 0, &nine, 4, 16, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, back, b, 0, sizeof back));
    for (int i = 0; i < N; i++) assert_int_equal(back[i], i >= 16 && i < 32 ? h[i - 16] : h[i]);
    KA_OK_OR_FAIL(ka_buffer_read(g_q, back, a, 0, 32));
    for (int i = 0; i < 8; i++) assert_int_equal(back[i], i < 4 ? 9 : h[i]);
    /* The destination's range is checked as the destination's. */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, b, N * 4 - 4, a, 0, 8, NULL));
    EXPECT_DETAIL("outside the buffer");
    KA_OK_OR_FAIL(ka_buffer_release(a));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_prims_offsets(void **state) {
    (void)state;
    enum { N = 1000, AT = 24 };
    uint32_t h[N + AT];
    for (int i = 0; i < N + AT; i++) h[i] = (uint32_t)((i * 2654435761u) >> 20);
    ka_buffer in = make_buffer(g_dev, sizeof h), out = make_buffer(g_dev, sizeof h);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, in, 0, h, sizeof h));
    ka_prims_plan *rp, *sp, *op;
    KA_OK_OR_FAIL(ka_prims_plan_create(g_dev, KA_PRIM_REDUCE, KA_DTYPE_U32, N + AT, 0, &rp));
    KA_OK_OR_FAIL(ka_prims_plan_create(g_dev, KA_PRIM_SCAN, KA_DTYPE_U32, N + AT, 0, &sp));
    KA_OK_OR_FAIL(ka_prims_plan_create(g_dev, KA_PRIM_SORT, KA_DTYPE_U32, N + AT, KA_PRIM_SORT_VALUES, &op));
    /* reduce: out[3] = sum of in[AT .. AT+N) */
    KA_OK_OR_FAIL(ka_reduce(g_q, rp, out, 12, in, AT * 4, N, KA_REDUCE_SUM, NULL));
    uint32_t got[N + AT], want = 0;
    for (int i = AT; i < N + AT; i++) want += h[i];
    KA_OK_OR_FAIL(ka_buffer_read(g_q, got, out, 12, 4));
    assert_int_equal(got[0], want);
    /* scan: out[5 ..] = inclusive scan of in[AT ..] */
    KA_OK_OR_FAIL(ka_scan(g_q, sp, out, 20, in, AT * 4, N, 0, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, got, out, 20, N * 4));
    uint32_t run = 0;
    for (int i = 0; i < N; i++) {
        run += h[AT + i];
        assert_int_equal(got[i], run);
    }
    /* sort the N keys at AT with values at offset 8 of their buffer; the rest untouched */
    ka_buffer vals = make_buffer(g_dev, (N + 2) * 4);
    uint32_t hv[N + 2];
    for (int i = 0; i < N + 2; i++) hv[i] = (uint32_t)i;
    KA_OK_OR_FAIL(ka_buffer_write(g_q, vals, 0, hv, sizeof hv));
    KA_OK_OR_FAIL(ka_sort(g_q, op, in, AT * 4, vals, 8, N, NULL));
    uint32_t keys[N + AT], gv[N + 2];
    KA_OK_OR_FAIL(ka_buffer_read(g_q, keys, in, 0, sizeof keys));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, gv, vals, 0, sizeof gv));
    for (int i = 0; i < AT; i++) assert_int_equal(keys[i], h[i]);
    assert_int_equal(gv[0], 0);
    assert_int_equal(gv[1], 1);
    for (int i = 0; i < N; i++) {
        if (i) assert_true(keys[AT + i - 1] <= keys[AT + i]);
        uint32_t from = gv[2 + i] - 2; /* the key's original position in the range */
        assert_int_equal(keys[AT + i], h[AT + from]);
    }
    /* Offsets that are not whole elements, or leave too little room, are refused. */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_reduce(g_q, rp, out, 2, in, 0, N, KA_REDUCE_SUM, NULL));
    EXPECT_DETAIL("not a multiple of the element size");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_scan(g_q, sp, out, 0, in, (AT + 1) * 4, N, 0, NULL));
    EXPECT_DETAIL("at offset");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_scan(g_q, sp, in, 4, in, 0, N, 0, NULL));
    EXPECT_DETAIL("overlap");
    KA_OK_OR_FAIL(ka_prims_plan_release(rp));
    KA_OK_OR_FAIL(ka_prims_plan_release(sp));
    KA_OK_OR_FAIL(ka_prims_plan_release(op));
    KA_OK_OR_FAIL(ka_buffer_release(in));
    KA_OK_OR_FAIL(ka_buffer_release(out));
    KA_OK_OR_FAIL(ka_buffer_release(vals));
}

static const char *scale_src =
    "KA_KERNEL(scale, KA_GLOBAL float *y, KA_GLOBAL const float *x, float a) {\n"
    "    if (!ka_in_range()) return;\n"
    "    size_t i = ka_global_id(0);\n"
    "    y[i] = a * x[i];\n"
    "}\n";

/* Recording: scale into v, a reduce (several nodes), scale again; the ids
 * from ka_graph_last_node name the launches whatever the reduce recorded. */
static void test_graph_nodes_named(void **state) {
    (void)state;
    enum { N = 512 };
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, scale_src, NULL, &p));
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "scale", NULL, &k));
    float h[N];
    for (int i = 0; i < N; i++) h[i] = 1.0f;
    ka_buffer u = make_buffer(g_dev, N * 4), v = make_buffer(g_dev, N * 4), w = make_buffer(g_dev, N * 4),
              s = make_buffer(g_dev, 4);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, u, 0, h, sizeof h));
    ka_prims_plan *rp;
    KA_OK_OR_FAIL(ka_prims_plan_create(g_dev, KA_PRIM_REDUCE, KA_DTYPE_F32, N, 0, &rp));
    ka_graph_node none;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_last_node(g_q, &none));
    EXPECT_DETAIL("not recording");
    ka_range r = {.dims = 1, .size = {N}};
    KA_OK_OR_FAIL(ka_graph_begin(g_q));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_last_node(g_q, &none));
    EXPECT_DETAIL("nothing recorded");
    ka_arg a1[] = {ka_arg_buffer(v), ka_arg_buffer(u), ka_arg_f32(2.0f)};
    KA_OK_OR_FAIL(ka_launch(g_q, k, &r, a1, 3, NULL));
    ka_graph_node first, second;
    KA_OK_OR_FAIL(ka_graph_last_node(g_q, &first));
    KA_OK_OR_FAIL(ka_reduce(g_q, rp, s, 0, v, 0, N, KA_REDUCE_SUM, NULL));
    ka_arg a2[] = {ka_arg_buffer(w), ka_arg_buffer(v), ka_arg_f32(3.0f)};
    KA_OK_OR_FAIL(ka_launch(g_q, k, &r, a2, 3, NULL));
    KA_OK_OR_FAIL(ka_graph_last_node(g_q, &second));
    ka_graph g;
    KA_OK_OR_FAIL(ka_graph_end(g_q, &g));
    ka_graph_info gi;
    KA_OK_OR_FAIL(ka_graph_get_info(g, &gi));
    assert_true(gi.nodes > 3);            /* the reduce recorded more than one */
    assert_int_equal(second.index, gi.nodes - 1);
    /* Change the second launch's factor and the first one's: named, not counted. */
    KA_OK_OR_FAIL(ka_graph_set_arg(g, second, 2, ka_arg_f32(5.0f)));
    KA_OK_OR_FAIL(ka_graph_set_arg(g, first, 2, ka_arg_f32(0.5f)));
    KA_OK_OR_FAIL(ka_graph_launch(g_q, g, NULL));
    float out[N], sum;
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, w, 0, sizeof out));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, &sum, s, 0, 4));
    for (int i = 0; i < N; i++) assert_true(out[i] == 2.5f);
    assert_true(sum == 0.5f * N);
    /* An id the recording never gave is refused. */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_set_arg(g, (ka_graph_node){gi.nodes}, 0, ka_arg_f32(1)));
    KA_OK_OR_FAIL(ka_graph_release(g));
    KA_OK_OR_FAIL(ka_prims_plan_release(rp));
    ka_buffer bs[] = {u, v, w, s};
    for (int i = 0; i < 4; i++) KA_OK_OR_FAIL(ka_buffer_release(bs[i]));
    KA_OK_OR_FAIL(ka_program_release(p));
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static void test_program_build_file(void **state) {
    (void)state;
    char root[] = "/tmp/ka_build_file_XXXXXX";
    assert_non_null(mkdtemp(root));
    char dir[64], inc[64], main_cl[128], side_h[128], lib_h[128];
    snprintf(dir, sizeof dir, "%s/src", root);
    snprintf(inc, sizeof inc, "%s/include", root);
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(mkdir(inc, 0700), 0);
    snprintf(main_cl, sizeof main_cl, "%s/main.cl", dir);
    snprintf(side_h, sizeof side_h, "%s/side.h", dir);
    snprintf(lib_h, sizeof lib_h, "%s/lib.h", inc);
    write_file(side_h, "#define SIDE 40\n");
    write_file(lib_h, "#define LIB 2\n");
    /* Each #include after an empty line: the cache must still see it. */
    write_file(main_cl, "/* main.cl */\n\n#include \"side.h\"\n\n#include \"lib.h\"\n"
                        "KA_KERNEL(k, KA_GLOBAL int *out) {\n"
                        "    if (!ka_in_range()) return;\n"
                        "    out[ka_global_id(0)] = SIDE + LIB;\n"
                        "}\n");
    const char *dirs[] = {inc};
    ka_build_options o = {.include_dirs = dirs, .num_include_dirs = 1};
    ka_program p;
    /* Without the include directory lib.h is not found; the log names the file. */
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build_file(g_dev, main_cl, NULL, &p));
    EXPECT_DETAIL("lib.h");
    KA_OK_OR_FAIL(ka_program_build_file(g_dev, main_cl, &o, &p));
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "k", NULL, &k));
    ka_buffer b = make_buffer(g_dev, 16 * 4);
    ka_arg a[] = {ka_arg_buffer(b)};
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {16}}, a, 1, NULL));
    int out[16];
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, sizeof out));
    for (int i = 0; i < 16; i++) assert_int_equal(out[i], 42);
    KA_OK_OR_FAIL(ka_program_release(p));
    /* A header changed: the next build sees it (no stale cache entry). */
    write_file(lib_h, "#define LIB 3\n");
    KA_OK_OR_FAIL(ka_program_build_file(g_dev, main_cl, &o, &p));
    uint32_t hits = 1;
    KA_OK_OR_FAIL(ka_program_cache_hits(p, &hits));
    assert_int_equal(hits, 0);
    KA_OK_OR_FAIL(ka_kernel_get(p, "k", NULL, &k));
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {16}}, a, 1, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, sizeof out));
    for (int i = 0; i < 16; i++) assert_int_equal(out[i], 43);
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    /* Bad input: a missing file, a directory, a path with a blank. */
    char missing[128];
    snprintf(missing, sizeof missing, "%s/none.cl", dir);
    KA_EXPECT(KA_ERR_IO, ka_program_build_file(g_dev, missing, NULL, &p));
    EXPECT_DETAIL("none.cl");
    assert_int_equal(p.id, 0);
    KA_EXPECT(KA_ERR_IO, ka_program_build_file(g_dev, dir, NULL, &p));
    EXPECT_DETAIL("not a regular file");
    /* A FIFO is refused without opening it (an open would wait for a writer). */
    char fifo[128];
    snprintf(fifo, sizeof fifo, "%s/pipe.cl", root);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    KA_EXPECT(KA_ERR_IO, ka_program_build_file(g_dev, fifo, NULL, &p));
    EXPECT_DETAIL("not a regular file");
    unlink(fifo);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build_file(g_dev, NULL, NULL, &p));
    const char *blank[] = {"/tmp/a dir"};
    ka_build_options ob = {.include_dirs = blank, .num_include_dirs = 1};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build_file(g_dev, main_cl, &ob, &p));
    EXPECT_DETAIL("blank");
    /* A file in a directory with a blank builds when it has no #include to search for. */
    char spaced[64], plain_cl[128], inc_cl[128];
    snprintf(spaced, sizeof spaced, "%s/my kernels", root);
    assert_int_equal(mkdir(spaced, 0700), 0);
    snprintf(plain_cl, sizeof plain_cl, "%s/plain.cl", spaced);
    snprintf(inc_cl, sizeof inc_cl, "%s/inc.cl", spaced);
    write_file(plain_cl, "KA_KERNEL(k, KA_GLOBAL int *out) { if (ka_in_range()) out[ka_global_id(0)] = 1; }\n");
    write_file(inc_cl, "#include \"side.h\"\nKA_KERNEL(k, KA_GLOBAL int *out) { if (ka_in_range()) out[0] = 1; }\n");
    KA_OK_OR_FAIL(ka_program_build_file(g_dev, plain_cl, NULL, &p));
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build_file(g_dev, inc_cl, NULL, &p));
    EXPECT_DETAIL("blank");
    unlink(plain_cl);
    unlink(inc_cl);
    rmdir(spaced);
    unlink(main_cl);
    unlink(side_h);
    unlink(lib_h);
    rmdir(dir);
    rmdir(inc);
    rmdir(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signatures_pinned),
        cmocka_unit_test(test_transfers_destination_first),
        cmocka_unit_test(test_prims_offsets),
        cmocka_unit_test(test_graph_nodes_named),
        cmocka_unit_test(test_program_build_file),
    };
    int dev = default_device_runs_kernels();
    if (dev <= 0) return dev < 0 ? 1 : 77;
    return cmocka_run_group_tests_name("API conventions: default device", tests, group_setup, group_teardown);
}
