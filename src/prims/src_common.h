/* The source every primitive's program starts with, in libka's dialect,
 * after the plan's defines (plan.c):
 *   TID    element type: 1 int, 2 uint, 3 long, 4 ulong, 5 float, 6 double
 *   WG     work-group size (local arrays are sized by it)
 *   K      elements per work-item in a scan tile
 *   CONTIG 1: each work-item reads a contiguous run (CPUs: PoCL runs a
 *          work-item's loop to its end before the next one's, so a strided
 *          run would touch a new cache line per element); 0: consecutive
 *          work-items read consecutive elements (GPUs: coalesced loads)
 * then the user's operator (plan.c), then the primitive's own kernels
 * (src_<kind>.h). Indices and sizes are 64-bit (ulong) throughout: inputs
 * past 2^32 elements. Here: types, operators, work-group scans. */
#ifndef KA_PRIMS_SRC_COMMON_H
#define KA_PRIMS_SRC_COMMON_H
static const char ka__prims_src_common[] =
"#ifndef WG\n#define WG 64\n#endif\n"
"#ifndef K\n#define K 8\n#endif\n"
"#ifndef CONTIG\n#define CONTIG 0\n#endif\n"
"#ifndef TID\n#define TID 2\n#endif\n"
/* T: the element type; UT: the unsigned type of its width (integer sums wrap
 * through it, so overflow is defined); KT: the sort key's bit pattern. */
"#if TID == 1\n"
"#define T int\n#define UT uint\n#define T_LOW ((int)0x80000000)\n#define T_HIGH ((int)0x7fffffff)\n"
"#define KEYX(u) ((u) ^ 0x80000000u)\n"
"#elif TID == 2\n"
"#define T uint\n#define UT uint\n#define T_LOW 0u\n#define T_HIGH 0xffffffffu\n#define KEYX(u) (u)\n"
"#elif TID == 3\n"
"#define T long\n#define UT ulong\n#define T_LOW ((long)0x8000000000000000UL)\n#define T_HIGH ((long)0x7fffffffffffffffUL)\n"
"#define KEYX(u) ((u) ^ 0x8000000000000000UL)\n"
"#elif TID == 4\n"
"#define T ulong\n#define UT ulong\n#define T_LOW 0UL\n#define T_HIGH 0xffffffffffffffffUL\n#define KEYX(u) (u)\n"
"#elif TID == 5\n"
"#define T float\n#define UT uint\n#define T_FLOAT 1\n#define T_LOW as_float(0xff800000u)\n#define T_HIGH as_float(0x7f800000u)\n"
/* Floats sort by their bit pattern made monotonic: negative ones (sign set,
 * -NaN included) have every bit flipped, the others the sign bit. */
"#define KEYX(u) ((u) ^ ((uint)(-(int)((u) >> 31)) | 0x80000000u))\n"
"#elif TID == 6\n"
"#define T double\n#define UT ulong\n#define T_FLOAT 1\n#define T_LOW as_double(0xfff0000000000000UL)\n"
"#define T_HIGH as_double(0x7ff0000000000000UL)\n"
"#define KEYX(u) ((u) ^ ((ulong)(-(long)((u) >> 63)) | 0x8000000000000000UL))\n"
"#endif\n"
"#if TID == 1 || TID == 2 || TID == 5\n#define KT uint\n#else\n#define KT ulong\n#endif\n"
"#ifdef T_FLOAT\n#define ADD(a, b) ((a) + (b))\n#else\n#define ADD(a, b) ((T)((UT)(a) + (UT)(b)))\n#endif\n"
/* min and max propagate NaN: a NaN operand wins (a != a only for NaN). */
"#define MINOP(a, b) (((a) < (b) || (a) != (a)) ? (a) : (b))\n"
"#define MAXOP(a, b) (((a) > (b) || (a) != (a)) ? (a) : (b))\n"
/* The user's operator, identity and map are defined after the user's source
 * (ka__prims_src_ops); declared here so the helpers below can call them. */
"#ifdef PRIMS_USER_OP\n"
"KA_DEVICE_FN T prims_user_op(T a, T b);\n"
"KA_DEVICE_FN T prims_user_identity(void);\n"
"#define PRIMS_UOP(a, b) prims_user_op(a, b)\n#define PRIMS_UID prims_user_identity()\n"
"#else\n"
"#define PRIMS_UOP(a, b) ADD(a, b)\n#define PRIMS_UID ((T)0)\n"
"#endif\n"
"KA_DEVICE_FN T prims_user_map(T x);\n"
/* op: 0 sum, 1 min, 2 max, 3 the plan's operator (sum on plans without). */
"KA_DEVICE_FN T prims_op(T a, T b, uint op) {\n"
"    return op == 0u ? ADD(a, b) : op == 1u ? MINOP(a, b) : op == 2u ? MAXOP(a, b) : PRIMS_UOP(a, b);\n"
"}\n"
"KA_DEVICE_FN T prims_identity(uint op) { return op == 0u ? (T)0 : op == 1u ? T_HIGH : op == 2u ? T_LOW : PRIMS_UID; }\n"
/* The elements [lo, hi) a work-item of rank r among S visits: *b, *e, *step. */
"KA_DEVICE_FN void prims_span(ulong lo, ulong hi, ulong r, ulong S, ulong *b, ulong *e, ulong *step) {\n"
"#if CONTIG\n"
"    ulong per = hi > lo ? (hi - lo + S - 1) / S : 0;\n"
"    *b = lo + r * per; if (*b > hi) *b = hi;\n"
"    *e = *b + per; if (*e > hi) *e = hi;\n"
"    *step = 1;\n"
"#else\n"
"    *b = lo + r; *e = hi; *step = S;\n"
"#endif\n"
"}\n"
/* One work-item's reduction of its elements of [lo, hi): four independent
 * accumulators keep four loads in flight. */
"KA_DEVICE_FN T prims_reduce_items(KA_GLOBAL const T *in, ulong lo, ulong hi, ulong r, ulong S, uint op) {\n"
"    ulong i, e, st;\n"
"    prims_span(lo, hi, r, S, &i, &e, &st);\n"
"    T a0 = prims_identity(op), a1 = a0, a2 = a0, a3 = a0;\n"
"    for (; e >= 3 * st && i < e - 3 * st; i += 4 * st) {\n"
"        a0 = prims_op(a0, prims_user_map(in[i]), op); a1 = prims_op(a1, prims_user_map(in[i + st]), op);\n"
"        a2 = prims_op(a2, prims_user_map(in[i + 2 * st]), op); a3 = prims_op(a3, prims_user_map(in[i + 3 * st]), op);\n"
"    }\n"
"    for (; i < e; i += st) a0 = prims_op(a0, prims_user_map(in[i]), op);\n"
"    return prims_op(prims_op(a0, a1, op), prims_op(a2, a3, op), op);\n"
"}\n"
/* Tree reduction of s[0..WG) into s[0]; every work-item takes part. */
"KA_DEVICE_FN T prims_reduce_local(KA_LOCAL_PTR(T) s, uint lid, T v, uint op) {\n"
"    s[lid] = v;\n"
"    ka_barrier_local();\n"
"    for (uint o = WG / 2; o > 0; o >>= 1) {\n"
"        if (lid < o) s[lid] = prims_op(s[lid], s[lid + o], op);\n"
"        ka_barrier_local();\n"
"    }\n"
"    T r = s[0];\n"
"    ka_barrier_local();\n"
"    return r;\n"
"}\n"
/* A work-item's elements, the loop specialised per op (op is uniform); the
 * barriers come after the branch: PoCL loses guards after a barrier in one
 * arm of an if/else (docs/KERNELS.md, known device issues). */
"KA_DEVICE_FN T prims_reduce_items_op(KA_GLOBAL const T *in, ulong lo, ulong hi, ulong r, ulong S, uint op) {\n"
"    if (op == 0u) return prims_reduce_items(in, lo, hi, r, S, 0u);\n"
"    if (op == 1u) return prims_reduce_items(in, lo, hi, r, S, 1u);\n"
"#ifdef PRIMS_USER_OP\n"
"    if (op == 3u) return prims_reduce_items(in, lo, hi, r, S, 3u);\n"
"#endif\n"
"    return prims_reduce_items(in, lo, hi, r, S, 2u);\n"
"}\n"
/* ---- scans: tiles in local memory, work-group scans ---- */
/* Tiles of WG*K elements sit in local memory with one skip every 32, so the
 * K consecutive ones of a work-item fall in different banks (GPUs). */
"#define SKEW(i) ((i) + ((i) >> 5))\n"
"#define TILE (WG * K)\n"
"#define TILE_LOCAL (TILE + TILE / 32 + 1)\n"
/* A work-group's exclusive scan of one value per work-item; *total gets the
 * group's sum. sc holds 2*WG values. CUDA: warp shuffles, then the 8 warp
 * sums from local memory (2 barriers); elsewhere (PoCL 3.1 has no
 * sub-groups): Hillis-Steele in local memory, ping-pong (log2 WG barriers). */
"#if defined(KA_CUDA) && defined(KA_HAS_SUBGROUP_SHUFFLE) && KA_SUBGROUP_SIZE == 32 && WG % 32 == 0 && !defined(KA_PRIMS_NO_SUBGROUPS)\n"
"#define PRIMS_GROUP_SCAN_ID(NAME, TT, ADDF, IDV)                               \\\n"
"KA_DEVICE_FN TT NAME(TT v, uint lid, KA_LOCAL_PTR(TT) sc, TT *total) {         \\\n"
"    uint lane = lid & 31u, w = lid >> 5;                                       \\\n"
"    TT x = v;                                                                  \\\n"
"    for (uint o = 1; o < 32u; o <<= 1) {                                       \\\n"
"        TT t = ka_subgroup_shuffle_up(x, o);                                   \\\n"
"        if (lane >= o) x = ADDF(t, x);                                         \\\n"
"    }                                                                          \\\n"
"    TT ex = ka_subgroup_shuffle_up(x, 1u);                                     \\\n"
"    if (lane == 0u) ex = IDV;                                                  \\\n"
"    if (lane == 31u) sc[w] = x;                                                \\\n"
"    ka_barrier_local();                                                        \\\n"
"    TT pre = IDV, tot = IDV;                                                   \\\n"
"    for (uint j = 0; j < WG / 32u; j++) {                                      \\\n"
"        TT y = sc[j];                                                          \\\n"
"        if (j < w) pre = ADDF(pre, y);                                         \\\n"
"        tot = ADDF(tot, y);                                                    \\\n"
"    }                                                                          \\\n"
"    ka_barrier_local();                                                        \\\n"
"    *total = tot;                                                              \\\n"
"    return ADDF(pre, ex);                                                      \\\n"
"}\n"
"#else\n"
"#define PRIMS_GROUP_SCAN_ID(NAME, TT, ADDF, IDV)                               \\\n"
"KA_DEVICE_FN TT NAME(TT v, uint lid, KA_LOCAL_PTR(TT) sc, TT *total) {         \\\n"
"    uint cur = 0;                                                              \\\n"
"    sc[lid] = v;                                                               \\\n"
"    ka_barrier_local();                                                        \\\n"
"    for (uint o = 1; o < WG; o <<= 1) {                                        \\\n"
"        TT y = sc[cur * WG + lid];                                             \\\n"
"        if (lid >= o) y = ADDF(sc[cur * WG + lid - o], y);                     \\\n"
"        sc[(cur ^ 1u) * WG + lid] = y;                                         \\\n"
"        cur ^= 1u;                                                             \\\n"
"        ka_barrier_local();                                                    \\\n"
"    }                                                                          \\\n"
"    TT ex = lid ? sc[cur * WG + lid - 1u] : IDV;                               \\\n"
"    *total = sc[cur * WG + WG - 1u];                                           \\\n"
"    ka_barrier_local();                                                        \\\n"
"    return ex;                                                                 \\\n"
"}\n"
"#endif\n"
"#define PRIMS_GROUP_SCAN(NAME, TT, ADDF) PRIMS_GROUP_SCAN_ID(NAME, TT, ADDF, (TT)0)\n"
/* A work-group's scan of one tile in buf (padding beyond the data holds IDV)
 * with carry added: exclusive or inclusive, in place. Returns the tile's
 * total. tot holds 2*WG values. Ends with a barrier. */
"#define PRIMS_TILE_SCAN_ID(NAME, TT, ADDF, GSCAN, IDV)                         \\\n"
"KA_DEVICE_FN TT NAME(KA_LOCAL_PTR(TT) buf, KA_LOCAL_PTR(TT) tot, uint lid, TT carry, uint excl) {\\\n"
"    TT s = IDV, total;                                                         \\\n"
"    for (uint j = 0; j < K; j++) s = ADDF(s, buf[SKEW(lid * K + j)]);          \\\n"
"    TT pre = ADDF(carry, GSCAN(s, lid, tot, &total));                          \\\n"
"    for (uint j = 0; j < K; j++) {                                             \\\n"
"        uint x = SKEW(lid * K + j);                                            \\\n"
"        TT v = buf[x];                                                         \\\n"
"        if (excl) { buf[x] = pre; pre = ADDF(pre, v); }                        \\\n"
"        else { pre = ADDF(pre, v); buf[x] = pre; }                             \\\n"
"    }                                                                          \\\n"
"    ka_barrier_local();                                                        \\\n"
"    return total;                                                              \\\n"
"}\n"
"#define PRIMS_TILE_SCAN(NAME, TT, ADDF, GSCAN) PRIMS_TILE_SCAN_ID(NAME, TT, ADDF, GSCAN, (TT)0)\n"
"#define ADDU(a, b) ((a) + (b))\n"
"PRIMS_GROUP_SCAN(prims_group_scan, T, ADD)\n"
"PRIMS_GROUP_SCAN(prims_group_scan_ul, ulong, ADDU)\n"
"PRIMS_TILE_SCAN(prims_tile_scan, T, ADD, prims_group_scan)\n"
"PRIMS_TILE_SCAN(prims_tile_scan_ul, ulong, ADDU, prims_group_scan_ul)\n"
/* The scan of in[lo, hi) into out with carry-in c, tile by tile, by one group. */
"#define PRIMS_RANGE_SCAN_ID(NAME, TT, TILEF, ADDF, IDV)                        \\\n"
"KA_DEVICE_FN void NAME(KA_GLOBAL const TT *in, KA_GLOBAL TT *out, ulong lo, ulong hi, TT c, uint excl, \\\n"
"                       KA_LOCAL_PTR(TT) buf, KA_LOCAL_PTR(TT) tot) {            \\\n"
"    uint lid = (uint)ka_local_id(0);                                           \\\n"
"    for (ulong base = lo; base < hi; base += TILE) {                           \\\n"
"        for (uint j = 0; j < K; j++) {                                         \\\n"
"            uint t = j * WG + lid; ulong i = base + t;                         \\\n"
"            buf[SKEW(t)] = i < hi ? in[i] : IDV;                               \\\n"
"        }                                                                      \\\n"
"        ka_barrier_local();                                                    \\\n"
"        TT total = TILEF(buf, tot, lid, c, excl);                              \\\n"
"        c = ADDF(c, total);                                                    \\\n"
"        for (uint j = 0; j < K; j++) {                                         \\\n"
"            uint t = j * WG + lid; ulong i = base + t;                         \\\n"
"            if (i < hi) out[i] = buf[SKEW(t)];                                 \\\n"
"        }                                                                      \\\n"
"        ka_barrier_local();                                                    \\\n"
"    }                                                                          \\\n"
"}\n"
"#define PRIMS_RANGE_SCAN(NAME, TT, TILEF, ADDF) PRIMS_RANGE_SCAN_ID(NAME, TT, TILEF, ADDF, (TT)0)\n"
"PRIMS_RANGE_SCAN(prims_range_scan, T, prims_tile_scan, ADD)\n"
"PRIMS_RANGE_SCAN(prims_range_scan_ul, ulong, prims_tile_scan_ul, ADDU)\n"
/* PRIMS_ADVERSARY (tests, KA_PRIMS_ADVERSARY=1): LB_DELAY(t, stage) busy-waits
 * a pseudo-random while from the tile t and the stage, mostly short, now and
 * then long. The look-back kernels (scan, sort's onesweep pass, select) call
 * it after taking a tile (odd tiles), after publishing its aggregate and
 * before publishing its prefix, so look-backs meet unpublished tiles. */
"#ifdef PRIMS_ADVERSARY\n"
"KA_DEVICE_FN void lb_delay(uint t, uint stage) {\n"
"    uint h = t * 2654435761u + stage * 40503u;\n"
"    h ^= h >> 15; h *= 0x2c1b3c6du; h ^= h >> 12;\n"
"    uint d = (h & 15u) == 0u ? (h >> 4) & 16383u : (h >> 4) & 255u;\n"
"    volatile uint x = 0u;\n"
"    for (uint i = 0; i < d; i++) x = x + i;\n"
"}\n"
"#define LB_DELAY(t, s) lb_delay((uint)(t), s)\n"
"#else\n"
"#define LB_DELAY(t, s)\n"
"#endif\n";
#endif

/* After the user's definitions (desc.source): the user's operator, map and
 * predicate as functions of T, from the macros the plan defines from the desc
 * (PRIMS_USER_OP(a, b), PRIMS_USER_IDENTITY, PRIMS_USER_MAP(x),
 * PRIMS_USER_PREDICATE(x)); absent ones are the identity map and no
 * operator. */
#ifndef KA_PRIMS_SRC_OPS_H
#define KA_PRIMS_SRC_OPS_H
static const char ka__prims_src_ops[] =
"#ifdef PRIMS_USER_OP\n"
"KA_DEVICE_FN T prims_user_op(T a, T b) { return (T)PRIMS_USER_OP(a, b); }\n"
"KA_DEVICE_FN T prims_user_identity(void) { return (T)PRIMS_USER_IDENTITY; }\n"
"#endif\n"
"#ifdef PRIMS_USER_MAP\n"
"KA_DEVICE_FN T prims_user_map(T x) { return (T)PRIMS_USER_MAP(x); }\n"
"#else\n"
"KA_DEVICE_FN T prims_user_map(T x) { return x; }\n"
"#endif\n"
"#ifdef PRIMS_USER_PREDICATE\n"
"KA_DEVICE_FN int prims_user_predicate(T x) { return (PRIMS_USER_PREDICATE(x)) ? 1 : 0; }\n"
"#endif\n";
#endif
