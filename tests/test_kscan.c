/* What libka reads from KA_KERNEL sources, checked where a mistake used to
 * give a wrong answer silently: kernels named like built-ins (step, min),
 * scalar arguments of the wrong type class, build logs that name the
 * user's program and line, KA_WORKGROUP declarations, and a `return` that
 * can skip a barrier. On the default device (PoCL) and with KA_DEVICE=host. */
#define KA_TEST_FIXTURE
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

/* ---- kernels named like built-ins ---------------------------------------- */
static const char *builtin_names_src =
    "KA_KERNEL(step, KA_GLOBAL float *out, float edge) {\n"
    "    if (!ka_in_range()) return;\n"
    "    size_t i = ka_global_id(0);\n"
    "    out[i] = (float)i < edge ? 0.0f : 1.0f;\n"
    "}\n"
    "KA_KERNEL(min, KA_GLOBAL int *out, int cap) {\n"
    "    if (!ka_in_range()) return;\n"
    "    int i = (int)ka_global_id(0);\n"
    "    out[i] = i < cap ? i : cap;\n"
    "}\n"
    "KA_KERNEL_NOARGS(sin) { }\n";

static void test_builtin_kernel_names(void **state) {
    (void)state;
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, builtin_names_src, NULL, &p));
    ka_kernel ks, km, kn;
    KA_OK_OR_FAIL(ka_kernel_get(p, "step", NULL, &ks));
    KA_OK_OR_FAIL(ka_kernel_get(p, "min", NULL, &km));
    KA_OK_OR_FAIL(ka_kernel_get(p, "sin", NULL, &kn));
    enum { N = 100 };
    ka_buffer bf = make_buffer(g_dev, N * sizeof(float)), bi = make_buffer(g_dev, N * sizeof(int));
    ka_range r = {.dims = 1, .size = {N}};
    ka_arg as[] = {ka_arg_buffer(bf), ka_arg_f32(40.0f)};
    ka_arg am[] = {ka_arg_buffer(bi), ka_arg_i32(17)};
    KA_OK_OR_FAIL(ka_launch(g_q, ks, &r, as, 2, NULL));
    KA_OK_OR_FAIL(ka_launch(g_q, km, &r, am, 2, NULL));
    KA_OK_OR_FAIL(ka_launch(g_q, kn, &r, NULL, 0, NULL));
    float f[N];
    int v[N];
    KA_OK_OR_FAIL(ka_buffer_read(g_q, f, bf, 0, sizeof f));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, v, bi, 0, sizeof v));
    for (int i = 0; i < N; i++) {
        assert_true(f[i] == (i < 40 ? 0.0f : 1.0f));
        assert_int_equal(v[i], i < 17 ? i : 17);
    }
    /* Errors and lookups speak of the user's names. */
    KA_EXPECT(KA_ERR_ARG_COUNT, ka_launch(g_q, ks, &r, as, 1, NULL));
    EXPECT_DETAIL("'step'");
    ka_kernel none;
    KA_EXPECT(KA_ERR_KERNEL_NOT_FOUND, ka_kernel_get(p, "max", NULL, &none));
    EXPECT_DETAIL("'max'");
    KA_OK_OR_FAIL(ka_buffer_release(bf));
    KA_OK_OR_FAIL(ka_buffer_release(bi));
    KA_OK_OR_FAIL(ka_program_release(p));
}

/* Traces name the kernel as the user wrote it. */
static char g_traced[64];
static void tracer(const ka_trace_event *ev, void *user) {
    (void)user;
    if (ev->kind == KA_TRACE_LAUNCH && ev->name) snprintf(g_traced, sizeof g_traced, "%s", ev->name);
}

static void test_builtin_kernel_name_traced(void **state) {
    (void)state;
    ka_set_tracer(tracer, NULL);
    ka_device d;
    ka_queue q;
    ka_program p;
    ka_kernel k;
    KA_OK_OR_FAIL(ka_device_open(g_info->selector, &d)); /* traced: opened with the tracer installed */
    KA_OK_OR_FAIL(ka_queue_create(d, NULL, &q));
    KA_OK_OR_FAIL(ka_program_build(d, builtin_names_src, NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "sin", NULL, &k));
    g_traced[0] = 0;
    KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {4}}, NULL, 0, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(q));
    ka_set_tracer(NULL, NULL);
    assert_string_equal(g_traced, "sin");
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_OK_OR_FAIL(ka_queue_release(q));
    KA_OK_OR_FAIL(ka_device_close(d));
}

/* ---- scalar arguments by type class --------------------------------------- */
static const char *classes_src =
    "KA_KERNEL(axpb, KA_GLOBAL float *out, float a, int b, uint c, double d) {\n"
    "    if (!ka_in_range()) return;\n"
    "    size_t i = ka_global_id(0);\n"
    "    out[i] = a * (float)i + (float)b + (float)c + (float)d;\n"
    "}\n";

static void test_scalar_type_class(void **state) {
    (void)state;
    bool dbl = g_info->has_double;
    ka_program p;
    const char *defs[] = {"double=float"}; /* a device without doubles: the parameter is a float */
    ka_build_options o = {.defines = defs, .num_defines = dbl ? 0 : 1};
    KA_OK_OR_FAIL(ka_program_build(g_dev, classes_src, &o, &p));
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "axpb", NULL, &k));
    enum { N = 16 };
    ka_buffer b = make_buffer(g_dev, N * sizeof(float));
    ka_range r = {.dims = 1, .size = {N}};
    ka_arg d = dbl ? ka_arg_f64(0.5) : ka_arg_f32(0.5f);
    /* The original mistake: an integer for the float parameter a. */
    ka_arg bad[] = {ka_arg_buffer(b), ka_arg_i32(2), ka_arg_i32(1), ka_arg_u32(1), d};
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(g_q, k, &r, bad, 5, NULL));
    EXPECT_DETAIL("argument 1", "'a'", "'float'", "KA_ARG_INT", "ka_arg_f32");
    /* A float for the int parameter b. */
    ka_arg bad2[] = {ka_arg_buffer(b), ka_arg_f32(2), ka_arg_f32(1), ka_arg_u32(1), d};
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(g_q, k, &r, bad2, 5, NULL));
    EXPECT_DETAIL("argument 2", "'b'", "'int'", "KA_ARG_FLOAT");
    /* The size still counts within a class. */
    ka_arg bad3[] = {ka_arg_buffer(b), ka_arg_f32(2), ka_arg_i64(1), ka_arg_u32(1), d};
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(g_q, k, &r, bad3, 5, NULL));
    EXPECT_DETAIL("argument 2", "4 bytes");
    /* Signedness is not checked: u32 for int, i32 for uint. Untyped
     * KA_ARG_SCALAR is matched by size alone. */
    float two = 2.0f;
    ka_arg untyped = {KA_ARG_SCALAR, 4, {0}};
    memcpy(&untyped.u, &two, sizeof two);
    ka_arg good[] = {ka_arg_buffer(b), untyped, ka_arg_u32(1), ka_arg_i32(1), d};
    KA_OK_OR_FAIL(ka_launch(g_q, k, &r, good, 5, NULL));
    float out[N];
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, sizeof out));
    for (int i = 0; i < N; i++) assert_true(out[i] == 2.0f * (float)i + 2.5f);
    /* A recorded graph's set_arg checks the same. */
    ka_arg ok_args[] = {ka_arg_buffer(b), ka_arg_f32(3), ka_arg_i32(0), ka_arg_u32(0), d};
    KA_OK_OR_FAIL(ka_graph_begin(g_q));
    KA_OK_OR_FAIL(ka_launch(g_q, k, &r, ok_args, 5, NULL));
    ka_graph g;
    KA_OK_OR_FAIL(ka_graph_end(g_q, &g));
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_graph_set_arg(g, (ka_graph_node){0}, 1, ka_arg_i32(3)));
    EXPECT_DETAIL("ka_graph_set_arg", "argument 1", "'float'");
    KA_OK_OR_FAIL(ka_graph_set_arg(g, (ka_graph_node){0}, 1, ka_arg_f32(1)));
    KA_OK_OR_FAIL(ka_graph_launch(g_q, g, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, sizeof out));
    for (int i = 0; i < N; i++) assert_true(out[i] == (float)i + 0.5f);
    KA_OK_OR_FAIL(ka_graph_release(g));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_program_release(p));
}

/* ---- build logs name the program and the user's line --------------------- */
static void test_build_log_names_program(void **state) {
    (void)state;
    const char *src =
        "KA_KERNEL(fine, KA_GLOBAL int *o) { o[0] = 1; }\n"
        "/* line 2 */\n"
        "KA_KERNEL(broken, KA_GLOBAL int *o) { o[0] = ka_no_such_name_42; }\n";
    ka_program p = {7};
    ka_build_options o = {.name = "kernels/heat.k"};
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(g_dev, src, &o, &p));
    const char *log = ka_last_error();
    bool nvrtc = g_info->backend == KA_BACKEND_CUDA; /* NVRTC writes file(line) */
    if (!strstr(log, nvrtc ? "kernels/heat.k(3)" : "kernels/heat.k:3:")) fail_msg("no 'kernels/heat.k:3:' in: %s", log);
    if (strstr(log, "tempfile") || strstr(log, "<program source>")) fail_msg("a temporary file named in: %s", log);
    /* Without a name: "program". */
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(g_dev, src, NULL, &p));
    log = ka_last_error();
    if (!strstr(log, nvrtc ? "program(3)" : "program:3:")) fail_msg("no 'program:3:' in: %s", log);
    if (strstr(log, "tempfile")) fail_msg("a temporary file named in: %s", log);
    /* A name with a quote and a backslash stays one file name. */
    ka_build_options q = {.name = "a\"b\\c.k"};
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(g_dev, src, &q, &p));
    EXPECT_DETAIL("ka_no_such_name_42");
}

/* ---- KA_WORKGROUP --------------------------------------------------------- */
/* A block sum written for groups of 64: without the declaration a launch
 * over 20 items got a group of 32 (libka's choice shrinks to the range) and
 * summed lanes that were never written. */
static const char *wg_src =
    "KA_KERNEL(block_sum, KA_GLOBAL const int *in, KA_GLOBAL int *out, uint n) KA_WORKGROUP(64, 1, 1) {\n"
    "    KA_LOCAL int t[64];\n"
    "    uint l = (uint)ka_local_id(0);\n"
    "    int live = ka_in_range();\n"
    "    t[l] = live ? in[ka_global_id(0)] : 0;\n"
    "    ka_barrier();\n"
    "    for (uint s = 32; s > 0; s >>= 1) {\n"
    "        if (l < s) t[l] += t[l + s];\n"
    "        ka_barrier();\n"
    "    }\n"
    "    if (l == 0) out[ka_group_id(0)] = t[0] + (int)ka_group_size(0) * 1000;\n"
    "}\n"
    "KA_KERNEL(plain, KA_GLOBAL int *o) { if (ka_in_range()) o[ka_global_id(0)] = (int)ka_group_size(0); }\n";

static void test_workgroup_declaration(void **state) {
    (void)state;
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, wg_src, NULL, &p));
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "block_sum", NULL, &k));
    ka_kernel_info ki;
    KA_OK_OR_FAIL(ka_kernel_get_info(k, &ki));
    assert_int_equal(ki.static_workgroup[0], 64);
    assert_int_equal(ki.static_workgroup[1], 1);
    assert_int_equal(ki.static_workgroup[2], 1);
    enum { N = 20 };
    int in[N], out[1] = {0};
    for (int i = 0; i < N; i++) in[i] = i + 1;
    ka_buffer bi = make_buffer(g_dev, sizeof in), bo = make_buffer(g_dev, sizeof out);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, bi, 0, in, sizeof in));
    ka_arg a[] = {ka_arg_buffer(bi), ka_arg_buffer(bo), ka_arg_u32(N)};
    /* A small range: the declared 64, not a group chosen for 20 items. */
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {N}}, a, 3, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, bo, 0, sizeof out));
    assert_int_equal(out[0], N * (N + 1) / 2 + 64 * 1000);
    /* The declared size given explicitly is fine; another is refused, naming it. */
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {N}, .workgroup = {64}}, a, 3, NULL));
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP, ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {N}, .workgroup = {32}}, a, 3, NULL));
    EXPECT_DETAIL("block_sum", "KA_WORKGROUP", "64");
    ka_kernel k2;
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP, ka_kernel_get(p, "block_sum", &(ka_kernel_config){.workgroup = {128}}, &k2));
    EXPECT_DETAIL("KA_WORKGROUP(64, 1, 1)", "128");
    KA_OK_OR_FAIL(ka_kernel_get(p, "block_sum", &(ka_kernel_config){.workgroup = {64}}, &k2));
    assert_true(k2.id == k.id);
    /* A kernel without the declaration keeps libka's choice. */
    ka_kernel kp;
    KA_OK_OR_FAIL(ka_kernel_get(p, "plain", NULL, &kp));
    KA_OK_OR_FAIL(ka_kernel_get_info(kp, &ki));
    assert_int_equal(ki.static_workgroup[0], 0);
    KA_OK_OR_FAIL(ka_buffer_release(bi));
    KA_OK_OR_FAIL(ka_buffer_release(bo));
    KA_OK_OR_FAIL(ka_program_release(p));
    /* Not three positive integer literals: a build error naming the line. */
    KA_EXPECT(KA_ERR_BUILD_FAILED,
              ka_program_build(g_dev, "\nKA_KERNEL(k, KA_GLOBAL int *o) KA_WORKGROUP(WG, 1, 1) { }\n", NULL, &p));
    EXPECT_DETAIL("program:2:", "KA_WORKGROUP");
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(g_dev, "KA_KERNEL(k, KA_GLOBAL int *o) KA_WORKGROUP(0, 1, 1) { }\n", NULL, &p));
}

/* ---- a return before a barrier -------------------------------------------- */
static char g_warn[4096];
static void capture(ka_log_level lvl, const char *msg, void *user) {
    (void)user;
    if (lvl == KA_LOG_WARN && strlen(g_warn) + strlen(msg) + 2 < sizeof g_warn) strcat(strcat(g_warn, msg), "\n");
}

/* README's guard in a block reduction: lanes past the range return and
 * never reach the barrier (a NaN, silently, before the scan flagged it). */
static const char *early_return_src =
    "KA_KERNEL(reduce, KA_GLOBAL const float *x, KA_GLOBAL float *out) KA_WORKGROUP(64, 1, 1) {\n"
    "    KA_LOCAL float t[64];\n"
    "    if (!ka_in_range()) return;\n"
    "    t[ka_local_id(0)] = x[ka_global_id(0)];\n"
    "    ka_barrier();\n"
    "    if (ka_local_id(0) == 0) out[ka_group_id(0)] = t[0] + t[63];\n"
    "}\n"
    "KA_KERNEL(fine, KA_GLOBAL float *o) {\n"
    "    if (!ka_in_range()) return; /* no barrier follows: nothing to say */\n"
    "    o[ka_global_id(0)] = 1.0f;\n"
    "}\n";

static void test_return_before_barrier(void **state) {
    (void)state;
    bool debug = getenv("KA_DEBUG") && strcmp(getenv("KA_DEBUG"), "0");
    g_warn[0] = 0;
    ka_set_logger(capture, NULL);
    ka_program p;
    ka_build_options o = {.name = "reduce.k"};
    ka_status st = ka_program_build(g_dev, early_return_src, &o, &p);
    ka_set_logger(NULL, NULL);
    if (debug) { /* the checking mode: the warning fails the build */
        assert_int_equal(st, KA_ERR_BUILD_FAILED);
        EXPECT_DETAIL("KA_DEBUG", "reduce.k:3:", "'reduce'", "ka_barrier");
        return;
    }
    KA_OK_OR_FAIL(st);
    const char *log = NULL;
    KA_OK_OR_FAIL(ka_program_build_log(p, &log));
    if (!strstr(log, "reduce.k:3: warning: kernel 'reduce'") || !strstr(log, "ka_barrier"))
        fail_msg("build log: '%s'", log);
    if (strstr(log, "'fine'")) fail_msg("a kernel without a barrier flagged: '%s'", log);
    if (!strstr(g_warn, "reduce.k:3: warning")) fail_msg("logged: '%s'", g_warn);
    KA_OK_OR_FAIL(ka_program_release(p));
    /* A clean program has an empty log. */
    KA_OK_OR_FAIL(ka_program_build(g_dev, wg_src, NULL, &p));
    KA_OK_OR_FAIL(ka_program_build_log(p, &log));
    assert_string_equal(log, "");
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_program_build_log(p, &log));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build_log(g_prog, NULL));
}

/* A kernel with local arrays and no declared size, launched with a group
 * libka chose: one warning, through the logger. */
static void test_geometry_warning(void **state) {
    (void)state;
    const char *src =
        "KA_KERNEL(tiles, KA_GLOBAL int *o) {\n"
        "    KA_LOCAL int t[64];\n"
        "    int live = ka_in_range();\n"
        "    t[ka_local_id(0)] = 1;\n"
        "    ka_barrier();\n"
        "    if (live) o[ka_global_id(0)] = t[0];\n"
        "}\n";
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, src, NULL, &p));
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "tiles", NULL, &k));
    ka_buffer b = make_buffer(g_dev, 64 * sizeof(int));
    ka_arg a[] = {ka_arg_buffer(b)};
    g_warn[0] = 0;
    ka_set_logger(capture, NULL);
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {10}}, a, 1, NULL));
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {20}}, a, 1, NULL));
    ka_set_logger(NULL, NULL);
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
    const char *w = strstr(g_warn, "'tiles'");
    if (!w || !strstr(g_warn, "KA_WORKGROUP")) fail_msg("logged: '%s'", g_warn);
    if (strstr(w + 1, "'tiles'")) fail_msg("warned twice: '%s'", g_warn);
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_program_release(p));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_kernel_names),
        cmocka_unit_test(test_builtin_kernel_name_traced),
        cmocka_unit_test(test_scalar_type_class),
        cmocka_unit_test(test_build_log_names_program),
        cmocka_unit_test(test_workgroup_declaration),
        cmocka_unit_test(test_return_before_barrier),
        cmocka_unit_test(test_geometry_warning),
    };
    int dev = default_device_runs_kernels();
    if (dev <= 0) return dev < 0 ? 1 : 77;
    return cmocka_run_group_tests_name("kscan: default device", tests, group_setup, group_teardown);
}
