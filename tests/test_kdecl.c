/* The KA_KERNEL declaration scanner's shared readings (src/core/kdecl.c),
 * linked against libka's objects: each parameter's traits (what OpenCL's
 * size probes and the signatures rest on), the signature a back-end whose
 * driver reports only sizes (CUDA) takes from the declaration, scalar type
 * classes, KA_WORKGROUP, the return-before-barrier finding, parameter
 * counts (the null back-end's) and the include scan that keeps a source
 * reading other files out of the kernel cache. */
#include "test_util.h"

#include "kdecl.h"

#include <string.h>

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

/* Parameter counts, KA_KERNEL_NOARGS included (the null back-end's kernels). */
static void count(void **state) {
    (void)state;
    static const char *s2 = "// KA_KERNEL_NOARGS(hidden)\nKA_KERNEL_NOARGS( none ) { }\nKA_KERNEL_NOARGS(nonempty) { }\n";
    uint32_t n = 99;
    assert_true(ka__kdecl_count(src, "k", &n));
    assert_int_equal(n, 6);
    assert_true(ka__kdecl_count(src, "two", &n));
    assert_int_equal(n, 2);
    assert_true(ka__kdecl_count(s2, "none", &n));
    assert_int_equal(n, 0);
    assert_true(ka__kdecl_count(s2, "nonempty", &n));
    assert_false(ka__kdecl_count(s2, "hidden", &n)); /* in a comment */
    assert_false(ka__kdecl_count(s2, "non", &n));    /* a prefix of a name */
    assert_false(ka__kdecl_count(src, "commented_out", &n));
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

static void classes(void **state) {
    (void)state;
    static const char cs[] = "KA_KERNEL(c, KA_GLOBAL float *a, float f, const double d, ka_f32 g, int i, unsigned long u,\n"
                             "          bool b, pair p, half h, KA_LOCAL_ARG(float) l) { }\n";
    ka__argsig sig[10];
    memset(sig, 0, sizeof sig);
    ka__kdecl_classes(cs, "c", sig, 10);
    static const uint8_t want[10] = {KA__CLS_UNKNOWN, KA__CLS_FLOAT, KA__CLS_FLOAT, KA__CLS_FLOAT, KA__CLS_INT,
                                     KA__CLS_INT,     KA__CLS_INT,   KA__CLS_UNKNOWN, KA__CLS_UNKNOWN, KA__CLS_UNKNOWN};
    for (int i = 0; i < 10; i++) assert_int_equal(sig[i].cls, want[i]);
    assert_string_equal(sig[2].type, "const double");
    assert_string_equal(sig[5].type, "unsigned long");
    /* Another parameter count: nothing set. */
    memset(sig, 0, sizeof sig);
    ka__kdecl_classes(cs, "c", sig, 9);
    assert_int_equal(sig[1].cls, KA__CLS_UNKNOWN);
}

static void workgroup(void **state) {
    (void)state;
    uint32_t wg[3] = {0, 0, 0};
    const char *after;
    assert_int_equal(ka__kdecl_workgroup(" /* c */ KA_WORKGROUP( 64 , 2u,1 ) {", wg, &after), 1);
    assert_int_equal(wg[0], 64);
    assert_int_equal(wg[1], 2);
    assert_int_equal(wg[2], 1);
    assert_int_equal(*after, ' ');
    assert_int_equal(ka__kdecl_workgroup(" {", wg, &after), 0);
    assert_int_equal(*after, '{');
    assert_int_equal(ka__kdecl_workgroup(" KA_WORKGROUPS(1, 1, 1) {", wg, &after), 0);
    assert_int_equal(ka__kdecl_workgroup(" KA_WORKGROUP(WG, 1, 1) {", wg, &after), -1);
    assert_int_equal(ka__kdecl_workgroup(" KA_WORKGROUP(0, 1, 1) {", wg, &after), -1);
    assert_int_equal(ka__kdecl_workgroup(" KA_WORKGROUP(64, 1) {", wg, &after), -1);
    assert_int_equal(ka__kdecl_workgroup(" KA_WORKGROUP(99999999999, 1, 1) {", wg, &after), -1);
}

static void return_before_barrier(void **state) {
    (void)state;
    const char *b, *e;
    static const char bad[] = "  { if (!ka_in_range()) return; t[l] = 1; ka_barrier(); } tail";
    assert_true(ka__kdecl_body(bad, &b, &e));
    assert_int_equal(*b, '{');
    assert_int_equal(e[-1], '}');
    const char *r = ka__kdecl_return_before_barrier(b, e);
    assert_non_null(r);
    assert_int_equal(strncmp(r, "return", 6), 0);
    /* A return after the last barrier, or none before one, is fine; comments,
     * literals and longer words do not count; ka_barrier_local does. */
    static const char *const ok[] = {
        "{ ka_barrier(); if (x) return; }",
        "{ /* return */ const char *s = \"return\"; ka_barrier(); }",
        "{ int returned = 0; ka_barrier_localx(); }",
        "{ if (!ka_in_range()) return; y[i] = 1; }",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        assert_true(ka__kdecl_body(ok[i], &b, &e));
        assert_null(ka__kdecl_return_before_barrier(b, e));
    }
    static const char loop[] = "{ for (;;) { if (d) return; ka_barrier_local(); } }";
    assert_true(ka__kdecl_body(loop, &b, &e));
    assert_non_null(ka__kdecl_return_before_barrier(b, e));
    assert_false(ka__kdecl_body("; {}", &b, &e));
    assert_false(ka__kdecl_body("{ unclosed", &b, &e));
}

/* Every spelling of a directive that reads another file, each checked against
 * gcc -std=gnu11, clang-15 (gnu11 and OpenCL C 1.2) and g++ -std=c++17 with
 * -E when written (the noted compilers include the header); and what none of
 * them reads as one. */
static void has_include(void **state) {
    (void)state;
    static const char *const yes[] = {
        "#include \"a.h\"\n",
        "  # include <a.h>\n",
        "int x;\n\n#include \"a.h\"\n",             /* after an empty line */
        "#/**/include \"a.h\"\n",
        "/**/#include \"a.h\"\n",
        "/* one\n two */ #include \"a.h\"\n",       /* the comment is one blank */
        "%:include \"a.h\"\n",                      /* digraph */
        "#\\\ninclude \"a.h\"\n",                   /* line splices */
        "#inc\\\nlude \"a.h\"\n",
        "#\\\r\ninclude \"a.h\"\n",
        "# \\ \ninclude \"a.h\"\n",                  /* gcc and clang: blanks before the newline */
        "\f#include \"a.h\"\n",
        "\v#include \"a.h\"\n",
        "int x;\r#include \"a.h\"\n",               /* a lone CR ends a line */
        "#import \"a.h\"\n",
        "#include_next <a.h>\n",
        "#embed \"a.bin\"\n",                       /* C23 */
        "?\?=include \"a.h\"\n",                     /* trigraphs: clang's OpenCL C */
        "#?\?/\ninclude \"a.h\"\n",
        "const char *s = \"/*\";\n#include \"a.h\"\n/* */\n",
        "const char *s = \"\\\"\";\n#include \"a.h\"\n",
        "char c = '\"';\n#include \"a.h\"\n",
        "const char *s = R\"x(a \" /* b)x\";\n#include \"a.h\"\n", /* raw string: gcc, C++ */
        "int x = 1'0'; /*\n#include \"a.h\"\n*/\n",                /* digit separators: C++ */
        "#if __has_include(\"a.h\")\n#endif\n",
        "#if defined __has_include_next && __has_include_next(<a.h>)\n#endif\n",
        "#if __has_embed(\"a.bin\")\n#endif\n",
        "\xef\xbb\xbf#include \"a.h\"\n",
    };
    static const char *const no[] = {
        "const char *s = \"#include \\\"a.h\\\"\";\n",
        "const char *s = \"__has_include\";\n",
        "// #include \"a.h\"\n",
        "/* #include \"a.h\" */\n",
        "// note \\\n#include \"a.h\"\n",          /* the splice continues the comment */
        "int include = 1, import = 2, my_include_path = 3, has_include = 4;\n",
        "int x; #include \"a.h\"\n",
        "\"a\" #include \"a.h\"\n",
        "##include \"a.h\"\n",
        "#pragma include \"a.h\"\n",
        "#define include 1\n",
        "#define S(x) #include\n",
        "char c = '\\''; // #include \"a.h\"\n",
        "/* unterminated #include \"a.h\"\n",
        "KA_KERNEL(k, KA_GLOBAL int *p) { p[0] = 1; }\n",
        "",
    };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!ka__src_has_include(yes[i])) fail_msg("missed: \"%s\"", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (ka__src_has_include(no[i])) fail_msg("false finding: \"%s\"", no[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(traits),
        cmocka_unit_test(count),
        cmocka_unit_test(signature),
        cmocka_unit_test(classes),
        cmocka_unit_test(workgroup),
        cmocka_unit_test(return_before_barrier),
        cmocka_unit_test(has_include),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
