/* ka_segmented_reduce's kernel: out[s] = op over in[offsets[s], offsets[s + 1]). */
#ifndef KA_PRIMS_SRC_SEGREDUCE_H
#define KA_PRIMS_SRC_SEGREDUCE_H
static const char ka__prims_src_segreduce[] =
/* op 0 sum, 1 min, 2 max, 3 the plan's operator (KA_REDUCE_USER); every
 * element passes through the plan's map (if any) as it is read, whatever
 * the op, as in ka_reduce. */
/* Segment s's bounds clamped to in's nin elements; an end below its start
 * makes it empty. A bad offset never reads outside in. */
"KA_DEVICE_FN void seg_bounds(KA_GLOBAL const ulong *offs, ulong s, ulong nin, ulong *b, ulong *e) {\n"
"    ulong x = offs[s], y = offs[s + 1];\n"
"    x = x < nin ? x : nin;\n"
"    y = y < nin ? y : nin;\n"
"    *b = x;\n"
"    *e = y > x ? y : x;\n"
"}\n"
/* Part p of F of [*b, *e). */
"KA_DEVICE_FN void seg_part(ulong *b, ulong *e, ulong p, ulong F) {\n"
"    ulong len = *e - *b;\n"
"    *e = *b + len * (p + 1) / F;\n"
"    *b += len * p / F;\n"
"}\n"
"#if CONTIG\n"
/* CPUs: no barriers; each work-item reduces a contiguous run of segments,
 * one after the other. Fewer segments than work-items (F > 1): work-item u
 * reduces part u % F of segment u / F into part[u], and kaprims_segfix
 * folds the parts. */
"KA_KERNEL(kaprims_segred, KA_GLOBAL T *out, ulong oo, KA_CONST(T) in, ulong io, ulong nin, KA_CONST(ulong) offs,\n"
"          ulong fo, ulong ns, uint op, KA_GLOBAL T *part, ulong F) {\n"
"    out += oo; in += io; offs += fo;\n"
"    ulong r = ka_group_id(0) * WG + ka_local_id(0), R = ka_num_groups(0) * WG, s, e, st, b, f;\n"
"    if (F > 1) {\n"
"        if (r < ns * F) {\n"
"            seg_bounds(offs, r / F, nin, &b, &f);\n"
"            seg_part(&b, &f, r % F, F);\n"
"            part[r] = prims_reduce_items_op(in, b, f, 0, 1, op);\n"
"        }\n"
"        return;\n"
"    }\n"
"    prims_span(0, ns, r, R, &s, &e, &st);\n"
/* The loop specialised per op, outside it: short segments cost a few loads each. */
"#define SEG_RUN(OPC) for (; s < e; s++) { seg_bounds(offs, s, nin, &b, &f); out[s] = prims_reduce_items(in, b, f, 0, 1, OPC); }\n"
"    if (op == 0u) SEG_RUN(0u)\n"
"    if (op == 1u) SEG_RUN(1u)\n"
"    if (op == 2u) SEG_RUN(2u)\n"
"    SEG_RUN(3u)\n"
"}\n"
"#else\n"
/* GPUs: segments of up to SEG_LONG elements go to teams of SEG_TW
 * work-items (a warp's width), SEG_NB segments a group at a time, so many
 * short segments keep every lane busy; longer ones each take a whole group
 * (as CUB's segmented reduce does), in a second loop over the segments.
 * Fewer segments than groups (F > 1): each long one is split in F parts,
 * a group a part, into part[s * F + p], which kaprims_segfix folds. */
"#if WG >= 32\n#define SEG_TW 32u\n#else\n#define SEG_TW ((uint)WG)\n#endif\n"
"#define SEG_NB (WG / SEG_TW)\n"
"#define SEG_LONG (16u * SEG_TW)\n"
/* The team's fold of v into lane 0: warp shuffles on CUDA (no barrier),
 * else a tree in local memory over every team of the group at once. */
"#if defined(KA_CUDA) && defined(KA_HAS_SUBGROUP_SHUFFLE) && KA_SUBGROUP_SIZE == 32 && WG % 32 == 0 && !defined(KA_PRIMS_NO_SUBGROUPS)\n"
"KA_DEVICE_FN T seg_team_reduce(KA_LOCAL_PTR(T) s, uint lid, T v, uint op) {\n"
"    (void)s; (void)lid;\n"
"    for (uint o = SEG_TW / 2u; o > 0u; o >>= 1) {\n"
"        T w = ka_subgroup_shuffle_down(v, o);\n"
"        v = prims_op(v, w, op);\n"
"    }\n"
"    return v;\n"
"}\n"
"#else\n"
"KA_DEVICE_FN T seg_team_reduce(KA_LOCAL_PTR(T) s, uint lid, T v, uint op) {\n"
"    uint lane = lid % SEG_TW;\n"
"    s[lid] = v;\n"
"    ka_barrier_local();\n"
"    for (uint o = SEG_TW / 2u; o > 0u; o >>= 1) {\n"
"        if (lane < o) s[lid] = prims_op(s[lid], s[lid + o], op);\n"
"        ka_barrier_local();\n"
"    }\n"
"    return s[lid];\n"
"}\n"
"#endif\n"
/* The group's fold of v: a tree in local memory, every work-item takes part. */
"KA_KERNEL(kaprims_segred, KA_GLOBAL T *out, ulong oo, KA_CONST(T) in, ulong io, ulong nin, KA_CONST(ulong) offs,\n"
"          ulong fo, ulong ns, uint op, KA_GLOBAL T *part, ulong F) {\n"
"    out += oo; in += io; offs += fo;\n"
"    KA_LOCAL T s[WG];\n"
"    uint lid = (uint)ka_local_id(0), lane = lid % SEG_TW, team = lid / SEG_TW;\n"
"    ulong g = ka_group_id(0), G = ka_num_groups(0), nb = (ns + SEG_NB - 1) / SEG_NB, b, e;\n"
/* The loop's bounds are the group's, so every work-item meets every barrier. */
"    for (ulong bt = g; bt < nb; bt += G) {\n"
"        ulong sg = bt * SEG_NB + team;\n"
"        b = e = 0;\n"
"        if (sg < ns) seg_bounds(offs, sg, nin, &b, &e);\n"
"        int mine = sg < ns && e - b <= SEG_LONG;\n"
"        T v = mine ? prims_reduce_items_op(in, b, e, lane, SEG_TW, op) : prims_identity(op);\n"
"        v = seg_team_reduce(s, lid, v, op);\n"
"        if (mine && lane == 0u) out[sg] = v;\n"
"    }\n"
"    for (ulong u = g; u < ns * F; u += G) {\n"
"        seg_bounds(offs, u / F, nin, &b, &e);\n"
"        if (e - b > SEG_LONG) {\n"
"            seg_part(&b, &e, u % F, F);\n"
"            T v = prims_reduce_local(s, lid, prims_reduce_items_op(in, b, e, lid, WG, op), op);\n"
"            if (lid == 0u && F > 1) part[u] = v;\n"
"            if (lid == 0u && F == 1) out[u] = v;\n"
"        }\n"
"    }\n"
"}\n"
"#endif\n"
/* The F parts of each split segment into out[s] (GPUs: the long ones; the
 * teams wrote the others). */
"KA_KERNEL(kaprims_segfix, KA_GLOBAL T *out, ulong oo, KA_CONST(ulong) offs, ulong fo, ulong nin, ulong ns, uint op,\n"
"          KA_CONST(T) part, ulong F) {\n"
"    out += oo; offs += fo;\n"
"    ulong sg = ka_group_id(0) * WG + ka_local_id(0), b, e;\n"
"    if (sg >= ns) return;\n"
"    seg_bounds(offs, sg, nin, &b, &e);\n"
"#if !CONTIG\n"
"    if (e - b <= SEG_LONG) return;\n"
"#endif\n"
"    T v = prims_identity(op);\n"
"    for (ulong p = 0; p < F; p++) v = prims_op(v, part[sg * F + p], op);\n"
"    out[sg] = v;\n"
"}\n";
#endif
