/* ka_reduce's kernels: partials per work-group, then one group folds them. */
#ifndef KA_PRIMS_SRC_REDUCE_H
#define KA_PRIMS_SRC_REDUCE_H
static const char ka__prims_src_reduce[] =
/* Pass 1: group g's partial over a share of [0, n), into part[g]. */
"KA_KERNEL(kaprims_red1, KA_CONST(T) in, ulong io, KA_GLOBAL T *part, ulong n, uint op) {\n"
"    in += io;\n"
"    KA_LOCAL T s[WG];\n"
"    uint lid = (uint)ka_local_id(0);\n"
"    ulong g = ka_group_id(0), G = ka_num_groups(0);\n"
"#if CONTIG\n"
"    ulong per = (n + G - 1) / G, lo = g * per < n ? g * per : n, hi = lo + per < n ? lo + per : n;\n"
"    T v = prims_reduce_items_op(in, lo, hi, lid, WG, op);\n"
"#else\n"
"    T v = prims_reduce_items_op(in, 0, n, g * WG + lid, G * WG, op);\n"
"#endif\n"
"    v = prims_reduce_local(s, lid, v, op);\n"
"    if (lid == 0u) part[g] = v;\n"
"}\n"
/* Pass 2: one group folds the G partials into out[oi]. */
"KA_KERNEL(kaprims_red2, KA_CONST(T) part, ulong G, KA_GLOBAL T *out, ulong oi, uint op) {\n"
"    KA_LOCAL T s[WG];\n"
"    uint lid = (uint)ka_local_id(0);\n"
"    T v = prims_identity(op);\n"
"    for (ulong i = lid; i < G; i += WG) v = prims_op(v, part[i], op);\n"
"    v = prims_reduce_local(s, lid, v, op);\n"
"    if (lid == 0u) out[oi] = v;\n"
"}\n";
#endif
