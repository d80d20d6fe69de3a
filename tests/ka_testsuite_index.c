/* Ported KA testsets on indices and launch geometry: test.jl indextest,
 * launch.jl, intrinsics.jl, interface.jl launch parameters, nditeration.jl,
 * barriers.jl, test.jl partition / zero iteration space / return / @context.
 * The mapping of every test is listed in ka_testsuite.c. */
#include "ka_testsuite.h"

#include <stdio.h>

/* launch.jl's launch_indices!: every index flavour of a work-item, 24 fields
 * per in-range work-item, at its global linear index. */
#define LAUNCH_INDICES_SRC                                                                  \
    "#define TS_FIELDS 24\n"                                                                \
    "KA_KERNEL(launch_indices, KA_GLOBAL long *out) {\n"                                    \
    "    if (!ka_in_range()) return;\n"                                                     \
    "    KA_GLOBAL long *o = out + TS_FIELDS * ka_global_linear_id();\n"                    \
    "    o[0] = ka_global_linear_id();\n"                                                   \
    "    o[4] = ka_group_linear_id();\n"                                                    \
    "    o[8] = ka_local_linear_id();\n"                                                    \
    "    for (uint d = 0; d < 3; d++) {\n"                                                  \
    "        o[1 + d] = ka_global_id(d);\n"                                                 \
    "        o[5 + d] = ka_group_id(d);\n"                                                  \
    "        o[9 + d] = ka_local_id(d);\n"                                                  \
    "        o[12 + d] = ka_group_size(d);\n"                                               \
    "        o[15 + d] = ka_num_groups(d);\n"                                               \
    "        o[18 + d] = ka_ndrange(d);\n"                                                  \
    "    }\n"                                                                               \
    "    o[21] = ka_ndims();\n"                                                             \
    "    o[22] = ka_group_linear_size();\n"                                                 \
    "    o[23] = ka_ndrange_linear();\n"                                                    \
    "}\n"                                                                                   \
    "KA_KERNEL(index_linear_global, KA_GLOBAL long *A) {\n"                                 \
    "    if (ka_in_range()) A[ka_global_linear_id()] = ka_global_linear_id();\n"            \
    "}\n"                                                                                   \
    "KA_KERNEL(index_linear_local, KA_GLOBAL long *A) {\n"                                  \
    "    if (ka_in_range()) A[ka_global_linear_id()] = ka_local_linear_id();\n"             \
    "}\n"                                                                                   \
    "KA_KERNEL(index_linear_group, KA_GLOBAL long *A) {\n"                                  \
    "    if (ka_in_range()) A[ka_global_linear_id()] = ka_group_linear_id();\n"             \
    "}\n"

/* Kernels of the dynamic program (never fetched with a static configuration). */
static const char *index_src =
    LAUNCH_INDICES_SRC
    "KA_KERNEL(index_cartesian_global, KA_GLOBAL long *A) {\n"
    "    if (!ka_in_range()) return;\n"
    "    ka_size_t I = ka_global_linear_id();\n"
    "    for (uint d = 0; d < 3; d++) A[3 * I + d] = ka_global_id(d);\n"
    "}\n"
    "KA_KERNEL(index_cartesian_local, KA_GLOBAL long *A) {\n"
    "    if (!ka_in_range()) return;\n"
    "    ka_size_t I = ka_global_linear_id();\n"
    "    for (uint d = 0; d < 3; d++) A[3 * I + d] = ka_local_id(d);\n"
    "}\n"
    "KA_KERNEL(index_cartesian_group, KA_GLOBAL long *A) {\n"
    "    if (!ka_in_range()) return;\n"
    "    ka_size_t I = ka_global_linear_id();\n"
    "    for (uint d = 0; d < 3; d++) A[3 * I + d] = ka_group_id(d);\n"
    "}\n"
    /* launch.jl's launch_unsafe!: the global index from group and local ones */
    "KA_KERNEL(launch_unsafe, KA_GLOBAL long *A) {\n"
    "    ka_size_t I[3];\n"
    "    bool in = true;\n"
    "    for (uint d = 0; d < 3; d++) {\n"
    "        I[d] = ka_group_id(d) * ka_group_size(d) + ka_local_id(d);\n"
    "        in = in && I[d] < ka_ndrange(d);\n"
    "    }\n"
    "    if (in) {\n"
    "        ka_size_t L = I[0] + ka_ndrange(0) * (I[1] + ka_ndrange(1) * I[2]);\n"
    "        A[L] = (long)L + 1;\n"
    "    }\n"
    "}\n"
    "KA_KERNEL_NOARGS(kernel_empty) {}\n"
    /* test.jl's gpu_return_kernel!: half the work-items return early */
    "KA_KERNEL(return_kernel, KA_GLOBAL long *x, ulong n) {\n"
    "    ka_size_t i = ka_global_id(0);\n"
    "    if (i < n / 2) {\n"
    "        x[i] = 1;\n"
    "        return;\n"
    "    }\n"
    "    if (i < n) x[i] += 0; /* the rest read and keep their value */\n"
    "}\n"
    /* test.jl's context_kernel: a helper gets the kernel's context */
    "KA_DEVICE_FN void ctx_helper(KA_CTX_PARAM, KA_GLOBAL long *a) {\n"
    "    if (ka_in_range()) a[ka_global_linear_id()] = 1 + (long)ka_ndrange_linear();\n"
    "}\n"
    "KA_KERNEL(context_kernel, KA_GLOBAL long *a) { ctx_helper(KA_CTX, a); }\n"
    /* launch.jl's custom iteration space: one work-item per listed index */
    "KA_KERNEL(launch_listed, KA_GLOBAL long *visits, KA_GLOBAL long *position, KA_CONST(int) list) {\n"
    "    if (!ka_in_range()) return;\n"
    "    ka_size_t p = ka_global_linear_id();\n"
    "    int idx = list[p];\n"
    "    visits[idx] += 1;\n"
    "    position[idx] = (long)p + 1;\n"
    "}\n"
    /* barriers.jl: launched over 13 work-items in groups of 8 */
    "KA_KERNEL(trailing_uniform, KA_GLOBAL long *A) {\n"
    "    ka_size_t i = ka_global_id(0);\n"
    "    int remaining = 3, iterations = 0;\n"
    "    while (remaining > 0 && iterations < 10) {\n"
    "        iterations += 1;\n"
    "        if (ka_in_range()) A[i] += 1;\n"
    "        ka_barrier();\n"
    "        remaining -= 1;\n"
    "    }\n"
    "}\n"
    "KA_KERNEL(branches, KA_GLOBAL long *A, int flag) {\n"
    "    ka_size_t i = ka_global_id(0);\n"
    "    if (flag == 1) {\n"
    "        ka_barrier();\n"
    "        if (ka_in_range()) A[i] = 1;\n"
    "    } else if (flag == 2) {\n"
    "        if (ka_in_range()) A[i] = 2;\n"
    "    } else {\n"
    "        if (ka_in_range()) A[i] = 3;\n"
    "    }\n"
    "}\n"
    /* the same with the barrier arm ended by a second barrier: the form
     * docs/KERNELS.md recommends while PoCL 3.x miscompiles the one above */
    "KA_KERNEL(branches_closed, KA_GLOBAL long *A, int flag) {\n"
    "    ka_size_t i = ka_global_id(0);\n"
    "    if (flag == 1) {\n"
    "        ka_barrier();\n"
    "        if (ka_in_range()) A[i] = 1;\n"
    "        ka_barrier();\n"
    "    } else if (flag == 2) {\n"
    "        if (ka_in_range()) A[i] = 2;\n"
    "    } else {\n"
    "        if (ka_in_range()) A[i] = 3;\n"
    "    }\n"
    "}\n"
    "KA_KERNEL(qualified, KA_GLOBAL long *A) {\n"
    "    ka_size_t i = ka_global_id(0), li = ka_local_id(0);\n"
    "    KA_LOCAL long tile[8];\n"
    "    for (int n = 0; n < 2; n++) {\n"
    "        tile[li] = (long)i + 1;\n"
    "        ka_barrier();\n"
    "        if (ka_in_range()) A[i] += tile[li];\n"
    "        ka_barrier();\n"
    "    }\n"
    "}\n";

/* Kernels fetched with static configurations: a small program, since every
 * static variant is one more build of its whole source. */
static const char *static_src =
    LAUNCH_INDICES_SRC
    /* launch.jl's launch_sync!: padded lanes reach the barrier too */
    "#ifdef KA_STATIC_WG0\n"
    "KA_KERNEL(launch_sync, KA_GLOBAL long *A) {\n"
    "    ka_size_t I = ka_global_linear_id(), i = ka_local_linear_id();\n"
    "    KA_LOCAL long lmem[KA_STATIC_WG_LINEAR];\n"
    "    lmem[i] = (long)I + 1;\n"
    "    ka_barrier();\n"
    "    if (ka_in_range()) A[I] = lmem[KA_STATIC_WG_LINEAR - 1 - i] + 1000 * (long)i;\n"
    "}\n"
    "#endif\n"
    /* test.jl's partition: the blocks a launch is cut into */
    "KA_KERNEL(partition_probe, KA_GLOBAL long *out) {\n"
    "    if (!ka_in_range()) return;\n"
    "    out[3 + ka_global_id(0)] = 1;\n"
    "    if (ka_global_id(0) == 0) {\n"
    "        out[0] = ka_num_groups(0);\n"
    "        out[1] = ka_group_size(0);\n"
    "        out[2] = ka_ndrange(0);\n"
    "    }\n"
    "}\n"
    /* nditeration.jl: block i and work-item j expand to the global index, blocks
     * and work-items numbered dimension 0 first */
    "KA_KERNEL(nditer_expand, KA_GLOBAL long *out) {\n"
    "    if (!ka_in_range()) return;\n"
    "    ka_size_t b = ka_group_linear_id(), j = ka_local_linear_id();\n"
    "    ka_size_t G0 = ka_num_groups(0), G1 = ka_num_groups(1);\n"
    "    ka_size_t W0 = ka_group_size(0), W1 = ka_group_size(1);\n"
    "    ka_size_t blk[3] = {b % G0, (b / G0) % G1, b / (G0 * G1)};\n"
    "    ka_size_t itm[3] = {j % W0, (j / W0) % W1, j / (W0 * W1)};\n"
    "    bool ok = true;\n"
    "    for (uint d = 0; d < 3; d++) ok = ok && blk[d] * ka_group_size(d) + itm[d] == ka_global_id(d);\n"
    "    out[ka_global_linear_id()] = ok ? 1 : 2;\n"
    "}\n";

static ka_program prog_index, prog_static, prog_many;

static int group_setup(void **state) {
    (void)state;
    prog_index = ts_build(index_src);
    prog_static = ts_build(static_src);
    /* launch.jl's launch_many!: 40 scalar arguments after the array */
    char src[4096];
    int n = snprintf(src, sizeof src, "KA_KERNEL(launch_many, KA_GLOBAL long *A");
    for (int i = 1; i <= 40; i++) n += snprintf(src + n, sizeof src - (size_t)n, ", long x%d", i);
    n += snprintf(src + n, sizeof src - (size_t)n, ") {\n    if (ka_in_range()) A[ka_global_linear_id()] = 0");
    for (int i = 1; i <= 40; i++) n += snprintf(src + n, sizeof src - (size_t)n, " + x%d", i);
    snprintf(src + n, sizeof src - (size_t)n, ";\n}\n");
    prog_many = ts_build(src);
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    ka_program_release(prog_index);
    ka_program_release(prog_static);
    ka_program_release(prog_many);
    return 0;
}

/* ---- launch.jl's check_indices ------------------------------------------ */
#define NF 24
#define GUARD 64 /* items of sentinel after the range: padded lanes must not write */

/* Launches launch_indices over ext (dims dimensions) with the given work-group
 * (zeros: chosen) and checks every field of every work-item against the
 * layout libka defines: groups and items numbered dimension 0 first, global =
 * group * groupsize + local. */
static void check_layout(ka_kernel k, uint32_t dims, const uint64_t ext_in[3], const uint32_t wg_in[3],
                         const char *what) {
    uint64_t ext[3] = {1, 1, 1};
    for (uint32_t d = 0; d < dims; d++) ext[d] = ext_in[d];
    uint64_t n = ext[0] * ext[1] * ext[2];
    size_t bytes = (size_t)(n + GUARD) * NF * sizeof(int64_t);
    int64_t minus1 = -1;
    ka_buffer b = ts_buffer_fill(bytes, &minus1, sizeof minus1);
    ka_range r = {dims, {ext_in[0], ext_in[1], ext_in[2]}, {wg_in[0], wg_in[1], wg_in[2]}, 0};
    ka_arg args[] = {ka_arg_buffer(b)};
    ts_run(k, &r, args, 1);
    int64_t *o = ts_alloc(bytes);
    ts_read(b, o, bytes);
    int64_t w[3] = {o[12], o[13], o[14]};
    uint64_t G[3];
    for (int d = 0; d < 3; d++) {
        if (w[d] < 1 || (d >= (int)dims && w[d] != 1))
            fail_msg("%s: work-group size[%d] = %lld", what, d, (long long)w[d]);
        if (d < (int)dims && wg_in[d] && w[d] != wg_in[d])
            fail_msg("%s: work-group size[%d] = %lld, launched with %u", what, d, (long long)w[d], wg_in[d]);
        G[d] = ts_cld(ext[d], (uint64_t)w[d]);
    }
    if ((uint64_t)(w[0] * w[1] * w[2]) > ts.info->max_workgroup_size)
        fail_msg("%s: chosen work-group %lldx%lldx%lld exceeds the device's %u", what, (long long)w[0], (long long)w[1],
                 (long long)w[2], ts.info->max_workgroup_size);
    for (uint64_t i2 = 0; i2 < ext[2]; i2++)
        for (uint64_t i1 = 0; i1 < ext[1]; i1++)
            for (uint64_t i0 = 0; i0 < ext[0]; i0++) {
                uint64_t J[3] = {i0, i1, i2}, g[3], l[3];
                for (int d = 0; d < 3; d++) g[d] = J[d] / (uint64_t)w[d], l[d] = J[d] % (uint64_t)w[d];
                uint64_t GL = i0 + ext[0] * (i1 + ext[1] * i2);
                int64_t want[NF] = {
                    (int64_t)GL, (int64_t)i0, (int64_t)i1, (int64_t)i2,
                    (int64_t)(g[0] + G[0] * (g[1] + G[1] * g[2])), (int64_t)g[0], (int64_t)g[1], (int64_t)g[2],
                    (int64_t)(l[0] + (uint64_t)w[0] * (l[1] + (uint64_t)w[1] * l[2])), (int64_t)l[0], (int64_t)l[1],
                    (int64_t)l[2], w[0], w[1], w[2], (int64_t)G[0], (int64_t)G[1], (int64_t)G[2],
                    (int64_t)ext[0], (int64_t)ext[1], (int64_t)ext[2], dims, w[0] * w[1] * w[2], (int64_t)n};
                static const char *names[NF] = {
                    "global linear", "global[0]", "global[1]", "global[2]", "group linear", "group[0]",
                    "group[1]", "group[2]", "local linear", "local[0]", "local[1]", "local[2]",
                    "group size[0]", "group size[1]", "group size[2]", "num groups[0]", "num groups[1]",
                    "num groups[2]", "ndrange[0]", "ndrange[1]", "ndrange[2]", "ndims",
                    "group linear size", "ndrange linear"};
                const int64_t *got = o + GL * NF;
                for (int f = 0; f < NF; f++)
                    if (got[f] != want[f])
                        fail_msg("%s: item (%llu,%llu,%llu) of (%llu,%llu,%llu), groups %lldx%lldx%lld: %s = %lld, "
                                 "expected %lld",
                                 what, (unsigned long long)i0, (unsigned long long)i1, (unsigned long long)i2,
                                 (unsigned long long)ext[0], (unsigned long long)ext[1], (unsigned long long)ext[2],
                                 (long long)w[0], (long long)w[1], (long long)w[2], names[f], (long long)got[f],
                                 (long long)want[f]);
            }
    for (uint64_t i = n * NF; i < (n + GUARD) * NF; i++)
        if (o[i] != -1) fail_msg("%s: a padded lane wrote past the range (word %llu)", what, (unsigned long long)i);
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

/* launch.jl "index layout": shapes x work-group sizes (nothing, 4, (2,3),
 * (4,1,2)); a work-group with fewer dimensions than the range is padded with
 * 1 as KA does. intrinsics.jl/interface.jl's sizes and group counts are
 * fields of the same check. */
static void index_layout_dynamic(void **state) {
    (void)state;
    ka_kernel k = ts_kernel(prog_index, "launch_indices", NULL);
    static const struct { uint32_t dims; uint64_t ext[3]; } shapes[] = {
        {1, {7, 0, 0}}, {1, {37, 0, 0}}, {1, {16, 0, 0}}, {2, {5, 7, 0}}, {2, {33, 3, 0}}, {3, {3, 5, 7}},
    };
    static const struct { uint32_t dims; uint32_t wg[3]; } wgs[] = {
        {0, {0, 0, 0}}, {1, {4, 0, 0}}, {2, {2, 3, 0}}, {3, {4, 1, 2}},
    };
    char what[128];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t w = 0; w < sizeof wgs / sizeof wgs[0]; w++) {
            if (wgs[w].dims > shapes[s].dims) continue;
            uint32_t wg[3] = {0, 0, 0};
            if (wgs[w].dims)
                for (uint32_t d = 0; d < shapes[s].dims; d++) wg[d] = d < wgs[w].dims ? wgs[w].wg[d] : 1;
            snprintf(what, sizeof what, "shape %u-D (%llu,%llu,%llu), workgroup (%u,%u,%u)", shapes[s].dims,
                     (unsigned long long)shapes[s].ext[0], (unsigned long long)shapes[s].ext[1],
                     (unsigned long long)shapes[s].ext[2], wg[0], wg[1], wg[2]);
            check_layout(k, shapes[s].dims, shapes[s].ext, wg, what);
        }
    /* intrinsics.jl: 16 items in groups of 4 */
    check_layout(k, 1, (uint64_t[3]){16, 0, 0}, (uint32_t[3]){4, 0, 0}, "intrinsics 16 by 4");
    /* interface.jl launch parameters: 2 groups of 2, (2,2)x(2,2), (2,2,2)x(2,2,2) */
    check_layout(k, 1, (uint64_t[3]){4, 0, 0}, (uint32_t[3]){2, 0, 0}, "interface 1-D");
    check_layout(k, 2, (uint64_t[3]){4, 4, 0}, (uint32_t[3]){2, 2, 0}, "interface 2-D");
    check_layout(k, 3, (uint64_t[3]){4, 4, 4}, (uint32_t[3]){2, 2, 2}, "interface 3-D");
}

/* launch.jl "static workgroupsize" and "static ndrange". */
static void index_layout_static(void **state) {
    (void)state;
    ka_kernel_config c42 = {.workgroup = {4, 2}};
    ka_kernel k = ts_kernel(prog_static, "launch_indices", &c42);
    check_layout(k, 2, (uint64_t[3]){9, 5, 0}, (uint32_t[3]){0, 0, 0}, "static workgroup (4,2), range (9,5)");
    ka_kernel_config c8 = {.workgroup = {8}};
    k = ts_kernel(prog_static, "launch_indices", &c8);
    check_layout(k, 3, (uint64_t[3]){9, 5, 3}, (uint32_t[3]){0, 0, 0}, "static workgroup 8, range (9,5,3)");
    /* a launch may repeat the static work-group */
    check_layout(k, 1, (uint64_t[3]){9, 0, 0}, (uint32_t[3]){8, 0, 0}, "static workgroup 8 given again");

    ka_kernel_config c42n = {.workgroup = {4, 2}, .ndrange = {9, 5}};
    k = ts_kernel(prog_static, "launch_indices", &c42n);
    check_layout(k, 2, (uint64_t[3]){9, 5, 0}, (uint32_t[3]){0, 0, 0}, "static workgroup (4,2) and ndrange (9,5)");

    /* a static ndrange over more work-items than fit a work-group, work-group chosen */
    uint64_t n = (uint64_t)ts.info->max_workgroup_size + 1;
    ka_kernel_config cn = {.ndrange = {n, 3}};
    k = ts_kernel(prog_static, "launch_indices", &cn);
    check_layout(k, 2, (uint64_t[3]){n, 3, 0}, (uint32_t[3]){0, 0, 0}, "static ndrange (max+1, 3)");
    /* a given ndrange has to agree with the static one */
    ka_buffer b = ts_buffer(64, NULL);
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_range bad = ts_range(2, n, 2, 0, 0, 0, 0);
    KA_EXPECT(KA_ERR_INVALID_RANGE, ka_launch(ts.q, k, &bad, args, 1, NULL));
    /* and a given work-group with the static one */
    k = ts_kernel(prog_static, "launch_indices", &c42);
    ka_range badwg = ts_range(2, 9, 5, 0, 4, 4, 0);
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP, ka_launch(ts.q, k, &badwg, args, 1, NULL));
}

/* test.jl "indextest", as KA writes it (1-based there, 0-based here). */
static void indextest_linear(void **state) {
    (void)state;
    ka_kernel lg = ts_kernel(prog_index, "index_linear_global", NULL);
    ka_kernel ll = ts_kernel(prog_index, "index_linear_local", NULL);
    int64_t A[256];
    /* 16x16 array, ndrange length(A), work-group 8: A == LinearIndices(A) */
    ka_buffer b = ts_buffer(sizeof A, NULL);
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_range r = ts_range(1, 256, 0, 0, 8, 0, 0);
    ts_run(lg, &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int i = 0; i < 256; i++) assert_int_equal(A[i], i);
    /* 8 items, groups of 8: local 0..7 */
    r = ts_range(1, 8, 0, 0, 8, 0, 0);
    ts_run(ll, &r, args, 1);
    ts_read(b, A, 8 * sizeof *A);
    for (int i = 0; i < 8; i++) assert_int_equal(A[i], i);
    /* 16 items (a 16 vector, and an 8x2 array): two groups of 0..7 */
    r = ts_range(1, 16, 0, 0, 8, 0, 0);
    ts_run(ll, &r, args, 1);
    ts_read(b, A, 16 * sizeof *A);
    for (int i = 0; i < 16; i++) assert_int_equal(A[i], i % 8);
}

static void indextest_cartesian(void **state) {
    (void)state;
    static int64_t A[3 * 256];
    ka_buffer b = ts_buffer(sizeof A, NULL);
    ka_arg args[] = {ka_arg_buffer(b)};
    /* 16x16 ndrange, work-group (8,1): A == CartesianIndices(A) */
    ka_kernel cg = ts_kernel(prog_index, "index_cartesian_global", NULL);
    ka_range r = ts_range(2, 16, 16, 0, 8, 1, 0);
    ts_run(cg, &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int j = 0; j < 16; j++)
        for (int i = 0; i < 16; i++) {
            int64_t *c = A + 3 * (i + 16 * j);
            if (c[0] != i || c[1] != j || c[2] != 0)
                fail_msg("cartesian global (%d,%d): got (%lld,%lld,%lld)", i, j, (long long)c[0], (long long)c[1],
                         (long long)c[2]);
        }
    /* the same array as a 1-D ndrange: CartesianIndices((256,)) */
    r = ts_range(1, 256, 0, 0, 8, 0, 0);
    ts_run(cg, &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int i = 0; i < 256; i++) assert_true(A[3 * i] == i && A[3 * i + 1] == 0 && A[3 * i + 2] == 0);
    /* Local and Group, Cartesian (KA's TODO): 16x16 in groups of (8,4) */
    ka_kernel cl = ts_kernel(prog_index, "index_cartesian_local", NULL);
    ka_kernel cgr = ts_kernel(prog_index, "index_cartesian_group", NULL);
    r = ts_range(2, 16, 16, 0, 8, 4, 0);
    ts_run(cl, &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int j = 0; j < 16; j++)
        for (int i = 0; i < 16; i++) {
            int64_t *c = A + 3 * (i + 16 * j);
            assert_true(c[0] == i % 8 && c[1] == j % 4 && c[2] == 0);
        }
    ts_run(cgr, &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int j = 0; j < 16; j++)
        for (int i = 0; i < 16; i++) {
            int64_t *c = A + 3 * (i + 16 * j);
            assert_true(c[0] == i / 8 && c[1] == j / 4 && c[2] == 0);
        }
}

/* "Non-multiples of the workgroupsize": 7x7 with 8, 5 with 8, linear and per
 * dimension, for Global, Local and Group. Out-of-range lanes must not write. */
static void indextest_not_multiple(void **state) {
    (void)state;
    static int64_t A[3 * 64 + 16];
    int64_t minus1 = -1;
    ka_buffer b = ts_buffer_fill(sizeof A, &minus1, sizeof minus1);
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_kernel lg = ts_kernel(prog_index, "index_linear_global", NULL);
    ka_kernel ll = ts_kernel(prog_index, "index_linear_local", NULL);
    ka_kernel lgr = ts_kernel(prog_index, "index_linear_group", NULL);
    /* 7x7 as a 1-D range of 49 in groups of 8 */
    ka_range r = ts_range(1, 49, 0, 0, 8, 0, 0);
    ts_run(lg, &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int i = 0; i < 49; i++) assert_int_equal(A[i], i);
    for (int i = 49; i < 64; i++) assert_int_equal(A[i], -1);
    ts_run(lgr, &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int i = 0; i < 49; i++) assert_int_equal(A[i], i / 8);
    /* 5 items in a group of 8 */
    KA_OK_OR_FAIL(ka_buffer_fill(ts.q, b, 0, &minus1, sizeof minus1, sizeof A, NULL));
    r = ts_range(1, 5, 0, 0, 8, 0, 0);
    ts_run(ll, &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int i = 0; i < 5; i++) assert_int_equal(A[i], i);
    for (int i = 5; i < 64; i++) assert_int_equal(A[i], -1);
    /* 7x7 as a 2-D range in groups of 8x8: one partial group */
    r = ts_range(2, 7, 7, 0, 8, 8, 0);
    ts_run(lg, &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int i = 0; i < 49; i++) assert_int_equal(A[i], i);
    for (int i = 49; i < 64; i++) assert_int_equal(A[i], -1);
    ts_run(ll, &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int j = 0; j < 7; j++)
        for (int i = 0; i < 7; i++) assert_int_equal(A[i + 7 * j], i + 8 * j);
    ka_kernel cl = ts_kernel(prog_index, "index_cartesian_local", NULL);
    ts_run(cl, &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int j = 0; j < 7; j++)
        for (int i = 0; i < 7; i++) assert_true(A[3 * (i + 7 * j)] == i && A[3 * (i + 7 * j) + 1] == j);
    for (int i = 3 * 49; i < 3 * 64; i++) assert_int_equal(A[i], -1);
}

/* indextest with static work-groups: the same answers from compiled-in sizes. */
static void indextest_static(void **state) {
    (void)state;
    ka_kernel_config c8 = {.workgroup = {8}};
    ka_kernel lg = ts_kernel(prog_static, "index_linear_global", &c8);
    ka_kernel ll = ts_kernel(prog_static, "index_linear_local", &c8);
    ka_kernel lgr = ts_kernel(prog_static, "index_linear_group", &c8);
    int64_t A[64];
    int64_t minus1 = -1;
    ka_buffer b = ts_buffer_fill(sizeof A, &minus1, sizeof minus1);
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_range r = ts_range(1, 49, 0, 0, 0, 0, 0);
    ts_run(lg, &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int i = 0; i < 49; i++) assert_int_equal(A[i], i);
    for (int i = 49; i < 64; i++) assert_int_equal(A[i], -1);
    ts_run(ll, &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int i = 0; i < 49; i++) assert_int_equal(A[i], i % 8);
    ts_run(lgr, &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int i = 0; i < 49; i++) assert_int_equal(A[i], i / 8);
    r = ts_range(1, 5, 0, 0, 0, 0, 0);
    ts_run(ll, &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int i = 0; i < 5; i++) assert_int_equal(A[i], i);
}

/* launch.jl "unsafe_indices": global index computed from group and local ids. */
static void unsafe_indices(void **state) {
    (void)state;
    ka_kernel k = ts_kernel(prog_index, "launch_unsafe", NULL);
    static const struct { uint32_t dims; uint64_t ext[3]; uint32_t wg[3]; } cases[] = {
        {1, {37, 1, 1}, {8, 0, 0}}, {2, {33, 7, 1}, {8, 4, 0}}, {3, {9, 5, 3}, {4, 2, 2}}, {2, {9, 5, 1}, {0, 0, 0}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint64_t n = cases[c].ext[0] * cases[c].ext[1] * cases[c].ext[2];
        ka_buffer b = ts_buffer(n * sizeof(int64_t), NULL);
        ka_arg args[] = {ka_arg_buffer(b)};
        ka_range r = {cases[c].dims, {cases[c].ext[0], cases[c].ext[1], cases[c].ext[2]},
                      {cases[c].wg[0], cases[c].wg[1], cases[c].wg[2]}, 0};
        ts_run(k, &r, args, 1);
        int64_t *A = ts_alloc(n * sizeof(int64_t));
        ts_read(b, A, n * sizeof(int64_t));
        for (uint64_t i = 0; i < n; i++)
            if (A[i] != (int64_t)i + 1) fail_msg("case %zu: A[%llu] = %lld", c, (unsigned long long)i, (long long)A[i]);
    }
}

/* test.jl "Zero iteration space" and launch.jl "empty ndrange": nothing runs,
 * the event is complete at once. */
static void zero_iteration_space(void **state) {
    (void)state;
    ka_kernel e = ts_kernel(prog_index, "kernel_empty", NULL);
    ka_range one = ts_range(1, 1, 0, 0, 1, 0, 0), zero = ts_range(1, 0, 0, 0, 1, 0, 0);
    ts_run(e, &one, NULL, 0);
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(ts.q, e, &zero, NULL, 0, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, 0)); /* complete without waiting */
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_launch(ts.q, e, &zero, NULL, 0, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(ts.q));
    ka_kernel k = ts_kernel(prog_index, "launch_unsafe", NULL);
    static const struct { uint32_t dims; uint64_t ext[3]; } shapes[] = {
        {1, {0, 0, 0}}, {2, {0, 5, 0}}, {2, {5, 0, 0}}, {3, {3, 4, 0}},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t A[12];
        ka_buffer b = ts_buffer(sizeof A, NULL);
        ka_arg args[] = {ka_arg_buffer(b)};
        ka_range r = {shapes[s].dims, {shapes[s].ext[0], shapes[s].ext[1], shapes[s].ext[2]}, {0, 0, 0}, 0};
        KA_OK_OR_FAIL(ka_launch(ts.q, k, &r, args, 1, &ev));
        KA_OK_OR_FAIL(ka_event_wait(ev, 0));
        KA_OK_OR_FAIL(ka_event_release(ev));
        ts_read(b, A, sizeof A);
        for (int i = 0; i < 12; i++) assert_int_equal(A[i], 0);
    }
}

/* interface.jl's 4-D launch errors: libka launches 1 to 3 dimensions. */
static void dims_errors(void **state) {
    (void)state;
    ka_kernel e = ts_kernel(prog_index, "kernel_empty", NULL);
    ka_range r4 = {4, {2, 2, 2}, {2, 2, 2}, 0};
    KA_EXPECT(KA_ERR_INVALID_RANGE, ka_launch(ts.q, e, &r4, NULL, 0, NULL));
    ka_range r0 = {0, {2, 2, 2}, {0, 0, 0}, 0};
    KA_EXPECT(KA_ERR_INVALID_RANGE, ka_launch(ts.q, e, &r0, NULL, 0, NULL));
    /* a static 3-D work-group cannot run a 1-D range */
    ka_kernel_config c3 = {.workgroup = {2, 2, 2}};
    ka_kernel k3 = ts_kernel(prog_static, "launch_indices", &c3);
    ka_buffer b = ts_buffer(8 * NF * sizeof(int64_t), NULL);
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_range r1 = ts_range(1, 8, 0, 0, 0, 0, 0);
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP, ka_launch(ts.q, k3, &r1, args, 1, NULL));
    /* but the 3-D range runs */
    check_layout(k3, 3, (uint64_t[3]){3, 3, 3}, (uint32_t[3]){0, 0, 0}, "static (2,2,2) over (3,3,3)");
}

/* test.jl "partition": a static work-group of 64 cuts 128 into 2 blocks and
 * 129 into 3 (the last one checked); a given size must agree; with a static
 * ndrange of 128 a launch of 129 is an error. */
static void partition_static_sizes(void **state) {
    (void)state;
    int64_t out[3 + 256];
    ka_buffer b = ts_buffer(sizeof out, NULL);
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_kernel_config c64 = {.workgroup = {64}};
    ka_kernel k = ts_kernel(prog_static, "partition_probe", &c64);
    static const uint64_t sizes[] = {128, 129};
    for (int s = 0; s < 2; s++) {
        KA_OK_OR_FAIL(ka_buffer_fill(ts.q, b, 0, &(uint8_t){0}, 1, sizeof out, NULL));
        ka_range r = ts_range(1, sizes[s], 0, 0, 0, 0, 0);
        ts_run(k, &r, args, 1);
        ts_read(b, out, sizeof out);
        assert_int_equal(out[0], ts_cld(sizes[s], 64));
        assert_int_equal(out[1], 64);
        assert_int_equal(out[2], sizes[s]);
        for (uint64_t i = 0; i < 256; i++) assert_int_equal(out[3 + i], i < sizes[s] ? 1 : 0);
    }
    ka_range r = ts_range(1, 129, 0, 0, 64, 0, 0);
    ts_run(k, &r, args, 1);
    r.workgroup[0] = 65;
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP, ka_launch(ts.q, k, &r, args, 1, NULL));

    ka_kernel_config c64n = {.workgroup = {64}, .ndrange = {128}};
    k = ts_kernel(prog_static, "partition_probe", &c64n);
    r = ts_range(1, 128, 0, 0, 0, 0, 0);
    ts_run(k, &r, args, 1);
    ts_read(b, out, sizeof out);
    assert_int_equal(out[0], 2);
    assert_int_equal(out[2], 128);
    r.size[0] = 129;
    KA_EXPECT(KA_ERR_INVALID_RANGE, ka_launch(ts.q, k, &r, args, 1, NULL));
}

/* test.jl "GPU kernel return statement". */
static void early_return(void **state) {
    (void)state;
    ka_kernel k = ts_kernel(prog_index, "return_kernel", NULL);
    static int64_t A[1024];
    ka_buffer b = ts_buffer(sizeof A, NULL);
    ka_arg args[] = {ka_arg_buffer(b), ka_arg_u64(1024)};
    ka_range r = ts_range(1, 1024, 0, 0, 0, 0, 0);
    ts_run(k, &r, args, 2);
    ts_read(b, A, sizeof A);
    for (int i = 0; i < 1024; i++) assert_int_equal(A[i], i < 512 ? 1 : 0);
}

/* test.jl "No CPU kernel": a helper function gets the kernel's context. */
static void context_in_helper(void **state) {
    (void)state;
    ka_kernel k = ts_kernel(prog_index, "context_kernel", NULL);
    static int64_t A[1024 + 8];
    ka_buffer b = ts_buffer(sizeof A, NULL);
    ka_arg args[] = {ka_arg_buffer(b)};
    ka_range r = ts_range(2, 100, 10, 0, 16, 16, 0); /* padded in both dimensions */
    ts_run(k, &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int i = 0; i < 1024 + 8; i++) assert_int_equal(A[i], i < 1000 ? 1001 : 0);
}

/* launch.jl "many arguments": 40 scalars. */
static void many_arguments(void **state) {
    (void)state;
    ka_kernel k = ts_kernel(prog_many, "launch_many", NULL);
    ka_kernel_info info;
    KA_OK_OR_FAIL(ka_kernel_get_info(k, &info));
    assert_int_equal(info.num_args, 41);
    int64_t A[5];
    ka_buffer b = ts_buffer(sizeof A, NULL);
    ka_arg args[41];
    args[0] = ka_arg_buffer(b);
    for (int i = 1; i <= 40; i++) args[i] = ka_arg_i64(i);
    ka_range r = ts_range(1, 5, 0, 0, 0, 0, 0);
    ts_run(k, &r, args, 41);
    ts_read(b, A, sizeof A);
    for (int i = 0; i < 5; i++) assert_int_equal(A[i], 40 * 41 / 2);
    KA_EXPECT(KA_ERR_ARG_COUNT, ka_launch(ts.q, k, &r, args, 40, NULL));
}

/* launch.jl "custom iteration space": one work-item per index of a list (the
 * odd-sum cells of a 7x5 grid), groups of 4 with a partial last one. */
static void custom_iteration_space(void **state) {
    (void)state;
    ka_kernel k = ts_kernel(prog_index, "launch_listed", NULL);
    int list[35], n = 0;
    for (int j = 0; j < 5; j++)
        for (int i = 0; i < 7; i++)
            if ((i + 1 + j + 1) % 2) list[n++] = i + 7 * j;
    assert_int_equal(n, 17); /* KA's comment says 18; the odd-sum cells of 7x5 are 17 */
    ka_buffer visits = ts_buffer(35 * sizeof(int64_t), NULL), position = ts_buffer(35 * sizeof(int64_t), NULL);
    ka_buffer lb = ts_buffer(sizeof list, list);
    ka_arg args[] = {ka_arg_buffer(visits), ka_arg_buffer(position), ka_arg_buffer(lb)};
    ka_range r = ts_range(1, (uint64_t)n, 0, 0, 4, 0, 0);
    ts_run(k, &r, args, 3);
    int64_t v[35], p[35];
    ts_read(visits, v, sizeof v);
    ts_read(position, p, sizeof p);
    for (int c = 0; c < 35; c++) {
        int listed = -1;
        for (int q = 0; q < n; q++)
            if (list[q] == c) listed = q;
        assert_int_equal(v[c], listed >= 0 ? 1 : 0);
        assert_int_equal(p[c], listed >= 0 ? listed + 1 : 0);
    }
}

/* launch.jl "synchronize with padding lanes": static work-groups, local
 * memory sized by them, padded lanes at the barrier. */
static void sync_with_padding_lanes(void **state) {
    (void)state;
    static const struct { uint32_t dims; uint64_t ext[3]; uint32_t wg[3]; } cases[] = {
        {1, {37, 1, 1}, {8, 1, 1}}, {2, {7, 6, 1}, {4, 4, 1}}, {3, {5, 3, 3}, {2, 2, 2}},
    };
    for (size_t c = 0; c < 3; c++) {
        ka_kernel_config cfg = {.workgroup = {cases[c].wg[0], cases[c].wg[1], cases[c].wg[2]}};
        ka_kernel k = ts_kernel(prog_static, "launch_sync", &cfg);
        const uint64_t *e = cases[c].ext;
        const uint32_t *w = cases[c].wg;
        uint64_t n = e[0] * e[1] * e[2];
        ka_buffer b = ts_buffer(n * sizeof(int64_t), NULL);
        ka_arg args[] = {ka_arg_buffer(b)};
        ka_range r = {cases[c].dims, {e[0], e[1], e[2]}, {0, 0, 0}, 0};
        ts_run(k, &r, args, 1);
        int64_t *A = ts_alloc(n * sizeof(int64_t));
        ts_read(b, A, n * sizeof(int64_t));
        uint64_t W = (uint64_t)w[0] * w[1] * w[2];
        for (uint64_t i2 = 0; i2 < e[2]; i2++)
            for (uint64_t i1 = 0; i1 < e[1]; i1++)
                for (uint64_t i0 = 0; i0 < e[0]; i0++) {
                    /* the work-item at the mirrored local position of the same group */
                    uint64_t J[3] = {i0, i1, i2}, g[3], l[3], m[3];
                    for (int d = 0; d < 3; d++) g[d] = J[d] / w[d], l[d] = J[d] % w[d];
                    uint64_t ll = l[0] + w[0] * (l[1] + w[1] * l[2]), ml = W - 1 - ll;
                    m[0] = ml % w[0], m[1] = (ml / w[0]) % w[1], m[2] = ml / (w[0] * w[1]);
                    uint64_t M[3];
                    for (int d = 0; d < 3; d++) M[d] = g[d] * w[d] + m[d];
                    int64_t partner = (int64_t)(M[0] + e[0] * (M[1] + e[1] * M[2])) + 1;
                    uint64_t I = i0 + e[0] * (i1 + e[1] * i2);
                    /* a padded partner wrote its (out-of-range) linear index: computed the same way */
                    int64_t want = partner + 1000 * (int64_t)ll;
                    if (A[I] != want)
                        fail_msg("case %zu: item (%llu,%llu,%llu): %lld, expected %lld", c, (unsigned long long)i0,
                                 (unsigned long long)i1, (unsigned long long)i2, (long long)A[I], (long long)want);
                }
    }
}

/* nditeration.jl "linear_iteration": blocks x work-items expand to the global
 * index, for (32,32), (32,1) and (1,32) work-items over 128x128, with static
 * and dynamic sizes (NDRange{2, StaticSize, StaticSize} and DynamicSize). */
static void nditeration_expand(void **state) {
    (void)state;
    static const uint32_t wgs[3][2] = {{32, 32}, {32, 1}, {1, 32}};
    static int64_t out[128 * 128];
    ka_buffer b = ts_buffer(sizeof out, NULL);
    ka_arg args[] = {ka_arg_buffer(b)};
    /* A device may allow this kernel fewer than 32 x 32 items per group
     * (NVIDIA's OpenCL: 256): the larger dimension is halved until it fits. */
    ka_kernel_info ki;
    KA_OK_OR_FAIL(ka_kernel_get_info(ts_kernel(prog_static, "nditer_expand", NULL), &ki));
    for (int w = 0; w < 3; w++)
        for (int st = 0; st < 2; st++) {
            uint32_t w0 = wgs[w][0], w1 = wgs[w][1];
            while (w0 * w1 > ki.max_workgroup_size) *(w0 >= w1 ? &w0 : &w1) /= 2;
            if (st == 0 && (w0 != wgs[w][0] || w1 != wgs[w][1]))
                print_message("[   INFO   ] work-group (%u,%u) runs as (%u,%u): the kernel's limit here is %u items\n",
                              wgs[w][0], wgs[w][1], w0, w1, ki.max_workgroup_size);
            ka_kernel_config cfg = {.workgroup = {w0, w1}, .ndrange = {128, 128}};
            ka_kernel k = ts_kernel(prog_static, "nditer_expand", st ? &cfg : NULL);
            ka_range r = ts_range(2, 128, 128, 0, st ? 0 : w0, st ? 0 : w1, 0);
            KA_OK_OR_FAIL(ka_buffer_fill(ts.q, b, 0, &(uint8_t){0}, 1, sizeof out, NULL));
            ts_run(k, &r, args, 1);
            ts_read(b, out, sizeof out);
            for (int i = 0; i < 128 * 128; i++)
                if (out[i] != 1)
                    fail_msg("work-group (%u,%u) %s: item %d: %lld", w0, w1, st ? "static" : "dynamic", i,
                             (long long)out[i]);
        }
}

/* barriers.jl: 13 work-items in groups of 8; the arrays have room for the
 * padded lanes, which must not run the guarded code. */
static void barriers_uniform_loops(void **state) {
    (void)state;
    int64_t A[16];
    ka_buffer b = ts_buffer(sizeof A, NULL);
    ka_range r = ts_range(1, 13, 0, 0, 8, 0, 0);
    ka_arg args[] = {ka_arg_buffer(b)};
    ts_run(ts_kernel(prog_index, "trailing_uniform", NULL), &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int i = 0; i < 16; i++) assert_int_equal(A[i], i < 13 ? 3 : 0);
    KA_OK_OR_FAIL(ka_buffer_fill(ts.q, b, 0, &(uint8_t){0}, 1, sizeof A, NULL));
    ts_run(ts_kernel(prog_index, "qualified", NULL), &r, args, 1);
    ts_read(b, A, sizeof A);
    for (int i = 0; i < 16; i++) assert_int_equal(A[i], i < 13 ? 2 * (i + 1) : 0);
    static const char *names[2] = {"branches_closed", "branches"};
    bool broken = false;
    for (int kn = 0; kn < 2; kn++) {
        ka_kernel br = ts_kernel(prog_index, names[kn], NULL);
        for (int flag = 1; flag <= 3; flag++) {
            KA_OK_OR_FAIL(ka_buffer_fill(ts.q, b, 0, &(uint8_t){0}, 1, sizeof A, NULL));
            ka_arg a2[] = {ka_arg_buffer(b), ka_arg_i32(flag)};
            ts_run(br, &r, a2, 2);
            ts_read(b, A, sizeof A);
            bool ok = true;
            for (int i = 0; i < 16; i++) ok = ok && A[i] == (i < 13 ? flag : 0);
            /* PoCL (3.1 and 5.0 seen) drops the guard of a store after a
             * barrier that sits in one arm of an if/else (padded lanes 13..15
             * store): a known device bug, reported like KA's @test_broken; it
             * must stay broken in exactly that way, and only on PoCL */
            if (!ok && kn == 1 && flag == 1 && ts_pocl_major() > 0) {
                for (int i = 0; i < 16; i++)
                    if (A[i] != 1) fail_msg("branches flag 1: not the known PoCL miscompilation: A[%d] = %lld", i, (long long)A[i]);
                broken = true;
                continue;
            }
            for (int i = 0; i < 16; i++)
                if (A[i] != (i < 13 ? flag : 0))
                    fail_msg("%s flag %d: A[%d] = %lld, expected %d", names[kn], flag, i, (long long)A[i], i < 13 ? flag : 0);
        }
    }
    if (broken)
        print_message("[   INFO   ] known PoCL bug: a guarded store after a barrier in one arm of an if/else runs in "
                      "padded lanes (branches, flag 1); see docs/KERNELS.md\n");
}

int ts_group_index(void) {
    const struct CMUnitTest tests[] = {
        TS_TEST(indextest_linear),       TS_TEST(indextest_cartesian),    TS_TEST(indextest_not_multiple),
        TS_TEST(indextest_static),       TS_TEST(index_layout_dynamic),   TS_TEST(index_layout_static),
        TS_TEST(unsafe_indices),         TS_TEST(zero_iteration_space),   TS_TEST(dims_errors),
        TS_TEST(partition_static_sizes), TS_TEST(early_return),           TS_TEST(context_in_helper),
        TS_TEST(many_arguments),         TS_TEST(custom_iteration_space), TS_TEST(sync_with_padding_lanes),
        TS_TEST(nditeration_expand),     TS_TEST(barriers_uniform_loops),
    };
    return cmocka_run_group_tests_name("ka_testsuite_index", tests, group_setup, group_teardown);
}
