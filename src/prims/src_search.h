/* ka_searchsorted's kernel: one binary search per needle. */
#ifndef KA_PRIMS_SRC_SEARCH_H
#define KA_PRIMS_SRC_SEARCH_H
static const char ka__prims_src_search[] =
/* Elements are read as their bit patterns (KT) and compared through KEYX,
 * the sort's monotonic transform, so the order is ka_sort's: floats by sign
 * bit (-NaN first, +NaN last, -0.0 before +0.0), integers signed or unsigned
 * by type. An upper bound of key k is the lower bound of k + 1 (n at the
 * largest key). GPUs: consecutive work-items take consecutive needles
 * (coalesced); CPUs: each work-item a contiguous run of them. */
"KA_KERNEL(kaprims_search, KA_GLOBAL ulong *out, ulong oo, KA_CONST(KT) sorted, ulong so, ulong ns, KA_CONST(KT) nd,\n"
"          ulong no, ulong nn, uint upper) {\n"
"    out += oo; sorted += so; nd += no;\n"
"    ulong r = ka_group_id(0) * WG + ka_local_id(0), R = ka_num_groups(0) * WG, j, e, st;\n"
"    prims_span(0, nn, r, R, &j, &e, &st);\n"
"    for (; j < e; j += st) {\n"
"        KT k = KEYX(nd[j]);\n"
"        ulong lo = 0, len = ns;\n"
"        if (upper) {\n"
"            if (k == (KT)~(KT)0) len = 0, lo = ns;\n"
"            else k += (KT)1;\n"
"        }\n"
"        while (len > 0) {\n"
"            ulong hl = len >> 1;\n"
"            int below = KEYX(sorted[lo + hl]) < k;\n"
"            lo = below ? lo + hl + 1 : lo;\n"
"            len = below ? len - hl - 1 : hl;\n"
"        }\n"
"        out[j] = lo;\n"
"    }\n"
"}\n";
#endif
