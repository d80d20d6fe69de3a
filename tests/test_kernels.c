/* Real kernels on the default device ($KA_DEVICE, else PoCL): the index
 * layout of every work-item, padded lanes, local memory, barriers reached by
 * padded lanes, atomics, printf, argument passing and buffer round trips. */
#define KA_TEST_FIXTURE /* g_dev, g_q, g_prog, g_info */
#include "test_util.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static const char *kernels_src =
    /* Every in-range item writes its ids at its padded linear position; item
     * (0,0,0) writes the launch geometry. */
    "KA_KERNEL(layout, KA_GLOBAL uint *out, KA_GLOBAL uint *meta, uint cap) {\n"
    "    if (ka_global_id(0) == 0 && ka_global_id(1) == 0 && ka_global_id(2) == 0) {\n"
    "        for (int d = 0; d < 3; d++) {\n"
    "            meta[d] = (uint)ka_group_size(d);\n"
    "            meta[3 + d] = (uint)ka_num_groups(d);\n"
    "            meta[6 + d] = (uint)ka_ndrange(d);\n"
    "        }\n"
    "        meta[9] = ka_ndims();\n"
    "        meta[10] = (uint)ka_group_linear_size();\n"
    "        meta[11] = (uint)ka_ndrange_linear();\n"
    "    }\n"
    "    if (!ka_in_range()) return;\n"
    "    ka_size_t p0 = ka_num_groups(0) * ka_group_size(0), p1 = ka_num_groups(1) * ka_group_size(1);\n"
    "    ka_size_t idx = ka_global_id(0) + p0 * (ka_global_id(1) + p1 * ka_global_id(2));\n"
    "    if (idx >= cap) return;\n"
    "    KA_GLOBAL uint *o = out + idx * 12;\n"
    "    for (int d = 0; d < 3; d++) {\n"
    "        o[d] = (uint)ka_global_id(d);\n"
    "        o[3 + d] = (uint)ka_local_id(d);\n"
    "        o[6 + d] = (uint)ka_group_id(d);\n"
    "    }\n"
    "    o[9] = (uint)ka_global_linear_id();\n"
    "    o[10] = (uint)ka_local_linear_id();\n"
    "    o[11] = (uint)ka_group_linear_id();\n"
    "}\n"
    "KA_KERNEL(rev_static, KA_GLOBAL const float *in, KA_GLOBAL float *out) {\n"
    "    KA_LOCAL float tile[16];\n"
    "    size_t l = ka_local_id(0), g = ka_global_id(0);\n"
    "    tile[l] = in[g];\n"
    "    ka_barrier();\n"
    "    out[g] = tile[15 - l];\n"
    "}\n"
    "KA_KERNEL(rev_dynamic, KA_GLOBAL const float *in, KA_GLOBAL float *out, KA_LOCAL_ARG(float) tile) {\n"
    "    size_t l = ka_local_id(0), g = ka_global_id(0), n = ka_group_size(0);\n"
    "    tile[l] = in[g];\n"
    "    ka_barrier();\n"
    "    out[g] = tile[n - 1 - l];\n"
    "}\n"
    /* Work, a barrier that every lane reaches, and only then the range check. */
    "KA_KERNEL(group_sum_padded, KA_GLOBAL const float *in, KA_GLOBAL float *out, KA_LOCAL_ARG(float) tile) {\n"
    "    size_t l = ka_local_id(0), n = ka_group_size(0);\n"
    "    tile[l] = ka_in_range() ? in[ka_global_id(0)] : 0.0f;\n"
    "    ka_barrier();\n"
    "    if (!ka_in_range()) return;\n"
    "    float s = 0.0f;\n"
    "    for (size_t i = 0; i < n; i++) s += tile[i];\n"
    "    out[ka_global_id(0)] = s + (float)l / 1024.0f;\n"
    "}\n"
    /* Same with a static local array and two barriers, in 2-D. */
    "KA_KERNEL(row_sum_2d, KA_GLOBAL const uint *in, KA_GLOBAL uint *out) {\n"
    "    KA_LOCAL uint tile[8][8];\n"
    "    size_t lx = ka_local_id(0), ly = ka_local_id(1);\n"
    "    size_t gx = ka_global_id(0), gy = ka_global_id(1), nx = ka_ndrange(0);\n"
    "    tile[ly][lx] = ka_in_range() ? in[gy * nx + gx] : 0u;\n"
    "    ka_barrier();\n"
    "    uint s = 0;\n"
    "    for (size_t i = 0; i < ka_group_size(0); i++) s += tile[ly][i];\n"
    "    ka_barrier();\n"
    "    tile[ly][lx] = s;\n"
    "    ka_barrier();\n"
    "    if (!ka_in_range()) return;\n"
    "    out[gy * nx + gx] = tile[ly][(lx + 1) % ka_group_size(0)];\n"
    "}\n"
    "KA_KERNEL(atomics, KA_GLOBAL int *ci, KA_GLOBAL uint *cu, KA_GLOBAL float *cf, KA_GLOBAL uint *olds,\n"
    "          KA_GLOBAL int *mm) {\n"
    "    if (!ka_in_range()) return;\n"
    "    uint i = (uint)ka_global_id(0);\n"
    "    ka_atomic_add(&ci[0], 1);\n"
    "    ka_atomic_sub(&ci[1], 2);\n"
    "    olds[i] = ka_atomic_add(&cu[0], 1u);\n"
    "    ka_atomic_add(&cu[1], 3u);\n"
    "    ka_atomic_or(&cu[2], 1u << (i % 32u));\n"
    "    ka_atomic_add(&cf[0], 1.0f);\n"
    "    ka_atomic_add(&cf[1], 0.5f);\n"
    "    ka_atomic_max(&mm[0], (int)i);\n"
    "    ka_atomic_min(&mm[1], -(int)i);\n"
    "    int old = ci[2], seen;\n"
    "    while ((seen = ka_atomic_cmpxchg(&ci[2], old, old + 5)) != old) old = seen;\n"
    "}\n"
    "KA_KERNEL(local_atomics, KA_GLOBAL uint *group_counts, KA_GLOBAL uint *total) {\n"
    "    KA_LOCAL uint cnt;\n"
    "    if (ka_local_id(0) == 0) cnt = 0;\n"
    "    ka_barrier();\n"
    "    if (ka_in_range()) ka_atomic_add(&cnt, 1u);\n"
    "    ka_barrier();\n"
    "    if (ka_local_id(0) == 0) {\n"
    "        group_counts[ka_group_id(0)] = cnt;\n"
    "        ka_atomic_add(total, cnt);\n"
    "    }\n"
    "}\n"
    "#ifdef KA_HAS_ATOMIC64\n"
    "KA_KERNEL(atomics64, KA_GLOBAL ulong *c) {\n"
    "    if (!ka_in_range()) return;\n"
    "    ka_atomic_add(&c[0], (ulong)1 << 33);\n"
    "    ka_atomic_max(&c[1], (ulong)ka_global_id(0) << 32);\n"
    "}\n"
    "#endif\n"
    "KA_KERNEL(hello, uint tag) {\n"
    "    if (!ka_in_range()) return;\n"
    "    KA_PRINTF(\"libka printf: item %u of tag %u\\n\", (uint)ka_global_id(0), tag);\n"
    "}\n"
    "KA_KERNEL(add_tag, KA_GLOBAL uint *p, uint tag) {\n"
    "    if (!ka_in_range()) return;\n"
    "    p[ka_global_id(0)] += tag;\n"
    "}\n"
    "KA_KERNEL(inc_bytes, KA_GLOBAL uchar *p) {\n"
    "    if (!ka_in_range()) return;\n"
    "    p[ka_global_id(0)] += 1;\n"
    "}\n"
    "typedef struct { int a; float b; short c; } pod;\n"
    "KA_KERNEL(scalars, KA_GLOBAL long *out, char c, uchar uc, short s, ushort us, int i, uint u, long l,\n"
    "          ulong ul, float f, pod p) {\n"
    "    if (ka_global_id(0) != 0) return;\n"
    "    out[0] = c; out[1] = uc; out[2] = s; out[3] = us; out[4] = i; out[5] = u; out[6] = l;\n"
    "    out[7] = (long)(ul >> 1); out[8] = (long)(f * 4.0f); out[9] = p.a; out[10] = (long)(p.b * 4.0f);\n"
    "    out[11] = p.c;\n"
    "}\n"
    "#ifdef KA_HAS_DOUBLE\n"
    "KA_KERNEL(scalar_f64, KA_GLOBAL double *out, double d) {\n"
    "    if (ka_global_id(0) == 0) out[0] = d * 2.0;\n"
    "}\n"
    "#endif\n";

/* Fails with the detail if a wait does not finish in 60 s: a hang is a failure. */
#define WAIT_DONE(ev)                                                                                   \
    do {                                                                                                \
        ka_status w_ = ka_event_wait((ev), 60 * 1000000000LL);                                          \
        if (w_ != KA_OK) fail_msg("wait -> %s (hang or failure)\n%s", ka_status_name(w_), ka_last_error()); \
        KA_OK_OR_FAIL(ka_event_release(ev));                                                            \
    } while (0)

static ka_kernel kernel(const char *name, const ka_kernel_config *cfg) {
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(g_prog, name, cfg, &k));
    return k;
}

static ka_buffer buffer(size_t bytes) { return make_buffer(g_dev, bytes); }

/* ============================== index layout ============================== */

#define POISON 0xDEADBEEFu
#define CAP 4096u /* padded items the layout buffers hold */

typedef struct layout_case {
    const char *name;
    uint32_t dims;
    uint64_t n[3];
    uint32_t wg[3];     /* given at launch; 0 = chosen by libka */
    uint32_t swg[3];    /* static work-group in the kernel's configuration */
    bool static_nd;     /* static ndrange in the configuration */
} layout_case;

static const layout_case layout_cases[] = {
    {"layout_1d_7_auto", 1, {7}, {0}, {0}, false},
    {"layout_1d_7_wg4", 1, {7}, {4}, {0}, false},
    {"layout_1d_37_auto", 1, {37}, {0}, {0}, false},
    {"layout_1d_37_wg4", 1, {37}, {4}, {0}, false},
    {"layout_2d_5x7_auto", 2, {5, 7}, {0}, {0}, false},
    {"layout_2d_5x7_wg2x3", 2, {5, 7}, {2, 3}, {0}, false},
    {"layout_2d_33x3_auto", 2, {33, 3}, {0}, {0}, false},
    {"layout_2d_33x3_wg2x3", 2, {33, 3}, {2, 3}, {0}, false},
    {"layout_3d_3x5x7_auto", 3, {3, 5, 7}, {0}, {0}, false},
    {"layout_3d_3x5x7_wg4x1x2", 3, {3, 5, 7}, {4, 1, 2}, {0}, false},
    /* Compiled-in sizes: ka_group_size / ka_ndrange are constants there. */
    {"layout_1d_37_static_wg4", 1, {37}, {0}, {4, 1, 1}, false},
    {"layout_2d_33x3_static_wg2x3", 2, {33, 3}, {0}, {2, 3, 1}, false},
    {"layout_3d_3x5x7_static_wg4x1x2", 3, {3, 5, 7}, {4, 1, 2}, {4, 1, 2}, false},
    {"layout_2d_5x7_static_nd", 2, {5, 7}, {2, 3}, {0}, true},
    {"layout_3d_3x5x7_static_nd_wg", 3, {3, 5, 7}, {0}, {4, 1, 2}, true},
};

static void test_layout(void **state) {
    const layout_case *c = *state;
    ka_kernel_config cfg;
    memset(&cfg, 0, sizeof cfg);
    memcpy(cfg.workgroup, c->swg, sizeof cfg.workgroup);
    if (c->static_nd)
        for (uint32_t d = 0; d < 3; d++) cfg.ndrange[d] = d < c->dims ? c->n[d] : 1;
    ka_kernel k = kernel("layout", &cfg);
    uint32_t *out = malloc(CAP * 12 * sizeof(uint32_t));
    assert_non_null(out);
    uint32_t meta[12];
    for (uint32_t i = 0; i < CAP * 12; i++) out[i] = POISON;
    for (int i = 0; i < 12; i++) meta[i] = POISON;
    ka_buffer bo = buffer(CAP * 12 * sizeof(uint32_t)), bm = buffer(sizeof meta);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, bo, 0, out, CAP * 12 * sizeof(uint32_t)));
    KA_OK_OR_FAIL(ka_buffer_write(g_q, bm, 0, meta, sizeof meta));
    ka_range r = {.dims = c->dims};
    for (uint32_t d = 0; d < 3; d++) {
        r.size[d] = c->n[d];
        r.workgroup[d] = c->wg[d];
    }
    ka_arg a[] = {ka_arg_buffer(bo), ka_arg_buffer(bm), ka_arg_u32(CAP)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(g_q, k, &r, a, 3, &ev));
    WAIT_DONE(ev);
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, bo, 0, CAP * 12 * sizeof(uint32_t)));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, meta, bm, 0, sizeof meta));

    /* The geometry. */
    uint64_t n[3], L[3], G[3], P[3];
    for (uint32_t d = 0; d < 3; d++) {
        n[d] = d < c->dims ? c->n[d] : 1;
        L[d] = meta[d];
        G[d] = meta[3 + d];
        P[d] = L[d] * G[d];
        if (L[d] == 0 || L[d] == POISON) fail_msg("%s: group size[%u] = %#x", c->name, d, meta[d]);
        if (meta[6 + d] != n[d]) fail_msg("%s: ka_ndrange(%u) = %u, expected %llu", c->name, d, meta[6 + d], (unsigned long long)n[d]);
        if (P[d] < n[d]) fail_msg("%s: dim %u: %llu groups of %llu do not cover %llu", c->name, d, (unsigned long long)G[d], (unsigned long long)L[d], (unsigned long long)n[d]);
        if (P[d] - n[d] >= L[d]) fail_msg("%s: dim %u: a whole padded group (%llu x %llu for %llu)", c->name, d, (unsigned long long)G[d], (unsigned long long)L[d], (unsigned long long)n[d]);
        uint32_t want = c->wg[d] ? c->wg[d] : c->swg[d];
        if (want && d < c->dims && L[d] != want) fail_msg("%s: group size[%u] = %llu, asked %u", c->name, d, (unsigned long long)L[d], want);
        if (d >= c->dims && L[d] != 1) fail_msg("%s: unused dim %u has group size %llu", c->name, d, (unsigned long long)L[d]);
    }
    assert_int_equal(meta[9], c->dims);
    assert_int_equal(meta[10], L[0] * L[1] * L[2]);
    assert_int_equal(meta[11], n[0] * n[1] * n[2]);
    uint64_t padded = P[0] * P[1] * P[2];
    if (padded > CAP) fail_msg("%s: padded range of %llu items exceeds the test's %u", c->name, (unsigned long long)padded, CAP);

    /* Every item: in range, all its ids; padded, nothing written. */
    uint32_t in_range = 0;
    for (uint64_t idx = 0; idx < CAP; idx++) {
        const uint32_t *o = out + idx * 12;
        uint64_t g[3] = {idx % P[0], (idx / P[0]) % P[1], idx / (P[0] * P[1])};
        bool inside = idx < padded && g[0] < n[0] && g[1] < n[1] && g[2] < n[2];
        if (!inside) {
            for (int w = 0; w < 12; w++)
                if (o[w] != POISON)
                    fail_msg("%s: padded item %llu (%llu,%llu,%llu) wrote word %d = %u", c->name, (unsigned long long)idx,
                             (unsigned long long)g[0], (unsigned long long)g[1], (unsigned long long)g[2], w, o[w]);
            continue;
        }
        in_range++;
        uint32_t want[12];
        for (int d = 0; d < 3; d++) {
            want[d] = (uint32_t)g[d];
            want[3 + d] = (uint32_t)(g[d] % L[d]);
            want[6 + d] = (uint32_t)(g[d] / L[d]);
        }
        want[9] = (uint32_t)(g[0] + n[0] * (g[1] + n[1] * g[2]));
        want[10] = want[3] + (uint32_t)L[0] * (want[4] + (uint32_t)L[1] * want[5]);
        want[11] = want[6] + (uint32_t)G[0] * (want[7] + (uint32_t)G[1] * want[8]);
        static const char *what[12] = {"global_id(0)", "global_id(1)", "global_id(2)", "local_id(0)", "local_id(1)",
                                       "local_id(2)", "group_id(0)", "group_id(1)", "group_id(2)", "global_linear_id",
                                       "local_linear_id", "group_linear_id"};
        for (int w = 0; w < 12; w++)
            if (o[w] != want[w])
                fail_msg("%s: item (%llu,%llu,%llu): %s = %u, expected %u", c->name, (unsigned long long)g[0],
                         (unsigned long long)g[1], (unsigned long long)g[2], what[w], o[w], want[w]);
    }
    assert_int_equal(in_range, n[0] * n[1] * n[2]);
    KA_OK_OR_FAIL(ka_buffer_release(bo));
    KA_OK_OR_FAIL(ka_buffer_release(bm));
    free(out);
}

/* ============================== local memory ============================== */

static void check_reversed(const float *out, size_t n, size_t group) {
    for (size_t i = 0; i < n; i++) {
        size_t base = i / group * group, want = base + (group - 1 - (i - base));
        if (out[i] != (float)want) fail_msg("item %zu: %g, expected %zu", i, (double)out[i], want);
    }
}

static void run_reverse(ka_kernel k, size_t n, uint32_t wg, size_t local_bytes) {
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    assert_non_null(in);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) in[i] = (float)i, out[i] = -1.0f;
    ka_buffer bi = buffer(n * sizeof(float)), bo = buffer(n * sizeof(float));
    KA_OK_OR_FAIL(ka_buffer_write(g_q, bi, 0, in, n * sizeof(float)));
    ka_arg a[] = {ka_arg_buffer(bi), ka_arg_buffer(bo), ka_arg_local(local_bytes)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {n}, .workgroup = {wg}}, a, local_bytes ? 3 : 2, &ev));
    WAIT_DONE(ev);
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, bo, 0, n * sizeof(float)));
    check_reversed(out, n, wg ? wg : 16);
    KA_OK_OR_FAIL(ka_buffer_release(bi));
    KA_OK_OR_FAIL(ka_buffer_release(bo));
    free(in);
    free(out);
}

static void test_local_reverse_static_array(void **state) {
    (void)state;
    run_reverse(kernel("rev_static", NULL), 16 * 37, 16, 0);
}

static void test_local_reverse_static_array_static_wg(void **state) {
    (void)state;
    ka_kernel_config cfg = {.workgroup = {16, 1, 1}};
    ka_kernel k = kernel("rev_static", &cfg);
    ka_kernel_info ki;
    KA_OK_OR_FAIL(ka_kernel_get_info(k, &ki));
    assert_int_equal(ki.static_workgroup[0], 16);
    /* PoCL 5 reports no local memory for arrays declared in a kernel (docs/KERNELS.md, known issues). */
    bool pocl5 = strstr(g_info->platform, "Portable Computing Language") && atoi(g_info->driver_version) >= 5;
    if (g_info->backend == KA_BACKEND_OPENCL && pocl5 && ki.local_mem_bytes == 0)
        print_message("[   INFO   ] PoCL %d reports no local memory for the kernel's 64 declared bytes\n",
                      atoi(g_info->driver_version));
    else if (g_info->backend == KA_BACKEND_OPENCL || g_info->backend == KA_BACKEND_HOST)
        assert_true(ki.local_mem_bytes >= 16 * sizeof(float));
    run_reverse(k, 16 * 5, 0, 0);
}

static void test_local_reverse_dynamic_arg(void **state) {
    (void)state;
    run_reverse(kernel("rev_dynamic", NULL), 16 * 37, 16, 16 * sizeof(float));
}

static void test_local_reverse_dynamic_arg_64(void **state) {
    (void)state;
    run_reverse(kernel("rev_dynamic", NULL), 64 * 9, 64, 64 * sizeof(float));
}

/* ========================= barrier and padded lanes ======================= */

static void run_group_sum(size_t n, uint32_t wg) {
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    assert_non_null(in);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) in[i] = (float)(i % 7), out[i] = -1.0f;
    ka_buffer bi = buffer(n * sizeof(float)), bo = buffer(n * sizeof(float));
    KA_OK_OR_FAIL(ka_buffer_write(g_q, bi, 0, in, n * sizeof(float)));
    KA_OK_OR_FAIL(ka_buffer_write(g_q, bo, 0, out, n * sizeof(float)));
    ka_arg a[] = {ka_arg_buffer(bi), ka_arg_buffer(bo), ka_arg_local(wg * sizeof(float))};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(g_q, kernel("group_sum_padded", NULL), &(ka_range){.dims = 1, .size = {n}, .workgroup = {wg}},
                            a, 3, &ev));
    WAIT_DONE(ev);
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, bo, 0, n * sizeof(float)));
    for (size_t g0 = 0; g0 < n; g0 += wg) {
        float s = 0;
        for (size_t i = g0; i < g0 + wg && i < n; i++) s += in[i];
        for (size_t i = g0; i < g0 + wg && i < n; i++) {
            float want = s + (float)(i - g0) / 1024.0f;
            if (out[i] != want) fail_msg("n=%zu wg=%u: item %zu = %g, expected %g", n, wg, i, (double)out[i], (double)want);
        }
    }
    KA_OK_OR_FAIL(ka_buffer_release(bi));
    KA_OK_OR_FAIL(ka_buffer_release(bo));
    free(in);
    free(out);
}

static void test_barrier_with_padded_lanes_1d(void **state) {
    (void)state;
    run_group_sum(100, 16);  /* last group: 4 in range, 12 padded */
    run_group_sum(1000, 64); /* last group: 40 of 64 */
    run_group_sum(5, 8);     /* one partial group */
}

static void test_barrier_with_padded_lanes_2d(void **state) {
    (void)state;
    enum { NX = 21, NY = 11 };
    uint32_t in[NX * NY], out[NX * NY];
    for (uint32_t i = 0; i < NX * NY; i++) in[i] = i * 3 + 1, out[i] = POISON;
    ka_buffer bi = buffer(sizeof in), bo = buffer(sizeof out);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, bi, 0, in, sizeof in));
    KA_OK_OR_FAIL(ka_buffer_write(g_q, bo, 0, out, sizeof out));
    ka_arg a[] = {ka_arg_buffer(bi), ka_arg_buffer(bo)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(g_q, kernel("row_sum_2d", NULL), &(ka_range){.dims = 2, .size = {NX, NY}, .workgroup = {8, 8}}, a, 2, &ev));
    WAIT_DONE(ev);
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, bo, 0, sizeof out));
    for (uint32_t y = 0; y < NY; y++)
        for (uint32_t x = 0; x < NX; x++) {
            uint32_t gx = x / 8 * 8, s = 0;
            for (uint32_t i = gx; i < gx + 8 && i < NX; i++) s += in[y * NX + i];
            if (out[y * NX + x] != s) fail_msg("(%u,%u) = %u, expected %u", x, y, out[y * NX + x], s);
        }
    KA_OK_OR_FAIL(ka_buffer_release(bi));
    KA_OK_OR_FAIL(ka_buffer_release(bo));
}

/* ================================ atomics ================================= */

static void test_atomics_global(void **state) {
    (void)state;
    enum { N = 20000 };
    int32_t ci[3] = {0, 0, 0};
    uint32_t cu[3] = {0, 100, 0};
    float cf[2] = {0.0f, 0.0f};
    int32_t mm[2] = {INT32_MIN, INT32_MAX};
    ka_buffer bci = buffer(sizeof ci), bcu = buffer(sizeof cu), bcf = buffer(sizeof cf), bmm = buffer(sizeof mm),
              bold = buffer(N * sizeof(uint32_t));
    KA_OK_OR_FAIL(ka_buffer_write(g_q, bci, 0, ci, sizeof ci));
    KA_OK_OR_FAIL(ka_buffer_write(g_q, bcu, 0, cu, sizeof cu));
    KA_OK_OR_FAIL(ka_buffer_write(g_q, bcf, 0, cf, sizeof cf));
    KA_OK_OR_FAIL(ka_buffer_write(g_q, bmm, 0, mm, sizeof mm));
    ka_arg a[] = {ka_arg_buffer(bci), ka_arg_buffer(bcu), ka_arg_buffer(bcf), ka_arg_buffer(bold), ka_arg_buffer(bmm)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(g_q, kernel("atomics", NULL), &(ka_range){.dims = 1, .size = {N}}, a, 5, &ev));
    WAIT_DONE(ev);
    uint32_t *olds = malloc(N * sizeof(uint32_t));
    uint8_t *seen = calloc(N, 1);
    assert_non_null(olds);
    assert_non_null(seen);
    KA_OK_OR_FAIL(ka_buffer_read(g_q, ci, bci, 0, sizeof ci));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, cu, bcu, 0, sizeof cu));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, cf, bcf, 0, sizeof cf));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, mm, bmm, 0, sizeof mm));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, olds, bold, 0, N * sizeof(uint32_t)));
    assert_int_equal(ci[0], N);
    assert_int_equal(ci[1], -2 * N);
    assert_int_equal(ci[2], 5 * N); /* compare-exchange loop */
    assert_int_equal(cu[0], N);
    assert_int_equal(cu[1], 100 + 3 * N);
    assert_int_equal(cu[2], 0xFFFFFFFFu);
    if (cf[0] != (float)N) fail_msg("float atomic add of 1.0: %g, expected %d", (double)cf[0], N);
    if (cf[1] != (float)N / 2) fail_msg("float atomic add of 0.5: %g, expected %g", (double)cf[1], (double)N / 2);
    assert_int_equal(mm[0], N - 1);
    assert_int_equal(mm[1], -(N - 1));
    /* Each item got a distinct old value: a permutation of 0..N-1. */
    for (uint32_t i = 0; i < N; i++) {
        if (olds[i] >= N) fail_msg("item %u: old value %u out of range", i, olds[i]);
        if (seen[olds[i]]++) fail_msg("old value %u returned twice", olds[i]);
    }
    free(olds);
    free(seen);
    ka_buffer all[] = {bci, bcu, bcf, bmm, bold};
    for (int i = 0; i < 5; i++) KA_OK_OR_FAIL(ka_buffer_release(all[i]));
}

static void test_atomics_local(void **state) {
    (void)state;
    enum { N = 1000, WG = 64, GROUPS = (N + WG - 1) / WG };
    uint32_t counts[GROUPS], total = 0;
    ka_buffer bc = buffer(sizeof counts), bt = buffer(sizeof total);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, bt, 0, &total, sizeof total));
    ka_arg a[] = {ka_arg_buffer(bc), ka_arg_buffer(bt)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(g_q, kernel("local_atomics", NULL), &(ka_range){.dims = 1, .size = {N}, .workgroup = {WG}}, a, 2, &ev));
    WAIT_DONE(ev);
    KA_OK_OR_FAIL(ka_buffer_read(g_q, counts, bc, 0, sizeof counts));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, &total, bt, 0, sizeof total));
    for (int g = 0; g < GROUPS; g++) assert_int_equal(counts[g], g < GROUPS - 1 ? WG : N - WG * (GROUPS - 1));
    assert_int_equal(total, N);
    KA_OK_OR_FAIL(ka_buffer_release(bc));
    KA_OK_OR_FAIL(ka_buffer_release(bt));
}

static void test_atomics_64(void **state) {
    (void)state;
    if (!g_info->has_atomic64) skip();
    enum { N = 5000 };
    uint64_t c[2] = {7, 0};
    ka_buffer b = buffer(sizeof c);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, c, sizeof c));
    ka_arg a[] = {ka_arg_buffer(b)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(g_q, kernel("atomics64", NULL), &(ka_range){.dims = 1, .size = {N}}, a, 1, &ev));
    WAIT_DONE(ev);
    KA_OK_OR_FAIL(ka_buffer_read(g_q, c, b, 0, sizeof c));
    assert_int_equal(c[0], 7 + ((uint64_t)N << 33));
    assert_int_equal(c[1], (uint64_t)(N - 1) << 32);
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

/* ================================= printf ================================= */

static void test_printf_runs(void **state) {
    (void)state;
    if (!g_info->has_printf) skip();
    fflush(stdout);
    ka_arg a[] = {ka_arg_u32(42)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(g_q, kernel("hello", NULL), &(ka_range){.dims = 1, .size = {3}}, a, 1, &ev));
    WAIT_DONE(ev);
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
}

/* ========================= arguments and buffers ========================== */

typedef struct pod {
    int32_t a;
    float b;
    int16_t c;
} pod;

static void test_scalar_arguments(void **state) {
    (void)state;
    int64_t out[12];
    memset(out, 0x55, sizeof out);
    ka_buffer b = buffer(sizeof out);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, out, sizeof out));
    pod p = {-123456, 2.25f, -300};
    ka_arg a[] = {ka_arg_buffer(b), ka_arg_i8(-5), ka_arg_u8(250), ka_arg_i16(-30000), ka_arg_u16(65000),
                  ka_arg_i32(-2000000000), ka_arg_u32(4000000000u), ka_arg_i64(-((int64_t)1 << 40)),
                  ka_arg_u64(UINT64_MAX - 1), ka_arg_f32(-1.75f), ka_arg_bytes(&p, sizeof p)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(g_q, kernel("scalars", NULL), &(ka_range){.dims = 1, .size = {1}}, a, 11, &ev));
    WAIT_DONE(ev);
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, sizeof out));
    const int64_t want[12] = {-5, 250, -30000, 65000, -2000000000, 4000000000LL, -((int64_t)1 << 40),
                              (int64_t)((UINT64_MAX - 1) >> 1), -7, -123456, 9, -300};
    for (int i = 0; i < 12; i++)
        if (out[i] != want[i]) fail_msg("argument slot %d: %lld, expected %lld", i, (long long)out[i], (long long)want[i]);
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_scalar_double(void **state) {
    (void)state;
    if (!g_info->has_double) skip();
    ka_buffer b = buffer(sizeof(double));
    ka_arg a[] = {ka_arg_buffer(b), ka_arg_f64(1.0 / 3.0)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(g_q, kernel("scalar_f64", NULL), &(ka_range){.dims = 1, .size = {1}}, a, 2, &ev));
    WAIT_DONE(ev);
    double d = 0;
    KA_OK_OR_FAIL(ka_buffer_read(g_q, &d, b, 0, sizeof d));
    assert_true(d == 2.0 / 3.0);
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_buffer_round_trips(void **state) {
    (void)state;
    const size_t sizes[] = {1, 3, 4, 255, 4096, 65537, (size_t)1 << 20, ((size_t)16 << 20) + 5};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        uint8_t *in = malloc(n), *out = malloc(n);
        assert_non_null(in);
        assert_non_null(out);
        fill_bytes(in, n, (uint32_t)n);
        ka_buffer a = buffer(n), b = buffer(n);
        /* host -> a -> b -> host */
        KA_OK_OR_FAIL(ka_buffer_write(g_q, a, 0, in, n));
        KA_OK_OR_FAIL(ka_buffer_copy(g_q, b, 0, a, 0, n, NULL));
        memset(out, 0, n);
        KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, n));
        if (memcmp(in, out, n)) fail_msg("round trip of %zu bytes differs", n);
        /* A kernel adds one to every byte of a; padded lanes must not touch past the end. */
        ka_arg arg[] = {ka_arg_buffer(a)};
        ka_event ev;
        KA_OK_OR_FAIL(ka_launch(g_q, kernel("inc_bytes", NULL), &(ka_range){.dims = 1, .size = {n}}, arg, 1, &ev));
        WAIT_DONE(ev);
        KA_OK_OR_FAIL(ka_buffer_read(g_q, out, a, 0, n));
        for (size_t i = 0; i < n; i++)
            if (out[i] != (uint8_t)(in[i] + 1)) fail_msg("%zu bytes: byte %zu = %u, expected %u", n, i, out[i], (uint8_t)(in[i] + 1));
        KA_OK_OR_FAIL(ka_buffer_release(a));
        KA_OK_OR_FAIL(ka_buffer_release(b));
        free(in);
        free(out);
    }
}

static void test_repeated_launches_same_range(void **state) {
    (void)state;
    /* The same kernel and range many times, then a different range: the
     * results follow the latest range each time. */
    enum { N = 257 };
    ka_buffer a = buffer(N);
    uint8_t zero[N], out[N];
    memset(zero, 0, N);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, a, 0, zero, N));
    ka_kernel k = kernel("inc_bytes", NULL);
    ka_arg arg[] = {ka_arg_buffer(a)};
    for (int i = 0; i < 50; i++) KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {N}}, arg, 1, NULL));
    for (int i = 0; i < 10; i++) KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {100}}, arg, 1, NULL));
    for (int i = 0; i < 5; i++)
        KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {10}, .workgroup = {4}}, arg, 1, NULL));
    for (int i = 0; i < 5; i++) KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {N}}, arg, 1, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, a, 0, N));
    for (int i = 0; i < N; i++) {
        int want = 55 + (i < 100 ? 10 : 0) + (i < 10 ? 5 : 0);
        if (out[i] != want) fail_msg("byte %d = %u, expected %d", i, out[i], want);
    }
    KA_OK_OR_FAIL(ka_buffer_release(a));
}

/* ======================= one kernel, several threads ====================== */

enum { THREADS = 4, ITERS = 60, TN = 1000 };

typedef struct worker {
    ka_kernel k;
    uint32_t tag, n;     /* this thread's value and range */
    ka_status st;        /* first failure */
    char detail[256];
    uint32_t *out;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    ka_queue q;
    ka_buffer b;
    w->st = ka_queue_create(g_dev, NULL, &q);
    if (w->st != KA_OK) goto out;
    if ((w->st = ka_buffer_create(g_dev, TN * sizeof(uint32_t), &b)) != KA_OK) goto out_q;
    memset(w->out, 0, TN * sizeof(uint32_t));
    if ((w->st = ka_buffer_write(q, b, 0, w->out, TN * sizeof(uint32_t))) != KA_OK) goto out_b;
    ka_arg a[] = {ka_arg_buffer(b), ka_arg_u32(w->tag)};
    for (int i = 0; i < ITERS && w->st == KA_OK; i++) {
        /* Alternate two ranges: the hidden range argument changes every time. */
        uint64_t n = i % 2 ? w->n / 2 : w->n;
        ka_event ev;
        w->st = ka_launch(q, w->k, &(ka_range){.dims = 1, .size = {n}}, a, 2, i % 5 ? NULL : &ev);
        if (w->st == KA_OK && i % 5 == 0) {
            w->st = ka_event_wait(ev, 60 * 1000000000LL);
            ka_event_release(ev);
        }
    }
    if (w->st == KA_OK) w->st = ka_buffer_read(q, w->out, b, 0, TN * sizeof(uint32_t));
out_b:
    ka_buffer_release(b);
out_q:
    ka_queue_release(q);
out:
    if (w->st != KA_OK) snprintf(w->detail, sizeof w->detail, "%s", ka_last_error());
    return NULL;
}

static void test_concurrent_launches_one_kernel(void **state) {
    (void)state;
    ka_kernel k = kernel("add_tag", NULL);
    pthread_t t[THREADS];
    worker w[THREADS];
    for (uint32_t i = 0; i < THREADS; i++) {
        w[i] = (worker){.k = k, .tag = 1u << (8 * i), .n = TN - 37 * i, .st = KA_OK};
        w[i].out = malloc(TN * sizeof(uint32_t));
        assert_non_null(w[i].out);
        assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    for (uint32_t i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (uint32_t i = 0; i < THREADS; i++) {
        if (w[i].st != KA_OK) fail_msg("thread %u: %s\n%s", i, ka_status_name(w[i].st), w[i].detail);
        for (uint32_t j = 0; j < TN; j++) {
            uint32_t launches = j < w[i].n / 2 ? ITERS : j < w[i].n ? ITERS / 2 : 0;
            if (w[i].out[j] != launches * w[i].tag)
                fail_msg("thread %u, item %u: %#x, expected %u launches of %#x", i, j, w[i].out[j], launches, w[i].tag);
        }
        free(w[i].out);
    }
}

int main(void) {
    enum { NL = sizeof layout_cases / sizeof layout_cases[0] };
    struct CMUnitTest layout[NL];
    for (size_t i = 0; i < NL; i++) {
        struct CMUnitTest t = {layout_cases[i].name, test_layout, NULL, NULL, (void *)&layout_cases[i]};
        layout[i] = t;
    }
    const struct CMUnitTest others[] = {
        cmocka_unit_test(test_local_reverse_static_array),
        cmocka_unit_test(test_local_reverse_static_array_static_wg),
        cmocka_unit_test(test_local_reverse_dynamic_arg),
        cmocka_unit_test(test_local_reverse_dynamic_arg_64),
        cmocka_unit_test(test_barrier_with_padded_lanes_1d),
        cmocka_unit_test(test_barrier_with_padded_lanes_2d),
        cmocka_unit_test(test_atomics_global),
        cmocka_unit_test(test_atomics_local),
        cmocka_unit_test(test_atomics_64),
        cmocka_unit_test(test_printf_runs),
        cmocka_unit_test(test_scalar_arguments),
        cmocka_unit_test(test_scalar_double),
        cmocka_unit_test(test_buffer_round_trips),
        cmocka_unit_test(test_repeated_launches_same_range),
        cmocka_unit_test(test_concurrent_launches_one_kernel),
    };
    if (fixture_open(kernels_src) != 0) return 1;
    if (g_info->backend == KA_BACKEND_NULL) { /* $KA_DEVICE=null runs no kernels */
        fprintf(stderr, "the default device is the null device: skipped\n");
        fixture_close();
        return 77;
    }
    int fails = _cmocka_run_group_tests("kernels: index layout", layout, NL, NULL, NULL);
    fails += cmocka_run_group_tests_name("kernels", others, NULL, NULL);
    fixture_close();
    return fails;
}
