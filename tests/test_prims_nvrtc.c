/* Every primitive's program, for every element type, compiles with the CUDA
 * prelude through NVRTC, the sub-group paths included, and with a user
 * operator, map and predicate where the primitive takes them, and with the
 * tests' look-back delays (PRIMS_ADVERSARY) in scan, sort and select (no GPU
 * needed; skipped without libnvrtc). The source is composed as plan.c composes it. */
#include "test_util.h"

#include <ka_prims.h>
#include <dlfcn.h>

#include "../src/prims/src_common.h"
#include "../src/prims/src_reduce.h"
#include "../src/prims/src_scan.h"
#include "../src/prims/src_sort.h"
#include "../src/prims/src_search.h"
#include "../src/prims/src_segreduce.h"
#include "../src/prims/src_select.h"
#include "../src/prims/src_histogram.h"

/* Each primitive's kernels, and the user parts its desc may carry. */
static const struct {
    const char *name, *src;
    int user_op, predicate, adversary; /* adversary: the test delays (PRIMS_ADVERSARY) with the user parts */
} kinds[] = {
    {"reduce", ka__prims_src_reduce, 1, 0, 0},
    {"scan", ka__prims_src_scan, 1, 0, 1},
    {"sort", ka__prims_src_sort, 0, 0, 1},
    {"searchsorted", ka__prims_src_search, 0, 0, 0},
    {"segmented reduce", ka__prims_src_segreduce, 1, 0, 0},
    {"select", ka__prims_src_select, 0, 1, 1},
    {"histogram", ka__prims_src_histogram, 0, 0, 0},
    {"histogram, global atomics", "#define HB 5000u\n#define HIST_GLOBAL 1\n" KA__PRIMS_SRC_HISTOGRAM, 0, 0, 0},
};

extern void __lsan_disable(void) __attribute__((weak));
extern void __lsan_enable(void) __attribute__((weak));

static void nvrtc_all(void **state) {
    (void)state;
    test_nvrtc nv;
    if (!test_nvrtc_open(&nv)) {
        print_message("skipped: libnvrtc not found\n");
        skip();
    }
    assert_true(nv.create && nv.compile && nv.logsize && nv.getlog && nv.destroy);
    FILE *f = fopen(KA_PRIMS_CUDA_PRELUDE, "r");
    assert_non_null(f);
    static char prelude[1 << 19], src[1 << 20];
    size_t pn = fread(prelude, 1, sizeof prelude - 1, f);
    fclose(f);
    prelude[pn] = 0;
    const char *incl = "--include-path=" KA_PRIMS_INCLUDE_DIR;
    int failed = 0, total = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (int tid = 1; tid <= 6; tid++)
            for (int user = 0; user <= (kinds[k].user_op || kinds[k].predicate || kinds[k].adversary); user++) {
                snprintf(src, sizeof src,
                         "%s\n#define TID %d\n#define WG 256\n#define K 8\n#define CONTIG 0\n%s%s%s%s\n"
                         "#line 1 \"prims\"\n%s\nKA_DEVICE_FN T test_sq(T x) { return x * x; }\n%s%s",
                         prelude, tid, user && kinds[k].user_op ? "#define PRIMS_USER_OP(a, b) (a + b)\n"
                                                                 "#define PRIMS_USER_IDENTITY (0)\n" : "",
                         user && kinds[k].user_op ? "#define PRIMS_USER_MAP(x) (test_sq(x))\n" : "",
                         user && kinds[k].predicate ? "#define PRIMS_USER_PREDICATE(x) (x > 0)\n" : "",
                         user && kinds[k].adversary ? "#define PRIMS_ADVERSARY 1\n" : "",
                         ka__prims_src_common, ka__prims_src_ops, kinds[k].src);
                const char *opts[] = {"-std=c++17", "-arch=compute_75", incl, "-DKA_SUBGROUP_SIZE=32"};
                if (__lsan_disable) __lsan_disable(); /* NVRTC's own allocations are not the test's */
                nvrtc_prog p = NULL;
                int r = nv.create(&p, src, "prims.cu", 0, NULL, NULL);
                if (!r) r = nv.compile(p, 4, opts);
                size_t ln = 0;
                char *log = NULL;
                if (r && p && !nv.logsize(p, &ln) && ln > 1 && (log = malloc(ln))) nv.getlog(p, log);
                if (p) nv.destroy(&p);
                if (__lsan_enable) __lsan_enable();
                total++;
                if (r) failed++, print_message("%s TID=%d user=%d: NVRTC error %d\n%.4000s\n", kinds[k].name, tid, user, r,
                                               log ? log : "");
                free(log);
            }
    if (failed) fail_msg("%d of %d programs do not compile with the CUDA prelude", failed, total);
    print_message("%d programs compile with the CUDA prelude\n", total);
}

int main(void) {
    test_nvrtc nv;
    if (!test_nvrtc_open(&nv)) {
        printf("libnvrtc not found: skipped\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(nvrtc_all)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
