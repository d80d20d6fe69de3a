/* Ported KA testsets on synchronization: atomics.jl, groupreduce.jl and
 * reduce.jl, the histogram example, interface.jl/tiles.jl sub-groups, and
 * hostinterface.jl's capability queries. The mapping is in ka_testsuite.c.
 * Sub-group tests skip on devices without sub-groups (PoCL 3.1). */
#include "ka_testsuite.h"

#include <limits.h>
#include <stdio.h>

static const char *atomic_src =
    /* atomics.jl's atomix_add!: hist[i % n] += 1 */
    "#define HIST(T) \\\n"
    "KA_KERNEL(atomic_add_##T, KA_GLOBAL T *hist, uint n, T v) { \\\n"
    "    if (ka_in_range()) ka_atomic_add(&hist[ka_global_linear_id() % n], v); \\\n"
    "}\n"
    "HIST(int)\n"
    "HIST(uint)\n"
    "HIST(float)\n"
    "#ifdef KA_HAS_ATOMIC64\n"
    "HIST(long)\n"
    "HIST(ulong)\n"
    "#endif\n"
    "#ifdef KA_HAS_ATOMIC_DOUBLE_ADD\n"
    "HIST(double)\n"
    "#endif\n"
    /* atomix_max!/min!: A[0] = max/min(A[0], base + step * i), A[1] the other */
    "#define MINMAX(T) \\\n"
    "KA_KERNEL(atomic_minmax_##T, KA_GLOBAL T *A, T base, T step) { \\\n"
    "    if (!ka_in_range()) return; \\\n"
    "    T v = base + step * (T)(ka_global_linear_id() + 1); \\\n"
    "    ka_atomic_max(&A[0], v); \\\n"
    "    ka_atomic_min(&A[1], v); \\\n"
    "}\n"
    "MINMAX(int)\n"
    "MINMAX(uint)\n"
    "#ifdef KA_HAS_ATOMIC64\n"
    "MINMAX(long)\n"
    "MINMAX(ulong)\n"
    "#endif\n"
    /* and/or/xor on 32 bits: item i owns bit i % 32 */
    "#define BITS(T) \\\n"
    "KA_KERNEL(atomic_bits_##T, KA_GLOBAL T *A) { \\\n"
    "    if (!ka_in_range()) return; \\\n"
    "    uint i = (uint)ka_global_linear_id(); \\\n"
    "    T bit = (T)1 << (i % (8 * sizeof(T))); \\\n"
    "    ka_atomic_or(&A[0], bit); \\\n"
    "    ka_atomic_and(&A[1], ~bit); \\\n"
    "    ka_atomic_xor(&A[2], bit); \\\n"
    "}\n"
    "BITS(int)\n"
    "BITS(uint)\n"
    "#ifdef KA_HAS_ATOMIC64\n"
    "BITS(long)\n"
    "BITS(ulong)\n"
    "#endif\n"
    /* sub, and the old values add returns: a permutation of the counts */
    "#define SUBRET(T) \\\n"
    "KA_KERNEL(atomic_subret_##T, KA_GLOBAL T *A, KA_GLOBAL T *old) { \\\n"
    "    if (!ka_in_range()) return; \\\n"
    "    ka_size_t i = ka_global_linear_id(); \\\n"
    "    ka_atomic_sub(&A[0], (T)3); \\\n"
    "    old[i] = ka_atomic_add(&A[1], (T)1); \\\n"
    "}\n"
    "SUBRET(int)\n"
    "SUBRET(uint)\n"
    "#ifdef KA_HAS_ATOMIC64\n"
    "SUBRET(long)\n"
    "SUBRET(ulong)\n"
    "#endif\n"
    /* atomix_load_store!, atomix_swap!, atomix_replace! */
    "#define LSX(T) \\\n"
    "KA_KERNEL(atomic_lsx_##T, KA_GLOBAL T *A, KA_GLOBAL T *B, KA_GLOBAL T *C, KA_GLOBAL int *ok) { \\\n"
    "    if (!ka_in_range()) return; \\\n"
    "    ka_size_t i = ka_global_linear_id(); \\\n"
    "    T v = ka_atomic_load(&B[i]); \\\n"
    "    ka_atomic_store(&A[i], v); \\\n"
    "    B[i] = ka_atomic_xchg(&C[i], (T)(i + 1)); \\\n"
    "    T o1 = ka_atomic_cmpxchg(&A[i], v, (T)(2 * (i + 1))); \\\n"
    "    T o2 = ka_atomic_cmpxchg(&A[i], v, (T)7); \\\n"
    "    ok[i] = (o1 == v) && (o2 == (T)(2 * (i + 1))); \\\n"
    "}\n"
    "LSX(int)\n"
    "LSX(uint)\n"
    "#ifdef KA_HAS_ATOMIC64\n"
    "LSX(long)\n"
    "LSX(ulong)\n"
    "#endif\n"
    "KA_KERNEL(atomic_lsx_float, KA_GLOBAL float *A, KA_GLOBAL float *B, KA_GLOBAL float *C, KA_GLOBAL int *ok) {\n"
    "    if (!ka_in_range()) return;\n"
    "    ka_size_t i = ka_global_linear_id();\n"
    "    float v = ka_atomic_load(&B[i]);\n"
    "    ka_atomic_store(&A[i], v);\n"
    "    B[i] = ka_atomic_xchg(&C[i], (float)(i + 1));\n"
    "    ok[i] = ka_atomic_add(&A[i], 0.5f) == v;\n"
    "}\n"
    /* atomix_ordered! and unsafe_atomics_ops!: a sequence on one location */
    "KA_KERNEL(atomic_sequence, KA_GLOBAL int *A, KA_GLOBAL int *B, KA_GLOBAL int *C) {\n"
    "    if (!ka_in_range()) return;\n"
    "    int i = (int)ka_global_linear_id() + 1;\n"
    "    ka_atomic_store(&A[i - 1], i);\n"
    "    int v = ka_atomic_load(&A[i - 1]);\n"
    "    ka_atomic_add(&A[i - 1], 1);\n"
    "    ka_fence();\n"
    "    ka_atomic_add(&A[i - 1], 1);\n"
    "    ka_atomic_add(&A[i - 1], 1);\n"
    "    B[i - 1] = ka_atomic_xchg(&A[i - 1], v + 3);\n"
    /*  store i, modify + 1, cas to 2(i + 1), xchg back to i, load */
    "    ka_atomic_store(&C[i - 1], i);\n"
    "    int old = ka_atomic_add(&C[i - 1], 1), nw = old + 1;\n"
    "    int prev = -1;\n"
    "    if (ka_atomic_cmpxchg(&C[i - 1], nw, 2 * nw) == nw) prev = ka_atomic_xchg(&C[i - 1], old);\n"
    "    C[i - 1] = ka_atomic_load(&C[i - 1]) + 1000 * (old == i && prev == 2 * nw ? 0 : 1);\n"
    "}\n"
    /* unsafe_atomics_fence!: message passing from work-item 0 */
    "KA_KERNEL(atomic_fence_message, KA_GLOBAL volatile int *data, KA_GLOBAL int *flag, KA_GLOBAL int *observed) {\n"
    "    if (!ka_in_range()) return;\n"
    "    ka_size_t i = ka_global_linear_id();\n"
    "    if (i == 0) {\n"
    "        data[0] = 42;\n"
    "        ka_fence();\n"
    "        ka_atomic_store(&flag[0], 1);\n"
    "    } else {\n"
    "        int f = ka_atomic_load(&flag[0]);\n"
    "        ka_fence();\n"
    "        observed[i] = f == 1 ? data[0] : -1;\n"
    "    }\n"
    "}\n"
    /* contended float and double adds on one location */
    "KA_KERNEL(atomic_add_one_float, KA_GLOBAL float *A, float v) {\n"
    "    if (ka_in_range()) ka_atomic_add(&A[0], v);\n"
    "}\n"
    /* local-memory atomics of every kind, then one global add per group */
    "KA_KERNEL(atomic_local, KA_GLOBAL int *out, KA_GLOBAL float *fout) {\n"
    "    KA_LOCAL int c[4];\n"
    "    KA_LOCAL uint u[2];\n"
    "    KA_LOCAL float f[1];\n"
    "    ka_size_t i = ka_local_linear_id();\n"
    "    if (i == 0) { c[0] = 0; c[1] = 1 << 30; c[2] = 0; c[3] = -1; u[0] = 0; u[1] = 0; f[0] = 0.0f; }\n"
    "    ka_barrier();\n"
    "    if (ka_in_range()) {\n"
    "        ka_atomic_add(&c[0], 2);\n"
    "        ka_atomic_min(&c[1], (int)i);\n"
    "        ka_atomic_max(&c[2], (int)i);\n"
    "        ka_atomic_and(&c[3], ~(1 << (i % 31)));\n"
    "        ka_atomic_or(&u[0], 1u << (i % 32));\n"
    "        ka_atomic_cmpxchg(&u[1], (uint)0, (uint)i + 1);\n"
    "        ka_atomic_add(&f[0], 0.25f);\n"
    "    }\n"
    "    ka_barrier();\n"
    "    if (i == 0) {\n"
    "        ka_size_t g = ka_group_linear_id();\n"
    "        out[6 * g + 0] = c[0]; out[6 * g + 1] = c[1]; out[6 * g + 2] = c[2];\n"
    "        out[6 * g + 3] = c[3]; out[6 * g + 4] = (int)u[0]; out[6 * g + 5] = (int)u[1];\n"
    "        ka_atomic_add(&fout[0], f[0]);\n"
    "    }\n"
    "}\n"
    /* groupreduce.jl: a tree reduction in local memory over the first `limit`
     * lanes of a work-group; one result per group */
    "#define GROUPREDUCE(T) \\\n"
    "KA_KERNEL(groupreduce_##T, KA_GLOBAL T *y, KA_CONST(T) x, ulong n, uint limit, KA_LOCAL_ARG(T) s) { \\\n"
    "    ka_size_t i = ka_global_linear_id(), l = ka_local_linear_id(), N = ka_group_linear_size(); \\\n"
    "    T val = (i < n && l < limit) ? x[i] : (T)0; \\\n"
    "    s[l] = val; \\\n"
    "    ka_barrier(); \\\n"
    "    for (ka_size_t w = N / 2; w > 0; w /= 2) { \\\n"
    "        if (l < w) s[l] += s[l + w]; \\\n"
    "        ka_barrier(); \\\n"
    "    } \\\n"
    "    if (l == 0) y[ka_group_linear_id()] = s[0]; \\\n"
    "}\n"
    "GROUPREDUCE(short)\n"
    "GROUPREDUCE(int)\n"
    "GROUPREDUCE(long)\n"
    "GROUPREDUCE(float)\n"
    "#ifdef KA_HAS_DOUBLE\n"
    "GROUPREDUCE(double)\n"
    "#endif\n"
    /* what the dialect says about the device, for the host's capability flags */
    "KA_KERNEL(dialect_caps, KA_GLOBAL int *out) {\n"
    "    if (ka_global_linear_id() != 0) return;\n"
    "#ifdef KA_HAS_SUBGROUPS\n"
    "    out[0] = 1;\n"
    "#endif\n"
    "#ifdef KA_HAS_SUBGROUP_SHUFFLE\n"
    "    out[1] = 1;\n"
    "#endif\n"
    "#ifdef KA_HAS_ATOMIC64\n"
    "    out[2] = 1;\n"
    "#endif\n"
    "#ifdef KA_HAS_DOUBLE\n"
    "    out[3] = 1;\n"
    "#endif\n"
    "    out[4] = KA_SUBGROUP_SIZE;\n"
    "}\n";

/* Static variants get their own small program: each is a build of all of it. */
static const char *hist_src =
    /* the histogram example: static work-group of 256, bins in local memory */
    "#ifdef KA_STATIC_WG0\n"
    "KA_KERNEL(histogram, KA_GLOBAL int *hist, KA_CONST(int) input, uint N) {\n"
    "    ka_size_t tid = ka_global_linear_id(), lid = ka_local_linear_id();\n"
    "    const uint gs = KA_STATIC_WG_LINEAR;\n"
    "    KA_LOCAL int shared_histogram[KA_STATIC_WG_LINEAR];\n"
    "    for (uint min_element = 1; min_element <= N; min_element += gs) {\n"
    "        shared_histogram[lid] = 0;\n"
    "        ka_barrier();\n"
    "        uint max_element = min_element + gs;\n"
    "        if (max_element > N) max_element = N + 1;\n"
    "        if (ka_in_range()) {\n"
    "            int bin = input[tid];\n"
    "            if (bin >= (int)min_element && bin < (int)max_element)\n"
    "                ka_atomic_add(&shared_histogram[bin - min_element], 1);\n"
    "        }\n"
    "        ka_barrier();\n"
    "        if (lid + min_element <= N) ka_atomic_add(&hist[lid + min_element - 1], shared_histogram[lid]);\n"
    "    }\n"
    "}\n"
    "#endif\n"
    ;

/* Sub-group kernels: built only where the device has sub-groups. */
static const char *subgroup_src =
    "#ifdef KA_HAS_SUBGROUPS\n"
    /* interface.jl's test_subgroup_kernel */
    "KA_KERNEL(subgroup_ids, KA_GLOBAL uint *out) {\n"
    "    if (!ka_in_range()) return;\n"
    "    ka_size_t i = ka_global_linear_id();\n"
    "    out[5 * i + 0] = ka_subgroup_size();\n"
    "    out[5 * i + 1] = ka_subgroup_max_size();\n"
    "    out[5 * i + 2] = ka_num_subgroups();\n"
    "    out[5 * i + 3] = ka_subgroup_id();\n"
    "    out[5 * i + 4] = ka_subgroup_local_id();\n"
    "}\n"
    /* tiles.jl's tile operations on the sub-group: broadcast, reduce, any, all */
    "KA_KERNEL(subgroup_ops, KA_GLOBAL int *out, KA_CONST(int) x) {\n"
    "    ka_size_t i = ka_global_linear_id();\n"
    "    int v = x[i];\n"
    "    out[8 * i + 0] = ka_subgroup_broadcast(v, 0);\n"
    "    out[8 * i + 1] = ka_subgroup_reduce_add(v);\n"
    "    out[8 * i + 2] = ka_subgroup_reduce_min(v);\n"
    "    out[8 * i + 3] = ka_subgroup_reduce_max(v);\n"
    "    out[8 * i + 4] = ka_subgroup_any(v == 3);\n"
    "    out[8 * i + 5] = ka_subgroup_all(v > 0);\n"
    "    ka_subgroup_barrier();\n"
    "    out[8 * i + 6] = ka_subgroup_local_id();\n"
    "    out[8 * i + 7] = ka_subgroup_id();\n"
    "}\n"
    "#ifdef KA_HAS_SUBGROUP_SHUFFLE\n"
    /* interface.jl's shfl_down_test_kernel, and tiles.jl's shuffles */
    "#define SHFL(T) \\\n"
    "KA_KERNEL(subgroup_shfl_down_##T, KA_GLOBAL T *b, KA_CONST(T) a, uint N) { \\\n"
    "    uint idx = ka_subgroup_local_id(); \\\n"
    "    T val = a[ka_global_linear_id()]; \\\n"
    "    for (uint offset = 1; offset < N; offset <<= 1) val += ka_subgroup_shuffle_down(val, offset); \\\n"
    "    ka_subgroup_barrier(); \\\n"
    "    if (idx == 0) b[ka_global_linear_id() / N] = val; \\\n"
    "}\n"
    "SHFL(int)\n"
    "SHFL(uint)\n"
    "SHFL(float)\n"
    "#ifdef KA_HAS_DOUBLE\n"
    "SHFL(double)\n"
    "#endif\n"
    "SHFL(long)\n"
    "KA_KERNEL(subgroup_shuffles, KA_GLOBAL int *out, KA_CONST(int) x) {\n"
    "    ka_size_t i = ka_global_linear_id();\n"
    "    uint lane = ka_subgroup_local_id(), n = ka_subgroup_size();\n"
    "    int v = x[i];\n"
    "    out[4 * i + 0] = ka_subgroup_shuffle(v, (lane + 1) % n);\n"
    "    out[4 * i + 1] = ka_subgroup_shuffle_xor(v, 1u);\n"
    "    out[4 * i + 2] = ka_subgroup_shuffle_down(v, 1u);\n"
    "    out[4 * i + 3] = ka_subgroup_shuffle_up(v, 1u);\n"
    "}\n"
    "#endif\n"
    "#endif\n";

static ka_program prog_atomic, prog_sg, prog_hist;
static bool have_sg;

static int group_setup(void **state) {
    (void)state;
    prog_atomic = ts_build(atomic_src);
    prog_hist = ts_build(hist_src);
    have_sg = ts.info->num_subgroup_sizes > 0;
    if (have_sg) prog_sg = ts_build(subgroup_src);
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    ka_program_release(prog_atomic);
    ka_program_release(prog_hist);
    if (have_sg) ka_program_release(prog_sg);
    return 0;
}

/* A kernel that exists only where the device has a capability: present iff
 * the capability flag says so. */
static bool kernel_if(const char *name, int cap, ka_kernel *k) {
    ka_status s = ka_kernel_get(prog_atomic, name, NULL, k);
    if (cap && s != KA_OK) fail_msg("%s: device reports the capability, kernel missing: %s", name, ka_last_error());
    if (!cap && s != KA_ERR_KERNEL_NOT_FOUND)
        fail_msg("%s: device lacks the capability, ka_kernel_get gave %s", name, ka_status_name(s));
    return cap != 0;
}

/* atomics.jl "atomic add": 1024 work-items into 32 bins, each +1; then 2^20
 * into 32 bins and into one, so that work-groups running at once contend
 * (a lost update shows; the float sums stay exact). */
#define HIST_CHECK(T, FMT)                                                                             \
    do {                                                                                               \
        static const uint32_t items[3] = {1024, 1u << 20, 1u << 20}, bins[3] = {32, 32, 1};           \
        for (int c = 0; c < 3; c++) {                                                                  \
            T h[32];                                                                                   \
            ka_buffer b = ts_buffer(sizeof h, NULL);                                                   \
            ka_arg args[] = {ka_arg_buffer(b), ka_arg_u32(bins[c]), ka_arg_bytes(&(T){1}, sizeof(T))}; \
            ka_range r = ts_range(1, items[c], 0, 0, 0, 0, 0);                                         \
            ts_run(k, &r, args, 3);                                                                    \
            ts_read(b, h, sizeof h);                                                                   \
            for (uint32_t i = 0; i < bins[c]; i++)                                                     \
                if (h[i] != (T)(items[c] / bins[c]))                                                   \
                    fail_msg("atomic add " #T ", %u items into %u bins: bin %u = " FMT, items[c],     \
                             bins[c], i, h[i]);                                                        \
        }                                                                                              \
    } while (0)

static void atomic_add_ints(void **state) {
    (void)state;
    ka_kernel k = ts_kernel(prog_atomic, "atomic_add_int", NULL);
    HIST_CHECK(int32_t, "%d");
    k = ts_kernel(prog_atomic, "atomic_add_uint", NULL);
    HIST_CHECK(uint32_t, "%u");
    if (kernel_if("atomic_add_long", ts.info->has_atomic64, &k)) HIST_CHECK(int64_t, "%ld");
    if (kernel_if("atomic_add_ulong", ts.info->has_atomic64, &k)) HIST_CHECK(uint64_t, "%lu");
}

/* Float add (emulated with compare-exchange on OpenCL 1.2): the histogram, and
 * 4096 contended adds of 0.5 on one location (exact in float). */
static void atomic_add_float(void **state) {
    (void)state;
    assert_true(ts.info->has_atomic_float_add != 0);
    ka_kernel k = ts_kernel(prog_atomic, "atomic_add_float", NULL);
    HIST_CHECK(float, "%g");
    float one;
    ka_buffer ob = ts_buffer(sizeof one, NULL);
    ka_arg oargs[] = {ka_arg_buffer(ob), ka_arg_f32(0.5f)};
    ka_range orange = ts_range(1, 4096, 0, 0, 64, 0, 0);
    ts_run(ts_kernel(prog_atomic, "atomic_add_one_float", NULL), &orange, oargs, 2);
    ts_read(ob, &one, sizeof one);
    if (one != 2048.0f) fail_msg("4096 atomic adds of 0.5: %g", one);
    if (kernel_if("atomic_add_double", ts.info->has_atomic64 && ts.info->has_double, &k)) HIST_CHECK(double, "%g");
}

/* atomics.jl "atomic max/min", with values that tell signed from unsigned
 * and 64-bit from 32-bit comparisons. */
static void atomic_minmax(void **state) {
    (void)state;
    ka_range r = ts_range(1, 1024, 0, 0, 0, 0, 0);
    {
        int32_t A[2] = {INT32_MIN, INT32_MAX};
        ka_buffer b = ts_buffer(sizeof A, A);
        ka_arg args[] = {ka_arg_buffer(b), ka_arg_i32(-600), ka_arg_i32(1)};
        ts_run(ts_kernel(prog_atomic, "atomic_minmax_int", NULL), &r, args, 3);
        ts_read(b, A, sizeof A);
        assert_int_equal(A[0], 1024 - 600);
        assert_int_equal(A[1], 1 - 600);
    }
    {
        uint32_t A[2] = {0, UINT32_MAX};
        ka_buffer b = ts_buffer(sizeof A, A);
        ka_arg args[] = {ka_arg_buffer(b), ka_arg_u32(0x7ffffe00u), ka_arg_u32(1)};
        ts_run(ts_kernel(prog_atomic, "atomic_minmax_uint", NULL), &r, args, 3);
        ts_read(b, A, sizeof A);
        assert_int_equal(A[0], 0x7ffffe00u + 1024); /* above INT32_MAX: an unsigned comparison */
        assert_int_equal(A[1], 0x7ffffe00u + 1);
    }
    ka_kernel k;
    if (kernel_if("atomic_minmax_long", ts.info->has_atomic64, &k)) {
        int64_t A[2] = {INT64_MIN, INT64_MAX};
        ka_buffer b = ts_buffer(sizeof A, A);
        ka_arg args[] = {ka_arg_buffer(b), ka_arg_i64(-((int64_t)1 << 40)), ka_arg_i64((int64_t)1 << 33)};
        ts_run(k, &r, args, 3);
        ts_read(b, A, sizeof A);
        assert_true(A[0] == -((int64_t)1 << 40) + ((int64_t)1024 << 33));
        assert_true(A[1] == -((int64_t)1 << 40) + ((int64_t)1 << 33));
    }
    if (kernel_if("atomic_minmax_ulong", ts.info->has_atomic64, &k)) {
        uint64_t A[2] = {0, UINT64_MAX};
        ka_buffer b = ts_buffer(sizeof A, A);
        ka_arg args[] = {ka_arg_buffer(b), ka_arg_u64((uint64_t)1 << 63), ka_arg_u64((uint64_t)1 << 33)};
        ts_run(k, &r, args, 3);
        ts_read(b, A, sizeof A);
        assert_true(A[0] == ((uint64_t)1 << 63) + ((uint64_t)1024 << 33));
        assert_true(A[1] == ((uint64_t)1 << 63) + ((uint64_t)1 << 33));
    }
}

static void atomic_bitwise(void **state) {
    (void)state;
    static const char *names[] = {"atomic_bits_int", "atomic_bits_uint", "atomic_bits_long", "atomic_bits_ulong"};
    for (int t = 0; t < 4; t++) {
        ka_kernel k;
        if (t < 2) k = ts_kernel(prog_atomic, names[t], NULL);
        else if (!kernel_if(names[t], ts.info->has_atomic64, &k)) continue;
        unsigned bits = t < 2 ? 32 : 64;
        uint64_t all = bits == 64 ? UINT64_MAX : UINT32_MAX;
        /* 3 * bits items: each bit set by 3 items, cleared by 3, flipped 3 times */
        for (int reps = 1; reps <= 2; reps++) {
            uint64_t A[3] = {0, all, 0};
            uint32_t A32[3] = {0, UINT32_MAX, 0};
            ka_buffer b = bits == 64 ? ts_buffer(sizeof A, A) : ts_buffer(sizeof A32, A32);
            ka_arg args[] = {ka_arg_buffer(b)};
            ka_range r = ts_range(1, (uint64_t)reps * bits + (reps == 1 ? bits / 2 : 0), 0, 0, 0, 0, 0);
            ts_run(k, &r, args, 1);
            uint64_t got[3];
            if (bits == 64) {
                ts_read(b, got, sizeof got);
            } else {
                ts_read(b, A32, sizeof A32);
                for (int i = 0; i < 3; i++) got[i] = A32[i];
            }
            /* reps 1: 1.5 * bits items: the low half flipped twice, the high half once */
            uint64_t half = bits == 64 ? 0xffffffffull : 0xffffull;
            uint64_t xr = reps == 1 ? all & ~half : 0;
            if (got[0] != all || got[1] != 0 || got[2] != xr)
                fail_msg("%s over %llu items: or %llx, and %llx, xor %llx (expected %llx, 0, %llx)", names[t],
                         (unsigned long long)r.size[0], (unsigned long long)got[0], (unsigned long long)got[1],
                         (unsigned long long)got[2], (unsigned long long)all, (unsigned long long)xr);
        }
    }
}

/* atomic sub, and add's returned old values (every count returned once). */
static void atomic_sub_and_returns(void **state) {
    (void)state;
    static const char *names[] = {"atomic_subret_int", "atomic_subret_uint", "atomic_subret_long",
                                  "atomic_subret_ulong"};
    enum { N = 2000 };
    for (int t = 0; t < 4; t++) {
        ka_kernel k;
        if (t < 2) k = ts_kernel(prog_atomic, names[t], NULL);
        else if (!kernel_if(names[t], ts.info->has_atomic64, &k)) continue;
        size_t sz = t < 2 ? 4 : 8;
        uint64_t init[2] = {3 * N, 0};
        uint32_t init32[2] = {3 * N, 0};
        ka_buffer A = ts_buffer(2 * sz, sz == 8 ? (void *)init : (void *)init32);
        ka_buffer old = ts_buffer(N * sz, NULL);
        ka_arg args[] = {ka_arg_buffer(A), ka_arg_buffer(old)};
        ka_range r = ts_range(1, N, 0, 0, 0, 0, 0);
        ts_run(k, &r, args, 2);
        uint8_t *o = ts_alloc(N * sz);
        uint64_t a[2];
        ts_read(old, o, N * sz);
        if (sz == 8) {
            ts_read(A, a, sizeof a);
        } else {
            ts_read(A, init32, sizeof init32);
            a[0] = init32[0], a[1] = init32[1];
        }
        assert_int_equal(a[0], 0);
        assert_int_equal(a[1], N);
        uint8_t *seen = ts_alloc(N);
        for (int i = 0; i < N; i++) {
            uint64_t v = sz == 8 ? ((uint64_t *)o)[i] : ((uint32_t *)o)[i];
            if (v >= N || seen[v]++) fail_msg("%s: add returned %llu twice or out of range", names[t], (unsigned long long)v);
        }
    }
}

/* atomics.jl "atomic load/store", "atomicswap", "atomicreplace". */
static void atomic_load_store_swap(void **state) {
    (void)state;
    static const char *names[] = {"atomic_lsx_int", "atomic_lsx_uint", "atomic_lsx_long", "atomic_lsx_ulong"};
    enum { N = 256 };
    for (int t = 0; t < 4; t++) {
        ka_kernel k;
        if (t < 2) k = ts_kernel(prog_atomic, names[t], NULL);
        else if (!kernel_if(names[t], ts.info->has_atomic64, &k)) continue;
        size_t sz = t < 2 ? 4 : 8;
        int64_t B64[N], C64[N];
        int32_t B32[N], C32[N];
        for (int i = 0; i < N; i++) B64[i] = B32[i] = i + 1, C64[i] = C32[i] = -1;
        ka_buffer A = ts_buffer(N * sz, NULL), B = ts_buffer(N * sz, sz == 8 ? (void *)B64 : (void *)B32);
        ka_buffer C = ts_buffer(N * sz, sz == 8 ? (void *)C64 : (void *)C32), ok = ts_buffer(N * 4, NULL);
        ka_arg args[] = {ka_arg_buffer(A), ka_arg_buffer(B), ka_arg_buffer(C), ka_arg_buffer(ok)};
        ka_range r = ts_range(1, N, 0, 0, 0, 0, 0);
        ts_run(k, &r, args, 4);
        int32_t okh[N];
        ts_read(ok, okh, sizeof okh);
        int64_t a[N], b[N], c[N];
        if (sz == 8) {
            ts_read(A, a, sizeof a), ts_read(B, b, sizeof b), ts_read(C, c, sizeof c);
        } else {
            int32_t t32[N];
            ts_read(A, t32, sizeof t32);
            for (int i = 0; i < N; i++) a[i] = t32[i];
            ts_read(B, t32, sizeof t32);
            for (int i = 0; i < N; i++) b[i] = t32[i];
            ts_read(C, t32, sizeof t32);
            for (int i = 0; i < N; i++) c[i] = t32[i];
        }
        for (int i = 0; i < N; i++) {
            if (okh[i] != 1 || a[i] != 2 * (i + 1) || b[i] != -1 || c[i] != i + 1)
                fail_msg("%s item %d: ok %d, A %lld (want %d), swapped out %lld (want -1), C %lld (want %d)", names[t],
                         i, okh[i], (long long)a[i], 2 * (i + 1), (long long)b[i], (long long)c[i], i + 1);
        }
    }
    /* float load, store, exchange, add's old value */
    float B[N], C[N], A[N];
    for (int i = 0; i < N; i++) B[i] = (float)i + 0.25f, C[i] = -1.0f;
    ka_buffer Ab = ts_buffer(sizeof A, NULL), Bb = ts_buffer(sizeof B, B), Cb = ts_buffer(sizeof C, C);
    ka_buffer ok = ts_buffer(N * 4, NULL);
    ka_arg args[] = {ka_arg_buffer(Ab), ka_arg_buffer(Bb), ka_arg_buffer(Cb), ka_arg_buffer(ok)};
    ka_range r = ts_range(1, N, 0, 0, 0, 0, 0);
    ts_run(ts_kernel(prog_atomic, "atomic_lsx_float", NULL), &r, args, 4);
    int32_t okh[N];
    ts_read(Ab, A, sizeof A), ts_read(Bb, B, sizeof B), ts_read(Cb, C, sizeof C), ts_read(ok, okh, sizeof okh);
    for (int i = 0; i < N; i++)
        assert_true(okh[i] == 1 && A[i] == (float)i + 0.75f && B[i] == -1.0f && C[i] == (float)(i + 1));
}

/* atomics.jl "orderings" and "store/modify/cas/xchg/load": OpenCL C 1.2 has
 * relaxed atomics and fences only, so the sequence is checked for values. */
static void atomic_sequence(void **state) {
    (void)state;
    enum { N = 256 };
    int32_t A[N], B[N], C[N];
    ka_buffer Ab = ts_buffer(sizeof A, NULL), Bb = ts_buffer(sizeof B, NULL), Cb = ts_buffer(sizeof C, NULL);
    ka_arg args[] = {ka_arg_buffer(Ab), ka_arg_buffer(Bb), ka_arg_buffer(Cb)};
    ka_range r = ts_range(1, N, 0, 0, 0, 0, 0);
    ts_run(ts_kernel(prog_atomic, "atomic_sequence", NULL), &r, args, 3);
    ts_read(Ab, A, sizeof A), ts_read(Bb, B, sizeof B), ts_read(Cb, C, sizeof C);
    for (int i = 0; i < N; i++) {
        assert_int_equal(A[i], i + 1 + 3);
        assert_int_equal(B[i], i + 1 + 3);
        assert_int_equal(C[i], i + 1);
    }
}

/* atomics.jl "fences": observers that saw the flag see the data. */
static void atomic_fence_message(void **state) {
    (void)state;
    enum { N = 1024 };
    int32_t obs[N];
    ka_buffer data = ts_buffer(4, NULL), flag = ts_buffer(4, NULL), ob = ts_buffer(sizeof obs, NULL);
    ka_arg args[] = {ka_arg_buffer(data), ka_arg_buffer(flag), ka_arg_buffer(ob)};
    ka_range r = ts_range(1, N, 0, 0, 0, 0, 0);
    ts_run(ts_kernel(prog_atomic, "atomic_fence_message", NULL), &r, args, 3);
    ts_read(ob, obs, sizeof obs);
    for (int i = 1; i < N; i++)
        if (obs[i] != -1 && obs[i] != 42) fail_msg("observer %d saw the flag and data %d", i, obs[i]);
}

/* Local-memory atomics: int add/min/max/and, uint or/cmpxchg, float add. */
static void atomic_local(void **state) {
    (void)state;
    enum { G = 4, W = 64, N = G * W - 10 };
    int32_t out[6 * G];
    float fsum;
    ka_buffer ob = ts_buffer(sizeof out, NULL), fb = ts_buffer(sizeof fsum, NULL);
    ka_arg args[] = {ka_arg_buffer(ob), ka_arg_buffer(fb)};
    ka_range r = ts_range(1, N, 0, 0, W, 0, 0);
    ts_run(ts_kernel(prog_atomic, "atomic_local", NULL), &r, args, 2);
    ts_read(ob, out, sizeof out);
    ts_read(fb, &fsum, sizeof fsum);
    for (int g = 0; g < G; g++) {
        int n = g < G - 1 ? W : W - 10; /* in-range lanes of the group */
        int32_t *o = out + 6 * g;
        int32_t and_want = -1;
        for (int i = 0; i < n; i++) and_want &= ~(1 << (i % 31));
        uint32_t or_want = 0;
        for (int i = 0; i < n; i++) or_want |= 1u << (i % 32);
        if (o[0] != 2 * n || o[1] != 0 || o[2] != n - 1 || o[3] != and_want || (uint32_t)o[4] != or_want ||
            o[5] < 1 || o[5] > n)
            fail_msg("group %d: add %d min %d max %d and %x or %x cmpxchg %d", g, o[0], o[1], o[2], o[3], o[4], o[5]);
    }
    if (fsum != 0.25f * N) fail_msg("local float adds: %g, expected %g", fsum, 0.25f * N);
}

/* examples/histogram.jl: static work-group of 256, inputs random in 1..128
 * (1000 of them), linear 1..1024, and all twos (512). */
static void example_histogram(void **state) {
    (void)state;
    ka_kernel_config c256 = {.workgroup = {256}};
    ka_kernel k = ts_kernel(prog_hist, "histogram", &c256);
    static int32_t in[1024], hist[1024], want[1024];
    unsigned seed = 12345;
    static const struct { int n, max; } cases[] = {{1000, 128}, {1024, 1024}, {512, 2}};
    for (int c = 0; c < 3; c++) {
        int n = cases[c].n, N = cases[c].max;
        for (int i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            in[i] = c == 0 ? 1 + (int)((seed >> 16) % 128) : c == 1 ? i + 1 : 2;
        }
        memset(want, 0, sizeof want);
        for (int i = 0; i < n; i++) want[in[i] - 1]++;
        ka_buffer ib = ts_buffer((size_t)n * 4, in), hb = ts_buffer((size_t)N * 4, NULL);
        ka_arg args[] = {ka_arg_buffer(hb), ka_arg_buffer(ib), ka_arg_u32((uint32_t)N)};
        ka_range r = ts_range(1, (uint64_t)n, 0, 0, 0, 0, 0);
        ts_run(k, &r, args, 3);
        ts_read(hb, hist, (size_t)N * 4);
        for (int i = 0; i < N; i++)
            if (hist[i] != want[i]) fail_msg("histogram case %d: bin %d = %d, expected %d", c, i + 1, hist[i], want[i]);
    }
}

/* groupreduce.jl: x of ones, one group of n in {256, 512, 1024} (as the
 * device allows): the sum over the group is n, over the first 128 or 64
 * lanes 128 or 64. reduce.jl: several groups, random values. */
static void groupreduce_local(void **state) {
    (void)state;
    static const char *names[] = {"groupreduce_short", "groupreduce_int", "groupreduce_long", "groupreduce_float",
                                  "groupreduce_double"};
    static const size_t sizes[] = {2, 4, 8, 4, 8};
    uint8_t *x = ts_alloc(1024 * 8);
    for (int t = 0; t < 5; t++) {
        if (t == 4 && !ts.info->has_double) continue;
        ka_kernel k = ts_kernel(prog_atomic, names[t], NULL);
        ka_kernel_info ki;
        KA_OK_OR_FAIL(ka_kernel_get_info(k, &ki));
        size_t sz = sizes[t];
        for (int i = 0; i < 1024; i++) {
            switch (t) {
            case 0: ((int16_t *)x)[i] = 1; break;
            case 1: ((int32_t *)x)[i] = 1; break;
            case 2: ((int64_t *)x)[i] = 1; break;
            case 3: ((float *)x)[i] = 1; break;
            default: ((double *)x)[i] = 1; break;
            }
        }
        ka_buffer xb = ts_buffer(1024 * sz, x), yb = ts_buffer(16 * 8, NULL);
        for (uint32_t n = 256; n <= 1024 && n <= ki.max_workgroup_size; n *= 2) {
            static const uint32_t limits[] = {UINT32_MAX, 128, 64};
            for (int li = 0; li < 3; li++) {
                ka_arg args[] = {ka_arg_buffer(yb), ka_arg_buffer(xb), ka_arg_u64(n), ka_arg_u32(limits[li]),
                                 ka_arg_local(n * sz)};
                ka_range r = ts_range(1, n, 0, 0, n, 0, 0);
                ts_run(k, &r, args, 5);
                double y;
                uint8_t raw[8];
                ts_read(yb, raw, sz);
                switch (t) {
                case 0: y = *(int16_t *)raw; break;
                case 1: y = *(int32_t *)raw; break;
                case 2: y = (double)*(int64_t *)raw; break;
                case 3: y = *(float *)raw; break;
                default: y = *(double *)raw; break;
                }
                double want = limits[li] < n ? limits[li] : n;
                if (y != want) fail_msg("%s, n = %u, limit %u: %g, expected %g", names[t], n, limits[li], y, want);
            }
        }
    }
    /* reduce.jl: several groups of 64, random ints */
    enum { N = 1000, W = 64 };
    int32_t xi[N], y[16];
    unsigned seed = 7;
    int64_t want[16] = {0};
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        xi[i] = (int32_t)((seed >> 16) % 2001) - 1000;
        want[i / W] += xi[i];
    }
    ka_buffer xb = ts_buffer(sizeof xi, xi), yb = ts_buffer(sizeof y, NULL);
    ka_arg args[] = {ka_arg_buffer(yb), ka_arg_buffer(xb), ka_arg_u64(N), ka_arg_u32(W), ka_arg_local(W * 4)};
    ka_range r = ts_range(1, N, 0, 0, W, 0, 0);
    ts_run(ts_kernel(prog_atomic, "groupreduce_int", NULL), &r, args, 5);
    ts_read(yb, y, sizeof y);
    for (int g = 0; g < (N + W - 1) / W; g++) assert_int_equal(y[g], want[g]);
}

/* hostinterface.jl capability queries: the device info agrees with what the
 * dialect sees when it compiles (KA_HAS_* in the prelude). */
static void device_caps(void **state) {
    (void)state;
    int32_t out[5];
    ka_buffer b = ts_buffer(sizeof out, NULL);
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_range r = ts_range(1, 1, 0, 0, 0, 0, 0);
    ka_kernel k = ts_kernel(prog_atomic, "dialect_caps", NULL);
    ts_run(k, &r, args, 1);
    ts_read(b, out, sizeof out);
    const ka_device_info *i = ts.info;
    print_message("[   INFO   ] %s: sub-group sizes %u (width %u), shuffle %d, atomic64 %d, float atomic add %d, double %d, "
                  "printf %d\n",
                  i->name, i->num_subgroup_sizes, i->subgroup_width, i->has_subgroup_shuffle, i->has_atomic64,
                  i->has_atomic_float_add, i->has_double, i->has_printf);
    assert_int_equal(out[0], i->num_subgroup_sizes > 0);
    assert_int_equal(out[1], i->has_subgroup_shuffle != 0);
    assert_int_equal(out[2], i->has_atomic64 != 0);
    assert_int_equal(out[3], i->has_double != 0);
    assert_int_equal((uint32_t)out[4], i->subgroup_width);
    assert_int_equal(i->subgroup_width, i->num_subgroup_sizes ? i->subgroup_sizes[0] : 0);
    assert_true(i->has_atomic_float_add != 0); /* emulated where not native */
    ka_kernel_info ki;
    KA_OK_OR_FAIL(ka_kernel_get_info(k, &ki));
    assert_int_equal(ki.subgroup_size, i->subgroup_width);
}

/* A required sub-group size the device lacks is a clear error at
 * ka_kernel_get; the sizes it has are accepted and compiled in. Runs
 * everywhere (on PoCL 3.1 every size is refused). */
static void subgroup_config_validation(void **state) {
    (void)state;
    ka_kernel k;
    ka_kernel_config bad = {.subgroup_size = 3};
    KA_EXPECT(KA_ERR_UNSUPPORTED, ka_kernel_get(prog_atomic, "dialect_caps", &bad, &k));
    char want[64];
    snprintf(want, sizeof want, "sub-group size 3 not supported");
    if (!strstr(ka_last_error(), want)) fail_msg("message does not say why: %s", ka_last_error());
    if (!ts.info->num_subgroup_sizes) {
        for (uint32_t s = 8; s <= 64; s *= 2) {
            ka_kernel_config c = {.subgroup_size = s};
            KA_EXPECT(KA_ERR_UNSUPPORTED, ka_kernel_get(prog_atomic, "dialect_caps", &c, &k));
            if (!strstr(ka_last_error(), "sizes: none")) fail_msg("message does not list the sizes: %s", ka_last_error());
        }
        return;
    }
    for (uint32_t s = 0; s < ts.info->num_subgroup_sizes; s++) {
        ka_kernel_config c = {.subgroup_size = ts.info->subgroup_sizes[s]};
        k = ts_kernel(prog_atomic, "dialect_caps", &c);
        ka_kernel_info ki;
        KA_OK_OR_FAIL(ka_kernel_get_info(k, &ki));
        assert_int_equal(ki.subgroup_size, ts.info->subgroup_sizes[s]);
        int32_t out[5];
        ka_buffer b = ts_buffer(sizeof out, NULL);
        ka_arg args[] = {ka_arg_buffer(b)};
        ka_range r = ts_range(1, 1, 0, 0, 0, 0, 0);
        ts_run(k, &r, args, 1);
        ts_read(b, out, sizeof out);
        assert_int_equal((uint32_t)out[4], ts.info->subgroup_sizes[s]);
    }
}

#define NEED_SUBGROUPS()                                                                              \
    do {                                                                                              \
        if (!have_sg)                                                                                 \
            TS_SKIP("%s has no sub-groups (%s, OpenCL C %d.%d)", ts.info->name, ts.info->version,     \
                    ts.info->opencl_c_major, ts.info->opencl_c_minor);                                \
    } while (0)

/* interface.jl "Sub-groups": 2 groups of 2 sub-groups. */
static void subgroup_ids(void **state) {
    (void)state;
    NEED_SUBGROUPS();
    uint32_t sg = ts.info->subgroup_width, wg = 2 * sg, N = 2 * wg;
    ka_kernel_config c = {.subgroup_size = sg};
    ka_kernel k = ts_kernel(prog_sg, "subgroup_ids", &c);
    uint32_t *out = ts_alloc(5 * N * sizeof(uint32_t));
    ka_buffer b = ts_buffer(5 * N * sizeof(uint32_t), NULL);
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_range r = ts_range(1, N, 0, 0, wg, 0, 0);
    ts_run(k, &r, args, 1);
    ts_read(b, out, 5 * N * sizeof(uint32_t));
    for (uint32_t i = 0; i < N; i++) {
        uint32_t *o = out + 5 * i;
        if (o[0] != sg || o[1] != sg || o[2] != 2 || o[3] != (i % wg) / sg || o[4] != i % sg)
            fail_msg("item %u: size %u max %u count %u id %u local %u (sub-group %u, group %u)", i, o[0], o[1], o[2],
                     o[3], o[4], sg, wg);
    }
}

/* tiles.jl: broadcast, reduce, any, all over each sub-group. */
static void subgroup_ops(void **state) {
    (void)state;
    NEED_SUBGROUPS();
    uint32_t sg = ts.info->subgroup_width, wg = 2 * sg, N = 5 * sg;
    uint32_t Npad = (uint32_t)ts_cld(N, wg) * wg;
    ka_kernel_config c = {.subgroup_size = sg};
    ka_kernel k = ts_kernel(prog_sg, "subgroup_ops", &c);
    int32_t *x = ts_alloc(Npad * 4), *out = ts_alloc(8 * Npad * 4);
    unsigned seed = 99;
    for (uint32_t i = 0; i < Npad; i++) seed = seed * 1103515245u + 12345u, x[i] = 1 + (int32_t)((seed >> 16) % 100);
    x[1] = 3;
    ka_buffer xb = ts_buffer(Npad * 4, x), ob = ts_buffer(8 * Npad * 4, NULL);
    ka_arg args[] = {ka_arg_buffer(ob), ka_arg_buffer(xb)};
    ka_range r = ts_range(1, Npad, 0, 0, wg, 0, 0);
    ts_run(k, &r, args, 2);
    ts_read(ob, out, 8 * Npad * 4);
    for (uint32_t i = 0; i < Npad; i++) {
        uint32_t g0 = i / sg * sg;
        int32_t sum = 0, mn = INT32_MAX, mx = INT32_MIN, any3 = 0;
        for (uint32_t j = g0; j < g0 + sg; j++) {
            sum += x[j], mn = x[j] < mn ? x[j] : mn, mx = x[j] > mx ? x[j] : mx;
            any3 |= x[j] == 3;
        }
        int32_t *o = out + 8 * i;
        if (o[0] != x[g0] || o[1] != sum || o[2] != mn || o[3] != mx || (o[4] != 0) != any3 || o[5] == 0 ||
            o[6] != (int32_t)(i % sg) || o[7] != (int32_t)((i % wg) / sg))
            fail_msg("item %u: broadcast %d reduce %d/%d/%d any %d all %d lane %d id %d", i, o[0], o[1], o[2], o[3],
                     o[4], o[5], o[6], o[7]);
    }
}

/* interface.jl "shfl_down" (sum by shuffle-down steps, per type) and tiles.jl's
 * shuffles (lane + 1, xor 1, down 1, up 1; lanes that would read outside the
 * sub-group are not checked: undefined in OpenCL). */
static void subgroup_shuffle_reduce(void **state) {
    (void)state;
    NEED_SUBGROUPS();
    if (!ts.info->has_subgroup_shuffle) TS_SKIP("%s has sub-groups without shuffles", ts.info->name);
    uint32_t sg = ts.info->subgroup_width;
    ka_kernel_config c = {.subgroup_size = sg};
    static const char *names[] = {"subgroup_shfl_down_int", "subgroup_shfl_down_uint", "subgroup_shfl_down_float",
                                  "subgroup_shfl_down_double", "subgroup_shfl_down_long"};
    static const size_t sizes[] = {4, 4, 4, 8, 8};
    uint8_t *a = ts_alloc(4 * sg * 8), *bh = ts_alloc(4 * 8);
    unsigned seed = 5;
    for (int t = 0; t < 5; t++) {
        if (t == 3 && !ts.info->has_double) continue;
        ka_kernel k = ts_kernel(prog_sg, names[t], &c);
        double want[4] = {0};
        for (uint32_t i = 0; i < 4 * sg; i++) {
            seed = seed * 1103515245u + 12345u;
            int v = (int)((seed >> 16) & 1);
            want[i / sg] += v;
            switch (t) {
            case 0: ((int32_t *)a)[i] = v; break;
            case 1: ((uint32_t *)a)[i] = (uint32_t)v; break;
            case 2: ((float *)a)[i] = (float)v; break;
            case 3: ((double *)a)[i] = v; break;
            default: ((int64_t *)a)[i] = v; break;
            }
        }
        ka_buffer ab = ts_buffer(4 * sg * sizes[t], a), bb = ts_buffer(4 * sizes[t], NULL);
        ka_arg args[] = {ka_arg_buffer(bb), ka_arg_buffer(ab), ka_arg_u32(sg)};
        ka_range r = ts_range(1, 4 * sg, 0, 0, sg, 0, 0);
        ts_run(k, &r, args, 3);
        ts_read(bb, bh, 4 * sizes[t]);
        for (int g = 0; g < 4; g++) {
            double got = t == 0 ? ((int32_t *)bh)[g] : t == 1 ? ((uint32_t *)bh)[g] : t == 2 ? ((float *)bh)[g]
                       : t == 3 ? ((double *)bh)[g] : (double)((int64_t *)bh)[g];
            if (got != want[g]) fail_msg("%s sub-group %d: %g, expected %g", names[t], g, got, want[g]);
        }
    }
    uint32_t N = 4 * sg;
    int32_t *x = ts_alloc(N * 4), *out = ts_alloc(4 * N * 4);
    for (uint32_t i = 0; i < N; i++) x[i] = (int32_t)(i * 7 + 1);
    ka_buffer xb = ts_buffer(N * 4, x), ob = ts_buffer(4 * N * 4, NULL);
    ka_arg args[] = {ka_arg_buffer(ob), ka_arg_buffer(xb)};
    ka_range r = ts_range(1, N, 0, 0, 2 * sg, 0, 0);
    ts_run(ts_kernel(prog_sg, "subgroup_shuffles", &c), &r, args, 2);
    ts_read(ob, out, 4 * N * 4);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t g0 = i / sg * sg, lane = i % sg;
        int32_t *o = out + 4 * i;
        assert_int_equal(o[0], x[g0 + (lane + 1) % sg]);
        assert_int_equal(o[1], x[g0 + (lane ^ 1u)]);
        if (lane + 1 < sg) assert_int_equal(o[2], x[i + 1]);
        if (lane > 0) assert_int_equal(o[3], x[i - 1]);
    }
}

int ts_group_atomics(void) {
    const struct CMUnitTest tests[] = {
        TS_TEST(device_caps),          TS_TEST(atomic_add_ints),        TS_TEST(atomic_add_float),
        TS_TEST(atomic_minmax),        TS_TEST(atomic_bitwise),         TS_TEST(atomic_sub_and_returns),
        TS_TEST(atomic_load_store_swap), TS_TEST(atomic_sequence),      TS_TEST(atomic_fence_message),
        TS_TEST(atomic_local),         TS_TEST(example_histogram),      TS_TEST(groupreduce_local),
        TS_TEST(subgroup_config_validation), TS_TEST(subgroup_ids),     TS_TEST(subgroup_ops),
        TS_TEST(subgroup_shuffle_reduce),
    };
    return cmocka_run_group_tests_name("ka_testsuite_atomics", tests, group_setup, group_teardown);
}
