/* ka_scan's kernels: reduce, then scan of the partials, then scan with carries. */
#ifndef KA_PRIMS_SRC_SCAN_H
#define KA_PRIMS_SRC_SCAN_H
static const char ka__prims_src_scan[] =
/* Phase 1: the sum of group g's chunk [g*C, (g+1)*C) into part[g]. */
"#if CONTIG\n"
/* CPUs: no barriers at all (PoCL runs a barrier-laden loop far slower than
 * a plain one). Each work-item owns a contiguous run of its group's chunk:
 * phase 1 sums it into part[g*WG + lid], phase 2 scans the G*WG sums, phase 3
 * scans the run serially from its carry, as an OpenMP scan does per thread. */
"KA_KERNEL(kaprims_scan1, KA_CONST(T) in, ulong io, KA_GLOBAL T *part, ulong n, ulong C) {\n"
"    in += io;\n"
"    uint lid = (uint)ka_local_id(0);\n"
"    ulong g = ka_group_id(0), lo = g * C < n ? g * C : n, hi = lo + C < n ? lo + C : n;\n"
"    part[g * WG + lid] = prims_reduce_items(in, lo, hi, lid, WG, 0u);\n"
"}\n"
"KA_KERNEL(kaprims_scan3, KA_GLOBAL T *in, ulong io, KA_GLOBAL T *out, ulong oo, KA_CONST(T) part, ulong n, ulong C,\n"
"          uint excl) {\n"
"    in += io;\n"
"    out += oo;\n"
"    uint lid = (uint)ka_local_id(0);\n"
"    ulong g = ka_group_id(0), lo = g * C < n ? g * C : n, hi = lo + C < n ? lo + C : n, i, e, st;\n"
"    prims_span(lo, hi, lid, WG, &i, &e, &st);\n"
"    T c = part[g * WG + lid];\n"
"    if (excl) for (; i < e; i++) { T x = in[i]; out[i] = c; c = ADD(c, x); }\n"
"    else for (; i < e; i++) { c = ADD(c, in[i]); out[i] = c; }\n"
"}\n"
"#else\n"
/* Phase 1: the sum of group g's chunk [g*C, (g+1)*C) into part[g]. */
"KA_KERNEL(kaprims_scan1, KA_CONST(T) in, ulong io, KA_GLOBAL T *part, ulong n, ulong C) {\n"
"    in += io;\n"
"    KA_LOCAL T s[WG];\n"
"    uint lid = (uint)ka_local_id(0);\n"
"    ulong g = ka_group_id(0), lo = g * C < n ? g * C : n, hi = lo + C < n ? lo + C : n;\n"
"    T v = prims_reduce_local(s, lid, prims_reduce_items(in, lo, hi, lid, WG, 0u), 0u);\n"
"    if (lid == 0u) part[g] = v;\n"
"}\n"
/* Phase 3: group g scans its chunk from its carry, a tile at a time. in may be out. */
"KA_KERNEL(kaprims_scan3, KA_GLOBAL T *in, ulong io, KA_GLOBAL T *out, ulong oo, KA_CONST(T) part, ulong n, ulong C,\n"
"          uint excl) {\n"
"    in += io;\n"
"    out += oo;\n"
"    KA_LOCAL T buf[TILE_LOCAL];\n"
"    KA_LOCAL T tot[2 * WG];\n"
"    ulong g = ka_group_id(0), lo = g * C < n ? g * C : n, hi = lo + C < n ? lo + C : n;\n"
"    prims_range_scan(in, out, lo, hi, part[g], excl, buf, tot);\n"
"}\n"
"#endif\n"
/* Phase 2: one group, exclusive scan of the partials in place. */
"KA_KERNEL(kaprims_scan2, KA_GLOBAL T *part, ulong G) {\n"
"    KA_LOCAL T buf[TILE_LOCAL];\n"
"    KA_LOCAL T tot[2 * WG];\n"
"    prims_range_scan(part, part, 0, G, (T)0, 1u, buf, tot);\n"
"}\n";
#endif
