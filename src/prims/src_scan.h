/* ka_scan's kernels. GPUs (and any device with KA_PRIMS_LAYOUT=gpu): one
 * pass, decoupled look-back (Merrill and Garland,
 * "Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016).
 *
 * Each work-group takes the next tile from a ticket counter (not its group
 * id): every tile below the one it takes was taken by a group that is
 * already running, so waiting on those tiles needs no promise about the order
 * in which groups are scheduled (OpenCL and CUDA give none). The group
 * reduces its tile, publishes the aggregate (flag A), adds up the
 * predecessors' published values backwards until one holds an inclusive
 * prefix (flag P), publishes its own inclusive prefix and scans its tile from
 * the carry. Tile 0 publishes P at once, so every walk ends.
 *
 * Calls reset nothing from the host (no fill before the launch, so graph
 * replays work as calls do): the control words ctr = {ticket counter,
 * groups done, epoch} live on the device. Every status flag carries the
 * epoch, so flags of earlier calls read as "not yet published"; the group
 * that finishes last (the done counter reaches the group count: every group
 * has taken its tile and read the epoch) zeroes the counters and advances the
 * epoch for the next call, and when the epoch wraps it clears the flags.
 *
 * Status, scratch of M tiles (kernel argument st):
 * - 4-byte types with 64-bit atomics: one ulong a tile, flag word in the high
 *   half, the value's bits in the low half, written and read by single 64-bit
 *   atomics: a reader sees a flag and its value together.
 * - otherwise: flag words (uint) at st, then the aggregates and the inclusive
 *   prefixes (M values each, bits of T). A writer stores the value, fences,
 *   then stores the flag atomically; a reader loads the flag atomically,
 *   fences, then loads the value written under that flag. Aggregates and
 *   prefixes have separate slots, so a value is never overwritten while its
 *   flag may be read.
 *
 * The operator: the plan's (PRIMS_USER_OP, PRIMS_USER_IDENTITY), else the sum;
 * the user's map applies to each input element as it is read. Combining
 * keeps the elements' order (the operator need not commute).
 *
 * PRIMS_ADVERSARY (tests): groups wait a pseudo-random while (LB_DELAY,
 * src_common.h), from their tile, after taking it (odd tiles), after publishing the aggregate and
 * before publishing the prefix, so look-backs walk far and meet unpublished
 * tiles; the epoch wraps every few calls. */
#ifndef KA_PRIMS_SRC_SCAN_H
#define KA_PRIMS_SRC_SCAN_H
static const char ka__prims_src_scan[] =
"#define SOP(a, b) PRIMS_UOP(a, b)\n"
"#define SID PRIMS_UID\n"
"#define SMAP(x) prims_user_map(x)\n"
"#define LB_A 1u\n#define LB_P 2u\n"
/* TB: the bits of T; TO_BITS / FROM_BITS reinterpret. */
"#if TID == 1\n#define TB uint\n#define TO_BITS(x) ((uint)(x))\n#define FROM_BITS(u) ((int)(u))\n"
"#elif TID == 2\n#define TB uint\n#define TO_BITS(x) (x)\n#define FROM_BITS(u) (u)\n"
"#elif TID == 3\n#define TB ulong\n#define TO_BITS(x) ((ulong)(x))\n#define FROM_BITS(u) ((long)(u))\n"
"#elif TID == 4\n#define TB ulong\n#define TO_BITS(x) (x)\n#define FROM_BITS(u) (u)\n"
"#elif TID == 5\n#define TB uint\n#define TO_BITS(x) as_uint(x)\n#define FROM_BITS(u) as_float(u)\n"
"#else\n#define TB ulong\n#define TO_BITS(x) as_ulong(x)\n#define FROM_BITS(u) as_double(u)\n"
"#endif\n"
"#if (TID == 1 || TID == 2 || TID == 5) && defined(KA_HAS_ATOMIC64)\n#define LB_PACKED 1\n#endif\n"
/* Value slots (unpacked): atomic accesses where the width has atomics, so
 * the fences order them as the memory models define (C11: relaxed atomics
 * between fences); else volatile ones (8-byte types on an OpenCL device
 * without 64-bit atomics). */
"#if TID == 1 || TID == 2 || TID == 5 || defined(KA_HAS_ATOMIC64)\n"
"#define LB_VSTORE(p, x) ka_atomic_store((KA_GLOBAL TB *)(p), x)\n#define LB_VLOAD(p) ka_atomic_load((KA_GLOBAL TB *)(p))\n"
"#else\n"
"#define LB_VSTORE(p, x) (*(p) = (x))\n#define LB_VLOAD(p) (*(p))\n"
"#endif\n"
/* The adversary's delays (LB_DELAY): src_common.h; its epochs wrap often. */
"#ifdef PRIMS_ADVERSARY\n"
"#define LB_EPOCHS 3u\n"
"#else\n"
"#define LB_EPOCHS 0x40000000u\n"
"#endif\n"
/* Reads the epoch and takes a tile (lid 0). The epoch may be read first: it
 * changes only once every group of the call has counted itself done. */
"KA_DEVICE_FN uint lb_take(KA_GLOBAL uint *ctr, uint *epoch) {\n"
"    *epoch = ka_atomic_load(&ctr[2]);\n"
"    return ka_atomic_add(&ctr[0], 1u);\n"
"}\n"
/* After its last status access (lid 0, at the kernel's end, where the
 * atomic's wait holds up no other work-item): the last of the G groups
 * resets the counters, advances the epoch, and clears the M flags when it
 * wraps. */
"KA_DEVICE_FN void lb_done(KA_GLOBAL uint *ctr, KA_GLOBAL ulong *st, ulong M, uint epoch, uint G) {\n"
"    ka_fence();\n" /* this group's publications before its count, so the clearing comes after them */
"    if (ka_atomic_add(&ctr[1], 1u) != G - 1u) return;\n"
"    ka_fence();\n"
"    uint e = epoch + 1u == LB_EPOCHS ? 0u : epoch + 1u;\n"
"    if (e == 0u) {\n"
"#ifdef LB_PACKED\n"
"        for (ulong i = 0; i < M; i++) st[i] = 0;\n"
"#else\n"
"        for (ulong i = 0; i < M; i++) ((KA_GLOBAL uint *)st)[i] = 0u;\n"
"#endif\n"
"    }\n"
"    ka_atomic_store(&ctr[0], 0u);\n"
"    ka_atomic_store(&ctr[1], 0u);\n"
"    ka_atomic_store(&ctr[2], e);\n"
"}\n"
"KA_DEVICE_FN void lb_publish(KA_GLOBAL ulong *st, ulong M, ulong t, uint epoch, uint f, T v) {\n"
"#ifdef LB_PACKED\n"
"    ka_atomic_store(&st[t], ((ulong)((epoch << 2) | f) << 32) | (ulong)TO_BITS(v));\n"
"#else\n"
"    KA_GLOBAL volatile TB *val = (KA_GLOBAL volatile TB *)(st + M / 2u);\n"
"    LB_VSTORE(&val[f == LB_A ? t : M + t], TO_BITS(v));\n"
"    ka_fence();\n"
"    ka_atomic_store(&((KA_GLOBAL uint *)st)[t], (epoch << 2) | f);\n"
"#endif\n"
"}\n"
/* Tile t's status: 0 (not published in this call), LB_A or LB_P; *v its value. */
"KA_DEVICE_FN uint lb_read(KA_GLOBAL ulong *st, ulong M, ulong t, uint epoch, T *v) {\n"
"#ifdef LB_PACKED\n"
"    ulong w = ka_atomic_load(&st[t]);\n"
"    uint hi = (uint)(w >> 32);\n"
"    *v = FROM_BITS((uint)w);\n"
"    return (hi >> 2) == epoch ? (hi & 3u) : 0u;\n"
"#else\n"
"    uint hi = ka_atomic_load(&((KA_GLOBAL uint *)st)[t]);\n"
"    uint f = (hi >> 2) == epoch ? (hi & 3u) : 0u;\n"
"    ka_fence();\n"
"    KA_GLOBAL volatile TB *val = (KA_GLOBAL volatile TB *)(st + M / 2u);\n"
"    *v = f ? FROM_BITS(LB_VLOAD(&val[f == LB_A ? t : M + t])) : SID;\n"
"    return f;\n"
"#endif\n"
"}\n"
/* One work-item's look-back for tile t of aggregate total: publishes A, walks
 * back, publishes P; returns the exclusive prefix (the carry). */
"KA_DEVICE_FN T lb_lookback(KA_GLOBAL ulong *st, ulong M, uint t, uint epoch, T total) {\n"
"    if (t == 0u) { lb_publish(st, M, 0, epoch, LB_P, total); return SID; }\n"
"    lb_publish(st, M, t, epoch, LB_A, total);\n"
"    LB_DELAY(t, 1u);\n"
"    T c = SID;\n"
"    ulong j = t - 1u;\n"
"    for (;;) {\n"
"        T v;\n"
"        uint f = lb_read(st, M, j, epoch, &v);\n"
"        if (f == 0u) continue;\n"
"        c = SOP(v, c);\n"
"        if (f == LB_P) break;\n"
"        j--;\n"
"    }\n"
"    LB_DELAY(t, 2u);\n"
"    lb_publish(st, M, t, epoch, LB_P, SOP(c, total));\n"
"    return c;\n"
"}\n"
/* CPUs: three launches, no barriers in the first and the last (PoCL and the
 * host run barrier-free kernels far faster, and no group waits on another:
 * a preempted worker thread stalls nobody). Each work-item owns a contiguous
 * run of its group's chunk [g*C, (g+1)*C): kaprims_scan1 folds it into
 * part[g*WG + lid], kaprims_scan2 scans the G*WG partials (exclusive, one
 * group), kaprims_scan3 scans the run serially from its carry, as an OpenMP
 * scan does per thread. */
/* Work-item lid's run [*b, *e) of [lo, hi). */
"KA_DEVICE_FN void lb_run(ulong lo, ulong hi, uint lid, ulong *b, ulong *e) {\n"
"    ulong per = hi > lo ? (hi - lo + WG - 1) / WG : 0;\n"
"    *b = lo + lid * per; if (*b > hi) *b = hi;\n"
"    *e = *b + per; if (*e > hi) *e = hi;\n"
"}\n"
"KA_KERNEL(kaprims_scan1, KA_CONST(T) in, ulong io, KA_GLOBAL T *part, ulong n, ulong C) {\n"
"    in += io;\n"
"    uint lid = (uint)ka_local_id(0);\n"
"    ulong g = ka_group_id(0), lo = g * C < n ? g * C : n, hi = lo + C < n ? lo + C : n, i, e;\n"
"    lb_run(lo, hi, lid, &i, &e);\n"
"#ifdef PRIMS_USER_OP\n" /* in order: the operator need not commute */
"    T s = SID;\n"
"    for (; i < e; i++) s = SOP(s, SMAP(in[i]));\n"
"    part[g * WG + lid] = s;\n"
"#else\n"
"    part[g * WG + lid] = prims_reduce_items(in, i, e, 0, 1, 0u);\n"
"#endif\n"
"}\n"
"PRIMS_GROUP_SCAN_ID(lb_group_scan, T, SOP, SID)\n"
"PRIMS_TILE_SCAN_ID(lb_tile_scan, T, SOP, lb_group_scan, SID)\n"
"PRIMS_RANGE_SCAN_ID(lb_range_scan, T, lb_tile_scan, SOP, SID)\n"
"KA_KERNEL(kaprims_scan2, KA_GLOBAL T *part, ulong G) {\n"
"    KA_LOCAL T buf[TILE_LOCAL];\n"
"    KA_LOCAL T tot[2 * WG];\n"
"    lb_range_scan(part, part, 0, G, SID, 1u, buf, tot);\n"
"}\n"
"KA_KERNEL(kaprims_scan3, KA_GLOBAL T *in, ulong io, KA_GLOBAL T *out, ulong oo, KA_CONST(T) part, ulong n, ulong C,\n"
"          uint excl) {\n"
"    in += io;\n"
"    out += oo;\n"
"    uint lid = (uint)ka_local_id(0);\n"
"    ulong g = ka_group_id(0), lo = g * C < n ? g * C : n, hi = lo + C < n ? lo + C : n, i, e;\n"
"    lb_run(lo, hi, lid, &i, &e);\n"
"    T c = part[g * WG + lid];\n"
"    if (excl) for (; i < e; i++) { T x = SMAP(in[i]); out[i] = c; c = SOP(c, x); }\n"
"    else for (; i < e; i++) { c = SOP(c, SMAP(in[i])); out[i] = c; }\n"
"}\n"
"#if defined(KA_CUDA) && defined(KA_HAS_SUBGROUP_SHUFFLE) && KA_SUBGROUP_SIZE == 32 && WG % 32 == 0 && !defined(KA_PRIMS_NO_SUBGROUPS)\n"
/* CUDA: the first warp looks back, 32 predecessors at a time (lane l reads
 * tile j - l); the window's values up to the nearest P are combined in order
 * (farther tiles on the left) by a shuffle tree. Lane 0 publishes. */
"#define LB_WARP 1\n"
"KA_DEVICE_FN T lb_lookback_warp(KA_GLOBAL ulong *st, ulong M, uint t, uint epoch, T total, uint lane) {\n"
"    if (t == 0u) { if (lane == 0u) lb_publish(st, M, 0, epoch, LB_P, total); return SID; }\n"
"    if (lane == 0u) lb_publish(st, M, t, epoch, LB_A, total);\n"
"    LB_DELAY(t, 1u);\n"
"    T c = SID;\n"
"    long j = (long)t - 1;\n"
"    for (;;) {\n"
"        long k = j - (long)lane;\n"
"        T v;\n"
"        uint f;\n"
"        for (;;) {\n"
"            v = SID, f = LB_P;\n" /* lanes before tile 0: past the P of tile 0, never used */
"            if (k >= 0) f = lb_read(st, M, (ulong)k, epoch, &v);\n"
"            if (!ka_subgroup_any(f == 0u)) break;\n"
"        }\n"
"        uint pm = __ballot_sync(0xffffffffu, f == LB_P);\n" /* the nearest P */
"        uint first = pm ? (uint)__ffs(pm) - 1u : 32u;\n"
"        if (lane > first) v = SID;\n"
"        for (uint o = 1; o < 32u; o <<= 1) {\n"
"            T y = ka_subgroup_shuffle_down(v, o);\n"
"            if (lane + o < 32u) v = SOP(y, v);\n"
"        }\n"
"        c = SOP(ka_subgroup_broadcast(v, 0u), c);\n"
"        if (first < 32u) break;\n"
"        j -= 32;\n"
"    }\n"
"    LB_DELAY(t, 2u);\n"
"    if (lane == 0u) lb_publish(st, M, t, epoch, LB_P, SOP(c, total));\n"
"    return c;\n"
"}\n"
"#endif\n"
/* GPUs: a tile of WG*K elements, loaded coalesced into local memory; each
 * work-item sums K consecutive ones, the group scans the sums, one work-item
 * (CUDA: one warp) looks back, each work-item scans its K from the carry,
 * the tile goes out coalesced. in may be out. */
"KA_KERNEL(kaprims_scan, KA_GLOBAL T *in, ulong io, KA_GLOBAL T *out, ulong oo, KA_GLOBAL uint *ctr,\n"
"          KA_GLOBAL ulong *st, ulong M, ulong n, uint excl) {\n"
"    in += io;\n"
"    out += oo;\n"
"    KA_LOCAL T buf[TILE_LOCAL];\n"
"    KA_LOCAL T tot[2 * WG];\n"
"    KA_LOCAL uint sh_tile, sh_epoch;\n"
"    KA_LOCAL T sh_carry;\n"
"    uint lid = (uint)ka_local_id(0);\n"
"    if (lid == 0u) {\n"
"        uint e, t = lb_take(ctr, &e);\n"
"        if (t & 1u) LB_DELAY(t, 0u);\n"
"        sh_tile = t, sh_epoch = e;\n"
"    }\n"
"    ka_barrier_local();\n"
"    uint t = sh_tile, epoch = sh_epoch;\n"
"    ulong base = (ulong)t * TILE;\n"
"    for (uint j = 0; j < K; j++) {\n"
"        uint x = j * WG + lid;\n"
"        ulong i = base + x;\n"
"        buf[SKEW(x)] = i < n ? SMAP(in[i]) : SID;\n"
"    }\n"
"    ka_barrier_local();\n"
"    T s = SID, total;\n"
"    for (uint j = 0; j < K; j++) s = SOP(s, buf[SKEW(lid * K + j)]);\n"
"    T pre = lb_group_scan(s, lid, tot, &total);\n"
"#ifdef LB_WARP\n"
"    if (lid < 32u) {\n"
"        T c = lb_lookback_warp(st, M, t, epoch, total, lid);\n"
"        if (lid == 0u) sh_carry = c;\n"
"    }\n"
"#else\n"
"    if (lid == 0u) sh_carry = lb_lookback(st, M, t, epoch, total);\n"
"#endif\n"
"    ka_barrier_local();\n"
"    pre = SOP(sh_carry, pre);\n"
"    for (uint j = 0; j < K; j++) {\n"
"        uint x = SKEW(lid * K + j);\n"
"        T v = buf[x];\n"
"        if (excl) { buf[x] = pre; pre = SOP(pre, v); }\n"
"        else { pre = SOP(pre, v); buf[x] = pre; }\n"
"    }\n"
"    ka_barrier_local();\n"
"    for (uint j = 0; j < K; j++) {\n"
"        uint x = j * WG + lid;\n"
"        ulong i = base + x;\n"
"        if (i < n) out[i] = buf[SKEW(x)];\n"
"    }\n"
"    if (lid == 0u) lb_done(ctr, st, M, epoch, (uint)ka_num_groups(0));\n"
"}\n";
#endif
