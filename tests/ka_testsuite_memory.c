/* Ported KA testsets on memory: localmem.jl (local memory declared in the
 * kernel and passed at launch), private.jl (private memory across barriers,
 * private reductions) and unroll.jl. The mapping is listed in ka_testsuite.c. */
#include "ka_testsuite.h"

/* Kernels with local memory sized by the static work-group: only in static
 * variants, so the program's default build skips them. */
static const char *static_src =
    "#ifdef KA_STATIC_WG0\n"
    "KA_KERNEL(localmem, KA_GLOBAL long *A) {\n"
    "    const ka_size_t N = ka_group_linear_size();\n"
    "    ka_size_t I = ka_global_linear_id(), i = ka_local_linear_id();\n"
    "    KA_LOCAL long lmem[KA_STATIC_WG_LINEAR];\n"
    "    lmem[i] = (long)i + 1;\n"
    "    ka_barrier();\n"
    "    if (ka_in_range()) A[I] = lmem[N - 1 - i];\n"
    "}\n"
    "KA_KERNEL(localmem2, KA_GLOBAL long *A) {\n"
    "    const ka_size_t N2 = KA_STATIC_WG_LINEAR;\n"
    "    ka_size_t I = ka_global_linear_id(), i = ka_local_linear_id();\n"
    "    KA_LOCAL long lmem[KA_STATIC_WG_LINEAR];\n"
    "    lmem[i] = (long)i + 1 + 3;\n"
    "    for (int j = 1; j <= 2; j++) {\n"
    "        lmem[i] -= j;\n"
    "        ka_barrier();\n"
    "    }\n"
    "    if (ka_in_range()) A[I] = lmem[N2 - 1 - i];\n"
    "}\n"
    "KA_KERNEL(localmem_unsafe, KA_GLOBAL long *A) {\n"
    "    const ka_size_t N = KA_STATIC_WG_LINEAR;\n"
    "    ka_size_t gI = ka_group_linear_id(), i = ka_local_linear_id();\n"
    "    KA_LOCAL long lmem[KA_STATIC_WG_LINEAR];\n"
    "    lmem[i] = (long)i + 1;\n"
    "    ka_barrier();\n"
    "    ka_size_t I = gI * N + i;\n"
    "    if (I < ka_ndrange_linear()) A[I] = lmem[N - 1 - i];\n"
    "}\n"
    "#endif\n";

static const char *mem_src =
    /* localmem.jl's kernels with the local memory passed at launch */
    "KA_DEVICE_FN long mirror(KA_LOCAL_PTR(long) l, ka_size_t n, ka_size_t i) { return l[n - 1 - i]; }\n"
    "KA_KERNEL(localmem_dyn, KA_GLOBAL long *A, KA_LOCAL_ARG(long) lmem) {\n"
    "    ka_size_t N = ka_group_linear_size(), I = ka_global_linear_id(), i = ka_local_linear_id();\n"
    "    lmem[i] = (long)i + 1;\n"
    "    ka_barrier();\n"
    "    if (ka_in_range()) A[I] = mirror(lmem, N, i);\n"
    "}\n"
    "KA_KERNEL(localmem2_dyn, KA_GLOBAL long *A, KA_LOCAL_ARG(long) lmem) {\n"
    "    ka_size_t N = ka_group_linear_size(), I = ka_global_linear_id(), i = ka_local_linear_id();\n"
    "    lmem[i] = (long)i + 1 + 3;\n"
    "    for (int j = 1; j <= 2; j++) {\n"
    "        lmem[i] -= j;\n"
    "        ka_barrier();\n"
    "    }\n"
    "    if (ka_in_range()) A[I] = lmem[N - 1 - i];\n"
    "}\n"
    /* several local arrays, fixed and passed, of several types: none may alias */
    "KA_KERNEL(localmem_multi, KA_GLOBAL long *A, KA_LOCAL_ARG(float) fa, KA_LOCAL_ARG(long) la,\n"
    "          KA_LOCAL_ARG(long) lb) {\n"
    "    KA_LOCAL int fixed_a[16];\n"
    "    KA_LOCAL short fixed_b[16];\n"
    "    ka_size_t N = ka_group_linear_size(), I = ka_global_linear_id(), i = ka_local_linear_id();\n"
    "    fixed_a[i] = (int)i + 1;\n"
    "    fixed_b[i] = (short)(2 * (i + 1));\n"
    "    fa[i] = 0.5f * (float)(i + 1);\n"
    "    la[i] = 1000 * ((long)i + 1);\n"
    "    lb[i] = -((long)i + 1);\n"
    "    ka_barrier();\n"
    "    ka_size_t m = N - 1 - i, n = (i + 1) % N;\n"
    "    if (ka_in_range()) {\n"
    "        A[5 * I + 0] = fixed_a[m];\n"
    "        A[5 * I + 1] = fixed_b[n];\n"
    "        A[5 * I + 2] = (long)(4.0f * fa[m]);\n"
    "        A[5 * I + 3] = la[n];\n"
    "        A[5 * I + 4] = lb[m];\n"
    "    }\n"
    "}\n"
    /* private.jl */
    "KA_KERNEL(stmt_form, KA_GLOBAL long *out) {\n"
    "    ka_size_t bs = ka_group_size(0);\n"
    "    long s = (long)bs / 2;\n"
    "    ka_barrier();\n"
    "    if (ka_in_range()) out[ka_global_linear_id()] = s;\n"
    "}\n"
    "KA_KERNEL(private_kernel, KA_GLOBAL long *A) {\n"
    "    ka_size_t N = ka_group_linear_size(), I = ka_global_linear_id(), i = ka_local_linear_id();\n"
    "    long priv[1];\n"
    "    priv[0] = (long)(N - i);\n"
    "    ka_barrier();\n"
    "    if (ka_in_range()) A[I] = priv[0];\n"
    "}\n"
    "#define FL_N 64\n"
    "KA_KERNEL(forloop, KA_GLOBAL long *A) {\n"
    "    ka_size_t I = ka_global_linear_id(), i = ka_local_linear_id();\n"
    "    long priv[FL_N];\n"
    "    for (int j = 0; j < FL_N; j++) priv[j] = A[I + FL_N * j];\n"
    "    A[I] = 0;\n"
    "    ka_barrier();\n"
    "    for (int j = 0; j < FL_N; j++) {\n"
    "        ka_size_t k = (j + i) % FL_N;\n"
    "        A[k] += priv[j];\n"
    "        ka_barrier();\n"
    "    }\n"
    "}\n"
    "KA_KERNEL(reduce_private, KA_GLOBAL float *out, KA_CONST(float) A, uint rows, uint cols) {\n"
    "    if (!ka_in_range()) return;\n"
    "    ka_size_t I = ka_global_id(0);\n"
    "    float priv[1];\n"
    "    priv[0] = 0.0f;\n"
    "    for (uint k = 0; k < cols; k++) priv[0] += A[I + rows * k];\n"
    "    out[I] = priv[0];\n"
    "}\n"
    /* private arrays indexed at run time, kept across several barriers, while
     * local memory is rewritten between them */
    "KA_KERNEL(private_rotate, KA_GLOBAL long *A, KA_LOCAL_ARG(long) l) {\n"
    "    ka_size_t N = ka_group_linear_size(), I = ka_global_linear_id(), i = ka_local_linear_id();\n"
    "    long priv[8];\n"
    "    for (int j = 0; j < 8; j++) priv[j] = (long)I * 8 + j;\n"
    "    for (int r = 0; r < 8; r++) {\n"
    "        l[i] = priv[(r + i) % 8];\n"
    "        ka_barrier();\n"
    "        priv[(r + i) % 8] = l[(i + 1) % N];\n"
    "        ka_barrier();\n"
    "    }\n"
    "    long s = 0;\n"
    "    for (int j = 0; j < 8; j++) s = s * 3 + priv[j];\n"
    "    if (ka_in_range()) A[I] = s;\n"
    "}\n"
    ;

static const char *unroll_src =
    /* unroll.jl */
    "KA_KERNEL(kernel_unroll, KA_GLOBAL float *a) {\n"
    "    KA_UNROLL for (int i = 1; i <= 5; i++) a[i - 1] = (float)i;\n"
    "}\n"
    "#ifndef TS_UNROLL_N\n"
    "#define TS_UNROLL_N 5\n"
    "#endif\n"
    "KA_KERNEL(kernel_unroll_n, KA_GLOBAL float *a) {\n"
    "    const int M = TS_UNROLL_N + 5;\n"
    "    KA_UNROLL for (int i = 6; i <= M; i++) a[i - 6] = (float)i;\n"
    "    ka_barrier();\n"
    "}\n"
    "KA_KERNEL(kernel_unroll2, KA_GLOBAL float *A) {\n"
    "    float a[3] = {1, 2, 3}, b[3] = {3, 2, 1}, c[3][3];\n"
    "    ka_size_t I = ka_global_id(0);\n"
    "    for (int m = 1; m <= 3; m++) {\n"
    "        KA_UNROLL for (int j = 0; j < 3; j++) {\n"
    "            KA_UNROLL_N(3) for (int i = 0; i < 3; i++) c[0][j] = m * a[0] * b[j];\n"
    "        }\n"
    "        if (ka_in_range()) A[I] = c[0][0] + c[0][1] + c[0][2];\n"
    "        if (m % 2 == 0) ka_barrier();\n"
    "    }\n"
    "}\n";

static ka_program prog_mem, prog_static, prog_unroll;

static int group_setup(void **state) {
    (void)state;
    prog_mem = ts_build(mem_src);
    prog_static = ts_build(static_src);
    prog_unroll = ts_build(unroll_src);
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    ka_program_release(prog_mem);
    ka_program_release(prog_static);
    ka_program_release(prog_unroll);
    return 0;
}

/* KA's check: each block of 16 holds 16, 15, ..., 1. */
static void check_reversed(const int64_t *B, int n, int N, const char *what) {
    for (int i = 0; i < n; i++)
        if (B[i] != N - i % N) fail_msg("%s: B[%d] = %lld, expected %d", what, i, (long long)B[i], N - i % N);
}

/* localmem.jl: localmem, localmem2, localmem_unsafe_indicies with a static
 * work-group of 16 over 64 items; and over 60 (a partial last group). */
static void localmem_static(void **state) {
    (void)state;
    static const char *names[] = {"localmem", "localmem2", "localmem_unsafe"};
    ka_kernel_config c16 = {.workgroup = {16}};
    int64_t B[64];
    int64_t minus1 = -1;
    ka_buffer b = ts_buffer_fill(sizeof B, &minus1, sizeof minus1);
    ka_arg args[] = {ka_arg_buffer(b)};
    for (int k = 0; k < 3; k++) {
        ka_kernel kern = ts_kernel(prog_static, names[k], &c16);
        ts_check_local_mem(kern, 16 * sizeof(int64_t), names[k]);
        ka_range r = ts_range(1, 64, 0, 0, 0, 0, 0);
        ts_run(kern, &r, args, 1);
        ts_read(b, B, sizeof B);
        check_reversed(B, 64, 16, names[k]);
        KA_OK_OR_FAIL(ka_buffer_fill(ts.q, b, 0, &minus1, sizeof minus1, sizeof B, NULL));
        r.size[0] = 60;
        ts_run(kern, &r, args, 1);
        ts_read(b, B, sizeof B);
        check_reversed(B, 60, 16, names[k]);
        for (int i = 60; i < 64; i++) assert_int_equal(B[i], -1);
    }
    /* static 2-D group (4,4): linear local index over both dimensions */
    ka_kernel_config c44 = {.workgroup = {4, 4}};
    ka_kernel kern = ts_kernel(prog_static, "localmem", &c44);
    ka_range r = ts_range(2, 8, 8, 0, 0, 0, 0);
    ts_run(kern, &r, args, 1);
    ts_read(b, B, sizeof B);
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 8; i++) {
            int l = i % 4 + 4 * (j % 4);
            assert_int_equal(B[i + 8 * j], 16 - l);
        }
}

/* The same kernels with their local memory passed at launch (KA_LOCAL_ARG +
 * ka_arg_local), for dynamic work-groups of 16 and 32. */
static void localmem_dynamic(void **state) {
    (void)state;
    static const char *names[] = {"localmem_dyn", "localmem2_dyn"};
    int64_t B[64];
    ka_buffer b = ts_buffer(sizeof B, NULL);
    for (int k = 0; k < 2; k++)
        for (uint32_t N = 16; N <= 32; N *= 2) {
            ka_kernel kern = ts_kernel(prog_mem, names[k], NULL);
            ka_arg args[] = {ka_arg_buffer(b), ka_arg_local(N * sizeof(int64_t))};
            ka_range r = ts_range(1, 64, 0, 0, N, 0, 0);
            ts_run(kern, &r, args, 2);
            ts_read(b, B, sizeof B);
            check_reversed(B, 64, (int)N, names[k]);
        }
    /* a local argument where a buffer is expected, and the reverse, are errors */
    ka_kernel kern = ts_kernel(prog_mem, "localmem_dyn", NULL);
    ka_range r = ts_range(1, 64, 0, 0, 16, 0, 0);
    ka_arg swapped[] = {ka_arg_local(128), ka_arg_buffer(b)};
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(ts.q, kern, &r, swapped, 2, NULL));
}

/* Several local arrays in one kernel: two declared, three passed. */
static void localmem_multiple(void **state) {
    (void)state;
    ka_kernel kern = ts_kernel(prog_mem, "localmem_multi", NULL);
    int64_t *A = ts_alloc(5 * 48 * sizeof(int64_t));
    ka_buffer b = ts_buffer(5 * 48 * sizeof(int64_t), NULL);
    ka_arg args[] = {ka_arg_buffer(b), ka_arg_local(16 * sizeof(float)), ka_arg_local(16 * sizeof(int64_t)),
                     ka_arg_local(16 * sizeof(int64_t))};
    ka_range r = ts_range(1, 45, 0, 0, 16, 0, 0);
    ts_run(kern, &r, args, 4);
    ts_read(b, A, 5 * 48 * sizeof(int64_t));
    for (int I = 0; I < 48; I++) {
        int i = I % 16, m = 15 - i, n = (i + 1) % 16;
        const int64_t *a = A + 5 * I;
        if (I >= 45) {
            for (int f = 0; f < 5; f++) assert_int_equal(a[f], 0);
            continue;
        }
        assert_int_equal(a[0], m + 1);
        assert_int_equal(a[1], 2 * (n + 1));
        assert_int_equal(a[2], 2 * (m + 1));
        assert_int_equal(a[3], 1000 * (n + 1));
        assert_int_equal(a[4], -(m + 1));
    }
}

/* private.jl: stmt_form; private (kept across a barrier); typetest has no
 * counterpart (C types are static). */
static void private_across_barrier(void **state) {
    (void)state;
    int64_t A[64];
    ka_buffer b = ts_buffer(sizeof A, NULL);
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_range r = ts_range(1, 16, 0, 0, 16, 0, 0);
    ts_run(ts_kernel(prog_mem, "stmt_form", NULL), &r, args, 1);
    ts_read(b, A, 16 * sizeof *A);
    for (int i = 0; i < 16; i++) assert_int_equal(A[i], 8);
    r.size[0] = 64;
    ts_run(ts_kernel(prog_mem, "private_kernel", NULL), &r, args, 1);
    ts_read(b, A, sizeof A);
    check_reversed(A, 64, 16, "private");
    /* run-time indexed private arrays across 16 barriers */
    ka_kernel rot = ts_kernel(prog_mem, "private_rotate", NULL);
    ka_arg a2[] = {ka_arg_buffer(b), ka_arg_local(8 * sizeof(int64_t))};
    r = ts_range(1, 20, 0, 0, 8, 0, 0);
    ts_run(rot, &r, a2, 2);
    ts_read(b, A, 20 * sizeof *A);
    for (int I = 0; I < 20; I++) {
        /* the same computation on the host, for the items of I's group */
        int g = I / 8;
        int64_t priv[8][8];
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 8; j++) priv[i][j] = (int64_t)(g * 8 + i) * 8 + j;
        for (int rr = 0; rr < 8; rr++) {
            int64_t l[8];
            for (int i = 0; i < 8; i++) l[i] = priv[i][(rr + i) % 8];
            for (int i = 0; i < 8; i++) priv[i][(rr + i) % 8] = l[(i + 1) % 8];
        }
        int64_t s = 0;
        for (int j = 0; j < 8; j++) s = s * 3 + priv[I % 8][j];
        assert_int_equal(A[I], s);
    }
}

/* private.jl's forloop: a 64x64 array of ones, each row kept in private
 * memory while column 1 is summed across 64 barriers. */
static void private_forloop(void **state) {
    (void)state;
    enum { N = 64 };
    int64_t *A = ts_alloc(N * N * sizeof(int64_t));
    for (int i = 0; i < N * N; i++) A[i] = 1;
    ka_buffer b = ts_buffer(N * N * sizeof(int64_t), A);
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_range r = ts_range(1, N, 0, 0, N, 0, 0);
    ts_run(ts_kernel(prog_mem, "forloop", NULL), &r, args, 1);
    ts_read(b, A, N * N * sizeof(int64_t));
    for (int i = 0; i < N; i++) assert_int_equal(A[i], N);
    for (int i = N; i < N * N; i++) assert_int_equal(A[i], 1);
}

/* private.jl's reduce_private: out[I] = sum over k of A[I, k], work-group 8. */
static void private_reduce(void **state) {
    (void)state;
    enum { R = 64, C = 3 };
    float A[R * C], out[R];
    for (int i = 0; i < R * C; i++) A[i] = 1.0f;
    ka_buffer ab = ts_buffer(sizeof A, A), ob = ts_buffer(sizeof out, NULL);
    ka_kernel k = ts_kernel(prog_mem, "reduce_private", NULL);
    ka_arg args[] = {ka_arg_buffer(ob), ka_arg_buffer(ab), ka_arg_u32(R), ka_arg_u32(C)};
    ka_range r = ts_range(1, R, 0, 0, 8, 0, 0);
    ts_run(k, &r, args, 4);
    ts_read(ob, out, sizeof out);
    for (int i = 0; i < R; i++) assert_true(out[i] == 3.0f);
    /* distinct values: exact sums of small integers */
    for (int c = 0; c < C; c++)
        for (int i = 0; i < R; i++) A[i + R * c] = (float)(i * (c + 1));
    KA_OK_OR_FAIL(ka_buffer_write(ts.q, ab, 0, A, sizeof A));
    ts_run(k, &r, args, 4);
    ts_read(ob, out, sizeof out);
    for (int i = 0; i < R; i++) assert_true(out[i] == (float)(6 * i));
}

/* unroll.jl: kernel_unroll! (1..5), kernel_unroll!(a, Val(N)) with N a
 * compile-time define, and the nested unroll with a conditional barrier. */
static void unroll(void **state) {
    (void)state;
    float a[5];
    ka_buffer b = ts_buffer(sizeof a, NULL);
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_range r = ts_range(1, 1, 0, 0, 1, 0, 0);
    ts_run(ts_kernel(prog_unroll, "kernel_unroll", NULL), &r, args, 1);
    ts_read(b, a, sizeof a);
    for (int i = 0; i < 5; i++) assert_true(a[i] == (float)(i + 1));
    ka_kernel_config n5 = {.defines = "-DTS_UNROLL_N=5"}, n3 = {.defines = "-DTS_UNROLL_N=3"};
    ts_run(ts_kernel(prog_unroll, "kernel_unroll_n", &n5), &r, args, 1);
    ts_read(b, a, sizeof a);
    for (int i = 0; i < 5; i++) assert_true(a[i] == (float)(i + 6));
    KA_OK_OR_FAIL(ka_buffer_fill(ts.q, b, 0, &(uint8_t){0}, 1, sizeof a, NULL));
    ts_run(ts_kernel(prog_unroll, "kernel_unroll_n", &n3), &r, args, 1);
    ts_read(b, a, sizeof a);
    for (int i = 0; i < 5; i++) assert_true(a[i] == (i < 3 ? (float)(i + 6) : 0.0f));
    ts_run(ts_kernel(prog_unroll, "kernel_unroll2", NULL), &r, args, 1);
    ts_read(b, a, sizeof a);
    assert_true(a[0] == 3.0f * (3 + 2 + 1)); /* m = 3: 3 * a[1] * (b[1] + b[2] + b[3]) */
    /* over a padded group too */
    float A[16];
    ka_buffer b2 = ts_buffer(sizeof A, NULL);
    ka_arg a2[] = {ka_arg_buffer(b2)};
    r = ts_range(1, 13, 0, 0, 8, 0, 0);
    ts_run(ts_kernel(prog_unroll, "kernel_unroll2", NULL), &r, a2, 1);
    ts_read(b2, A, sizeof A);
    for (int i = 0; i < 16; i++) assert_true(A[i] == (i < 13 ? 18.0f : 0.0f));
}

int ts_group_memory(void) {
    const struct CMUnitTest tests[] = {
        TS_TEST(localmem_static),       TS_TEST(localmem_dynamic), TS_TEST(localmem_multiple),
        TS_TEST(private_across_barrier), TS_TEST(private_forloop), TS_TEST(private_reduce),
        TS_TEST(unroll),
    };
    return cmocka_run_group_tests_name("ka_testsuite_memory", tests, group_setup, group_teardown);
}
