/* ka_searchsorted and ka_segmented_reduce on the default device, checked
 * element by element against host references: every type, lower and upper
 * bounds over sorted arrays of 0 to 10^6 elements with duplicates, the float
 * order (NaN, -0.0), segments empty, single, long and many, the built-in and
 * user operators, offsets past the input, the GPU layout on a CPU, many
 * work-groups, bad input, and calls that allocate nothing. */
#include "prims_util.h"

static ka_dtype g_t;
static int cmp_key(const void *a, const void *b) {
    uint64_t x = okey(g_t, a), y = okey(g_t, b);
    return x < y ? -1 : x > y;
}

/* The type's smallest and largest values (floats: -inf, +inf) into p. */
static void extreme(ka_dtype t, void *p, int high) {
    switch (t) {
    case KA_DTYPE_I32: { int32_t v = high ? INT32_MAX : INT32_MIN; memcpy(p, &v, 4); break; }
    case KA_DTYPE_U32: { uint32_t v = high ? UINT32_MAX : 0; memcpy(p, &v, 4); break; }
    case KA_DTYPE_I64: { int64_t v = high ? INT64_MAX : INT64_MIN; memcpy(p, &v, 8); break; }
    case KA_DTYPE_U64: { uint64_t v = high ? UINT64_MAX : 0; memcpy(p, &v, 8); break; }
    case KA_DTYPE_F32: { float v = high ? INFINITY : -INFINITY; memcpy(p, &v, 4); break; }
    case KA_DTYPE_F64: { double v = high ? INFINITY : -INFINITY; memcpy(p, &v, 8); break; }
    }
}

/* Floats: some NaN, -NaN, -0.0, +0.0 and infinities among the values. */
static void sprinkle(ka_dtype t, uint8_t *v, size_t n, uint32_t seed) {
    if (t != KA_DTYPE_F32 && t != KA_DTYPE_F64) return;
    static const double sp[] = {NAN, -NAN, -0.0, 0.0, INFINITY, -INFINITY};
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        if ((seed >> 8) % 13) continue;
        double d = sp[(seed >> 12) % 6];
        if (t == KA_DTYPE_F32) { float f = (float)d; memcpy(v + i * 4, &f, 4); }
        else memcpy(v + i * 8, &d, 8);
    }
}

/* The first index of sorted[0, n) whose key is >= (upper: >) needle's. */
static uint64_t host_bound(ka_dtype t, const uint8_t *sorted, size_t n, const uint8_t *needle, int upper) {
    size_t es = esize(t), lo = 0, len = n;
    uint64_t k = okey(t, needle);
    while (len) {
        size_t half = len / 2;
        uint64_t x = okey(t, sorted + (lo + half) * es);
        if (upper ? x <= k : x < k) lo += half + 1, len -= half + 1;
        else len = half;
    }
    return lo;
}

/* Searches nn needles in a sorted array of ns elements (few distinct values:
 * runs of duplicates), every array at an offset of pad elements. Needles:
 * the type's extremes, copies of elements, random values over a wider range. */
static void check_search(ka_prims_plan *p, ka_dtype t, size_t ns, size_t nn, uint32_t seed, size_t pad) {
    size_t es = esize(t);
    uint8_t *s = calloc(pad + ns + 1, es), *nd = calloc(pad + nn + 1, es);
    uint64_t *got = calloc(pad + nn + 1, 8);
    gen(t, s + pad * es, ns, seed, ns < 100 ? 8 : (uint32_t)(ns / 3 + 1));
    sprinkle(t, s + pad * es, ns, seed);
    g_t = t;
    qsort(s + pad * es, ns, es, cmp_key);
    gen(t, nd + pad * es, nn, seed * 7 + 1, ns < 100 ? 16 : (uint32_t)ns);
    sprinkle(t, nd + pad * es, nn, seed + 3);
    for (size_t j = 0; j < nn; j++) {
        uint8_t *x = nd + (pad + j) * es;
        if (j < 2) extreme(t, x, (int)j);
        else if (ns && j % 3 == 0) memcpy(x, s + (pad + (j * 2654435761u) % ns) * es, es);
    }
    ka_buffer sb = upload(s, (pad + ns) * es), nb = upload(nd, (pad + nn) * es), ob = make_buffer(dev, (pad + nn) * 8 + 8);
    for (int upper = 0; upper <= 1; upper++) {
        ka_event ev;
        KA_OK_OR_FAIL(ka_searchsorted(q, p, ob, pad * 8, sb, pad * es, ns, nb, pad * es, nn, upper, &ev));
        KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_event_release(ev));
        if (nn) KA_OK_OR_FAIL(ka_buffer_read(q, got, ob, pad * 8, nn * 8));
        for (size_t j = 0; j < nn; j++) {
            uint64_t want = host_bound(t, s + pad * es, ns, nd + (pad + j) * es, upper);
            if (got[j] != want)
                fail_msg("searchsorted %s %s n_sorted %zu: needle %zu (key 0x%llx): %llu, want %llu", tname(t),
                         upper ? "upper" : "lower", ns, j, (unsigned long long)okey(t, nd + (pad + j) * es),
                         (unsigned long long)got[j], (unsigned long long)want);
        }
    }
    ka_buffer_release(sb), ka_buffer_release(nb), ka_buffer_release(ob);
    free(s), free(nd), free(got);
}

static const size_t search_sizes[] = {0, 1, 2, 3, 1000, 1000000};

static void search_all_types(void **state) {
    (void)state;
    for (ka_dtype t = KA_DTYPE_I32; t <= KA_DTYPE_F64; t++) {
        if (!type_ok(t)) continue;
        ka_prims_plan *p;
        KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SEARCHSORTED, t, 100003, 0, &p));
        /* 10^5 needles: CPUs' runs of 32 needles searched together, and their tails */
        for (size_t i = 0; i < sizeof search_sizes / sizeof search_sizes[0]; i++)
            check_search(p, t, search_sizes[i], i == 2 ? 1 : i >= 4 ? 100003 : 5000 - i * 7, (uint32_t)(i * 11 + t),
                         i & 1 ? 3 : 0);
        check_search(p, t, 1000, 0, 5, 0); /* no needles: nothing runs, the event completes */
        KA_OK_OR_FAIL(ka_prims_plan_release(p));
    }
}

/* The float order, spelled out: -NaN < -inf < -1 < -0.0 < +0.0 < 1 < +inf < NaN. */
static void search_float_order(void **state) {
    (void)state;
    static const double s[] = {-NAN, -INFINITY, -1, -0.0, -0.0, 0.0, 1, INFINITY, NAN, NAN};
    static const double nd[] = {-NAN, -INFINITY, -0.0, 0.0, NAN, 0.5, -2};
    static const uint64_t lower[] = {0, 1, 3, 5, 8, 6, 2}, upper[] = {1, 2, 5, 6, 10, 6, 2};
    for (ka_dtype t = KA_DTYPE_F32; t <= KA_DTYPE_F64; t++) {
        if (!type_ok(t)) continue;
        size_t es = esize(t);
        uint8_t hs[sizeof s], hn[sizeof nd];
        for (size_t i = 0; i < 10; i++) {
            float f = (float)s[i];
            memcpy(hs + i * es, t == KA_DTYPE_F32 ? (void *)&f : (void *)&s[i], es);
        }
        for (size_t i = 0; i < 7; i++) {
            float f = (float)nd[i];
            memcpy(hn + i * es, t == KA_DTYPE_F32 ? (void *)&f : (void *)&nd[i], es);
        }
        ka_prims_plan *p;
        KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SEARCHSORTED, t, 7, 0, &p));
        ka_buffer sb = upload(hs, 10 * es), nb = upload(hn, 7 * es), ob = make_buffer(dev, 14 * 8);
        KA_OK_OR_FAIL(ka_searchsorted(q, p, ob, 0, sb, 0, 10, nb, 0, 7, 0, NULL));
        KA_OK_OR_FAIL(ka_searchsorted(q, p, ob, 56, sb, 0, 10, nb, 0, 7, 1, NULL));
        uint64_t got[14];
        KA_OK_OR_FAIL(ka_buffer_read(q, got, ob, 0, sizeof got));
        for (int i = 0; i < 7; i++)
            if (got[i] != lower[i] || got[7 + i] != upper[i])
                fail_msg("%s needle %g: lower %llu upper %llu, want %llu %llu", tname(t), nd[i],
                         (unsigned long long)got[i], (unsigned long long)got[7 + i], (unsigned long long)lower[i],
                         (unsigned long long)upper[i]);
        ka_buffer_release(sb), ka_buffer_release(nb), ka_buffer_release(ob);
        ka_prims_plan_release(p);
    }
}

/* An array sorted by ka_sort is searched in its order: every element, used
 * as a needle, is found, between its lower and upper bound only equal bits. */
static void search_after_sort(void **state) {
    (void)state;
    for (ka_dtype t = KA_DTYPE_F32; t <= KA_DTYPE_F64; t++) {
        if (!type_ok(t)) continue;
        size_t n = 100003, es = esize(t);
        uint8_t *h = malloc(n * es), *srt = malloc(n * es);
        uint64_t *lo = malloc(n * 8), *up = malloc(n * 8);
        gen(t, h, n, 99, 1000);
        sprinkle(t, h, n, 7);
        ka_prims_plan *sp, *p;
        KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SORT, t, n, 0, &sp));
        KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SEARCHSORTED, t, n, 0, &p));
        ka_buffer kb = upload(h, n * es), nb = upload(h, n * es), ob = make_buffer(dev, 2 * n * 8);
        KA_OK_OR_FAIL(ka_sort(q, sp, kb, 0, (ka_buffer){0}, 0, n, NULL));
        KA_OK_OR_FAIL(ka_searchsorted(q, p, ob, 0, kb, 0, n, nb, 0, n, 0, NULL));
        KA_OK_OR_FAIL(ka_searchsorted(q, p, ob, n * 8, kb, 0, n, nb, 0, n, 1, NULL));
        KA_OK_OR_FAIL(ka_buffer_read(q, srt, kb, 0, n * es));
        KA_OK_OR_FAIL(ka_buffer_read(q, lo, ob, 0, n * 8));
        KA_OK_OR_FAIL(ka_buffer_read(q, up, ob, n * 8, n * 8));
        for (size_t j = 0; j < n; j++) {
            if (lo[j] >= up[j] || up[j] > n) fail_msg("%s needle %zu: bounds [%llu, %llu)", tname(t), j,
                                                      (unsigned long long)lo[j], (unsigned long long)up[j]);
            if (memcmp(srt + lo[j] * es, h + j * es, es) || memcmp(srt + (up[j] - 1) * es, h + j * es, es) ||
                (lo[j] && okey(t, srt + (lo[j] - 1) * es) >= okey(t, h + j * es)) ||
                (up[j] < n && okey(t, srt + up[j] * es) <= okey(t, h + j * es)))
                fail_msg("%s needle %zu: [%llu, %llu) is not its run in the sorted array", tname(t), j,
                         (unsigned long long)lo[j], (unsigned long long)up[j]);
        }
        ka_buffer_release(kb), ka_buffer_release(nb), ka_buffer_release(ob);
        ka_prims_plan_release(sp), ka_prims_plan_release(p);
        free(h), free(srt), free(lo), free(up);
    }
}

/* ---- segmented reduce ---------------------------------------------------- */

/* Operators of the tests: 0-2 the built-ins; 3 the user's "a > b ? a : b";
 * 4 the user's "a + b". sq: the plan maps each element to its square. */
static const char *max_identity(ka_dtype t) {
    static const char *id[] = {"?", "(int)0x80000000", "0u", "(long)0x8000000000000000UL", "0UL",
                               "as_float(0xff800000u)", "as_double(0xfff0000000000000UL)"};
    return id[t];
}

#define SEG_REF(NAME, TY, ACC, LOWV, HIGHV)                                                                 \
    static void NAME(const void *in_, const uint64_t *off, size_t ns, size_t nin, int op, int sq, void *out_) { \
        const TY *in = in_;                                                                                \
        TY *out = out_;                                                                                    \
        for (size_t s = 0; s < ns; s++) {                                                                  \
            uint64_t b = off[s] < nin ? off[s] : nin, e = off[s + 1] < nin ? off[s + 1] : nin;             \
            TY r = op == 0 || op == 4 ? (TY)0 : op == 1 ? (HIGHV) : (LOWV);                               \
            for (uint64_t i = b; i < e; i++) {                                                             \
                TY x = in[i];                                                                              \
                if (sq) x = (TY)((ACC)x * (ACC)x);                                                         \
                if (op == 0 || op == 4) r = (TY)((ACC)r + (ACC)x);                                         \
                else if (op == 1) r = x < r ? x : r;                                                       \
                else r = x > r ? x : r; /* 2, 3 */                                                         \
            }                                                                                              \
            out[s] = r;                                                                                    \
        }                                                                                                  \
    }
SEG_REF(ref_i32, int32_t, uint32_t, INT32_MIN, INT32_MAX)
SEG_REF(ref_u32, uint32_t, uint32_t, 0, UINT32_MAX)
SEG_REF(ref_i64, int64_t, uint64_t, INT64_MIN, INT64_MAX)
SEG_REF(ref_u64, uint64_t, uint64_t, 0, UINT64_MAX)
SEG_REF(ref_f32, float, double, -INFINITY, INFINITY)
SEG_REF(ref_f64, double, double, -INFINITY, INFINITY)
static void host_segred(ka_dtype t, const void *in, const uint64_t *off, size_t ns, size_t nin, int op, int sq,
                        void *out) {
    switch (t) {
    case KA_DTYPE_I32: ref_i32(in, off, ns, nin, op, sq, out); break;
    case KA_DTYPE_U32: ref_u32(in, off, ns, nin, op, sq, out); break;
    case KA_DTYPE_I64: ref_i64(in, off, ns, nin, op, sq, out); break;
    case KA_DTYPE_U64: ref_u64(in, off, ns, nin, op, sq, out); break;
    case KA_DTYPE_F32: ref_f32(in, off, ns, nin, op, sq, out); break;
    case KA_DTYPE_F64: ref_f64(in, off, ns, nin, op, sq, out); break;
    }
}

/* Segment lengths of each layout: 0 mixed (empty first and last, lengths
 * 0-40, some of 600 and 5000: past a team's share on GPUs), 1 long (10^5
 * elements, an empty one, 10^5 + 7), 2 many (n segments of 0-3). */
static size_t seg_len(int layout, size_t s, size_t ns, uint32_t *seed) {
    *seed = *seed * 1103515245u + 12345u;
    uint32_t r = *seed >> 8;
    if (layout == 1) return s == 1 ? 0 : 100000 + (s == 2 ? 7 : 0);
    if (layout == 2) return r % 4;
    if (s == 0 || s == ns - 1) return 0;
    if (s == 1) return 1;
    return s % 500 == 7 ? 5000 : s % 97 == 5 ? 600 : r % 41;
}

/* Each op in ops (see above) over ns segments of layout, in and out at an
 * offset of pad elements, offsets at 2 elements in. Values are small
 * integers (float sums exact, squares without overflow) unless wide. */
static void check_segred(ka_prims_plan *p, ka_dtype t, const int *ops, int nops, int layout, size_t ns, uint32_t seed,
                         size_t pad, int wide, int sq) {
    size_t es = esize(t);
    uint64_t *off = malloc((ns + 3) * 8);
    uint32_t sd = seed;
    off[2] = 0;
    for (size_t s = 0; s < ns; s++) off[3 + s] = off[2 + s] + seg_len(layout, s, ns, &sd);
    size_t n = off[2 + ns];
    uint8_t *in = calloc(pad + n + 1, es), *got = calloc(pad + ns + 1, es), *want = calloc(ns + 1, es);
    gen(t, in + pad * es, n, seed, wide ? 1u << 20 : 16);
    ka_buffer ib = upload(in, (pad + n) * es), fb = upload(off, (ns + 3) * 8), ob = make_buffer(dev, (pad + ns) * es + 8);
    for (int k = 0; k < nops; k++) {
        ka_event ev;
        ka_reduce_op op = ops[k] >= 3 ? KA_REDUCE_USER : (ka_reduce_op)ops[k];
        KA_OK_OR_FAIL(ka_segmented_reduce(q, p, ob, pad * es, ib, pad * es, fb, 16, ns, op, &ev));
        KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_event_release(ev));
        if (ns) KA_OK_OR_FAIL(ka_buffer_read(q, got, ob, pad * es, ns * es));
        host_segred(t, in + pad * es, off + 2, ns, n, ops[k], sq, want);
        for (size_t s = 0; s < ns; s++)
            if (memcmp(got + s * es, want + s * es, es)) {
                uint64_t g = 0, w = 0;
                memcpy(&g, got + s * es, es), memcpy(&w, want + s * es, es);
                fail_msg("segmented reduce %s op %d layout %d: segment %zu of %zu [%llu, %llu): 0x%llx, want 0x%llx",
                         tname(t), ops[k], layout, s, ns, (unsigned long long)off[2 + s],
                         (unsigned long long)off[3 + s], (unsigned long long)g, (unsigned long long)w);
            }
    }
    ka_buffer_release(ib), ka_buffer_release(fb), ka_buffer_release(ob);
    free(off), free(in), free(got), free(want);
}

static void segred_layouts(ka_prims_plan *p, ka_dtype t, const int *ops, int nops, size_t many, int sq) {
    check_segred(p, t, ops, nops, 0, 2000, 1 + t, 0, 0, sq);
    check_segred(p, t, ops, nops, 1, 3, 2 + t, 5, 0, sq);
    check_segred(p, t, ops, nops, 2, many, 3 + t, 1, 0, sq);
    check_segred(p, t, ops, nops, 0, 1, 4, 0, 0, sq); /* one empty segment */
    check_segred(p, t, ops, nops, 0, 0, 5, 0, 0, sq); /* none: nothing runs, the event completes */
}

static void segred_all_types(void **state) {
    (void)state;
    static const int builtin[] = {0, 1, 2};
    for (ka_dtype t = KA_DTYPE_I32; t <= KA_DTYPE_F64; t++) {
        if (!type_ok(t)) continue;
        ka_prims_plan *p;
        KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SEGMENTED_REDUCE, t, 100000, 0, &p));
        segred_layouts(p, t, builtin, 3, 100000, 0);
        int fl = t == KA_DTYPE_F32 || t == KA_DTYPE_F64; /* wide values: integer sums wrap; float sums round */
        check_segred(p, t, builtin + fl, 3 - fl, 0, 3000, 9, 0, 1, 0);
        KA_OK_OR_FAIL(ka_prims_plan_release(p));
    }
}

static void segred_user_ops(void **state) {
    (void)state;
    static const int umax[] = {3, 0}, usq[] = {4, 2, 0};
    for (ka_dtype t = KA_DTYPE_I32; t <= KA_DTYPE_F64; t++) {
        if (!type_ok(t)) continue;
        ka_prims_plan *p;
        ka_prims_desc d = {.kind = KA_PRIM_SEGMENTED_REDUCE, .dtype = t, .max_n = 100000, .op = "a > b ? a : b",
                           .identity = max_identity(t)};
        KA_OK_OR_FAIL(ka_prims_plan_create_desc(dev, &d, &p));
        segred_layouts(p, t, umax, 2, 20000, 0); /* a plan with op serves the built-ins too */
        KA_OK_OR_FAIL(ka_prims_plan_release(p));
        ka_prims_desc d2 = {.kind = KA_PRIM_SEGMENTED_REDUCE, .dtype = t, .max_n = 100000, .op = "a + b",
                            .identity = "0", .map = "sq(x)", .source = "KA_DEVICE_FN T sq(T x) { return x * x; }\n"};
        KA_OK_OR_FAIL(ka_prims_plan_create_desc(dev, &d2, &p));
        segred_layouts(p, t, usq, 3, 20000, 1); /* the map applies to every op */
        KA_OK_OR_FAIL(ka_prims_plan_release(p));
    }
}

/* Offsets past in's end are clamped to it, an end below its start is an
 * empty segment: results defined, nothing read outside in. */
static void segred_bad_offsets(void **state) {
    (void)state;
    int32_t in[10];
    for (int i = 0; i < 10; i++) in[i] = i + 1;
    uint64_t off[] = {0, 4, 1000000, 3, 8, UINT64_MAX};
    ka_prims_plan *p;
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SEGMENTED_REDUCE, KA_DTYPE_I32, 5, 0, &p));
    ka_buffer ib = upload(in, sizeof in), fb = upload(off, sizeof off), ob = make_buffer(dev, 5 * 4);
    /* in from element 2: 8 elements, 3..10 */
    KA_OK_OR_FAIL(ka_segmented_reduce(q, p, ob, 0, ib, 8, fb, 0, 5, KA_REDUCE_SUM, NULL));
    int32_t got[5];
    KA_OK_OR_FAIL(ka_buffer_read(q, got, ob, 0, sizeof got));
    static const int32_t want[] = {3 + 4 + 5 + 6, 7 + 8 + 9 + 10, 0, 6 + 7 + 8 + 9 + 10, 0};
    for (int s = 0; s < 5; s++)
        if (got[s] != want[s]) fail_msg("segment %d: %d, want %d", s, got[s], want[s]);
    ka_buffer_release(ib), ka_buffer_release(fb), ka_buffer_release(ob);
    ka_prims_plan_release(p);
}

/* The GPU layout (teams of 32 and whole groups, barriers) on the CPU, many
 * groups over small inputs (CPU layout), and both (segments split across
 * more groups). */
static void layouts(void **state) {
    (void)state;
    static const int ops[] = {0, 1, 2, 3};
    for (int pass = 0; pass < 3; pass++) {
        if (pass != 1) setenv("KA_PRIMS_LAYOUT", "gpu", 1);
        if (pass != 0) setenv("KA_PRIMS_GROUPS", pass == 1 ? "3001" : "601", 1);
        ka_prims_plan *s, *r, *u;
        ka_prims_desc d = {.kind = KA_PRIM_SEGMENTED_REDUCE, .dtype = KA_DTYPE_F64, .max_n = 100000,
                           .op = "a > b ? a : b", .identity = max_identity(KA_DTYPE_F64)};
        if (!type_ok(KA_DTYPE_F64)) d.dtype = KA_DTYPE_F32, d.identity = max_identity(KA_DTYPE_F32);
        ka_status st1 = ka_prims_plan_create(dev, KA_PRIM_SEARCHSORTED, KA_DTYPE_F32, 5000, 0, &s);
        ka_status st2 = ka_prims_plan_create(dev, KA_PRIM_SEGMENTED_REDUCE, KA_DTYPE_I32, 100000, 0, &r);
        ka_status st3 = ka_prims_plan_create_desc(dev, &d, &u);
        unsetenv("KA_PRIMS_LAYOUT"), unsetenv("KA_PRIMS_GROUPS");
        KA_OK_OR_FAIL(st1);
        KA_OK_OR_FAIL(st2);
        KA_OK_OR_FAIL(st3);
        check_search(s, KA_DTYPE_F32, 1000000, 5000, 3, 1);
        check_search(s, KA_DTYPE_F32, 2, 4999, 4, 0);
        segred_layouts(r, KA_DTYPE_I32, ops, 3, 20000, 0);
        segred_layouts(u, d.dtype, ops, 4, 20000, 0);
        ka_prims_plan_release(s), ka_prims_plan_release(r), ka_prims_plan_release(u);
    }
}

static void bad_input(void **state) {
    (void)state;
    ka_prims_plan *s, *r, *p = (ka_prims_plan *)1;
    ka_prims_desc d = {.kind = KA_PRIM_SEARCHSORTED, .dtype = KA_DTYPE_U32, .max_n = 10, .op = "a + b", .identity = "0"};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_prims_plan_create_desc(dev, &d, &p));
    EXPECT_DETAIL("takes no operator");
    assert_null(p);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_prims_plan_create(dev, KA_PRIM_SEGMENTED_REDUCE, KA_DTYPE_U32, 10, 1, &p));
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SEARCHSORTED, KA_DTYPE_U32, 10, 0, &s));
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SEGMENTED_REDUCE, KA_DTYPE_U32, 10, 0, &r));
    ka_buffer b = make_buffer(dev, 400), o = make_buffer(dev, 400), small = make_buffer(dev, 40);
    /* wrong kind */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_searchsorted(q, r, o, 0, b, 0, 10, b, 0, 10, 0, NULL));
    EXPECT_DETAIL("made for segmented reduce, not searchsorted");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_segmented_reduce(q, s, o, 0, b, 0, b, 0, 10, KA_REDUCE_SUM, NULL));
    EXPECT_DETAIL("made for searchsorted, not segmented reduce");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_reduce(q, s, o, 0, b, 0, 10, KA_REDUCE_SUM, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_searchsorted(q, NULL, o, 0, b, 0, 10, b, 0, 10, 0, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_segmented_reduce(q, NULL, o, 0, b, 0, b, 0, 10, KA_REDUCE_SUM, NULL));
    /* searchsorted: sizes and buffers */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_searchsorted(q, s, o, 0, b, 0, 10, b, 0, 11, 0, NULL));
    EXPECT_DETAIL("n = 11", "max_n 10");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_searchsorted(q, s, small, 0, b, 0, 10, b, 0, 10, 0, NULL));
    EXPECT_DETAIL("out holds 40 bytes");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_searchsorted(q, s, o, 0, b, 0, 10, small, 8, 10, 0, NULL));
    EXPECT_DETAIL("needles holds 40 bytes");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_searchsorted(q, s, o, 0, small, 0, 11, b, 0, 10, 0, NULL));
    EXPECT_DETAIL("sorted holds 40 bytes");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_searchsorted(q, s, o, 4, b, 0, 10, b, 0, 10, 0, NULL));
    EXPECT_DETAIL("not a multiple");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_searchsorted(q, s, b, 0, b, 200, 10, b, 40, 10, 0, NULL));
    EXPECT_DETAIL("overlaps");
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_searchsorted(q, s, o, 0, BAD_BUFFER, 0, 10, b, 0, 10, 0, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_searchsorted(BAD_QUEUE, s, o, 0, b, 0, 10, b, 0, 10, 0, NULL));
    KA_OK_OR_FAIL(ka_searchsorted(q, s, o, 0, BAD_BUFFER, 0, 0, b, 0, 10, 1, NULL)); /* n_sorted 0: not read */
    /* segmented reduce */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_segmented_reduce(q, r, o, 0, b, 0, b, 0, 11, KA_REDUCE_SUM, NULL));
    EXPECT_DETAIL("n = 11", "max_n 10");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_segmented_reduce(q, r, o, 0, b, 0, small, 0, 5, KA_REDUCE_SUM, NULL));
    EXPECT_DETAIL("offsets holds 40 bytes");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_segmented_reduce(q, r, small, 8, b, 0, b, 0, 10, KA_REDUCE_SUM, NULL));
    EXPECT_DETAIL("out holds 40 bytes");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_segmented_reduce(q, r, o, 0, small, 44, b, 0, 10, KA_REDUCE_SUM, NULL));
    EXPECT_DETAIL("in holds 40 bytes");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_segmented_reduce(q, r, o, 0, b, 2, b, 0, 10, KA_REDUCE_SUM, NULL));
    EXPECT_DETAIL("not a multiple");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_segmented_reduce(q, r, o, 0, b, 0, b, 0, 10, KA_REDUCE_USER, NULL));
    EXPECT_DETAIL("KA_REDUCE_USER", "without an operator");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_segmented_reduce(q, r, o, 0, b, 0, b, 0, 10, (ka_reduce_op)7, NULL));
    EXPECT_DETAIL("unknown op 7");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_segmented_reduce(q, r, b, 0, o, 0, b, 16, 10, KA_REDUCE_SUM, NULL));
    EXPECT_DETAIL("out overlaps offsets");
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_segmented_reduce(q, r, o, 0, BAD_BUFFER, 0, b, 0, 10, KA_REDUCE_SUM, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(q)); /* the calls that succeeded, before their plan goes */
    KA_OK_OR_FAIL(ka_prims_plan_release(s));
    KA_OK_OR_FAIL(ka_prims_plan_release(r));
    ka_buffer_release(b), ka_buffer_release(o), ka_buffer_release(small);
}

/* After a warm-up call, searchsorted and segmented reduce (a user
 * operator) allocate nothing in libka (on the default queue). */
static void zero_alloc(void **state) {
    (void)state;
    ka_prims_plan *s, *r;
    ka_prims_desc d = {.kind = KA_PRIM_SEGMENTED_REDUCE, .dtype = KA_DTYPE_F32, .max_n = 1000, .op = "a + b",
                       .identity = "0", .map = "x * x"};
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SEARCHSORTED, KA_DTYPE_I32, 5000, 0, &s));
    KA_OK_OR_FAIL(ka_prims_plan_create_desc(dev, &d, &r));
    uint64_t off[1001];
    for (int i = 0; i <= 1000; i++) off[i] = (uint64_t)i * 5;
    ka_buffer a = make_buffer(dev, 5000 * 4), b = make_buffer(dev, 5000 * 8), f = upload(off, sizeof off);
    int zero = 0;
    KA_OK_OR_FAIL(ka_buffer_fill(qr, a, 0, &zero, 4, 5000 * 4, NULL));
    for (int it = -1; it < 50; it++) {
        if (it == 0) heap_start();
        ka_event ev;
        size_t n = it < 0 ? 5000 : (size_t)(4000 + it * 17);
        if (ka_searchsorted(qr, s, b, 0, a, 0, n, a, 0, n, it & 1, NULL) ||
            ka_segmented_reduce(qr, r, b, 0, a, 0, f, 0, (size_t)(999 - it), (it & 1) ? KA_REDUCE_USER : KA_REDUCE_MAX,
                                &ev) ||
            ka_event_wait(ev, KA_WAIT_FOREVER) || ka_event_release(ev))
            fail_msg("iteration %d: %s", it, ka_last_error());
    }
    uint64_t calls = heap_stop();
    if (calls)
        fail_msg("%llu allocations and frees in libka over 50 searchsorted + segmented reduce calls",
                 (unsigned long long)calls);
    ka_buffer_release(a), ka_buffer_release(b), ka_buffer_release(f);
    ka_prims_plan_release(s), ka_prims_plan_release(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_input),          cmocka_unit_test(search_all_types), cmocka_unit_test(search_float_order),
        cmocka_unit_test(search_after_sort),  cmocka_unit_test(segred_all_types), cmocka_unit_test(segred_user_ops),
        cmocka_unit_test(segred_bad_offsets), cmocka_unit_test(layouts),          cmocka_unit_test(zero_alloc),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
