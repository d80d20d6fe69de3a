/* ka_searchsorted's kernel: one binary search per needle. */
#ifndef KA_PRIMS_SRC_SEARCH_H
#define KA_PRIMS_SRC_SEARCH_H
static const char ka__prims_src_search[] =
/* Elements are read as their bit patterns (KT) and compared through KEYX,
 * the sort's monotonic transform, so the order is ka_sort's: floats by sign
 * bit (-NaN first, +NaN last, -0.0 before +0.0), integers signed or unsigned
 * by type. An upper bound of key k is the lower bound of k + 1 (n at the
 * largest key). The search halves a window whose length does not depend on
 * the needle (a select a step, the same trip count for every needle): no
 * divergence on GPUs, and on CPUs several needles step together, their
 * loads independent, so several cache misses are in flight at once. */
"KA_DEVICE_FN KT search_key(KT k, uint upper, uint *top) {\n"
"    *top = upper && k == (KT)~(KT)0;\n"
"    return upper && !*top ? k + (KT)1 : k;\n"
"}\n"
"#define SEARCH_STEP(b, k) b = KEYX(sorted[b + h]) < (k) ? b + h : b\n"
"#define SEARCH_END(b, k, top) ((top) ? ns : ns == 0 ? 0 : b + (KEYX(sorted[b]) < (k) ? 1 : 0))\n"
/* GPUs: consecutive work-items take consecutive needles (coalesced); CPUs:
 * each work-item a contiguous run of them, 32 at a time. */
"KA_KERNEL(kaprims_search, KA_GLOBAL ulong *out, ulong oo, KA_CONST(KT) sorted, ulong so, ulong ns, KA_CONST(KT) nd,\n"
"          ulong no, ulong nn, uint upper) {\n"
"    out += oo; sorted += so; nd += no;\n"
"    ulong r = ka_group_id(0) * WG + ka_local_id(0), R = ka_num_groups(0) * WG, j, e, st;\n"
"    prims_span(0, nn, r, R, &j, &e, &st);\n"
"#if CONTIG\n"
"#define SEARCH_LANES(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31)\n"
"#define SEARCH_INIT(i) uint t##i; KT k##i = search_key(KEYX(nd[j + i]), upper, &t##i); ulong b##i = 0;\n"
"#define SEARCH_LANE(i) SEARCH_STEP(b##i, k##i);\n"
"#define SEARCH_OUT(i) out[j + i] = SEARCH_END(b##i, k##i, t##i);\n"
"    for (; j + 31 < e; j += 32) {\n"
"        SEARCH_LANES(SEARCH_INIT)\n"
"        for (ulong n = ns; n > 1; n -= n >> 1) {\n"
"            ulong h = n >> 1;\n"
"            SEARCH_LANES(SEARCH_LANE)\n"
"        }\n"
"        SEARCH_LANES(SEARCH_OUT)\n"
"    }\n"
"#endif\n"
"    for (; j < e; j += st) {\n"
"        uint t0;\n"
"        KT k0 = search_key(KEYX(nd[j]), upper, &t0);\n"
"        ulong b0 = 0;\n"
"        for (ulong n = ns; n > 1; n -= n >> 1) {\n"
"            ulong h = n >> 1;\n"
"            SEARCH_STEP(b0, k0);\n"
"        }\n"
"        out[j] = SEARCH_END(b0, k0, t0);\n"
"    }\n"
"}\n";
#endif
