/* ka_sort's kernels: LSD radix, 8 bits a pass. Two schemes, both in every
 * program (sort.c launches the layout's):
 *   CPUs (contig): per pass, per-work-item digit counts, their scan, and a
 *   barrier-free stable scatter (kaprims_hist, kaprims_hist_scan,
 *   kaprims_scatter).
 *   GPUs: onesweep. One upsweep counts the digits of every pass at once
 *   (kaprims_upsweep), one small kernel scans them into each pass's digit
 *   starts (kaprims_upscan), then one kernel a pass (kaprims_onesweep) ranks
 *   tiles in local memory and finds each tile's place by decoupled look-back.
 * Values ride along by a run-time width vw (0, 4 or 8 bytes): v4 and v8 are
 * the same buffer typed both ways, one of them read. gen: the values are the
 * keys' indices, made on the fly (argsort's first pass); wk 0: the keys are
 * not written (argsort's last pass). */
#ifndef KA_PRIMS_SRC_SORT_H
#define KA_PRIMS_SRC_SORT_H
static const char ka__prims_src_sort[] =
"#define DIGIT(u, shift) ((uint)((KEYX(u) >> (shift)) & 255u))\n"
"#if TID == 1 || TID == 2 || TID == 5\n#define SORT_PASSES 4\n#else\n#define SORT_PASSES 8\n#endif\n"
/* The onesweep tile: WG work-items of SORT_ITEMS keys, exchanged through
 * local memory in words of SORT_XW bytes (the wider of key and value). */
"#ifndef SORT_XW\n#define SORT_XW (SORT_PASSES == 4 ? 4 : 8)\n#endif\n"
"#ifndef SORT_ITEMS\n#define SORT_ITEMS (SORT_XW == 4 ? 15 : 12)\n#endif\n"
"#ifndef SORT_MINB\n#define SORT_MINB 3\n#endif\n"
"#if SORT_XW == 4\n#define SORT_XT uint\n#else\n#define SORT_XT ulong\n#endif\n"
"#define STILE (WG * SORT_ITEMS)\n"
/* The kernels' signatures: a program holds its layout's kernels and empty
 * ones of the same names for the other (one kernel list, half the build). */
"#define SORT_HIST KA_KERNEL(kaprims_hist, KA_CONST(KT) keys, ulong ko, KA_GLOBAL ulong *counts, ulong n, ulong C, \\\n"
"    uint shift)\n"
"#define SORT_HIST_SCAN KA_KERNEL(kaprims_hist_scan, KA_GLOBAL ulong *counts, ulong m)\n"
"#define SORT_SCATTER KA_KERNEL(kaprims_scatter, KA_CONST(KT) ksrc, ulong kso, KA_GLOBAL KT *kdst, ulong kdo, \\\n"
"    KA_CONST(uint) v4src, KA_GLOBAL uint *v4dst, KA_CONST(ulong) v8src, KA_GLOBAL ulong *v8dst, ulong vso, \\\n"
"    ulong vdo, KA_CONST(ulong) counts, ulong n, ulong C, uint shift, uint vw, uint gen, uint wk)\n"
"#define SORT_UPSWEEP KA_KERNEL(kaprims_upsweep, KA_CONST(KT) keys, ulong ko, KA_GLOBAL ulong *cnt, ulong n, \\\n"
"    ulong C, KA_GLOBAL ulong *st, ulong nst)\n"
"#define SORT_ONESWEEP KA_KERNEL(kaprims_onesweep, KA_CONST(KT) ksrc, ulong kso, KA_GLOBAL KT *kdst, ulong kdo, \\\n"
"    KA_CONST(uint) v4src, KA_GLOBAL uint *v4dst, KA_CONST(ulong) v8src, KA_GLOBAL ulong *v8dst, ulong vso, \\\n"
"    ulong vdo, KA_GLOBAL ulong *cnt, KA_GLOBAL ulong *st, ulong n, uint pass, uint vw, uint gen, uint wk)\n"
"#if CONTIG\n"
/* ---- CPUs: no barriers, the OpenMP radix sort's scheme. Each work-item
 * owns a contiguous run of its group's chunk and counts its digits privately
 * into counts[d*W + w] (W = G*WG work-items, w its index): their digit-major
 * scan is every (digit, work-item)'s first place, and each work-item then
 * moves its run in order, which keeps the sort stable. */
"SORT_HIST {\n"
"    keys += ko;\n"
"    uint lid = (uint)ka_local_id(0);\n"
"    ulong g = ka_group_id(0), W = ka_num_groups(0) * WG, w = g * WG + lid;\n"
"    ulong lo = g * C < n ? g * C : n, hi = lo + C < n ? lo + C : n, i, e, st;\n"
"    prims_span(lo, hi, lid, WG, &i, &e, &st);\n"
"    uint h[256];\n"
"    for (uint d = 0; d < 256u; d++) h[d] = 0u;\n"
"    for (; i < e; i++) h[DIGIT(keys[i], shift)]++;\n"
"    for (uint d = 0; d < 256u; d++) counts[(ulong)d * W + w] = h[d];\n"
"}\n"
/* The loop per value kind, so each is a tight loop of its own. */
"#define SORT_SCAT(VSTORE)                                                      \\\n"
"    for (; i < e; i++) {                                                       \\\n"
"        KT k = ksrc[i];                                                        \\\n"
"        ulong p = off[DIGIT(k, shift)]++;                                      \\\n"
"        if (wk) kdst[p] = k;                                                   \\\n"
"        VSTORE;                                                                \\\n"
"    }\n"
"SORT_SCATTER {\n"
"    ksrc += kso; kdst += kdo; v4src += vso; v8src += vso; v4dst += vdo; v8dst += vdo;\n"
"    uint lid = (uint)ka_local_id(0);\n"
"    ulong g = ka_group_id(0), W = ka_num_groups(0) * WG, w = g * WG + lid;\n"
"    ulong lo = g * C < n ? g * C : n, hi = lo + C < n ? lo + C : n, i, e, st;\n"
"    prims_span(lo, hi, lid, WG, &i, &e, &st);\n"
"    ulong off[256];\n"
"    for (uint d = 0; d < 256u; d++) off[d] = counts[(ulong)d * W + w];\n"
"    if (vw == 0u) { SORT_SCAT((void)0) }\n"
"    else if (gen && vw == 4u) { SORT_SCAT(v4dst[p] = (uint)i) }\n"
"    else if (gen) { SORT_SCAT(v8dst[p] = i) }\n"
"    else if (vw == 4u) { SORT_SCAT(v4dst[p] = v4src[i]) }\n"
"    else { SORT_SCAT(v8dst[p] = v8src[i]) }\n"
"}\n"
"SORT_HIST_SCAN {\n"
"    KA_LOCAL ulong buf[TILE_LOCAL];\n"
"    KA_LOCAL ulong tot[2 * WG];\n"
"    prims_range_scan_ul(counts, counts, 0, m, 0UL, 1u, buf, tot);\n"
"}\n"
"SORT_UPSWEEP {}\nSORT_ONESWEEP {}\n#else\nSORT_HIST {}\nSORT_HIST_SCAN {}\nSORT_SCATTER {}\n"
/* ---- GPUs: onesweep. cnt: [SORT_PASSES][256] digit counts (zeroed before
 * each call), scanned in place into each pass's digit starts; one tile
 * counter a pass at SORT_CTR; past them (kept between calls) the last
 * look-back stamp used (SORT_EPOCH) and the first of this call (SORT_BASE).
 * The stamps live on the device, so a recorded graph's replays take new ones. */
"#define SORT_CTR 2048\n"
"#define SORT_EPOCH 2056\n"
"#define SORT_BASE 2057\n"
/* The adversary (tests): the stamps wrap every few calls. */
"#ifdef PRIMS_ADVERSARY\n#define SORT_STAMP_MAX 16UL\n#else\n#define SORT_STAMP_MAX 4194303UL\n#endif\n"
/* Every digit of every pass, counted in local memory, added to cnt. When
 * this call's stamps would pass the last, the groups clear the status words
 * (nst of them) first: no old word can carry a stamp of the new round. */
"SORT_UPSWEEP {\n"
"    keys += ko;\n"
"    KA_LOCAL uint h[SORT_PASSES * 256];\n"
"    uint lid = (uint)ka_local_id(0);\n"
"    ulong g = ka_group_id(0);\n"
"    for (uint d = lid; d < SORT_PASSES * 256u; d += WG) h[d] = 0u;\n"
"    ka_barrier_local();\n"
"    ulong lo = g * C < n ? g * C : n, hi = lo + C < n ? lo + C : n;\n"
"#define SORT_COUNT(u) KA_UNROLL for (uint p = 0; p < SORT_PASSES; p++) \\\n"
"    ka_atomic_add(&h[p * 256u + (uint)(((u) >> (8u * p)) & 255u)], 1u);\n"
/* Four loads in flight before their counts. */
"    ulong i = lo + lid;\n"
"    for (; i + 3u * WG < hi; i += 4u * WG) {\n"
"        KT u0 = KEYX(keys[i]), u1 = KEYX(keys[i + WG]), u2 = KEYX(keys[i + 2u * WG]), u3 = KEYX(keys[i + 3u * WG]);\n"
"        SORT_COUNT(u0) SORT_COUNT(u1) SORT_COUNT(u2) SORT_COUNT(u3)\n"
"    }\n"
"    for (; i < hi; i += WG) { KT u = KEYX(keys[i]); SORT_COUNT(u) }\n"
"    ka_barrier_local();\n"
"    for (uint d = lid; d < SORT_PASSES * 256u; d += WG)\n"
"        if (h[d]) ka_atomic_add(&cnt[d], (ulong)h[d]);\n"
"    if (cnt[SORT_EPOCH] + SORT_PASSES > SORT_STAMP_MAX)\n"
"        for (ulong i = g * WG + lid; i < nst; i += ka_num_groups(0) * WG) st[i] = 0UL;\n"
"}\n"
/* One pass. Each group takes the next tile from the pass's counter (so a
 * group only ever waits on tiles that running or finished groups hold:
 * forward progress without co-scheduling), ranks its keys by digit, stably,
 * publishes its 256 digit counts, looks back for their global places,
 * publishes those, and writes keys (and values) through local memory in
 * tile-sorted order: consecutive work-items write consecutive addresses of
 * one digit's run.
 * Status words st[tile*256 + d]: 2 flag bits (1 aggregate: this tile's count
 * of d; 2 prefix: the count of d in every key up to and including this
 * tile, plus the digit's start), a 22-bit stamp, a 40-bit count. A word is
 * written and read whole with 64-bit atomics, so a reader that sees a flag
 * sees its count; nothing else passes between groups within a pass (keys go
 * to places no group reads until the next launch), so no fence is needed,
 * and the weak ordering of OpenCL 1.2 is enough. Tile 0 starts from cnt's
 * digit starts. Every pass of every call has a stamp of its own (the
 * upsweep clears the words when the stamps wrap), and a word of another
 * stamp reads as not yet written: the words need no clearing between passes.
 * Keys of a tile: item j of work-item (w, lane), w its SW-wide warp, sits at
 * w*SW*SORT_ITEMS + j*SW + lane: loads are coalesced, and the order (w, j,
 * lane) is the tile's order. A key's rank in the tile = the start of its
 * digit in the tile + the digit's count in earlier warps + its rank in its
 * warp. Lanes past n carry digit 255: they rank after every real key, and
 * the tile's count of 255 leaves them out. */
"#define SW (WG < 32 ? WG : 32)\n"
"#define NW (WG / SW)\n"
"#define SORT_FA (1UL << 62)\n"
"#define SORT_FP (2UL << 62)\n"
"#define SORT_VM ((1UL << 40) - 1UL)\n"
/* The warp ranking's three operations: CUDA's; or, for tests on devices
 * without sub-groups (SORT_EMU_BALLOT), the same ranking with warps emulated
 * through local memory and work-group barriers. */
"#if defined(KA_CUDA) && KA_SUBGROUP_SIZE == 32 && WG % 32 == 0 && !defined(KA_PRIMS_NO_SUBGROUPS)\n"
"#define SORT_BALLOT 1\n"
"#define SORT_BAL(b) __ballot_sync(0xffffffffu, (b))\n"
"#define SORT_WSYNC() __syncwarp(0xffffffffu)\n"
"#define SORT_POPC(x) ((uint)__popc(x))\n"
"#elif defined(SORT_EMU_BALLOT) && WG % 32 == 0\n"
"#define SORT_BALLOT 1\n"
"KA_DEVICE_FN uint sort_emu_ballot(uint b, uint lid, KA_LOCAL_PTR(uint) lb) {\n"
"    lb[lid] = b;\n"
"    ka_barrier_local();\n"
"    uint m = 0u, w0 = lid & ~31u;\n"
"    for (uint l = 0; l < 32u; l++) m |= (lb[w0 + l] & 1u) << l;\n"
"    ka_barrier_local();\n"
"    return m;\n"
"}\n"
"#define SORT_BAL(b) sort_emu_ballot((b), lid, lb)\n"
"#define SORT_WSYNC() ka_barrier_local()\n"
"#define SORT_POPC(x) popcount(x)\n"
"#endif\n"
/* CUDA: at least SORT_MINB groups a multiprocessor (a register bound), through
 * the prelude's attribute hook of KA_KERNEL (absent: no bound, same code). */
"#if defined(KA_CUDA) && defined(KA__WG_ATTR) && defined(SORT_MINB) && SORT_MINB > 0\n"
"#undef KA__WG_ATTR\n"
"#define KA__WG_ATTR __launch_bounds__(WG, SORT_MINB)\n"
"#endif\n"
"SORT_ONESWEEP {\n"
"    ksrc += kso; kdst += kdo; v4src += vso; v8src += vso; v4dst += vdo; v8dst += vdo;\n"
"    ulong sw = (cnt[SORT_BASE] + pass) << 40;\n"
"    KA_LOCAL SORT_XT xch[STILE];\n"
"    KA_LOCAL uchar ldig[STILE];\n"
"    KA_LOCAL uint wh[NW * 256];\n"
"    KA_LOCAL uint tcnt[256];\n"
"    KA_LOCAL uint tstart[256];\n"
"    KA_LOCAL ulong gofs[256];\n"
"    KA_LOCAL ulong sc[2 * WG];\n"
"    KA_LOCAL ulong tsh[1];\n"
"#if defined(SORT_EMU_BALLOT) && defined(SORT_BALLOT)\n"
"    KA_LOCAL uint lb[WG];\n"
"#endif\n"
"    uint lid = (uint)ka_local_id(0), lane = lid % SW, w = lid / SW, shift = pass * 8u;\n"
"    if (lid == 0u) {\n"
"        ulong t = ka_atomic_add(&cnt[SORT_CTR + pass], 1UL);\n"
"        if (t & 1UL) LB_DELAY(t, 0u);\n"
"        tsh[0] = t;\n"
"    }\n"
"    for (uint d = lid; d < NW * 256u; d += WG) wh[d] = 0u;\n"
"    ka_barrier_local();\n"
"    ulong t = tsh[0], base = t * STILE;\n"
"    uint m = n - base < (ulong)STILE ? (uint)(n - base) : (uint)STILE;\n"
"    uint p0 = w * (SW * SORT_ITEMS) + lane;\n"
"    KT key[SORT_ITEMS];\n"
"    uint rk[SORT_ITEMS];\n"
"    KA_UNROLL\n"
"    for (uint j = 0; j < SORT_ITEMS; j++) {\n"
"        uint pos = p0 + j * SW;\n"
"        key[j] = pos < m ? ksrc[base + pos] : (KT)0;\n"
"    }\n"
"#ifdef SORT_BALLOT\n"
/* CUDA (or its emulation): the lanes of a warp with the same digit found by
 * 8 ballots (one a bit); the last of them adds their number to the warp's
 * count. Every lane of the warp runs this loop (WG % 32 == 0, uniform trip
 * count), so the full mask is right; the warp barriers order the count's
 * reads before its update and the update before the next item's reads. */
"    uint lt = (1u << lane) - 1u;\n"
"    KA_UNROLL\n"
"    for (uint j = 0; j < SORT_ITEMS; j++) {\n"
"        uint d = p0 + j * SW < m ? DIGIT(key[j], shift) : 255u;\n"
"        uint peers = 0xffffffffu;\n"
"        KA_UNROLL\n"
"        for (uint b = 0; b < 8u; b++) {\n"
"            uint bit = (d >> b) & 1u, bal = SORT_BAL(bit);\n"
"            peers &= bit ? bal : ~bal;\n"
"        }\n"
"        uint before = SORT_POPC(peers & lt);\n"
"        uint c0 = wh[w * 256u + d];\n"
"        SORT_WSYNC();\n"
"        if ((peers >> lane) == 1u) wh[w * 256u + d] = c0 + SORT_POPC(peers);\n"
"        SORT_WSYNC();\n"
"        rk[j] = c0 + before;\n"
"    }\n"
"#else\n"
/* Elsewhere: one work-item a warp ranks the warp's keys in order, counting
 * in local memory (ranks through xch). */
"    KA_UNROLL\n"
"    for (uint j = 0; j < SORT_ITEMS; j++) {\n"
"        uint pos = p0 + j * SW;\n"
"        ldig[pos] = (uchar)(pos < m ? DIGIT(key[j], shift) : 255u);\n"
"    }\n"
"    ka_barrier_local();\n"
"    if (lid < NW) {\n"
"        uint b0 = lid * (SW * SORT_ITEMS);\n"
"        for (uint x = 0; x < SW * SORT_ITEMS; x++) {\n"
"            uint d = ldig[b0 + x];\n"
"            xch[b0 + x] = (SORT_XT)wh[lid * 256u + d];\n"
"            wh[lid * 256u + d]++;\n"
"        }\n"
"    }\n"
"    ka_barrier_local();\n"
"    KA_UNROLL\n"
"    for (uint j = 0; j < SORT_ITEMS; j++) rk[j] = (uint)xch[p0 + j * SW];\n"
"#endif\n"
"    ka_barrier_local();\n"
/* Per digit: the warps' counts become their exclusive scan; the tile's count,
 * published (tile 0: as a prefix, from the digit's start). */
"    for (uint d = lid; d < 256u; d += WG) {\n"
"        uint s = 0u;\n"
"        for (uint v = 0; v < NW; v++) {\n"
"            uint c = wh[v * 256u + d];\n"
"            wh[v * 256u + d] = s;\n"
"            s += c;\n"
"        }\n"
"        if (d == 255u) s -= (uint)STILE - m;\n"
"        tcnt[d] = s;\n"
"        ka_atomic_store(&st[t * 256u + d], sw | (t == 0UL ? (SORT_FP | (cnt[pass * 256u + d] + s)) : (SORT_FA | (ulong)s)));\n"
"    }\n"
"    if (lid == 0u) LB_DELAY(t, 1u);\n"
"    ka_barrier_local();\n"
"    uint carry = 0u;\n"
"    for (uint b = 0; b < 256u; b += WG) {\n"
"        uint d = b + lid;\n"
"        ulong tot, ex = prims_group_scan_ul(d < 256u ? (ulong)tcnt[d] : 0UL, lid, sc, &tot);\n"
"        if (d < 256u) tstart[d] = carry + (uint)ex;\n"
"        carry += (uint)tot;\n"
"    }\n"
"    ka_barrier_local();\n"
/* Keys into local memory at their rank (their global places are not needed
 * yet: the look-back follows, and the keys are dead during it). */
"    KA_UNROLL\n"
"    for (uint j = 0; j < SORT_ITEMS; j++) {\n"
"        uint pos = p0 + j * SW;\n"
"        if (pos < m) {\n"
"            uint d = DIGIT(key[j], shift);\n"
"            uint r = tstart[d] + wh[w * 256u + d] + rk[j];\n"
"            xch[r] = (SORT_XT)key[j];\n"
"            ldig[r] = (uchar)d;\n"
"            rk[j] = r;\n"
"        }\n"
"    }\n"
/* Look-back: sum the predecessors' aggregates back to the first prefix. */
"    for (uint d = lid; d < 256u; d += WG) {\n"
"        ulong ex = 0UL;\n"
"        if (t == 0UL) ex = cnt[pass * 256u + d];\n"
"        else {\n"
"            ulong j = t - 1UL;\n"
"            for (;;) {\n"
"                ulong s = ka_atomic_load(&st[j * 256u + d]);\n"
"                if ((s & ~(SORT_FA | SORT_FP | SORT_VM)) != sw || (s >> 62) == 0UL) continue;\n"
"                ex += s & SORT_VM;\n"
"                if ((s >> 62) == 2UL) break;\n"
"                j--;\n"
"            }\n"
/* The adversary holds back one digit's prefix (and, where work-items run
 * in turn, the later digits'). */
"            if (d == (uint)(t * 37UL % 256UL)) LB_DELAY(t, 2u);\n"
"            ka_atomic_store(&st[t * 256u + d], sw | SORT_FP | (ex + tcnt[d]));\n"
"        }\n"
"        gofs[d] = ex - (ulong)tstart[d];\n"
"    }\n"
"    ka_barrier_local();\n"
"    if (wk)\n"
"        for (uint i = lid; i < m; i += WG) {\n"
"            KT k = (KT)xch[i];\n"
"            kdst[gofs[ldig[i]] + i] = k;\n"
"        }\n"
/* Values the same way; the barriers outside the branch (PoCL loses the
 * guards after a barrier inside one: docs/KERNELS.md, known device issues). */
"    ka_barrier_local();\n"
"    if (vw != 0u) {\n"
"        KA_UNROLL\n"
"        for (uint j = 0; j < SORT_ITEMS; j++) {\n"
"            uint pos = p0 + j * SW;\n"
"            ulong gi = base + pos;\n"
"            if (pos < m) xch[rk[j]] = gen ? (SORT_XT)gi : vw == 4u ? (SORT_XT)v4src[gi] : (SORT_XT)v8src[gi];\n"
"        }\n"
"    }\n"
"    ka_barrier_local();\n"
"    if (vw != 0u)\n"
"        for (uint i = lid; i < m; i += WG) {\n"
"            ulong dst = gofs[ldig[i]] + i;\n"
"            if (vw == 4u) v4dst[dst] = (uint)xch[i];\n"
"            else v8dst[dst] = (ulong)xch[i];\n"
"        }\n"
"}\n"
"#endif\n"
/* Group p: the exclusive scan of pass p's 256 counts, in place. GPUs: the
 * call's stamps, after the upsweep read the last one. */
"KA_KERNEL(kaprims_upscan, KA_GLOBAL ulong *cnt) {\n"
"    KA_LOCAL ulong sc[2 * WG];\n"
"    uint lid = (uint)ka_local_id(0);\n"
"    KA_GLOBAL ulong *c = cnt + ka_group_id(0) * 256;\n"
"    ulong carry = 0UL;\n"
"    for (uint b = 0; b < 256u; b += WG) {\n"
"        uint d = b + lid;\n"
"        ulong tot, v = d < 256u ? c[d] : 0UL;\n"
"        ulong ex = prims_group_scan_ul(v, lid, sc, &tot);\n"
"        if (d < 256u) c[d] = carry + ex;\n"
"        carry += tot;\n"
"    }\n"
"#if !CONTIG\n"
"    if (ka_group_id(0) == 0 && lid == 0u) {\n"
"        ulong e = cnt[SORT_EPOCH], b = e + SORT_PASSES > SORT_STAMP_MAX ? 1UL : e + 1UL;\n"
"        cnt[SORT_BASE] = b;\n"
"        cnt[SORT_EPOCH] = b + SORT_PASSES - 1UL;\n"
"    }\n"
"#endif\n"
"}\n"
"";
#endif
