/* ka_sort on the default device, checked element by element against a host
 * sort (qsort, stable by index): every key type with and without values,
 * few distinct keys (stability) and random wide keys (every digit). */
#include "prims_util.h"

static void sort_all_types(void **state) {
    (void)state;
    static const size_t ss[] = {0, 1, 2, 3, 64, 65, 257, 1000, 4099, 100003};
    for (ka_dtype t = KA_DTYPE_I32; t <= KA_DTYPE_F64; t++) {
        if (!type_ok(t)) continue;
        ka_prims_plan *p;
        KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SORT, t, 100003, KA_PRIM_SORT_VALUES, &p));
        for (size_t i = 0; i < sizeof ss / sizeof ss[0]; i++) check_sort(p, t, ss[i], (int)(i % 3 != 2), (uint32_t)(i + t), 0);
        check_sort(p, t, 100003, 1, 77, 1); /* random wide keys: every digit pass matters */
        KA_OK_OR_FAIL(ka_prims_plan_release(p));
    }
}

/* A larger u32 sort without values (a plan without the flag). */
static void sort_u32_large(void **state) {
    (void)state;
    ka_prims_plan *p;
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_U32, 1 << 20, 0, &p));
    check_sort(p, KA_DTYPE_U32, (1 << 20) - 3, 0, 5, 1);
    KA_OK_OR_FAIL(ka_prims_plan_release(p));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sort_all_types),
        cmocka_unit_test(sort_u32_large),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
