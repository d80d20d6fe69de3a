/* The KA_KERNEL declaration scanner's shared readings (src/core/kdecl.c),
 * linked against libka's objects: each parameter's traits (what OpenCL's
 * size probes and the signatures rest on) and the signature a back-end whose
 * driver reports only sizes (CUDA) takes from the declaration. */
#include "test_util.h"

#include "kdecl.h"

static const char *src =
    "/* KA_KERNEL(k, int commented_out) */\n"
    "KA_KERNEL(k, KA_GLOBAL float *a, KA_LOCAL_ARG(float) l, KA_CONST(int) c, unsigned int n, pair p, ulong big)\n"
    "{ }\n"
    "KA_KERNEL(two, int x, int y) { }\n";

static void traits(void **state) {
    (void)state;
    ka__kparam par[KA_MAX_ARGS];
    uint32_t n;
    assert_true(ka__kdecl_find(src, "k", par, KA_MAX_ARGS, &n));
    assert_int_equal(n, 6);
    assert_int_equal(ka__kdecl_traits(&par[0]), KA__KT_STAR | KA__KT_SPACE);
    assert_int_equal(ka__kdecl_traits(&par[1]), KA__KT_LOCAL_ARG);
    assert_int_equal(ka__kdecl_traits(&par[2]), KA__KT_CONST);
    assert_int_equal(ka__kdecl_traits(&par[3]), KA__KT_SCALAR);
    assert_int_equal(ka__kdecl_traits(&par[4]), 0); /* by value, a type not spelled with scalar words: a probe on PoCL */
    assert_int_equal(ka__kdecl_traits(&par[5]), KA__KT_SCALAR);
}

static void signature(void **state) {
    (void)state;
    /* Sizes as CUDA reports them: pointers and local-memory offsets 8 bytes. */
    ka__argsig sig[6] = {{.size = 8}, {.size = 8}, {.size = 8}, {.size = 4}, {.size = 8}, {.size = 8}};
    ka__kdecl_signature(src, "k", sig, 6);
    const char *names[] = {"a", "l", "c", "n", "p", "big"};
    const uint8_t kinds[] = {KA__SIG_BUFFER, KA__SIG_LOCAL, KA__SIG_BUFFER, KA__SIG_SCALAR, KA__SIG_UNKNOWN, KA__SIG_SCALAR};
    for (int i = 0; i < 6; i++) {
        assert_string_equal(sig[i].name, names[i]);
        assert_int_equal(sig[i].kind, kinds[i]);
    }
    /* A pointer the driver does not report as 8 bytes stays unknown. */
    ka__argsig odd[6] = {{.size = 4}, {.size = 8}, {.size = 8}, {.size = 4}, {.size = 8}, {.size = 8}};
    ka__kdecl_signature(src, "k", odd, 6);
    assert_int_equal(odd[0].kind, KA__SIG_UNKNOWN);
    /* Another count than the declaration's, or no declaration: nothing set. */
    ka__argsig two[1] = {{.size = 4, .name = "#0"}};
    ka__kdecl_signature(src, "two", two, 1);
    assert_string_equal(two[0].name, "#0");
    assert_int_equal(two[0].kind, KA__SIG_UNKNOWN);
    ka__kdecl_signature(src, "none", two, 1);
    assert_string_equal(two[0].name, "#0");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(traits),
        cmocka_unit_test(signature),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
