/* ka_select's kernels: stable stream compaction by a flags byte or by the
 * plan's predicate. */
#ifndef KA_PRIMS_SRC_SELECT_H
#define KA_PRIMS_SRC_SELECT_H
static const char ka__prims_src_select[] =
/* SEL_TEST(i): element i is kept. SEL_LOAD(i, x, k): k = kept, x = the
 * element where kept (flags: a dropped element is not read, which saves its
 * bytes where few are kept). */
"#ifdef PRIMS_USER_PREDICATE\n"
"#define SEL_TEST(i) prims_user_predicate(in[i])\n"
"#define SEL_LOAD(i, x, k) do { x = in[i]; k = prims_user_predicate(x); } while (0)\n"
"#else\n"
"#define SEL_TEST(i) (fl[i] != (uchar)0)\n"
"#define SEL_LOAD(i, x, k) do { k = fl[i] != (uchar)0; x = k ? in[i] : (T)0; } while (0)\n"
"#endif\n"
"#if CONTIG\n"
/* One group's inclusive scan of the W per-work-item counts. */
"KA_KERNEL(kaprims_sel_scan, KA_GLOBAL ulong *part, ulong W) {\n"
"    KA_LOCAL ulong buf[TILE_LOCAL];\n"
"    KA_LOCAL ulong tot[2 * WG];\n"
"    prims_range_scan_ul(part, part, 0, W, 0UL, 0u, buf, tot);\n"
"}\n"
/* CPUs: no barriers, as an OpenMP compaction does per thread. Each
 * work-item owns a contiguous run of its group's chunk: prep counts its kept
 * elements into part[w], the scan makes them inclusive, move copies the
 * run's kept elements to [part[w - 1], part[w]), and the last work-item
 * writes the total. */
"KA_KERNEL(kaprims_sel_prep, KA_CONST(T) in, ulong io, KA_CONST(uchar) fl, ulong fo, KA_GLOBAL ulong *part, ulong n,\n"
"          ulong C) {\n"
"    in += io;\n"
"    fl += fo;\n"
"    uint lid = (uint)ka_local_id(0);\n"
"    ulong g = ka_group_id(0), lo = g * C < n ? g * C : n, hi = lo + C < n ? lo + C : n, i, e, st, c = 0;\n"
"    prims_span(lo, hi, lid, WG, &i, &e, &st);\n"
"    for (; i < e; i++) c += SEL_TEST(i) ? 1UL : 0UL;\n"
"    part[g * WG + lid] = c;\n"
"}\n"
"KA_KERNEL(kaprims_sel_move, KA_CONST(T) in, ulong io, KA_CONST(uchar) fl, ulong fo, KA_GLOBAL T *out, ulong oo,\n"
"          KA_GLOBAL ulong *cnt, ulong co, KA_GLOBAL ulong *part, ulong n, ulong C) {\n"
"    in += io;\n"
"    fl += fo;\n"
"    out += oo;\n"
"    uint lid = (uint)ka_local_id(0);\n"
"    ulong g = ka_group_id(0), w = g * WG + lid, lo = g * C < n ? g * C : n, hi = lo + C < n ? lo + C : n, i, e, st;\n"
"    prims_span(lo, hi, lid, WG, &i, &e, &st);\n"
"    ulong o = w ? part[w - 1] : 0UL, oe = part[w];\n"
/* Every element is stored and the place advances past the kept ones only:
 * no branch to mispredict. The place stays inside this work-item's part of
 * out, [o, oe): the loop ends when the last kept one is in. */
"    for (; i < e && o < oe; i++) {\n"
"        T x = in[i];\n"
"        out[o] = x;\n"
"        o += SEL_TEST(i) ? 1UL : 0UL;\n"
"    }\n"
"    if (w == ka_num_groups(0) * WG - 1) cnt[co] = oe;\n"
"}\n"
"#else\n"
/* GPUs: one pass, decoupled look-back. Each group takes the next tile id
 * from st[0] (so every tile before it belongs to a group that is running),
 * ranks its tile's kept elements with a group scan of per-work-item counts
 * (each work-item holds K consecutive elements), publishes the tile's count
 * in st[1 + t], then folds its predecessors' published values, newest first,
 * until one that holds its inclusive prefix, and publishes its own. A status
 * word is the state in the top two bits and the value below, so one 64-bit
 * store publishes both. The kept elements are compacted in local memory and
 * written as one run (coalesced). */
"#define SEL_PREFIX 0x8000000000000000UL\n"
"#define SEL_AGG 0x4000000000000000UL\n"
"#define SEL_VAL 0x3fffffffffffffffUL\n"
/* Predecessors read at once by the look-back's window. */
"#define SEL_LB (WG < 32 ? WG : 32)\n"
"PRIMS_GROUP_SCAN(sel_group_scan, uint, ADDU)\n"
/* Resets the tile counter and the tiles' states before each call. */
"KA_KERNEL(kaprims_sel_prep, KA_GLOBAL ulong *st, ulong tiles) {\n"
"    ulong i = ka_global_id(0);\n"
"    if (i <= tiles) st[i] = 0UL;\n"
"}\n"
"KA_KERNEL(kaprims_sel_move, KA_CONST(T) in, ulong io, KA_CONST(uchar) fl, ulong fo, KA_GLOBAL T *out, ulong oo,\n"
"          KA_GLOBAL ulong *cnt, ulong co, KA_GLOBAL ulong *st, ulong n, ulong tiles) {\n"
"    in += io;\n"
"    fl += fo;\n"
"    out += oo;\n"
"    KA_LOCAL T cmp[TILE];\n"
"    KA_LOCAL uint sc[2 * WG];\n"
"    KA_LOCAL ulong lb[SEL_LB];\n"
"    KA_LOCAL ulong tl[1];\n"
"    uint lid = (uint)ka_local_id(0);\n"
"    if (lid == 0u) {\n"
"        ulong t = ka_atomic_add(&st[0], 1UL);\n"
"        if (t & 1UL) LB_DELAY(t, 0u);\n"
"        tl[0] = t;\n"
"    }\n"
"    ka_barrier_local();\n"
"    ulong t = tl[0], base = t * TILE + (ulong)lid * K;\n"
"    T v[K];\n"
"    uint keep = 0u, c = 0u, agg;\n"
"    KA_UNROLL\n"
"    for (uint j = 0; j < K; j++) {\n"
"        ulong i = base + j;\n"
"        T x = (T)0;\n"
"        int k = 0;\n"
"        if (i < n) SEL_LOAD(i, x, k);\n"
"        v[j] = x;\n"
"        keep |= (uint)(k ? 1 : 0) << j;\n"
"        c += k ? 1u : 0u;\n"
"    }\n"
"    uint pos = sel_group_scan(c, lid, sc, &agg);\n"
"    if (lid == 0u) {\n"
"        ka_atomic_store(&st[1 + t], (t == 0 ? SEL_PREFIX : SEL_AGG) | (ulong)agg);\n"
"        LB_DELAY(t, 1u);\n"
"    }\n"
"    KA_UNROLL\n"
"    for (uint j = 0; j < K; j++)\n"
"        if ((keep >> j) & 1u) cmp[pos++] = v[j];\n"
/* The look-back: SEL_LB work-items read the states of tiles p, p - 1, ...
 * (p: the newest not yet folded); every work-item folds the same window
 * from local memory up to the first state not yet published (then reads
 * again from there) or the first inclusive prefix (then done). */
"    ulong excl = 0, p = t - 1;\n"
"    uint done = t == 0 ? 1u : 0u;\n"
"    while (!done) {\n"
"        if (lid < SEL_LB) lb[lid] = p >= lid ? ka_atomic_load(&st[1 + p - lid]) : SEL_PREFIX;\n"
"        ka_barrier_local();\n"
"        uint m = 0;\n"
"        for (; m < SEL_LB; m++) {\n"
"            ulong s = lb[m];\n"
"            if (!(s & (SEL_PREFIX | SEL_AGG))) break;\n"
"            excl += s & SEL_VAL;\n"
"            if (s & SEL_PREFIX) { done = 1u; break; }\n"
"        }\n"
"        p -= m;\n"
"        ka_barrier_local();\n"
"    }\n"
"    if (lid == 0u && t != 0) {\n"
"        LB_DELAY(t, 2u);\n"
"        ka_atomic_store(&st[1 + t], SEL_PREFIX | (excl + agg));\n"
"    }\n"
"    if (lid == 0u && t == tiles - 1) cnt[co] = excl + agg;\n"
"    ka_barrier_local();\n"
"    for (uint i = lid; i < agg; i += WG) out[excl + i] = cmp[i];\n"
"}\n"
"#endif\n";
#endif
