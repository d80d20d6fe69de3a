/* ka_histogram's kernels. The plan defines HB (the bins) and, for more bins
 * than a private or local histogram holds, HIST_GLOBAL (every sample an
 * atomic add on the counts). */
#ifndef KA_PRIMS_SRC_HISTOGRAM_H
#define KA_PRIMS_SRC_HISTOGRAM_H
#define KA__PRIMS_SRC_HISTOGRAM                                                                                        \
"#ifndef HB\n#define HB 256u\n#endif\n"                                                                                \
/* ST: the type of the scale (bins / (upper - lower)): float, double for                                               \
 * double samples; 32-bit integers: a 64-bit fraction (below). */                                                      \
"#if TID == 6\n#define ST double\n#elif TID == 1 || TID == 2\n#define ST ulong\n#else\n#define ST float\n#endif\n"     \
/* The bin of x, HIST_NONE outside [lo, hi) (NaN too). Floats: (x - lo) * s                                            \
 * in the type, truncated, the last bin for what rounds to bins. Integers:                                             \
 * floor((x - lo) * HB / R) exactly (R = hi - lo); x is inside when x - lo,                                            \
 * unsigned, is below R. Computed for every x, then masked (HIST_NONE is all                                           \
 * ones): no branch on the range inside the bin's arithmetic. */                                                                                                            \
"#define HIST_NONE 0xffffffffu\n"                                                                                      \
"#ifdef T_FLOAT\n"                                                                                                     \
"KA_DEVICE_FN uint hist_bin(T x, T lo, T hi, ulong R, ST s) {\n"                                                       \
"    (void)R;\n"                                                                                                       \
/* |v| and a comparison, not fmin/fmax: GCC calls libm for those (the host                                             \
 * back-end); v < 0 only outside the range, NaN becomes HB: the conversion                                             \
 * is always defined. */                                                                                               \
"    T v = fabs((x - lo) * s);\n"                                                                                      \
"    v = v < (T)HB ? v : (T)HB;\n"                                                                                     \
"    uint b = (uint)v;\n"                                                                                              \
"    b = b < HB ? b : HB - 1u;\n"                                                                                      \
"    return b | ((uint)((x >= lo) & (x < hi)) - 1u);\n"                                                                \
"}\n"                                                                                                                  \
"#elif TID == 1 || TID == 2\n"                                                                                         \
/* 32-bit integers: floor(d * HB / R) = d * (HB / R) + floor(d * (HB % R) /                                            \
 * R), the second term the high word of d * M, M = ceil(2^64 * (HB % R) / R)                                           \
 * (exact for d < 2^32: the rounding of M adds under 2^-32, less than the                                              \
 * 1 / R to the next integer), from two 32 x 32-bit products (d < 2^32).                                               \
 * The plan passes HB / R in R's high word and M as the scale. */                                                      \
"KA_DEVICE_FN uint hist_bin(T x, T lo, T hi, ulong R, ulong s) {\n"                                                    \
"    (void)hi;\n"                                                                                                      \
"    ulong d = (ulong)((uint)x - (uint)lo);\n"                                                                         \
"    ulong t = d * (s & 0xffffffffUL), u = d * (s >> 32) + (t >> 32);\n"                                               \
"    uint b = (uint)(d * (R >> 32) + (u >> 32));\n"                                                                    \
"    return b | ((uint)(d < (R & 0xffffffffUL)) - 1u);\n"                                                              \
"}\n"                                                                                                                  \
"#else\n"                                                                                                              \
/* 128-bit products as (high, low) words: a * b <= (ph, pl). */                                                        \
"KA_DEVICE_FN int hist_le(ulong a, ulong b, ulong ph, ulong pl) {\n"                                                   \
"    ulong h = mul_hi(a, b), l = a * b;\n"                                                                             \
"    return h < ph || (h == ph && l <= pl);\n"                                                                         \
"}\n"                                                                                                                  \
/* 64-bit integers: an estimate in float, then corrected against the exact                                             \
 * products, so it is that bin whatever the rounding of the estimate. */                                               \
"KA_DEVICE_FN uint hist_bin(T x, T lo, T hi, ulong R, ST s) {\n"                                                       \
"    if (!(x >= lo && x < hi)) return HIST_NONE;\n"                                                                    \
"    ulong d = (ulong)x - (ulong)lo;\n"                                                                                \
"    float v = (float)d * s;\n"                                                                                        \
"    uint b = v < (float)HB ? (uint)v : HB - 1u;\n"                                                                    \
"    if (b >= HB) b = HB - 1u;\n"                                                                                      \
"    ulong ph = mul_hi(d, (ulong)HB), pl = d * (ulong)HB;\n"                                                           \
"    while (b > 0u && !hist_le((ulong)b, R, ph, pl)) b--;\n"                                                           \
"    while (b + 1u < HB && hist_le((ulong)(b + 1u), R, ph, pl)) b++;\n"                                                \
"    return b;\n"                                                                                                      \
"}\n"                                                                                                                  \
"#endif\n"                                                                                                             \
"#define HIST_BIN(x) hist_bin(x, lo, hi, R, s)\n"                                                                      \
/* CPUs: the count of x in h[], a branch on the range (predicted where the                                              \
 * samples are in range) and the bin's arithmetic only inside it: the bins                                            \
 * of hist_bin. Floats: one clamp where HB - 1 is exact in T (past it, as                                              \
 * hist_bin); 32-bit integers: the high word of d * M in one product. */                                               \
"#if defined(T_FLOAT) && (TID == 6 || HB <= 16777216u)\n"                                                             \
"#define HIST_COUNT(x) do { if ((x) >= lo && (x) < hi) { T v_ = ((x) - lo) * s;                                       \\\n"  \
"    h[(uint)(v_ < (T)(HB - 1u) ? v_ : (T)(HB - 1u))]++; } } while (0)\n"                                              \
"#elif defined(T_FLOAT)\n"                                                                                            \
"#define HIST_COUNT(x) do { if ((x) >= lo && (x) < hi) { T v_ = ((x) - lo) * s; v_ = v_ < (T)HB ? v_ : (T)HB;          \\\n"  \
"    uint b_ = (uint)v_; h[b_ < HB ? b_ : HB - 1u]++; } } while (0)\n"                                                  \
"#elif TID == 1 || TID == 2\n"                                                                                        \
"#define HIST_COUNT(x) do { ulong d_ = (ulong)((uint)(x) - (uint)lo);                                                 \\\n"  \
"    if (d_ < (R & 0xffffffffUL)) h[(uint)(d_ * (R >> 32) + mul_hi(d_, s))]++; } while (0)\n"                          \
"#else\n"                                                                                                             \
"#define HIST_COUNT(x) do { uint b_ = HIST_BIN(x); if (b_ < HB) h[b_]++; } while (0)\n"                               \
"#endif\n"                                                                                                            \
/* The counts zeroed (before atomic adds). */                                                                          \
"KA_KERNEL(kaprims_histogram_zero, KA_GLOBAL uint *cnt, ulong co) {\n"                                                 \
"    ulong i = ka_global_id(0);\n"                                                                                     \
"    if (i < HB) cnt[co + i] = 0u;\n"                                                                                  \
"}\n"                                                                                                                  \
/* counts[d] = the sum of the W per-work-item histograms part[w * HB + d]. */                                          \
"KA_KERNEL(kaprims_histogram_sum, KA_CONST(uint) part, ulong W, KA_GLOBAL uint *cnt, ulong co) {\n"                    \
"    ulong d = ka_global_id(0);\n"                                                                                     \
"    if (d >= HB) return;\n"                                                                                           \
"    uint c = 0u;\n"                                                                                                   \
"    for (ulong w = 0; w < W; w++) c += part[w * HB + d];\n"                                                           \
"    cnt[co + d] = c;\n"                                                                                               \
"}\n"                                                                                                                  \
"#if CONTIG && !defined(HIST_GLOBAL)\n"                                                                                \
"#define HIST_PRIVATE 1\n"                                                                                             \
"#endif\n"                                                                                                             \
"#ifdef HIST_GLOBAL\n"                                                                                                 \
"#define HADD(b) ka_atomic_add(&cnt[b], 1u)\n"                                                                         \
"#else\n"                                                                                                              \
"#define HADD(b) ka_atomic_add(&h[b], 1u)\n"                                                                           \
"#endif\n"                                                                                                             \
/* One definition for the variants (PoCL's argument-size probes are made                                               \
 * per definition in the text). */                                                                                     \
"KA_KERNEL(kaprims_histogram_count, KA_CONST(T) in, ulong io, KA_GLOBAL uint *cnt, ulong co, KA_GLOBAL uint *part,\n"  \
"          ulong n, ulong C, T lo, T hi, ulong R, ST s) {\n"                                                           \
"    in += io;\n"                                                                                                      \
"    cnt += co;\n"                                                                                                     \
"    uint lid = (uint)ka_local_id(0);\n"                                                                               \
"    ulong i, e, st;\n"                                                                                                \
"#ifdef HIST_PRIVATE\n"                                                                                                \
/* CPUs: no barriers, no atomics, as an OpenMP histogram does per thread.                                              \
 * Each work-item counts a contiguous run of its group's chunk into a                                                  \
 * private histogram (HIST_COUNT, four loads first) and stores it in                                                   \
 * part[w * HB...]; kaprims_histogram_sum adds them up. */                                                             \
"    ulong g = ka_group_id(0), a = g * C < n ? g * C : n, z = a + C < n ? a + C : n;\n"                                \
"    prims_span(a, z, lid, WG, &i, &e, &st);\n"                                                                        \
"    uint h[HB];\n"                                                                                                   \
"    for (uint d = 0; d < HB; d++) h[d] = 0u;\n"                                                                      \
"    for (; e >= 3 && i < e - 3; i += 4) {\n"                                                                         \
"        T x0 = in[i], x1 = in[i + 1], x2 = in[i + 2], x3 = in[i + 3];\n"                                            \
"        HIST_COUNT(x0);\n"                                                                                            \
"        HIST_COUNT(x1);\n"                                                                                            \
"        HIST_COUNT(x2);\n"                                                                                            \
"        HIST_COUNT(x3);\n"                                                                                            \
"    }\n"                                                                                                              \
"    for (; i < e; i++) HIST_COUNT(in[i]);\n"                                                                          \
"    KA_GLOBAL uint *o = part + (g * WG + lid) * HB;\n"                                                                \
"    for (uint d = 0; d < HB; d++) o[d] = h[d];\n"                                                                     \
"#else\n"                                                                                                              \
/* GPUs (and more bins than a histogram in local or private memory holds):                                             \
 * the samples over all work-items (GPUs: coalesced), four loads in flight.                                            \
 * With local memory, one histogram per group (local atomics), added to the                                            \
 * counts at the end (one global atomic per non-zero bin); else each sample                                            \
 * an atomic add on the counts. */                                                                                     \
"    (void)part, (void)C;\n"                                                                                           \
"#ifndef HIST_GLOBAL\n"                                                                                                \
"    KA_LOCAL uint h[HB];\n"                                                                                           \
"    for (uint d = lid; d < HB; d += WG) h[d] = 0u;\n"                                                                 \
"    ka_barrier_local();\n"                                                                                            \
"#endif\n"                                                                                                             \
"    prims_span(0, n, ka_group_id(0) * WG + lid, ka_num_groups(0) * WG, &i, &e, &st);\n"                               \
"    for (; e >= 3 * st && i < e - 3 * st; i += 4 * st) {\n"                                                           \
"        T x0 = in[i], x1 = in[i + st], x2 = in[i + 2 * st], x3 = in[i + 3 * st];\n"                                   \
"        uint b0 = HIST_BIN(x0), b1 = HIST_BIN(x1), b2 = HIST_BIN(x2), b3 = HIST_BIN(x3);\n"                           \
"        if (b0 < HB) HADD(b0);\n"                                                                                     \
"        if (b1 < HB) HADD(b1);\n"                                                                                     \
"        if (b2 < HB) HADD(b2);\n"                                                                                     \
"        if (b3 < HB) HADD(b3);\n"                                                                                     \
"    }\n"                                                                                                              \
"    for (; i < e; i += st) {\n"                                                                                       \
"        uint b = HIST_BIN(in[i]);\n"                                                                                  \
"        if (b < HB) HADD(b);\n"                                                                                       \
"    }\n"                                                                                                              \
"#ifndef HIST_GLOBAL\n"                                                                                                \
"    ka_barrier_local();\n"                                                                                            \
"    for (uint d = lid; d < HB; d += WG) {\n"                                                                          \
"        uint c = h[d];\n"                                                                                             \
"        if (c) ka_atomic_add(&cnt[d], c);\n"                                                                          \
"    }\n"                                                                                                              \
"#endif\n"                                                                                                             \
"#endif\n"                                                                                                             \
"}\n"
static const char ka__prims_src_histogram[] = KA__PRIMS_SRC_HISTOGRAM;
#endif
