/* Ported KA testsets: convert.jl, specialfunctions.jl and compiler.jl (math),
 * copyto.jl/async_copy.jl, print_test.jl, events.jl, reflection.jl, test.jl
 * Const and kernel_val!, examples.jl (matmul, tiled matmul, transpose,
 * memcopy); and what libka adds: static and dynamic variants side by side,
 * the compiled-kernel cache's build counts, launches from many threads. The
 * mapping is listed in ka_testsuite.c. */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include "ka_testsuite.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* ---- conversions (convert.jl) --------------------------------------------- */
/* ceil, floor, round (nearest even), trunc to each integer type: the dialect's
 * ka_convert_<T>_<rtp|rtn|rte|rtz>, saturating, NaN to 0. One row of n per
 * (type, mode), stored as the 64-bit pattern of the result. */
#define CONV_SRC(T)                                                                     \
    "KA_KERNEL(conv_from_" #T ", KA_GLOBAL long *out, KA_CONST(" #T ") A, uint n) {\n"    \
    "    if (!ka_in_range()) return;\n"                                                 \
    "    long tid = (long)(int)ka_global_linear_id(); /* Int64(Int32(tid)) */\n"        \
    "    " #T " x = A[tid];\n"                                                          \
    "    uint k = 0;\n"                                                                 \
    "    CONV_ROWS(char) CONV_ROWS(short) CONV_ROWS(int) CONV_ROWS(long)\n"             \
    "    CONV_ROWS(uchar) CONV_ROWS(ushort) CONV_ROWS(uint) CONV_ROWS(ulong)\n"         \
    "}\n"

static const char *misc_src =
    "#define CONV_ROWS(T) \\\n"
    "    out[(k++) * n + tid] = (long)ka_convert_##T##_rtp(x); \\\n"
    "    out[(k++) * n + tid] = (long)ka_convert_##T##_rtn(x); \\\n"
    "    out[(k++) * n + tid] = (long)ka_convert_##T##_rte(x); \\\n"
    "    out[(k++) * n + tid] = (long)ka_convert_##T##_rtz(x);\n"
    CONV_SRC(float)
    "#ifdef KA_HAS_DOUBLE\n"
    CONV_SRC(double)
    "#endif\n"
    /* specialfunctions.jl */
    "KA_KERNEL(special_functions, KA_GLOBAL float *out, KA_CONST(float) x, uint n) {\n"
    "    if (!ka_in_range()) return;\n"
    "    uint i = ka_global_id(0);\n"
    "    out[i] = tgamma(x[i]);\n"
    "    out[n + i] = erf(x[i]);\n"
    "    out[2 * n + i] = erfc(x[i]);\n"
    "}\n"
    /* print_test.jl */
    "KA_KERNEL_NOARGS(kernel_print) {\n"
    "    KA_PRINTF(\"Hello from thread %d!\\n\", (int)ka_global_id(0));\n"
    "}\n"
    "KA_KERNEL(kernel_print_values, KA_GLOBAL int *unused) {\n"
    "    if (ka_global_id(0) == 0) KA_PRINTF(\"values %d %u %ld %.2f %s|\\n\", -7, 7u, -123456789012L, 2.5f, \"str\");\n"
    "}\n"
    /* events.jl: order-dependent steps on an in-order queue */
    "KA_KERNEL(step_kernel, KA_GLOBAL long *A) {\n"
    "    if (ka_in_range()) A[ka_global_id(0)] = 2 * A[ka_global_id(0)] + 1;\n"
    "}\n"
    /* examples/matmul.jl: C (N x M) = A (N x R) * B (R x M), row-major, the
     * global index (j, i): dimension 0 runs along a row */
    "KA_KERNEL(matmul, KA_GLOBAL float *Cm, KA_CONST(float) Am, KA_CONST(float) Bm, uint N, uint R, uint M) {\n"
    "    if (!ka_in_range()) return;\n"
    "    ka_size_t j = ka_global_id(0), i = ka_global_id(1);\n"
    "    float s = 0.0f;\n"
    "    for (uint k = 0; k < R; k++) s += Am[i * R + k] * Bm[k * M + j];\n"
    "    Cm[i * M + j] = s;\n"
    "}\n"
    /* examples/naive_transpose.jl */
    "KA_KERNEL(naive_transpose, KA_GLOBAL float *b, KA_CONST(float) a, uint rows, uint cols) {\n"
    "    if (!ka_in_range()) return;\n"
    "    ka_size_t j = ka_global_id(0), i = ka_global_id(1);\n"
    "    b[j * rows + i] = a[i * cols + j];\n"
    "}\n"
    /* examples/memcopy.jl and memcopy_static.jl */
    "KA_KERNEL(copy_kernel, KA_GLOBAL float *A, KA_CONST(float) B) {\n"
    "    if (ka_in_range()) A[ka_global_linear_id()] = B[ka_global_linear_id()];\n"
    "}\n"
    ;

/* Kernels fetched with static configurations or per-variant defines: a small
 * program, since every variant is one more build of its whole source.
 * examples/performant_matmul.jl: 16x16 tiles in two local arrays (+1 column
 * against bank conflicts), the global index made from group and local ids. */
static const char *tiled_src =
    /* test.jl's constarg: a read-only, non-aliased argument */
    "KA_KERNEL(constarg, KA_GLOBAL float *A, KA_CONST(float) B) {\n"
    "    if (ka_in_range()) A[ka_global_linear_id()] = B[ka_global_linear_id()];\n"
    "}\n"
    /* test.jl's kernel_val!: a compile-time value, here a per-variant define */
    "#ifndef TS_M\n"
    "#define TS_M 0\n"
    "#endif\n"
    "KA_KERNEL(kernel_val, KA_GLOBAL long *a) {\n"
    "    if (ka_in_range()) a[ka_global_linear_id()] = TS_M;\n"
    "}\n"
    /* reflection.jl's mul2, add3, addi */
    "KA_KERNEL(mul2, KA_GLOBAL float *A) {\n"
    "    if (ka_in_range()) A[ka_global_linear_id()] *= 2.0f;\n"
    "}\n"
    "KA_KERNEL(add3, KA_GLOBAL float *A, KA_CONST(float) B, KA_CONST(float) C) {\n"
    "    if (ka_in_range()) A[ka_global_linear_id()] = B[ka_global_linear_id()] + C[ka_global_linear_id()];\n"
    "}\n"
    "KA_KERNEL(addi, KA_GLOBAL float *A, KA_CONST(float) C, int i) {\n"
    "    if (ka_in_range()) A[ka_global_linear_id()] = (float)i + C[ka_global_linear_id()];\n"
    "}\n"
    "#ifdef KA_STATIC_WG0\n"
    "#define TILE_DIM KA_STATIC_WG0\n"
    "#define BANK 1\n"
    "KA_KERNEL(coalesced_matmul, KA_GLOBAL float *output, KA_CONST(float) input1, KA_CONST(float) input2,\n"
    "          uint N, uint R, uint M) {\n"
    "    ka_size_t gi = ka_group_id(1), gj = ka_group_id(0), i = ka_local_id(1), j = ka_local_id(0);\n"
    "    KA_LOCAL float tile1[TILE_DIM][TILE_DIM + BANK];\n"
    "    KA_LOCAL float tile2[TILE_DIM][TILE_DIM + BANK];\n"
    "    float outval[1] = {-0.0f};\n"
    "    const uint NUM_TILES = (R + TILE_DIM - 1) / TILE_DIM;\n"
    "    for (uint t = 0; t < NUM_TILES; t++) {\n"
    "        ka_size_t I = gi * TILE_DIM + i, J = gj * TILE_DIM + j;\n"
    "        tile1[i][j] = (I < N && t * TILE_DIM + j < R) ? input1[I * R + t * TILE_DIM + j] : 0.0f;\n"
    "        tile2[i][j] = (t * TILE_DIM + i < R && J < M) ? input2[(t * TILE_DIM + i) * M + J] : 0.0f;\n"
    "        ka_barrier();\n"
    "        float out = 0.0f;\n"
    "        for (uint k = 0; k < TILE_DIM; k++) out += tile1[i][k] * tile2[k][j];\n"
    "        outval[0] += out;\n"
    "        ka_barrier();\n"
    "    }\n"
    "    ka_size_t I = gi * TILE_DIM + i, J = gj * TILE_DIM + j;\n"
    "    if (I < N && J < M) output[I * M + J] = outval[0];\n"
    "}\n"
    "#endif\n"
    "KA_KERNEL(copy_static, KA_GLOBAL float *A, KA_CONST(float) B) {\n"
    "    if (ka_in_range()) A[ka_global_linear_id()] = B[ka_global_linear_id()] + (float)ka_group_size(0);\n"
    "}\n";

/* Math (compiler.jl and the usual float functions): one list, stringified for
 * the device and evaluated on the host in double. a is in (0.1, 5), u = a/8,
 * p = a + 1; EXP10, RSQRT, POWN name functions the host spells differently. */
#define MATH_LIST(X)                                                                              \
    X(sqrt, sqrt(a)) X(cbrt, cbrt(a)) X(exp, exp(a)) X(exp2, exp2(a)) X(exp10, EXP10(a))          \
    X(expm1, expm1(u)) X(log, log(a)) X(log2, log2(a)) X(log10, log10(a)) X(log1p, log1p(u))       \
    X(sin, sin(a)) X(cos, cos(a)) X(tan, tan(u)) X(asin, asin(u)) X(acos, acos(u)) X(atan, atan(a)) \
    X(sinh, sinh(a)) X(cosh, cosh(a)) X(tanh, tanh(a)) X(asinh, asinh(a)) X(acosh, acosh(p))       \
    X(atanh, atanh(u)) X(erf, erf(a - 2.5f)) X(erfc, erfc(a - 2.5f)) X(tgamma, tgamma(a))          \
    X(fabs, fabs(a - 2.5f)) X(floor, floor(a - 2.5f)) X(ceil, ceil(a - 2.5f))                      \
    X(round, round(a - 2.5f)) X(trunc, trunc(a - 2.5f)) X(rint, rint(a - 2.5f)) X(rsqrt, RSQRT(a)) \
    X(pow, pow(a, u * 3)) X(pown, POWN(a, 3)) X(square, a * a) X(literal_pow, (float)(1 << 11))    \
    X(fmin, fmin(a, p - 1.5f)) X(fmax, fmax(a, p - 1.5f)) X(fmod, fmod(a * 4, p))                  \
    X(hypot, hypot(a, u)) X(atan2, atan2(u - 0.25f, a - 2.5f)) X(copysign, copysign(a, u - 0.25f)) \
    X(fma, fma(a, u, p)) X(fdim, fdim(a, p - 1.5f))
#define MATH_DEV(name, expr) "    out[(k++) * n + i] = " #expr ";\n"
#define MATH_COUNT(name, expr) +1
enum { NMATH = 0 MATH_LIST(MATH_COUNT) };
#define MATH_BODY MATH_LIST(MATH_DEV)
#define MATH_KERNEL(T)                                                                  \
    "KA_KERNEL(math_" #T ", KA_GLOBAL " #T " *out, KA_CONST(" #T ") x, uint n) {\n"     \
    "    if (!ka_in_range()) return;\n"                                                 \
    "    uint i = ka_global_id(0), k = 0;\n"                                            \
    "    " #T " a = x[i], u = a * 0.125f, p = a + 1.0f;\n" MATH_BODY "}\n"
static const char *math_src =
    "#define EXP10 exp10\n#define RSQRT rsqrt\n#define POWN pown\n"
    MATH_KERNEL(float)
    "#ifdef KA_HAS_DOUBLE\n" MATH_KERNEL(double) "#endif\n";

#define EXP10(x) pow(10.0, (x))
#define RSQRT(x) (1.0 / sqrt(x))
#define POWN(x, n) pow((x), (n))
#define MATH_HOST(name, expr) if (f == k++) return (expr);
static const char *math_names[] = {
#define MATH_NAME(name, expr) #name,
    MATH_LIST(MATH_NAME)
};
/* The host reference, with a, u, p of the device's type (float arithmetic
 * in the arguments as on the device, functions in double). */
static double math_host_f(int f, float a) {
    float u = a * 0.125f, p = a + 1.0f;
    int k = 0;
    MATH_LIST(MATH_HOST)
    return NAN;
}
static double math_host_d(int f, double a) {
    double u = a * 0.125f, p = a + 1.0f;
    int k = 0;
    MATH_LIST(MATH_HOST)
    return NAN;
}

static ka_program prog_misc, prog_tiled, prog_math;

static int group_setup(void **state) {
    (void)state;
    prog_misc = ts_build(misc_src);
    prog_tiled = ts_build(tiled_src);
    prog_math = ts_build(math_src);
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    ka_program_release(prog_misc);
    ka_program_release(prog_tiled);
    ka_program_release(prog_math);
    return 0;
}

/* ---- conversions ---------------------------------------------------------- */
static const struct { int64_t min; uint64_t max; const char *name; } conv_types[8] = {
    {INT8_MIN, INT8_MAX, "char"},   {INT16_MIN, INT16_MAX, "short"},   {INT32_MIN, INT32_MAX, "int"},
    {INT64_MIN, INT64_MAX, "long"}, {0, UINT8_MAX, "uchar"},           {0, UINT16_MAX, "ushort"},
    {0, UINT32_MAX, "uint"},        {0, UINT64_MAX, "ulong"},
};
static const char *conv_modes[4] = {"rtp (ceil)", "rtn (floor)", "rte (round)", "rtz (trunc)"};

/* The expected 64-bit pattern of ka_convert_<type>_<mode>(x). */
static int64_t conv_expect(double x, int t, int m) {
    if (isnan(x)) return 0;
    double r = m == 0 ? ceil(x) : m == 1 ? floor(x) : m == 2 ? nearbyint(x) : trunc(x);
    if (r <= (double)conv_types[t].min) return conv_types[t].min;
    if (r >= (double)conv_types[t].max) return (int64_t)conv_types[t].max; /* ulong max: the pattern -1 */
    return t == 7 ? (int64_t)(uint64_t)r : (int64_t)r;
}

static void convert_check(const char *kname, const double *xs, int n, bool dbl) {
    ka_kernel k = ts_kernel(prog_misc, kname, NULL);
    size_t esz = dbl ? sizeof(double) : sizeof(float);
    uint8_t *in = ts_alloc((size_t)n * esz);
    for (int i = 0; i < n; i++) {
        if (dbl) ((double *)in)[i] = xs[i];
        else ((float *)in)[i] = (float)xs[i];
    }
    ka_buffer ib = ts_buffer((size_t)n * esz, in), ob = ts_buffer((size_t)32 * n * 8, NULL);
    ka_arg args[] = {ka_arg_buffer(ob), ka_arg_buffer(ib), ka_arg_u32((uint32_t)n)};
    ka_range r = ts_range(1, (uint64_t)n, 0, 0, 4, 0, 0); /* KA: workgroup 4 */
    ts_run(k, &r, args, 3);
    int64_t *out = ts_alloc((size_t)32 * n * 8);
    ts_read(ob, out, (size_t)32 * n * 8);
    for (int t = 0; t < 8; t++)
        for (int m = 0; m < 4; m++)
            for (int i = 0; i < n; i++) {
                double x = dbl ? xs[i] : (double)(float)xs[i];
                int64_t want = conv_expect(x, t, m), got = out[(t * 4 + m) * n + i];
                if (got != want)
                    fail_msg("%s: %s %s of %.17g: %lld, expected %lld", kname, conv_types[t].name, conv_modes[m], x,
                             (long long)got, (long long)want);
            }
}

/* convert.jl: 32 values in [0, 3), plus ties and negatives. */
static void convert_rounding(void **state) {
    (void)state;
    double xs[64];
    int n = 0;
    unsigned seed = 42;
    for (int i = 0; i < 32; i++) seed = seed * 1103515245u + 12345u, xs[n++] = 3.0 * ((seed >> 8) & 0xffff) / 65536.0;
    static const double extra[] = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.0, 0.0, -2.75, -0.25, 0.49999997, 0.99999994,
                                   -1e-30, 1e-30, 100.5, -100.5, 101.5, 2.0, -3.0, 7.25};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) xs[n++] = extra[i];
    convert_check("conv_from_float", xs, n, false);
    if (ts.info->has_double) convert_check("conv_from_double", xs, n, true);
}

/* Saturation at each type's limits, infinities, NaN. */
static void convert_saturation(void **state) {
    (void)state;
    static const double xs[] = {127.5,  128.0,         255.5,       256.0,     -128.5,    -129.0,     32767.5,
                                65535.5, 65536.0,      -32768.5,    2147483520.0, 3e9,    4294967296.0, -2147483904.0,
                                1e10,   -1e10,         1e20,        -1e20,     INFINITY,  -INFINITY,  NAN,
                                9.2233720368547758e18, 1.8446744073709552e19, -9.2233720368547758e18, 0.0, 1.0};
    int n = (int)(sizeof xs / sizeof xs[0]);
    convert_check("conv_from_float", xs, n, false);
    if (ts.info->has_double) {
        static const double xd[] = {2147483647.5, 2147483646.5, -2147483648.5, 4294967295.5, 9007199254740993.0,
                                    1e300,        -1e300,       4503599627370497.5, NAN};
        convert_check("conv_from_double", xd, (int)(sizeof xd / sizeof xd[0]), true);
    }
}

/* ---- math ----------------------------------------------------------------- */
/* specialfunctions.jl: gamma, erf, erfc at KA's points. */
static void special_functions(void **state) {
    (void)state;
    static const float xs[] = {1.0f, 2.0f, 3.0f, 5.5f, -1.0f, -0.5f, 0.0f, 1.0e-3f};
    enum { N = sizeof xs / sizeof xs[0] };
    float out[3 * N];
    ka_buffer xb = ts_buffer(sizeof xs, xs), ob = ts_buffer(sizeof out, NULL);
    ka_arg args[] = {ka_arg_buffer(ob), ka_arg_buffer(xb), ka_arg_u32(N)};
    ka_range r = ts_range(1, N, 0, 0, 0, 0, 0);
    ts_run(ts_kernel(prog_misc, "special_functions", NULL), &r, args, 3);
    ts_read(ob, out, sizeof out);
    for (int i = 0; i < N; i++) {
        double ref[3] = {tgamma(xs[i]), erf(xs[i]), erfc(xs[i])};
        static const char *fn[3] = {"gamma", "erf", "erfc"};
        for (int f = 0; f < 3; f++) {
            if (f == 0 && xs[i] <= 0.0f) continue; /* KA checks gamma at 1, 2, 3, 5.5 */
            if (fabs(out[f * N + i] - ref[f]) > 1e-5 * fabs(ref[f]) + 1e-7)
                fail_msg("%s(%g) = %.9g, expected %.9g", fn[f], xs[i], out[f * N + i], ref[f]);
        }
    }
}

static void math_check(bool dbl) {
    enum { N = 64 };
    const char *kname = dbl ? "math_double" : "math_float";
    ka_kernel k = ts_kernel(prog_math, kname, NULL);
    size_t esz = dbl ? 8 : 4;
    uint8_t *in = ts_alloc(N * esz), *out = ts_alloc((size_t)NMATH * N * esz);
    unsigned seed = 3;
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        double a = i < 8 ? 1.0 + 0.5 * i : 0.1 + 4.9 * ((seed >> 8) & 0xffff) / 65536.0; /* ties for round/rint */
        if (dbl) ((double *)in)[i] = a;
        else ((float *)in)[i] = (float)a;
    }
    ka_buffer ib = ts_buffer(N * esz, in), ob = ts_buffer((size_t)NMATH * N * esz, NULL);
    ka_arg args[] = {ka_arg_buffer(ob), ka_arg_buffer(ib), ka_arg_u32(N)};
    ka_range r = ts_range(1, N, 0, 0, 0, 0, 0);
    ts_run(k, &r, args, 3);
    ts_read(ob, out, (size_t)NMATH * N * esz);
    /* OpenCL's limits: 16 ulp at most for these functions; exact for the rest */
    double rel = dbl ? 1e-13 : 4e-6, abs_tol = dbl ? 1e-15 : 4e-7;
    for (int f = 0; f < NMATH; f++)
        for (int i = 0; i < N; i++) {
            double got = dbl ? ((double *)out)[f * N + i] : ((float *)out)[f * N + i];
            double ref = dbl ? math_host_d(f, ((double *)in)[i]) : math_host_f(f, ((float *)in)[i]);
            double a = dbl ? ((double *)in)[i] : ((float *)in)[i];
            if (!(fabs(got - ref) <= rel * fabs(ref) + abs_tol))
                fail_msg("%s: %s at a = %.9g: %.17g, expected %.17g", kname, math_names[f], a, got, ref);
        }
}

static void math_functions(void **state) {
    (void)state;
    math_check(false);
    if (ts.info->has_double) math_check(true);
}

/* ---- copies (copyto.jl, async_copy.jl) -------------------------------------- */
static void copies(void **state) {
    (void)state;
    enum { M = 1024 };
    double *hA = ts_alloc(M * 8), *hB = ts_alloc(M * 8), *a = ts_alloc(M * 8), *back = ts_alloc(M * 8);
    unsigned seed = 11;
    for (int i = 0; i < M; i++) {
        seed = seed * 1103515245u + 12345u, hA[i] = (seed >> 8) / 16777216.0;
        seed = seed * 1103515245u + 12345u, hB[i] = (seed >> 8) / 16777216.0;
    }
    ka_buffer A = ts_buffer(M * 8, hA), B = ts_buffer(M * 8, hB);
    /* copyto!(a, B); copyto!(A, a) */
    ts_read(B, a, M * 8);
    KA_OK_OR_FAIL(ka_buffer_write(ts.q, A, 0, a, M * 8));
    ts_read(A, back, M * 8);
    assert_memory_equal(back, hB, M * 8);
    assert_memory_equal(a, hB, M * 8);
    /* async: device to device, then to the host, ordered by the queue */
    ka_buffer C = ts_buffer(M * 8, NULL);
    ka_event ev[3];
    KA_OK_OR_FAIL(ka_buffer_write_async(ts.q, A, 0, hA, M * 8, &ev[0]));
    KA_OK_OR_FAIL(ka_buffer_copy(ts.q, C, 0, A, 0, M * 8, &ev[1]));
    KA_OK_OR_FAIL(ka_buffer_read_async(ts.q, back, C, 0, M * 8, &ev[2]));
    KA_OK_OR_FAIL(ka_wait_all(ev, 3, KA_WAIT_FOREVER));
    for (int i = 0; i < 3; i++) KA_OK_OR_FAIL(ka_event_release(ev[i]));
    assert_memory_equal(back, hA, M * 8);
    /* a copy kernel with a KA_CONST source, dynamic and static (memcopy.jl and
     * memcopy_static.jl) */
    float *f = ts_alloc(M * 4), *g = ts_alloc(M * 4);
    for (int i = 0; i < M; i++) f[i] = (float)i * 0.5f - 100.0f;
    ka_buffer F = ts_buffer(M * 4, f), G = ts_buffer(M * 4, NULL);
    ka_arg args[] = {ka_arg_buffer(G), ka_arg_buffer(F)};
    ka_range r = ts_range(1, M - 3, 0, 0, 0, 0, 0);
    ts_run(ts_kernel(prog_tiled, "constarg", NULL), &r, args, 2);
    ts_read(G, g, M * 4);
    for (int i = 0; i < M; i++) assert_true(g[i] == (i < M - 3 ? f[i] : 0.0f));
}

static void example_memcopy(void **state) {
    (void)state;
    enum { M = 1000 };
    float *f = ts_alloc(M * 4), *g = ts_alloc(M * 4);
    for (int i = 0; i < M; i++) f[i] = (float)(i * 3 % 101);
    ka_buffer F = ts_buffer(M * 4, f), G = ts_buffer(M * 4, NULL);
    ka_arg args[] = {ka_arg_buffer(G), ka_arg_buffer(F)};
    ka_range r = ts_range(1, M, 0, 0, 0, 0, 0);
    ts_run(ts_kernel(prog_misc, "copy_kernel", NULL), &r, args, 2);
    ts_read(G, g, M * 4);
    assert_memory_equal(g, f, M * 4);
    /* memcopy_static: work-group 32 and ndrange compiled in */
    ka_kernel_config cfg = {.workgroup = {32}, .ndrange = {M}};
    ts_run(ts_kernel(prog_tiled, "copy_static", &cfg), &r, args, 2);
    ts_read(G, g, M * 4);
    for (int i = 0; i < M; i++) assert_true(g[i] == f[i] + 32.0f);
}

/* ---- printf (print_test.jl) ------------------------------------------------- */
/* Runs the launches with the process's stdout redirected to a file; returns
 * what was printed (owned by the test). */
static char *capture_stdout(ka_kernel k, const ka_range *r, const ka_arg *args, uint32_t nargs) {
    fflush(stdout);
    FILE *tmp = tmpfile();
    if (!tmp) fail_msg("tmpfile failed");
    int saved = dup(1);
    if (saved < 0 || dup2(fileno(tmp), 1) < 0) fail_msg("dup2 failed");
    ka_status s = ka_launch(ts.q, k, r, args, nargs, NULL);
    ka_status f = ka_queue_finish(ts.q);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    if (s != KA_OK || f != KA_OK) fail_msg("launch: %s, finish: %s: %s", ka_status_name(s), ka_status_name(f), ka_last_error());
    long n = ftell(tmp);
    if (n < 0) n = 0;
    char *text = ts_alloc((size_t)n + 1);
    rewind(tmp);
    size_t got = fread(text, 1, (size_t)n, tmp);
    text[got] = 0;
    fclose(tmp);
    return text;
}

static void printf_from_kernels(void **state) {
    (void)state;
    if (!ts.info->has_printf) TS_SKIP("%s has no printf in kernels", ts.info->name);
    ka_range r = ts_range(1, 4, 0, 0, 4, 0, 0);
    char *text = capture_stdout(ts_kernel(prog_misc, "kernel_print", NULL), &r, NULL, 0);
    for (int i = 0; i < 4; i++) {
        char line[64];
        snprintf(line, sizeof line, "Hello from thread %d!\n", i);
        char *at = strstr(text, line);
        if (!at) fail_msg("missing \"Hello from thread %d!\" in:\n%s", i, text);
        if (strstr(at + 1, line)) fail_msg("\"Hello from thread %d!\" printed twice", i);
    }
    assert_int_equal(strlen(text), 4 * strlen("Hello from thread 0!\n"));
    ka_buffer b = ts_buffer(4, NULL);
    ka_arg args[] = {ka_arg_buffer(b)};
    text = capture_stdout(ts_kernel(prog_misc, "kernel_print_values", NULL), &r, args, 1);
    assert_string_equal(text, "values -7 7 -123456789012 2.50 str|\n");
}

/* ---- events (events.jl; "CPU synchronization") ------------------------------ */
static void events_and_ordering(void **state) {
    (void)state;
    enum { N = 100, STEPS = 20 };
    int64_t A[N];
    ka_buffer b = ts_buffer(sizeof A, NULL);
    ka_kernel k = ts_kernel(prog_misc, "step_kernel", NULL);
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_range r = ts_range(1, N, 0, 0, 0, 0, 0);
    ka_event ev[STEPS];
    for (int s = 0; s < STEPS; s++) KA_OK_OR_FAIL(ka_launch(ts.q, k, &r, args, 1, &ev[s]));
    KA_OK_OR_FAIL(ka_event_wait(ev[STEPS - 1], KA_WAIT_FOREVER));
    for (int s = 0; s < STEPS; s++) KA_OK_OR_FAIL(ka_event_wait(ev[s], 0)); /* earlier ones done: in order */
    for (int s = 0; s < STEPS; s++) KA_OK_OR_FAIL(ka_event_release(ev[s]));
    ts_read(b, A, sizeof A);
    for (int i = 0; i < N; i++) assert_int_equal(A[i], ((int64_t)1 << STEPS) - 1);
    /* launches without events, then synchronize */
    for (int s = 0; s < STEPS; s++) KA_OK_OR_FAIL(ka_launch(ts.q, k, &r, args, 1, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(ts.q));
    ts_read(b, A, sizeof A);
    for (int i = 0; i < N; i++) assert_int_equal(A[i], ((int64_t)1 << (2 * STEPS)) - 1);
    /* wait_all over a mix of launches and copies */
    ka_buffer c = ts_buffer(sizeof A, NULL);
    ka_event e2[3];
    KA_OK_OR_FAIL(ka_launch(ts.q, k, &r, args, 1, &e2[0]));
    KA_OK_OR_FAIL(ka_buffer_copy(ts.q, c, 0, b, 0, sizeof A, &e2[1]));
    ka_arg cargs[] = {ka_arg_buffer(c)};
    KA_OK_OR_FAIL(ka_launch(ts.q, k, &r, cargs, 1, &e2[2]));
    KA_OK_OR_FAIL(ka_wait_all(e2, 3, KA_WAIT_FOREVER));
    for (int s = 0; s < 3; s++) KA_OK_OR_FAIL(ka_event_release(e2[s]));
    ts_read(c, A, sizeof A);
    int64_t v = ((int64_t)1 << (2 * STEPS + 1)) - 1;
    for (int i = 0; i < N; i++) assert_int_equal(A[i], 2 * v + 1);
}

/* ---- reflection (reflection.jl) ---------------------------------------------- */
static void reflection_kernel_info(void **state) {
    (void)state;
    enum { S = 256 };
    ka_kernel_info info;
    ka_kernel mul2 = ts_kernel(prog_tiled, "mul2", NULL);
    KA_OK_OR_FAIL(ka_kernel_get_info(mul2, &info));
    assert_int_equal(info.num_args, 1);
    assert_true(info.max_workgroup_size >= 1 && info.max_workgroup_size <= ts.info->max_workgroup_size);
    for (int d = 0; d < 3; d++) assert_true(info.static_workgroup[d] == 0 && info.static_ndrange[d] == 0);
    ka_kernel_config c3232 = {.workgroup = {32, 32}};
    ka_kernel mul2s = ts_kernel(prog_tiled, "mul2", &c3232);
    KA_OK_OR_FAIL(ka_kernel_get_info(mul2s, &info));
    assert_true(info.static_workgroup[0] == 32 && info.static_workgroup[1] == 32 && info.static_workgroup[2] == 1);
    ka_kernel add3 = ts_kernel(prog_tiled, "add3", NULL);
    KA_OK_OR_FAIL(ka_kernel_get_info(add3, &info));
    assert_int_equal(info.num_args, 3);
    ka_kernel addi = ts_kernel(prog_tiled, "addi", &c3232);
    KA_OK_OR_FAIL(ka_kernel_get_info(addi, &info));
    assert_int_equal(info.num_args, 3);
    /* and they run: A = ones; mul2 dynamic (16,16) then static (32,32) */
    float *h = ts_alloc(S * S * 4);
    for (int i = 0; i < S * S; i++) h[i] = 1.0f;
    ka_buffer A = ts_buffer(S * S * 4, h), B = ts_buffer(S * S * 4, h), C = ts_buffer(S * S * 4, h);
    ka_arg a1[] = {ka_arg_buffer(A)};
    ka_range r = ts_range(2, S, S, 0, 16, 16, 0);
    ts_run(mul2, &r, a1, 1);
    r.workgroup[0] = r.workgroup[1] = 0;
    ts_run(mul2s, &r, a1, 1);
    ts_read(A, h, S * S * 4);
    for (int i = 0; i < S * S; i++) assert_true(h[i] == 4.0f);
    ka_arg a3[] = {ka_arg_buffer(A), ka_arg_buffer(B), ka_arg_buffer(C)};
    ts_run(add3, &r, a3, 3);
    ts_read(A, h, S * S * 4);
    for (int i = 0; i < S * S; i++) assert_true(h[i] == 2.0f);
    ka_arg ai[] = {ka_arg_buffer(A), ka_arg_buffer(C), ka_arg_i32(1 + 2)};
    ts_run(addi, &r, ai, 3);
    ts_read(A, h, S * S * 4);
    for (int i = 0; i < S * S; i++) assert_true(h[i] == 4.0f);
    /* a scalar of the wrong size is refused */
    ka_arg bad[] = {ka_arg_buffer(A), ka_arg_buffer(C), ka_arg_i64(3)};
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(ts.q, addi, &r, bad, 3, NULL));
}

/* ---- test.jl Const and kernel_val! ---------------------------------------------- */
static void const_arguments(void **state) {
    (void)state;
    /* KA: constarg(backend, 8, (1024,)): static work-group 8 and ndrange 1024 */
    enum { N = 1024 };
    float *b = ts_alloc(N * 4), *a = ts_alloc(N * 4);
    for (int i = 0; i < N; i++) b[i] = (float)(N - i);
    ka_buffer A = ts_buffer(N * 4, NULL), B = ts_buffer(N * 4, b);
    ka_kernel_config cfg = {.workgroup = {8}, .ndrange = {N}};
    ka_kernel k = ts_kernel(prog_tiled, "constarg", &cfg);
    ka_arg args[] = {ka_arg_buffer(A), ka_arg_buffer(B)};
    ka_range r = ts_range(1, N, 0, 0, 0, 0, 0);
    ts_run(k, &r, args, 2);
    ts_read(A, a, N * 4);
    assert_memory_equal(a, b, N * 4);
}

static void compile_time_values(void **state) {
    (void)state;
    enum { N = 1024 };
    int64_t *A = ts_alloc(N * 8);
    ka_buffer b = ts_buffer(N * 8, NULL);
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_range r = ts_range(1, N, 0, 0, 0, 0, 0);
    ka_kernel_config v3 = {.defines = "-DTS_M=3"}, v5 = {.defines = "-DTS_M=5"};
    ka_kernel k3 = ts_kernel(prog_tiled, "kernel_val", &v3), k5 = ts_kernel(prog_tiled, "kernel_val", &v5);
    ka_kernel k0 = ts_kernel(prog_tiled, "kernel_val", NULL);
    assert_true(k3.id != k5.id && k3.id != k0.id);
    for (int rep = 0; rep < 2; rep++) {
        ka_kernel ks[3] = {k3, k5, k0};
        int64_t want[3] = {3, 5, 0};
        for (int v = 0; v < 3; v++) {
            ts_run(ks[v], &r, args, 1);
            ts_read(b, A, N * 8);
            for (int i = 0; i < N; i++) assert_int_equal(A[i], want[v]);
        }
    }
}

/* ---- static and dynamic variants, the compiled-kernel cache --------------------- */
static const char *cache_src =
    "#ifndef TS_OFFSET\n#define TS_OFFSET 0\n#endif\n"
    "#ifdef TS_BROKEN\n#error broken on purpose\n#endif\n"
    "KA_KERNEL(probe, KA_GLOBAL long *A) {\n"
    "    if (!ka_in_range()) return;\n"
    "    A[ka_global_linear_id()] = (long)ka_global_linear_id() + 1000 * (long)ka_group_size(0)\n"
    "        + 1000000 * (long)ka_ndrange(0) + 1000000000L * TS_OFFSET;\n"
    "}\n"
    "KA_KERNEL(probe2, KA_GLOBAL long *A) {\n"
    "    if (ka_in_range()) A[ka_global_linear_id()] = -(long)ka_group_size(0) - TS_OFFSET;\n"
    "}\n";

static void check_probe(ka_kernel k, uint64_t n, uint32_t wg, int64_t off, ka_buffer b) {
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_range r = ts_range(1, n, 0, 0, wg, 0, 0);
    ts_run(k, &r, args, 1);
    ka_kernel_info info;
    KA_OK_OR_FAIL(ka_kernel_get_info(k, &info));
    int64_t A[128];
    ts_read(b, A, n * 8);
    int64_t gs = info.static_workgroup[0] ? info.static_workgroup[0] : wg;
    for (uint64_t i = 0; i < n; i++)
        assert_int_equal(A[i], (int64_t)i + 1000 * gs + 1000000 * (int64_t)n + 1000000000LL * off);
}

static void static_dynamic_coexist(void **state) {
    (void)state;
    ka_program p = ts_build(cache_src);
    ka_buffer b = ts_buffer(128 * 8, NULL);
    ka_kernel_config cwg = {.workgroup = {16}}, cnd = {.ndrange = {100}}, cboth = {.workgroup = {16}, .ndrange = {100}};
    ka_kernel kd = ts_kernel(p, "probe", NULL), kw = ts_kernel(p, "probe", &cwg);
    ka_kernel kn = ts_kernel(p, "probe", &cnd), kb = ts_kernel(p, "probe", &cboth);
    uint64_t ids[4] = {kd.id, kw.id, kn.id, kb.id};
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++) assert_true(ids[i] != ids[j]);
    /* alternate: each keeps its own sizes */
    for (int rep = 0; rep < 2; rep++) {
        check_probe(kd, 100, 8, 0, b);
        check_probe(kw, 100, 0, 0, b);
        check_probe(kn, 100, 4, 0, b);
        check_probe(kb, 100, 0, 0, b);
        check_probe(kd, 77, 32, 0, b);
    }
    /* the same configuration finds the same kernel */
    assert_true(ts_kernel(p, "probe", &cwg).id == kw.id);
    ka_kernel_config cwg3 = {.workgroup = {16, 1, 1}};
    assert_true(ts_kernel(p, "probe", &cwg3).id == kw.id);
    /* contradicting the static sizes */
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_range r = ts_range(1, 100, 0, 0, 8, 0, 0);
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP, ka_launch(ts.q, kw, &r, args, 1, NULL));
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP, ka_launch(ts.q, kb, &r, args, 1, NULL));
    r = ts_range(1, 99, 0, 0, 0, 0, 0);
    KA_EXPECT(KA_ERR_INVALID_RANGE, ka_launch(ts.q, kn, &r, args, 1, NULL));
    r = ts_range(2, 100, 2, 0, 0, 0, 0);
    KA_EXPECT(KA_ERR_INVALID_RANGE, ka_launch(ts.q, kb, &r, args, 1, NULL));
    /* a static work-group beyond the device's limits is refused at ka_kernel_get */
    ka_kernel k;
    ka_kernel_config huge = {.workgroup = {ts.info->max_workgroup_size + 1}};
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP, ka_kernel_get(p, "probe", &huge, &k));
    KA_OK_OR_FAIL(ka_program_release(p));
}

static uint32_t builds(ka_program p) {
    uint32_t n = 0;
    KA_OK_OR_FAIL(ka_program_build_count(p, &n));
    return n;
}

static void build_cache_counts(void **state) {
    (void)state;
    ka_program p = ts_build(cache_src);
    assert_int_equal(builds(p), 1); /* the default variant */
    ka_kernel kd = ts_kernel(p, "probe", NULL);
    ts_kernel(p, "probe2", NULL);
    assert_int_equal(builds(p), 1); /* dynamic kernels share it */
    ka_kernel_config cwg = {.workgroup = {16}};
    ka_kernel kw = ts_kernel(p, "probe", &cwg);
    assert_int_equal(builds(p), 2);
    ka_kernel_config cwg3 = {.workgroup = {16, 1, 1}};
    assert_true(ts_kernel(p, "probe", &cwg3).id == kw.id); /* normalized: the same key */
    ka_kernel kw2 = ts_kernel(p, "probe2", &cwg);           /* another name, same variant */
    assert_int_equal(builds(p), 2);
    ka_kernel_config cnd = {.ndrange = {100}}, cboth = {.workgroup = {16}, .ndrange = {100}};
    ka_kernel kn = ts_kernel(p, "probe", &cnd);
    assert_int_equal(builds(p), 3);
    ka_kernel kb = ts_kernel(p, "probe", &cboth);
    assert_int_equal(builds(p), 4);
    ka_kernel_config d1 = {.defines = "-DTS_OFFSET=1"}, d2 = {.defines = "-DTS_OFFSET=2"};
    ka_kernel k1 = ts_kernel(p, "probe", &d1);
    assert_int_equal(builds(p), 5);
    assert_true(ts_kernel(p, "probe", &d1).id == k1.id);
    ka_kernel k2 = ts_kernel(p, "probe", &d2);
    assert_int_equal(builds(p), 6);
    ka_kernel_config d1w = {.workgroup = {16}, .defines = "-DTS_OFFSET=1"};
    ka_kernel k1w = ts_kernel(p, "probe", &d1w);
    assert_int_equal(builds(p), 7);
    /* the device's own sub-group width is the default: no new variant */
    ka_kernel_config sg = {.subgroup_size = ts.info->subgroup_width};
    if (ts.info->subgroup_width) assert_true(ts_kernel(p, "probe", &sg).id == kd.id);
    /* a variant that does not compile: an error every time, nothing counted */
    ka_kernel k;
    ka_kernel_config broken = {.defines = "-DTS_BROKEN"};
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_kernel_get(p, "probe", &broken, &k));
    if (!strstr(ka_last_error(), "broken on purpose")) fail_msg("no build log in: %s", ka_last_error());
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_kernel_get(p, "probe", &broken, &k));
    KA_EXPECT(KA_ERR_KERNEL_NOT_FOUND, ka_kernel_get(p, "no_such_kernel", &cwg, &k));
    assert_int_equal(builds(p), 7);
    /* hits: many lookups of known pairs build nothing */
    const ka_kernel_config *cfgs[] = {NULL, &cwg, &cwg3, &cnd, &cboth, &d1, &d2, &d1w};
    const uint64_t want[] = {kd.id, kw.id, kw.id, kn.id, kb.id, k1.id, k2.id, k1w.id};
    for (int rep = 0; rep < 1000; rep++)
        for (int c = 0; c < 8; c++) {
            KA_OK_OR_FAIL(ka_kernel_get(p, "probe", cfgs[c], &k));
            if (k.id != want[c]) fail_msg("lookup %d of configuration %d gave another kernel", rep, c);
        }
    assert_int_equal(builds(p), 7);
    /* each variant computes with its own constants */
    ka_buffer b = ts_buffer(128 * 8, NULL);
    check_probe(kd, 100, 8, 0, b);
    check_probe(kw, 100, 0, 0, b);
    check_probe(kn, 100, 8, 0, b);
    check_probe(kb, 100, 0, 0, b);
    check_probe(k1, 100, 8, 1, b);
    check_probe(k2, 100, 8, 2, b);
    check_probe(k1w, 100, 0, 1, b);
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_range r = ts_range(1, 10, 0, 0, 0, 0, 0);
    ts_run(kw2, &r, args, 1);
    int64_t A[10];
    ts_read(b, A, sizeof A);
    for (int i = 0; i < 10; i++) assert_int_equal(A[i], -16);
    KA_OK_OR_FAIL(ka_program_release(p));
}

/* ---- one kernel from many threads ------------------------------------------------ */
enum { TH = 8, TH_LAUNCHES = 25, TH_N = 300 };
typedef struct th_ctx {
    int index;
    ka_program prog;
    ka_kernel k;
    bool own_queue;
    ka_status st;
    char err[256];
    int bad;
    char first_bad[160];
} th_ctx;

static void *th_main(void *arg) {
    th_ctx *c = arg;
    ka_queue q = ts.q;
    ka_buffer b = {0};
    int32_t *A = malloc(TH_N * sizeof *A);
    ka_kernel_config cwg = {.workgroup = {16}};
    ka_kernel kw = {0};
#define TH_TRY(call)                                                                       \
    do {                                                                                   \
        if ((c->st = (call)) != KA_OK) {                                                   \
            snprintf(c->err, sizeof c->err, "%s: %s", #call, ka_last_error());             \
            goto out;                                                                      \
        }                                                                                  \
    } while (0)
    if (!A) goto out;
    if (c->own_queue) TH_TRY(ka_queue_create(ts.dev, NULL, &q));
    TH_TRY(ka_buffer_create(ts.dev, TH_N * sizeof *A, &b));
    /* all threads ask for the same new static variant at once */
    TH_TRY(ka_kernel_get(c->prog, "affine", &cwg, &kw));
    for (int l = 0; l < TH_LAUNCHES; l++) {
        for (int i = 0; i < TH_N; i++) A[i] = i;
        TH_TRY(ka_buffer_write(q, b, 0, A, TH_N * sizeof *A));
        int a = c->index + 2, add = l * 100 + c->index;
        ka_arg args[] = {ka_arg_buffer(b), ka_arg_i32(a), ka_arg_i32(add)};
        bool dynamic = l % 3 != 0;
        ka_range r = ts_range(1, TH_N, 0, 0, (l % 2) ? 0 : dynamic ? 32 : 16, 0, 0);
        ka_event ev;
        TH_TRY(ka_launch(q, dynamic ? c->k : kw, &r, args, 3, &ev));
        TH_TRY(ka_event_wait(ev, KA_WAIT_FOREVER));
        TH_TRY(ka_event_release(ev));
        TH_TRY(ka_buffer_read(q, A, b, 0, TH_N * sizeof *A));
        for (int i = 0; i < TH_N; i++)
            if (A[i] != i * a + add && !c->bad++)
                snprintf(c->first_bad, sizeof c->first_bad,
                         "launch %d (%s kernel, work-group %u, %s queue): A[%d] = %d, expected %d", l,
                         dynamic ? "dynamic" : "static", r.workgroup[0], c->own_queue ? "own" : "shared", i, A[i],
                         i * a + add);
    }
out:
    if (b.id) ka_buffer_release(b);
    if (c->own_queue && q.id) ka_queue_release(q);
    free(A);
    return NULL;
}

static void concurrent_launches(void **state) {
    (void)state;
    ka_program p = ts_build("KA_KERNEL(affine, KA_GLOBAL int *A, int a, int b) {\n"
                            "    if (ka_in_range()) A[ka_global_id(0)] = A[ka_global_id(0)] * a + b;\n"
                            "}\n");
    ka_kernel k = ts_kernel(p, "affine", NULL);
    uint32_t before = builds(p);
    pthread_t th[TH];
    th_ctx ctx[TH];
    for (int t = 0; t < TH; t++) {
#ifndef TS_TH_QUEUES
#define TS_TH_QUEUES(t) ((t) % 2 == 1) /* half the threads on their own queue, half on the shared one */
#endif
        ctx[t] = (th_ctx){.index = t, .prog = p, .k = k, .own_queue = TS_TH_QUEUES(t)};
        if (pthread_create(&th[t], NULL, th_main, &ctx[t])) fail_msg("pthread_create");
    }
    /* A deadlock in the launch path must fail the suite, not stall it for
     * ctest's timeout: join with a deadline, and stop the process (this test
     * runs last) if the threads are stuck. */
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 60;
    for (int t = 0; t < TH; t++) {
        int e = pthread_timedjoin_np(th[t], NULL, &deadline);
        if (e) {
            print_error("concurrent_launches: thread %d did not finish within 60 s (pthread_timedjoin_np: %d): a "
                        "deadlock in the launch or wait path; stopping the suite\n", t, e);
            fflush(stdout);
            fflush(stderr);
            _exit(1);
        }
    }
    for (int t = 0; t < TH; t++) {
        if (ctx[t].st != KA_OK) fail_msg("thread %d: %s: %s", t, ka_status_name(ctx[t].st), ctx[t].err);
        if (ctx[t].bad) fail_msg("thread %d: %d wrong elements, first: %s", t, ctx[t].bad, ctx[t].first_bad);
    }
    assert_int_equal(builds(p), before + 1); /* the static variant, built once */
    KA_OK_OR_FAIL(ka_program_release(p));
}

/* ---- examples ----------------------------------------------------------------------- */
static void matmul_check(const float *C, const float *A, const float *B, int N, int R, int M, const char *what) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < M; j++) {
            double s = 0;
            for (int k = 0; k < R; k++) s += (double)A[i * R + k] * B[k * M + j];
            if (fabs(C[i * M + j] - s) > 1e-4 * (fabs(s) + 1))
                fail_msg("%s: C[%d,%d] = %g, expected %g", what, i, j, C[i * M + j], s);
        }
}

static void example_matmul(void **state) {
    (void)state;
    enum { N = 37, R = 29, M = 41 };
    float *A = ts_alloc(N * R * 4), *B = ts_alloc(R * M * 4), *C = ts_alloc(N * M * 4);
    for (int i = 0; i < N * R; i++) A[i] = (float)((i * 7) % 13) / 13.0f;
    for (int i = 0; i < R * M; i++) B[i] = (float)((i * 5) % 11) / 11.0f;
    ka_buffer Ab = ts_buffer(N * R * 4, A), Bb = ts_buffer(R * M * 4, B), Cb = ts_buffer(N * M * 4, NULL);
    ka_arg args[] = {ka_arg_buffer(Cb), ka_arg_buffer(Ab), ka_arg_buffer(Bb), ka_arg_u32(N), ka_arg_u32(R), ka_arg_u32(M)};
    ka_range r = ts_range(2, M, N, 0, 0, 0, 0);
    ts_run(ts_kernel(prog_misc, "matmul", NULL), &r, args, 6);
    ts_read(Cb, C, N * M * 4);
    matmul_check(C, A, B, N, R, M, "matmul");
}

static void example_tiled_matmul(void **state) {
    (void)state;
    enum { N = 70, R = 45, M = 52 }; /* no multiples of the tile: partial tiles everywhere */
    float *A = ts_alloc(N * R * 4), *B = ts_alloc(R * M * 4), *C = ts_alloc(N * M * 4);
    unsigned seed = 17;
    for (int i = 0; i < N * R; i++) seed = seed * 1103515245u + 12345u, A[i] = (float)((seed >> 8) & 0xffff) / 65536.0f;
    for (int i = 0; i < R * M; i++) seed = seed * 1103515245u + 12345u, B[i] = (float)((seed >> 8) & 0xffff) / 65536.0f;
    ka_buffer Ab = ts_buffer(N * R * 4, A), Bb = ts_buffer(R * M * 4, B), Cb = ts_buffer(N * M * 4, NULL);
    ka_arg args[] = {ka_arg_buffer(Cb), ka_arg_buffer(Ab), ka_arg_buffer(Bb), ka_arg_u32(N), ka_arg_u32(R), ka_arg_u32(M)};
    ka_kernel_config c16 = {.workgroup = {16, 16}};
    ka_kernel k = ts_kernel(prog_tiled, "coalesced_matmul", &c16);
    ts_check_local_mem(k, 2 * 16 * 17 * sizeof(float), "coalesced_matmul");
    ka_range r = ts_range(2, M, N, 0, 0, 0, 0);
    ts_run(k, &r, args, 6);
    ts_read(Cb, C, N * M * 4);
    matmul_check(C, A, B, N, R, M, "tiled matmul");
}

static void example_transpose(void **state) {
    (void)state;
    enum { ROWS = 33, COLS = 70 };
    float *a = ts_alloc(ROWS * COLS * 4), *b = ts_alloc(ROWS * COLS * 4);
    for (int i = 0; i < ROWS * COLS; i++) a[i] = (float)i;
    ka_buffer Ab = ts_buffer(ROWS * COLS * 4, a), Bb = ts_buffer(ROWS * COLS * 4, NULL);
    ka_arg args[] = {ka_arg_buffer(Bb), ka_arg_buffer(Ab), ka_arg_u32(ROWS), ka_arg_u32(COLS)};
    ka_range r = ts_range(2, COLS, ROWS, 0, 8, 8, 0);
    ts_run(ts_kernel(prog_misc, "naive_transpose", NULL), &r, args, 4);
    ts_read(Bb, b, ROWS * COLS * 4);
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++) assert_true(b[j * ROWS + i] == a[i * COLS + j]);
}

int ts_group_misc(void) {
    const struct CMUnitTest tests[] = {
        TS_TEST(convert_rounding),      TS_TEST(convert_saturation),   TS_TEST(special_functions),
        TS_TEST(math_functions),        TS_TEST(copies),               TS_TEST(example_memcopy),
        TS_TEST(printf_from_kernels),   TS_TEST(events_and_ordering),  TS_TEST(reflection_kernel_info),
        TS_TEST(const_arguments),       TS_TEST(compile_time_values),  TS_TEST(static_dynamic_coexist),
        TS_TEST(build_cache_counts),    TS_TEST(example_matmul),       TS_TEST(example_tiled_matmul),
        TS_TEST(example_transpose),     TS_TEST(concurrent_launches), /* last: stops the process if stuck */
    };
    return cmocka_run_group_tests_name("ka_testsuite_misc", tests, group_setup, group_teardown);
}
