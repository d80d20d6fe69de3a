/* What libka reads from KA_KERNEL sources, checked where a mistake used to
 * give a wrong answer silently: kernels named like built-ins (step, min),
 * scalar arguments of the wrong type class, build logs that name the
 * user's program and line, KA_WORKGROUP declarations, and a `return` that
 * can skip a barrier. On the default device (PoCL) and with KA_DEVICE=host. */
#define KA_TEST_FIXTURE
#include "test_util.h"

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
    KA_OK_OR_FAIL(ka_buffer_read(g_q, bf, 0, sizeof f, f, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, bi, 0, sizeof v, v, NULL));
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
    KA_OK_OR_FAIL(ka_buffer_read(g_q, b, 0, sizeof out, out, NULL));
    for (int i = 0; i < N; i++) assert_true(out[i] == 2.0f * (float)i + 2.5f);
    /* A recorded graph's set_arg checks the same. */
    ka_arg ok_args[] = {ka_arg_buffer(b), ka_arg_f32(3), ka_arg_i32(0), ka_arg_u32(0), d};
    KA_OK_OR_FAIL(ka_graph_begin(g_q));
    KA_OK_OR_FAIL(ka_launch(g_q, k, &r, ok_args, 5, NULL));
    ka_graph g;
    KA_OK_OR_FAIL(ka_graph_end(g_q, &g));
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_graph_set_arg(g, 0, 1, ka_arg_i32(3)));
    EXPECT_DETAIL("ka_graph_set_arg", "argument 1", "'float'");
    KA_OK_OR_FAIL(ka_graph_set_arg(g, 0, 1, ka_arg_f32(1)));
    KA_OK_OR_FAIL(ka_graph_launch(g_q, g, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, b, 0, sizeof out, out, NULL));
    for (int i = 0; i < N; i++) assert_true(out[i] == (float)i + 0.5f);
    KA_OK_OR_FAIL(ka_graph_release(g));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_program_release(p));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_kernel_names),
        cmocka_unit_test(test_scalar_type_class),
    };
    int dev = default_device_runs_kernels();
    if (dev <= 0) return dev < 0 ? 1 : 77;
    return cmocka_run_group_tests_name("kscan: default device", tests, group_setup, group_teardown);
}
