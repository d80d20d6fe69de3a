/* Programs and kernel lookup on the default device: build options and
 * defines (a define's whole value, the ones refused), build failures and
 * their log, kernels not found, the kernel and variant caches, bad static
 * configurations, a release's stale kernels, and long kernel names (in a
 * process of their own: PoCL 3.1 aborted on them). */
#define _GNU_SOURCE
#define KA_TEST_FIXTURE
#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_program_build_with_options_and_defines(void **state) {
    (void)state;
    const char *src =
        "#ifndef ADD_ONE\n#error ADD_ONE missing\n#endif\n"
        "KA_KERNEL(k, KA_GLOBAL int *out) {\n"
        "    if (!ka_in_range()) return;\n"
        "    int i = (int)ka_global_id(0);\n"
        "    out[i] = i * SCALE + EXTRA + ADD_ONE;\n"
        "}\n";
    const char *defs[] = {"SCALE=3", "ADD_ONE"};
    ka_build_options o = {.options = "-DEXTRA=100 -cl-mad-enable", .defines = defs, .num_defines = 2};
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, src, &o, &p));
    uint32_t builds = 0;
    KA_OK_OR_FAIL(ka_program_build_count(p, &builds));
    assert_int_equal(builds, 1);
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "k", NULL, &k));
    ka_buffer b = make_buffer(g_dev, 64 * sizeof(int));
    ka_arg a[] = {ka_arg_buffer(b)};
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {64}}, a, 1, NULL));
    int out[64];
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, sizeof out));
    for (int i = 0; i < 64; i++) assert_int_equal(out[i], i * 3 + 100 + 1); /* ADD_ONE defaults to 1 */
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_program_release(p));
    /* Without the defines the same source does not build. */
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(g_dev, src, NULL, &p));
    EXPECT_DETAIL("ADD_ONE missing");
}

static void test_program_build_bad_defines(void **state) {
    (void)state;
    ka_program p = {5};
    const char *defs[] = {"A=1", NULL};
    ka_build_options o = {.defines = defs, .num_defines = 2};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build(g_dev, "KA_KERNEL_NOARGS(k) {}\n", &o, &p));
    assert_int_equal(p.id, 0);
    const char *defs2[] = {""};
    ka_build_options o2 = {.defines = defs2, .num_defines = 1};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build(g_dev, "KA_KERNEL_NOARGS(k) {}\n", &o2, &p));
    ka_build_options o3 = {.defines = NULL, .num_defines = 1};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build(g_dev, "KA_KERNEL_NOARGS(k) {}\n", &o3, &p));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build(g_dev, NULL, NULL, &p));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build(g_dev, "KA_KERNEL_NOARGS(k) {}\n", NULL, NULL));
}

/* A define's whole value is the macro's replacement on every back-end (the
 * host compiler took "VAL=1 + 2" as VAL 1; PoCL refused it); a name alone is
 * 1, "NAME=" empty, a function-like macro takes its parameters. A
 * configuration's defines string adds -D and -U options to its variant. */
static void test_defines_whole_value(void **state) {
    (void)state;
    const char *src = "KA_KERNEL(defs, KA_GLOBAL int *out) {\n"
                      "    if (!ka_in_range()) return;\n"
                      "    out[0] = VAL * 10;\n"
                      "    out[1] = TWICE(3 + 1);\n"
                      "    out[2] = FLAG;\n"
                      "    out[3] = EMPTY 5;\n"
                      "#ifdef GONE\n    out[4] = 1;\n#else\n    out[4] = 0;\n#endif\n"
                      "#ifdef EXTRA\n    out[5] = EXTRA;\n#else\n    out[5] = -1;\n#endif\n"
                      "}\n";
    const char *defs[] = {"VAL=1 + 2", "TWICE(x)=((x) * 2)", "FLAG", "EMPTY=", "GONE", "COMMENTED=1 /* a closed comment */"};
    ka_build_options o = {.defines = defs, .num_defines = 6};
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, src, &o, &p));
    ka_kernel k, kc;
    KA_OK_OR_FAIL(ka_kernel_get(p, "defs", NULL, &k));
    ka_kernel_config cfg = {.defines = " -UGONE  -D EXTRA=4\t"};
    KA_OK_OR_FAIL(ka_kernel_get(p, "defs", &cfg, &kc));
    ka_buffer b = make_buffer(g_dev, 6 * sizeof(int));
    ka_arg a[] = {ka_arg_buffer(b)};
    /* VAL * 10 is 1 + 2 * 10: the replacement is text, as with -D. */
    static const int want[2][6] = {{21, 8, 1, 5, 1, -1}, {21, 8, 1, 5, 0, 4}};
    for (int v = 0; v < 2; v++) {
        int out[6];
        KA_OK_OR_FAIL(ka_launch(g_q, v ? kc : k, &(ka_range){.dims = 1, .size = {1}}, a, 1, NULL));
        KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, sizeof out));
        for (int i = 0; i < 6; i++)
            if (out[i] != want[v][i]) fail_msg("%s: out[%d] = %d, want %d", v ? "configured" : "default", i, out[i], want[v][i]);
    }
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_program_release(p));
}

/* A define that cannot be a line of its own is refused, naming it, on every
 * back-end; so is a configuration's word that is not a -D or -U option
 * (blanks separate them: a value there cannot hold one). */
static void test_defines_refused(void **state) {
    (void)state;
    static const char *const bad[] = {"A\nB", "A=1\n#define B 2", "A=\r", "1BAD", "A B=1", "A-B", "F(x=1", "F(1)=2",
                                      "F(x)y=1", "V=1\\", "V=/* open", " A"};
    ka_program p = {5};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ka_build_options o = {.defines = &bad[i], .num_defines = 1};
        KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build(g_dev, "KA_KERNEL_NOARGS(k) {}\n", &o, &p));
        EXPECT_DETAIL("ka_program_build: ", "ka_build_options.defines[0]");
        assert_int_equal(p.id, 0);
    }
    static const char *const bad_cfg[] = {"-DVAL=1 + 2", "N=4", "-D", "-U", "-UX=1", "-DA\nB", "-cl-fast-relaxed-math",
                                          "-D 1X"};
    KA_OK_OR_FAIL(ka_program_build(g_dev, "KA_KERNEL_NOARGS(k) {}\n", NULL, &p));
    for (size_t i = 0; i < sizeof bad_cfg / sizeof *bad_cfg; i++) {
        ka_kernel k = {5};
        ka_kernel_config cfg = {.defines = bad_cfg[i]};
        KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_kernel_get(p, "k", &cfg, &k));
        EXPECT_DETAIL("ka_kernel_get: ", "ka_kernel_config.defines");
        assert_int_equal(k.id, 0);
    }
    EXPECT_DETAIL("'-D 1X'");
    ka_kernel_config plus = {.defines = "-DVAL=1 + 2"};
    ka_kernel k;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_kernel_get(p, "k", &plus, &k));
    EXPECT_DETAIL("'+'", "a value cannot hold one");
    uint32_t builds;
    KA_OK_OR_FAIL(ka_program_build_count(p, &builds));
    assert_int_equal(builds, 1);
    KA_OK_OR_FAIL(ka_program_release(p));
}

static void test_program_build_failure_has_log(void **state) {
    (void)state;
    const char *src =
        "KA_KERNEL(broken, KA_GLOBAL int *out) {\n"
        "    out[0] = ka_undeclared_thing_42 + 1;\n"
        "}\n";
    ka_program p = {5};
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(g_dev, src, NULL, &p));
    assert_int_equal(p.id, 0);
    EXPECT_DETAIL("ka_undeclared_thing_42");
    if (g_info->backend == KA_BACKEND_OPENCL) EXPECT_DETAIL("clBuildProgram", "CL_BUILD_PROGRAM_FAILURE");
    /* The user's line numbers: line 2 of the source, not of prelude + source. */
    if (g_info->backend == KA_BACKEND_OPENCL || g_info->backend == KA_BACKEND_HOST) EXPECT_DETAIL(":2:");
}

static void test_kernel_not_found(void **state) {
    (void)state;
    ka_kernel k = {9};
    KA_EXPECT(KA_ERR_KERNEL_NOT_FOUND, ka_kernel_get(g_prog, "no_such_kernel", NULL, &k));
    assert_int_equal(k.id, 0);
    EXPECT_DETAIL("no_such_kernel");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_kernel_get(g_prog, "", NULL, &k));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_kernel_get(g_prog, NULL, NULL, &k));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_kernel_get(g_prog, "fill_idx", NULL, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_kernel_get(BAD_PROGRAM, "fill_idx", NULL, &k));
    /* A failed lookup is not cached: asking again gives the same answer. */
    KA_EXPECT(KA_ERR_KERNEL_NOT_FOUND, ka_kernel_get(g_prog, "no_such_kernel", NULL, &k));
}

static void test_kernel_not_declared_with_ka_kernel(void **state) {
    (void)state;
    /* The C prelude compiles a bare __kernel too (host); neither back-end lists it. */
    if (g_info->backend != KA_BACKEND_OPENCL && g_info->backend != KA_BACKEND_HOST) skip();
    ka_kernel k;
    ka_status st = ka_kernel_get(g_prog, "plain_cl", NULL, &k);
    assert_int_not_equal(st, KA_OK);
    EXPECT_DETAIL("plain_cl", "KA_KERNEL");
}

static void test_kernel_get_cached(void **state) {
    (void)state;
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, api_src, NULL, &p));
    uint32_t n0 = 0, n = 0;
    KA_OK_OR_FAIL(ka_program_build_count(p, &n0));
    assert_int_equal(n0, 1);
    ka_kernel a, b, c, d;
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill_idx", NULL, &a));
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill_idx", NULL, &b));
    ka_kernel_config zero;
    memset(&zero, 0, sizeof zero);
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill_idx", &zero, &c)); /* all-zero config == NULL */
    assert_true(a.id != 0);
    assert_true(a.id == b.id);
    assert_true(a.id == c.id);
    KA_OK_OR_FAIL(ka_program_build_count(p, &n));
    assert_int_equal(n, 1);
    /* Another kernel of the same default variant: a new handle, no build. */
    KA_OK_OR_FAIL(ka_kernel_get(p, "args3", NULL, &d));
    assert_true(d.id != a.id);
    KA_OK_OR_FAIL(ka_program_build_count(p, &n));
    assert_int_equal(n, 1);
    KA_OK_OR_FAIL(ka_program_release(p));
}

static void test_kernel_get_static_config_builds_variant(void **state) {
    (void)state;
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, api_src, NULL, &p));
    ka_kernel dyn, st1, st2, st_other, def1, def2;
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill_idx", NULL, &dyn));
    ka_kernel_config cfg = {.workgroup = {4, 0, 0}};
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill_idx", &cfg, &st1));
    assert_true(st1.id != dyn.id);
    uint32_t n = 0;
    KA_OK_OR_FAIL(ka_program_build_count(p, &n));
    assert_int_equal(n, 2);
    /* (4,0,0) and (4,1,1) are the same configuration once normalized. */
    ka_kernel_config cfg2 = {.workgroup = {4, 1, 1}};
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill_idx", &cfg2, &st2));
    assert_true(st2.id == st1.id);
    /* Another kernel under the same configuration shares the variant's build. */
    KA_OK_OR_FAIL(ka_kernel_get(p, "args3", &cfg, &st_other));
    KA_OK_OR_FAIL(ka_program_build_count(p, &n));
    assert_int_equal(n, 2);
    ka_kernel_info ki;
    KA_OK_OR_FAIL(ka_kernel_get_info(st1, &ki));
    assert_int_equal(ki.static_workgroup[0], 4);
    assert_int_equal(ki.static_workgroup[1], 1);
    assert_int_equal(ki.static_workgroup[2], 1);
    assert_int_equal(ki.num_args, 2);
    KA_OK_OR_FAIL(ka_kernel_get_info(dyn, &ki));
    assert_int_equal(ki.static_workgroup[0], 0);
    assert_true(ki.max_workgroup_size > 0);
    /* Per-variant defines make a third build, cached as well. */
    ka_kernel_config dc = {.defines = "-DFOO=1"};
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill_idx", &dc, &def1));
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill_idx", &dc, &def2));
    assert_true(def1.id == def2.id && def1.id != dyn.id);
    KA_OK_OR_FAIL(ka_program_build_count(p, &n));
    assert_int_equal(n, 3);
    /* The static kernel runs with the static size and gives right results. */
    ka_buffer b = make_buffer(g_dev, 10 * sizeof(uint32_t));
    ka_arg a[] = {ka_arg_buffer(b), ka_arg_u32(1000)};
    KA_OK_OR_FAIL(ka_launch(g_q, st1, &(ka_range){.dims = 1, .size = {10}}, a, 2, NULL));
    uint32_t out[10];
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, sizeof out));
    for (uint32_t i = 0; i < 10; i++) assert_int_equal(out[i], 1000 + i);
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_program_release(p));
}

static void test_kernel_get_bad_configs(void **state) {
    (void)state;
    ka_kernel k = {3};
    ka_kernel_config too_big = {.workgroup = {g_info->max_workgroup_size + 1, 1, 1}};
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP, ka_kernel_get(g_prog, "fill_idx", &too_big, &k));
    assert_int_equal(k.id, 0);
    uint32_t side = 1;
    while ((uint64_t)side * side <= g_info->max_workgroup_size) side *= 2;
    ka_kernel_config too_many = {.workgroup = {side, side, 1}};
    if (side <= g_info->max_workgroup[0] && side <= g_info->max_workgroup[1])
        KA_EXPECT(KA_ERR_INVALID_WORKGROUP, ka_kernel_get(g_prog, "fill_idx", &too_many, &k));
    if (g_info->num_subgroup_sizes == 0) {
        ka_kernel_config sg = {.subgroup_size = 16};
        KA_EXPECT(KA_ERR_UNSUPPORTED, ka_kernel_get(g_prog, "fill_idx", &sg, &k));
        EXPECT_DETAIL("sub-group");
    }
}

static void test_program_release_invalidates_kernels(void **state) {
    (void)state;
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, api_src, NULL, &p));
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "noargs", NULL, &k));
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {1}}, NULL, 0, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
    KA_OK_OR_FAIL(ka_program_release(p));
    ka_kernel_info ki;
    uint32_t n;
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_kernel_get_info(k, &ki));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {1}}, NULL, 0, NULL));
    EXPECT_DETAIL("ka_launch");
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_kernel_get(p, "noargs", NULL, &k));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_program_build_count(p, &n));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_program_release(p));
    EXPECT_DETAIL("ka_program_release");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_build_count(g_prog, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_kernel_get_info(get_kernel("noargs"), NULL));
}

/* ---- long kernel names ------------------------------------------------------ */

/* Lengths of the names tried: the alias's edge (OpenCL compiles names over
 * 128 characters under an alias), PoCL 3.1's abort (a symbol over 252
 * characters: "ka_k_" + 248), and far past it. */
static const int name_lens[] = {128, 129, 250, 300, 1000};

/* A name of n characters starting with c (distinct per length and letter). */
static char *name_of(int n, char c) {
    char *s = malloc((size_t)n + 1);
    if (!s) abort();
    int k = snprintf(s, (size_t)n + 1, "%c%d_", c, n);
    for (int i = k; i < n; i++) s[i] = (char)('a' + i % 26);
    s[n] = 0;
    return s;
}

#define CHILD_CHECK(c, ...)                                                                            \
    do {                                                                                               \
        if (!(c)) {                                                                                    \
            fprintf(stderr, "long names: " __VA_ARGS__);                                               \
            fprintf(stderr, " (%s: %s)\n", #c, ka_last_error());                                       \
            return 1;                                                                                  \
        }                                                                                              \
    } while (0)

/* Launches kernel name of p over 4 items with args and returns out[0]; -1 on failure. */
static int child_run(ka_queue q, ka_program p, const char *name, ka_buffer out, const ka_arg *extra, uint32_t nextra) {
    ka_kernel k;
    if (ka_kernel_get(p, name, NULL, &k) != KA_OK) return -1;
    ka_arg a[3] = {ka_arg_buffer(out)};
    for (uint32_t i = 0; i < nextra; i++) a[1 + i] = extra[i];
    int v = -1;
    if (ka_launch(q, k, &(ka_range){.dims = 1, .size = {4}}, a, 1 + nextra, NULL) != KA_OK ||
        ka_buffer_read(q, &v, out, 0, sizeof v) != KA_OK)
        return -1;
    return v;
}

/* The child (test_programs --long-names off|DIR): one program with a kernel
 * of each length, a KA_KERNEL_NOARGS one, one with a struct parameter (PoCL's
 * size probe) and one a macro makes, built twice with the cache off or in
 * DIR (the second build loads it), each kernel found and run. 0 when all is
 * right; a message and 1 otherwise; a driver that aborts shows as a signal. */
static int long_names_child(const char *cache) {
    if (!strcmp(cache, "off")) {
        setenv("KA_CACHE", "0", 1);
    } else {
        setenv("KA_CACHE_DIR", cache, 1);
        unsetenv("KA_CACHE");
    }
    enum { N = sizeof name_lens / sizeof name_lens[0] };
    char *names[N], *noargs = name_of(300, 'q'), *probe = name_of(260, 'p'), *made = name_of(200, 'm');
    size_t cap = 4096;
    for (int i = 0; i < N; i++) cap += 2 * (size_t)name_lens[i] + 128;
    char *src = malloc(cap);
    if (!src) return 1;
    int n = snprintf(src, cap, "typedef struct { int a, b; } pair_t;\n"
                               "#define MAKE(name) KA_KERNEL(name, KA_GLOBAL int *out) { if (ka_in_range()) out[0] = 7; }\n"
                               "MAKE(%s)\n"
                               "KA_KERNEL_NOARGS(%s) { }\n"
                               "KA_KERNEL(\n%s\n, KA_GLOBAL int *out, pair_t p) { if (ka_in_range()) out[0] = p.a * p.b; }\n",
                     made, noargs, probe);
    for (int i = 0; i < N; i++) {
        names[i] = name_of(name_lens[i], 'k');
        n += snprintf(src + n, cap - (size_t)n, "KA_KERNEL(%s, KA_GLOBAL int *out) { if (ka_in_range()) out[0] = %d; }\n",
                      names[i], name_lens[i]);
    }
    ka_device d;
    ka_queue q;
    const ka_device_info *info;
    CHILD_CHECK(ka_device_open(NULL, &d) == KA_OK && ka_device_get_info(d, &info) == KA_OK, "no device");
    CHILD_CHECK(ka_queue_create(d, NULL, &q) == KA_OK, "no queue");
    ka_buffer out;
    CHILD_CHECK(ka_buffer_create(d, 4 * sizeof(int), &out) == KA_OK, "no buffer");
    for (int round = 0; round < 2; round++) {
        ka_program p;
        CHILD_CHECK(ka_program_build(d, src, NULL, &p) == KA_OK, "build %d", round);
        uint32_t hits = 0;
        CHILD_CHECK(ka_program_cache_hits(p, &hits) == KA_OK, "hits");
        bool want_hit = round == 1 && strcmp(cache, "off") && info->backend != KA_BACKEND_NULL;
        CHILD_CHECK(hits == (want_hit ? 1u : 0u), "build %d: %u cache hits", round, hits);
        for (int i = 0; i < N; i++) {
            int v = child_run(q, p, names[i], out, NULL, 0);
            CHILD_CHECK(v == name_lens[i], "the kernel of a %d-character name gave %d", name_lens[i], v);
        }
        ka_kernel k;
        CHILD_CHECK(ka_kernel_get(p, noargs, NULL, &k) == KA_OK, "KA_KERNEL_NOARGS of 300 characters");
        CHILD_CHECK(ka_launch(q, k, &(ka_range){.dims = 1, .size = {1}}, NULL, 0, NULL) == KA_OK, "its launch");
        {
            struct { int a, b; } pr = {6, 7};
            ka_arg good = ka_arg_bytes(&pr, sizeof pr), bad = ka_arg_bytes(&pr, 4);
            int v = child_run(q, p, probe, out, &good, 1);
            CHILD_CHECK(v == 42, "the struct kernel gave %d", v);
            ka_kernel pk;
            CHILD_CHECK(ka_kernel_get(p, probe, NULL, &pk) == KA_OK, "the struct kernel");
            ka_arg a[] = {ka_arg_buffer(out), bad};
            CHILD_CHECK(ka_launch(q, pk, &(ka_range){.dims = 1, .size = {4}}, a, 2, NULL) == KA_ERR_ARG_TYPE,
                        "4 bytes for an 8-byte struct were not refused");
        }
        /* A macro's name is compiled as written: found on the host back-end
         * (it reads the preprocessor's output), not under OpenCL's alias. */
        ka_status st = ka_kernel_get(p, made, NULL, &k);
        if (info->backend == KA_BACKEND_OPENCL) {
            CHILD_CHECK(st == KA_ERR_KERNEL_NOT_FOUND && strstr(ka_last_error(), "spells the name out"),
                        "a 200-character name a macro makes: %s", ka_status_name(st));
        } else {
            int v = child_run(q, p, made, out, NULL, 0);
            CHILD_CHECK(v == 7, "the kernel a macro names gave %d", v);
        }
        CHILD_CHECK(ka_program_release(p) == KA_OK, "release");
    }
    /* Lines stay the user's: an error after a declaration whose long name
     * stands on a line of its own is reported on its own line (4). */
    snprintf(src, cap, "KA_KERNEL(\n%s,\n KA_GLOBAL int *out) {\n  undeclared_name = 1; }\n", names[N - 1]);
    ka_program bad;
    CHILD_CHECK(ka_program_build(d, src, NULL, &bad) == KA_ERR_BUILD_FAILED, "a failing build");
    CHILD_CHECK(strstr(ka_last_error(), ":4:") || strstr(ka_last_error(), "(4)"), "the error's line");
    ka_buffer_release(out);
    ka_queue_release(q);
    ka_device_close(d);
    for (int i = 0; i < N; i++) free(names[i]);
    free(noargs);
    free(probe);
    free(made);
    free(src);
    return 0;
}

/* Runs the child in a process of its own; fails on a signal or a failure. */
static void run_names_child(const char *cache) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/proc/self/exe", "test_programs", "--long-names", cache, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) assert_int_equal(errno, EINTR);
    if (WIFSIGNALED(status))
        fail_msg("long kernel names (cache %s): the process died of signal %d (%s)", cache, WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("long kernel names (cache %s): exit status %d", cache, WEXITSTATUS(status));
}

/* Kernel names of 128 to 1000 characters build, are found and run, with the
 * cache off and on (PoCL 3.1 aborted the process past 247: libka gives
 * OpenCL an alias of the name; the host back-end's lookup had a 256-byte
 * buffer). */
static void test_long_kernel_names(void **state) {
    (void)state;
    run_names_child("off");
    char dir[] = "/tmp/ka_names_XXXXXX";
    assert_non_null(mkdtemp(dir));
    run_names_child(dir);
    DIR *dd = opendir(dir);
    for (struct dirent *e; dd && (e = readdir(dd));) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.') unlink(path);
    }
    if (dd) closedir(dd);
    rmdir(dir);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_program_build_with_options_and_defines),
        cmocka_unit_test(test_program_build_bad_defines),
        cmocka_unit_test(test_defines_whole_value),
        cmocka_unit_test(test_defines_refused),
        cmocka_unit_test(test_program_build_failure_has_log),
        cmocka_unit_test(test_kernel_not_found),
        cmocka_unit_test(test_kernel_not_declared_with_ka_kernel),
        cmocka_unit_test(test_kernel_get_cached),
        cmocka_unit_test(test_kernel_get_static_config_builds_variant),
        cmocka_unit_test(test_kernel_get_bad_configs),
        cmocka_unit_test(test_program_release_invalidates_kernels),
        cmocka_unit_test(test_long_kernel_names),
    };
    if (argc == 3 && !strcmp(argv[1], "--long-names")) return long_names_child(argv[2]);
    /* The group needs a device that runs kernels. */
    int dev = default_device_runs_kernels();
    if (dev <= 0) return dev < 0 ? 1 : 77;
    return cmocka_run_group_tests_name("programs: default device", tests, group_setup, group_teardown);
}
