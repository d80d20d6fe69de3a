/* ka_select and ka_histogram on the default device, checked against host
 * references: every type; sizes around a work-item's, a group's and a
 * tile's elements; flags all 0, all 1, random and alternating; predicates
 * from an expression and from a function in the plan's source; stability
 * (unique values, kept in order); offsets; the GPU layout on the CPU and
 * many work-groups; histogram bins 1 to past local memory, samples outside
 * the range, NaN, negative ranges and the exact boundaries; bad input; zero
 * allocations. */
#include "prims_util.h"

/* ---- select -------------------------------------------------------------- */

/* Unique values in index order with a random low bit (for the predicate of
 * odd values), negative for odd i in signed types and floats. */
static void gen_unique(ka_dtype t, void *p, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        int64_t v = (int64_t)i * 2 + ((seed >> 16) & 1);
        int64_t s = (i & 1) ? -v : v;
        switch (t) {
        case KA_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)s; break;
        case KA_DTYPE_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
        case KA_DTYPE_I64: ((int64_t *)p)[i] = s; break;
        case KA_DTYPE_U64: ((uint64_t *)p)[i] = (uint64_t)v; break;
        case KA_DTYPE_F32: ((float *)p)[i] = (float)s; break;
        case KA_DTYPE_F64: ((double *)p)[i] = (double)s; break;
        }
    }
}

enum { PRED_NONE, PRED_GT3, PRED_ODD };
/* The plan's predicates, as the host evaluates them. */
static int host_keep(ka_dtype t, const uint8_t *x, int pred) {
    double d = 0;
    int64_t l = 0;
    switch (t) {
    case KA_DTYPE_I32: { int32_t v; memcpy(&v, x, 4); d = v, l = v; break; }
    case KA_DTYPE_U32: { uint32_t v; memcpy(&v, x, 4); d = v, l = v; break; }
    case KA_DTYPE_I64: { int64_t v; memcpy(&v, x, 8); d = (double)v, l = v; break; }
    case KA_DTYPE_U64: { uint64_t v; memcpy(&v, x, 8); d = (double)v, l = (int64_t)v; break; }
    case KA_DTYPE_F32: { float v; memcpy(&v, x, 4); d = v, l = (int64_t)v; break; }
    case KA_DTYPE_F64: { double v; memcpy(&v, x, 8); d = v, l = (int64_t)v; break; }
    }
    return pred == PRED_GT3 ? d > 3 : (l & 1) != 0;
}

static ka_prims_plan *select_plan(ka_dtype t, size_t max_n, int pred) {
    ka_prims_desc d = {.kind = KA_PRIM_SELECT, .dtype = t, .max_n = max_n};
    if (pred == PRED_GT3) d.predicate = "x > (T)3";
    if (pred == PRED_ODD) d.source = "KA_DEVICE_FN int sel_odd(T x) { return (((long)x) & 1L) != 0; }",
                          d.predicate = "sel_odd(x)";
    ka_prims_plan *p;
    KA_OK_OR_FAIL(ka_prims_plan_create_desc(dev, &d, &p));
    return p;
}

enum { FL_ZERO, FL_ONE, FL_RANDOM, FL_ALT, FL_SPARSE };
/* One call at the given element offset (in, out) and byte offsets (flags,
 * count), checked against the host's compaction. */
static void check_select(ka_prims_plan *p, ka_dtype t, size_t n, int pred, int pattern, size_t off, uint32_t seed) {
    size_t es = esize(t), fo = off ? 3 : 0, co = off ? 16 : 0;
    uint8_t *h = malloc((n + off) * es + 8), *want = malloc(n * es + 8), *got = malloc(n * es + 8);
    uint8_t *fl = malloc(n + fo + 8);
    if (pred == PRED_GT3) gen(t, h + off * es, n, seed, 64);
    else gen_unique(t, h + off * es, n, seed);
    memset(fl, 0x55, fo);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        uint8_t f = pattern == FL_ZERO ? 0 : pattern == FL_ONE ? (uint8_t)(1 + (seed >> 24) % 255)
                    : pattern == FL_ALT ? (uint8_t)(i & 1) : pattern == FL_SPARSE ? ((seed >> 8) % 97 == 0)
                                                                                  : (uint8_t)((seed >> 16) & 1);
        fl[fo + i] = f;
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *x = h + (off + i) * es;
        if (pred ? host_keep(t, x, pred) : fl[fo + i] != 0) memcpy(want + kept++ * es, x, es);
    }
    ka_buffer in = upload(h, (n + off) * es), fb = pred ? (ka_buffer){0} : upload(fl, n + fo);
    ka_buffer out = make_buffer(dev, (n + off) * es + 8), cb = make_buffer(dev, 32);
    uint64_t junk[4] = {7, 7, 7, 7}, cnt = 0;
    KA_OK_OR_FAIL(ka_buffer_write(q, cb, 0, junk, sizeof junk));
    ka_event ev;
    KA_OK_OR_FAIL(ka_select(q, p, out, off * es, cb, co, in, off * es, fb, fo, n, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_read(q, &cnt, cb, co, 8));
    if (cnt != kept)
        fail_msg("select %s n %zu pred %d flags %d off %zu: count %llu, want %zu", tname(t), n, pred, pattern, off,
                 (unsigned long long)cnt, kept);
    if (kept) KA_OK_OR_FAIL(ka_buffer_read(q, got, out, off * es, kept * es));
    for (size_t i = 0; i < kept; i++)
        if (memcmp(got + i * es, want + i * es, es))
            fail_msg("select %s n %zu pred %d flags %d: element %zu of %zu differs (order or value)", tname(t), n, pred,
                     pattern, i, kept);
    ka_buffer_release(in), ka_buffer_release(out), ka_buffer_release(cb);
    if (!pred) ka_buffer_release(fb);
    free(h), free(want), free(got), free(fl);
}

/* Around a CPU work-group's 1024 elements and the GPU tiles (256 x 12 and x 24; and 4096). */
static const size_t sel_sizes[] = {0,    1,    2,    63,   64,   65,   1023, 1024, 1025,   2049,    3071,
                                   3072, 3073, 4095, 4096, 4097, 6143, 6144, 6145, 100000, 1000003};
#define NSEL (sizeof sel_sizes / sizeof sel_sizes[0])

static void select_all_types(void **state) {
    (void)state;
    for (ka_dtype t = KA_DTYPE_I32; t <= KA_DTYPE_F64; t++) {
        if (!type_ok(t)) continue;
        ka_prims_plan *p = select_plan(t, 1000003, PRED_NONE);
        for (size_t i = 0; i < NSEL; i++)
            for (int pat = FL_ZERO; pat <= FL_SPARSE; pat++)
                if (sel_sizes[i] < 100000 || pat >= FL_RANDOM)
                    check_select(p, t, sel_sizes[i], PRED_NONE, pat, (i + (size_t)pat) % 3 == 1 ? 5 : 0,
                                 (uint32_t)(i * 11 + (size_t)pat + t));
        KA_OK_OR_FAIL(ka_prims_plan_release(p));
    }
}

static void select_predicates(void **state) {
    (void)state;
    for (ka_dtype t = KA_DTYPE_I32; t <= KA_DTYPE_F64; t++) {
        if (!type_ok(t)) continue;
        ka_prims_plan *gt = select_plan(t, 1000003, PRED_GT3), *odd = select_plan(t, 1000003, PRED_ODD);
        for (size_t i = 0; i < NSEL; i++) {
            check_select(gt, t, sel_sizes[i], PRED_GT3, FL_ZERO, i % 2 ? 0 : 2, (uint32_t)(i + 3 * t));
            check_select(odd, t, sel_sizes[i], PRED_ODD, FL_ZERO, i % 2 ? 7 : 0, (uint32_t)(i + 5 * t));
        }
        ka_prims_plan_release(gt), ka_prims_plan_release(odd);
    }
}

/* The GPU layout (look-back over tiles) on whatever device runs the test,
 * and the CPU layout with many work-groups over small inputs. */
static void select_layouts(void **state) {
    (void)state;
    for (int v = 0; v < 2; v++) {
        if (v == 0) setenv("KA_PRIMS_LAYOUT", "gpu", 1);
        else setenv("KA_PRIMS_GROUPS", "3001", 1);
        ka_prims_plan *a = select_plan(KA_DTYPE_U32, 1000003, PRED_NONE), *b = select_plan(KA_DTYPE_F64, 1000003, PRED_ODD);
        ka_prims_plan *c = select_plan(KA_DTYPE_I64, 1000003, PRED_GT3);
        unsetenv("KA_PRIMS_LAYOUT"), unsetenv("KA_PRIMS_GROUPS");
        for (size_t i = 0; i < NSEL; i++) {
            for (int pat = FL_ZERO; pat <= FL_SPARSE; pat++)
                check_select(a, KA_DTYPE_U32, sel_sizes[i], PRED_NONE, pat, pat == FL_ALT ? 5 : 0, (uint32_t)(i + (size_t)pat));
            check_select(b, KA_DTYPE_F64, sel_sizes[i], PRED_ODD, FL_ZERO, i % 2 ? 1 : 0, (uint32_t)i);
            check_select(c, KA_DTYPE_I64, sel_sizes[i], PRED_GT3, FL_ZERO, 0, (uint32_t)i + 9);
        }
        ka_prims_plan_release(a), ka_prims_plan_release(b), ka_prims_plan_release(c);
    }
    /* The GPU layout's tile at its extremes: 1 and 32 elements a work-item. */
    static const char *ks[] = {"1", "32"};
    for (int v = 0; v < 2; v++) {
        setenv("KA_PRIMS_LAYOUT", "gpu", 1), setenv("KA_PRIMS_SELECT_K", ks[v], 1);
        ka_prims_plan *a = select_plan(KA_DTYPE_I32, 100000, PRED_NONE), *b = select_plan(KA_DTYPE_U64, 100000, PRED_ODD);
        unsetenv("KA_PRIMS_LAYOUT"), unsetenv("KA_PRIMS_SELECT_K");
        static const size_t ns[] = {0, 1, 255, 256, 257, 8191, 8192, 8193, 100000};
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
            check_select(a, KA_DTYPE_I32, ns[i], PRED_NONE, FL_RANDOM, i % 2, (uint32_t)i);
            check_select(b, KA_DTYPE_U64, ns[i], PRED_ODD, FL_ZERO, 0, (uint32_t)i + 1);
        }
        ka_prims_plan_release(a), ka_prims_plan_release(b);
    }
}

/* ---- histogram ----------------------------------------------------------- */

/* The bin the kernels compute (docs/PRIMITIVES.md), or UINT32_MAX. Integers:
 * exact, in 128 bits; floats: the same operations in the type. */
static uint32_t host_bin(ka_dtype t, const uint8_t *x, double lower, double upper, uint32_t bins) {
    switch (t) {
    case KA_DTYPE_F32: {
        float l = (float)lower, h = (float)upper, s = (float)((double)bins / ((double)h - (double)l)), v;
        memcpy(&v, x, 4);
        if (!(v >= l && v < h)) return UINT32_MAX;
        volatile float d = v - l; /* no contraction: the kernels' float operations */
        float r = d * s;
        uint32_t b = r < (float)bins ? (uint32_t)r : bins - 1;
        return b < bins ? b : bins - 1;
    }
    case KA_DTYPE_F64: {
        double s = (double)bins / (upper - lower), v;
        memcpy(&v, x, 8);
        if (!(v >= lower && v < upper)) return UINT32_MAX;
        volatile double d = v - lower;
        double r = d * s;
        uint32_t b = r < (double)bins ? (uint32_t)r : bins - 1;
        return b < bins ? b : bins - 1;
    }
    default: break;
    }
    __int128 v = 0, l, h;
    switch (t) {
    case KA_DTYPE_I32: { int32_t a; memcpy(&a, x, 4); v = a; l = (int32_t)lower, h = (int32_t)upper; break; }
    case KA_DTYPE_U32: { uint32_t a; memcpy(&a, x, 4); v = a; l = (uint32_t)lower, h = (uint32_t)upper; break; }
    case KA_DTYPE_I64: { int64_t a; memcpy(&a, x, 8); v = a; l = (int64_t)lower, h = (int64_t)upper; break; }
    default: { uint64_t a; memcpy(&a, x, 8); v = a; l = (uint64_t)lower, h = (uint64_t)upper; break; }
    }
    if (v < l || v >= h) return UINT32_MAX;
    return (uint32_t)((v - l) * bins / (h - l));
}

/* Samples of t spread over and past [lower, upper): random ones, the
 * boundaries (lower, the last value below upper, upper, below lower), and
 * for floats NaN and infinities. */
static void gen_samples(ka_dtype t, uint8_t *p, size_t n, double lower, double upper, uint32_t seed) {
    size_t es = esize(t);
    double w = upper - lower;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        uint32_t r = seed >> 8, k = r % 64;
        double u = (double)(r % 1000003) / 1000003.0 * 1.4 - 0.2; /* [-0.2, 1.2) of the range */
        switch (t) {
        case KA_DTYPE_F32: {
            float l = (float)lower, h = (float)upper;
            float v = k == 0 ? l : k == 1 ? nextafterf(h, -INFINITY) : k == 2 ? h : k == 3 ? nextafterf(l, -INFINITY)
                      : k == 4 ? NAN : k == 5 ? -INFINITY : k == 6 ? INFINITY : (float)(lower + u * w);
            memcpy(p + i * es, &v, 4);
            break;
        }
        case KA_DTYPE_F64: {
            double v = k == 0 ? lower : k == 1 ? nextafter(upper, -INFINITY) : k == 2 ? upper
                       : k == 3 ? nextafter(lower, -INFINITY) : k == 4 ? NAN : k == 5 ? -INFINITY : k == 6 ? INFINITY
                                                                                        : lower + u * w;
            memcpy(p + i * es, &v, 8);
            break;
        }
        default: {
            /* Integers: an offset from lower in whole steps (bounds and offsets are exact doubles). */
            __int128 v = (__int128)lower + (k == 0 ? 0 : k == 1 ? (__int128)w - 1 : k == 2 ? (__int128)w
                                                         : k == 3 ? -1 : (__int128)(u * w));
            if (t == KA_DTYPE_I32) { int32_t a = (int32_t)v; memcpy(p + i * es, &a, 4); }
            else if (t == KA_DTYPE_U32) { uint32_t a = (uint32_t)v; memcpy(p + i * es, &a, 4); }
            else if (t == KA_DTYPE_I64) { int64_t a = (int64_t)v; memcpy(p + i * es, &a, 8); }
            else { uint64_t a = (uint64_t)v; memcpy(p + i * es, &a, 8); }
        }
        }
    }
}

static void check_histogram(ka_prims_plan *p, ka_dtype t, size_t n, uint32_t bins, double lower, double upper,
                            size_t off, uint32_t seed) {
    size_t es = esize(t);
    uint8_t *h = malloc((n + off) * es + 8);
    uint32_t *want = calloc(bins + 2, 4), *got = malloc((bins + 2) * 4);
    gen_samples(t, h + off * es, n, lower, upper, seed);
    for (size_t i = 0; i < n; i++) {
        uint32_t b = host_bin(t, h + (off + i) * es, lower, upper, bins);
        if (b != UINT32_MAX) want[b]++;
    }
    ka_buffer in = upload(h, (n + off) * es), cb = make_buffer(dev, (bins + 2) * 4);
    for (uint32_t i = 0; i < bins + 2; i++) got[i] = 0xdeadbeef; /* overwritten, all bins */
    KA_OK_OR_FAIL(ka_buffer_write(q, cb, 0, got, (bins + 2) * 4));
    ka_event ev;
    KA_OK_OR_FAIL(ka_histogram(q, p, cb, off ? 4 : 0, in, off * es, n, lower, upper, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_read(q, got, cb, 0, (bins + 2) * 4));
    const uint32_t *g = got + (off ? 1 : 0);
    for (uint32_t b = 0; b < bins; b++)
        if (g[b] != want[b])
            fail_msg("histogram %s n %zu bins %u [%.17g, %.17g): bin %u holds %u, want %u", tname(t), n, bins, lower, upper,
                     b, g[b], want[b]);
    if (g[bins] != 0xdeadbeef || (off && got[0] != 0xdeadbeef)) fail_msg("histogram %s: wrote past its bins", tname(t));
    ka_buffer_release(in), ka_buffer_release(cb);
    free(h), free(want), free(got);
}

/* Ranges per type: a positive and a negative one (signed types, floats). */
static void ranges(ka_dtype t, double r[2][2]) {
    r[0][0] = r[0][1] = r[1][0] = r[1][1] = 0;
    switch (t) {
    case KA_DTYPE_I32: r[0][0] = -700, r[0][1] = 800, r[1][0] = -2147483648.0, r[1][1] = -2147483000.0; break;
    case KA_DTYPE_U32: r[0][0] = 100, r[0][1] = 1500, r[1][0] = 4294000000.0, r[1][1] = 4294967295.0; break;
    case KA_DTYPE_I64: r[0][0] = -2100000004900.0, r[0][1] = 2400000005600.0, r[1][0] = -9223372036854775808.0,
                       r[1][1] = -9223372036854775808.0 + 1099511627776.0; break;
    case KA_DTYPE_U64: r[0][0] = 9223372036854775808.0 - 1099511627776.0, r[0][1] = 9223372036854775808.0 + 2199023255552.0,
                       r[1][0] = 1000, r[1][1] = 18446744073709549568.0; break;
    case KA_DTYPE_F32: r[0][0] = -250.5, r[0][1] = 300.25, r[1][0] = -3.5, r[1][1] = -1.25; break;
    case KA_DTYPE_F64: r[0][0] = -250.5, r[0][1] = 300.1, r[1][0] = -1e-3, r[1][1] = -7e-4; break;
    }
}

static const size_t hist_sizes[] = {0, 1, 63, 65, 4097, 100000, 1000003};
static const uint32_t hist_bins[] = {1, 7, 256, 4096, 5000};

static void histogram_all_types(void **state) {
    (void)state;
    for (ka_dtype t = KA_DTYPE_I32; t <= KA_DTYPE_F64; t++) {
        if (!type_ok(t)) continue;
        double r[2][2];
        ranges(t, r);
        for (size_t b = 0; b < sizeof hist_bins / sizeof hist_bins[0]; b++) {
            ka_prims_desc d = {.kind = KA_PRIM_HISTOGRAM, .dtype = t, .max_n = 1000003, .bins = hist_bins[b]};
            ka_prims_plan *p;
            KA_OK_OR_FAIL(ka_prims_plan_create_desc(dev, &d, &p));
            for (size_t i = 0; i < sizeof hist_sizes / sizeof hist_sizes[0]; i++) {
                if (hist_sizes[i] > 100000 && hist_bins[b] != 256 && hist_bins[b] != 5000) continue;
                int k = (int)((i + b) % 2);
                check_histogram(p, t, hist_sizes[i], hist_bins[b], r[k][0], r[k][1], i % 3 == 2 ? 3 : 0,
                                (uint32_t)(i * 13 + b + t));
            }
            KA_OK_OR_FAIL(ka_prims_plan_release(p));
        }
    }
}

/* The GPU layout (local-memory histograms) on the CPU, and many groups. */
static void histogram_layouts(void **state) {
    (void)state;
    for (int v = 0; v < 2; v++) {
        if (v == 0) setenv("KA_PRIMS_LAYOUT", "gpu", 1);
        else setenv("KA_PRIMS_GROUPS", "3001", 1);
        static const ka_dtype ts[] = {KA_DTYPE_U32, KA_DTYPE_F32, KA_DTYPE_I64, KA_DTYPE_F64};
        for (size_t j = 0; j < 4; j++) {
            if (!type_ok(ts[j])) continue;
            double r[2][2];
            ranges(ts[j], r);
            for (size_t b = 1; b < sizeof hist_bins / sizeof hist_bins[0]; b += 2) { /* 7, 4096 */
                ka_prims_desc d = {.kind = KA_PRIM_HISTOGRAM, .dtype = ts[j], .max_n = 1000003, .bins = hist_bins[b]};
                ka_prims_plan *p;
                ka_status st = ka_prims_plan_create_desc(dev, &d, &p);
                if (st != KA_OK) unsetenv("KA_PRIMS_LAYOUT"), unsetenv("KA_PRIMS_GROUPS");
                KA_OK_OR_FAIL(st);
                check_histogram(p, ts[j], 1000003, hist_bins[b], r[0][0], r[0][1], 0, (uint32_t)(b + j));
                check_histogram(p, ts[j], 70001, hist_bins[b], r[1][0], r[1][1], 3, (uint32_t)(b + j + 1));
                KA_OK_OR_FAIL(ka_prims_plan_release(p));
            }
        }
        unsetenv("KA_PRIMS_LAYOUT"), unsetenv("KA_PRIMS_GROUPS");
    }
}

/* ---- bad input, allocations ---------------------------------------------- */

static void bad_input(void **state) {
    (void)state;
    ka_prims_plan *p = NULL, *sp, *pp, *hp;
    ka_prims_desc d = {.kind = KA_PRIM_HISTOGRAM, .dtype = KA_DTYPE_F32, .max_n = 100};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_prims_plan_create_desc(dev, &d, &p));
    EXPECT_DETAIL("bins");
    assert_null(p);
    d = (ka_prims_desc){.kind = KA_PRIM_SELECT, .dtype = KA_DTYPE_F32, .max_n = 100, .bins = 4};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_prims_plan_create_desc(dev, &d, &p));
    d = (ka_prims_desc){.kind = KA_PRIM_HISTOGRAM, .dtype = KA_DTYPE_F32, .max_n = 100, .bins = 4, .predicate = "x > 0"};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_prims_plan_create_desc(dev, &d, &p));
    d = (ka_prims_desc){.kind = KA_PRIM_SELECT, .dtype = KA_DTYPE_F32, .max_n = 100, .predicate = "x > no_such_thing"};
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_prims_plan_create_desc(dev, &d, &p));
    EXPECT_DETAIL("no_such_thing");
    assert_null(p);

    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SELECT, KA_DTYPE_U32, 100, 0, &sp));
    pp = select_plan(KA_DTYPE_U32, 100, PRED_GT3);
    d = (ka_prims_desc){.kind = KA_PRIM_HISTOGRAM, .dtype = KA_DTYPE_U32, .max_n = 100, .bins = 16};
    KA_OK_OR_FAIL(ka_prims_plan_create_desc(dev, &d, &hp));
    ka_buffer b = make_buffer(dev, 400), o = make_buffer(dev, 400), f = make_buffer(dev, 100), c = make_buffer(dev, 64),
              small = make_buffer(dev, 40);
    ka_buffer none = {0};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_select(q, hp, o, 0, c, 0, b, 0, f, 0, 100, NULL));
    EXPECT_DETAIL("made for histogram, not select");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_histogram(q, sp, c, 0, b, 0, 10, 0, 1, NULL));
    EXPECT_DETAIL("made for select, not histogram");
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_select(q, NULL, o, 0, c, 0, b, 0, f, 0, 100, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_select(q, pp, o, 0, c, 0, b, 0, f, 0, 100, NULL));
    EXPECT_DETAIL("flags given");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_select(q, sp, o, 0, c, 0, b, 0, none, 0, 100, NULL));
    EXPECT_DETAIL("flags missing");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_select(q, sp, o, 0, c, 0, b, 0, f, 0, 101, NULL));
    EXPECT_DETAIL("max_n");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_select(q, sp, small, 0, c, 0, b, 0, f, 0, 100, NULL));
    EXPECT_DETAIL("out holds 40 bytes");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_select(q, sp, o, 0, c, 0, small, 0, f, 0, 100, NULL));
    EXPECT_DETAIL("in holds 40 bytes");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_select(q, sp, o, 0, c, 0, b, 0, f, 1, 100, NULL));
    EXPECT_DETAIL("flags holds 100 bytes");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_select(q, sp, o, 0, c, 60, b, 0, f, 0, 100, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_select(q, sp, o, 0, c, 64, b, 0, f, 0, 100, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_select(q, sp, o, 0, c, 4, b, 0, f, 0, 100, NULL));
    EXPECT_DETAIL("multiple of the element size 8");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_select(q, sp, o, 2, c, 0, b, 0, f, 0, 10, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_select(q, sp, b, 4, c, 0, b, 0, f, 0, 50, NULL));
    EXPECT_DETAIL("out overlaps");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_select(q, sp, o, 0, b, 96, b, 0, f, 0, 50, NULL));
    EXPECT_DETAIL("count overlaps");
    KA_OK_OR_FAIL(ka_select(q, sp, b, 200, c, 0, b, 0, f, 0, 50, NULL)); /* one buffer, apart */
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_select(BAD_QUEUE, sp, o, 0, c, 0, b, 0, f, 0, 100, NULL));

    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_histogram(q, hp, small, 0, b, 0, 100, 0, 10, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_histogram(q, hp, c, 4, b, 0, 100, 0, 10, NULL));
    EXPECT_DETAIL("counts holds 64 bytes");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_histogram(q, hp, c, 0, small, 0, 100, 0, 10, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_histogram(q, hp, c, 0, b, 0, 101, 0, 10, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_histogram(q, hp, b, 0, b, 0, 100, 0, 10, NULL));
    EXPECT_DETAIL("overlaps");
    static const double bad[][2] = {{10, 10}, {10, 5}, {NAN, 5}, {0, NAN}, {-INFINITY, 5}, {0, INFINITY},
                                    {0.5, 10}, {0, 10.25}, {-1, 10}, {0, 4294967296.0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (ka_histogram(q, hp, c, 0, b, 0, 100, bad[i][0], bad[i][1], NULL) != KA_ERR_INVALID_ARGUMENT)
            fail_msg("u32 histogram over [%g, %g) accepted", bad[i][0], bad[i][1]);
    ka_prims_plan *fp, *dp;
    d = (ka_prims_desc){.kind = KA_PRIM_HISTOGRAM, .dtype = KA_DTYPE_F32, .max_n = 100, .bins = 16};
    KA_OK_OR_FAIL(ka_prims_plan_create_desc(dev, &d, &fp));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_histogram(q, fp, c, 0, b, 0, 100, 1.0, 1.0 + 1e-12, NULL)); /* one float */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_histogram(q, fp, c, 0, b, 0, 100, 0, 1e39, NULL));          /* inf as f32 */
    KA_OK_OR_FAIL(ka_histogram(q, fp, c, 0, b, 0, 100, -0.5, 1e-3, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_histogram(q, fp, c, 0, b, 0, 100, 0, 1e-38, NULL)); /* scale inf */
    EXPECT_DETAIL("too narrow");
    if (type_ok(KA_DTYPE_F64)) {
        d.dtype = KA_DTYPE_F64;
        KA_OK_OR_FAIL(ka_prims_plan_create_desc(dev, &d, &dp));
        KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_histogram(q, dp, c, 0, o, 0, 50, -1.5e308, 1.5e308, NULL));
        KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_histogram(q, dp, c, 0, o, 0, 50, 0, 1e-308, NULL));
        ka_prims_plan_release(dp);
    }
    KA_OK_OR_FAIL(ka_queue_finish(q));
    ka_prims_plan_release(fp), ka_prims_plan_release(sp), ka_prims_plan_release(pp), ka_prims_plan_release(hp);
    ka_buffer_release(b), ka_buffer_release(o), ka_buffer_release(f), ka_buffer_release(c), ka_buffer_release(small);
}

/* After a warm-up call, select (flags and predicate) and histogram (both
 * variants) allocate nothing in libka (the default queue). */
static void zero_alloc(void **state) {
    (void)state;
    ka_prims_plan *s, *sp, *h, *hg;
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SELECT, KA_DTYPE_I32, 5000, 0, &s));
    sp = select_plan(KA_DTYPE_F32, 5000, PRED_GT3);
    ka_prims_desc d = {.kind = KA_PRIM_HISTOGRAM, .dtype = KA_DTYPE_F32, .max_n = 5000, .bins = 256};
    KA_OK_OR_FAIL(ka_prims_plan_create_desc(dev, &d, &h));
    d.bins = 5000;
    KA_OK_OR_FAIL(ka_prims_plan_create_desc(dev, &d, &hg));
    ka_buffer a = make_buffer(dev, 5000 * 4), b = make_buffer(dev, 5000 * 4), f = make_buffer(dev, 5000),
              c = make_buffer(dev, 5000 * 4);
    int one = 0x01000100;
    KA_OK_OR_FAIL(ka_buffer_fill(qr, a, 0, &one, 4, 5000 * 4, NULL));
    KA_OK_OR_FAIL(ka_buffer_fill(qr, f, 0, &one, 4, 5000, NULL));
    for (int it = -1; it < 50; it++) {
        if (it == 0) heap_start();
        ka_event ev;
        size_t n = it < 0 ? 5000 : (size_t)(4000 + it * 17);
        if (ka_select(qr, s, b, 0, c, 8, a, 0, f, 0, n, NULL) ||
            ka_select(qr, sp, b, 0, c, 16, a, 0, (ka_buffer){0}, 0, n, NULL) ||
            ka_histogram(qr, h, c, 64, a, 0, n, -1.0, 1e6, NULL) || ka_histogram(qr, hg, c, 0, a, 0, n, 0, 1e8, &ev) ||
            ka_event_wait(ev, KA_WAIT_FOREVER) || ka_event_release(ev))
            fail_msg("iteration %d: %s", it, ka_last_error());
    }
    uint64_t calls = heap_stop();
    if (calls) fail_msg("%llu allocations and frees in libka over 50 select + histogram calls", (unsigned long long)calls);
    ka_buffer_release(a), ka_buffer_release(b), ka_buffer_release(f), ka_buffer_release(c);
    ka_prims_plan_release(s), ka_prims_plan_release(sp), ka_prims_plan_release(h), ka_prims_plan_release(hg);
}

/* KA_BIG_TESTS=1: 2^31 + 5 elements (past 32-bit indices and counts). */
static void big_inputs(void **state) {
    (void)state;
    const char *e = getenv("KA_BIG_TESTS");
    if (!e || strcmp(e, "1")) skip();
    size_t n = (1ull << 31) + 5;
    if (info->global_mem_size < 10 * n || info->max_alloc_size < n * 4) {
        fprintf(stderr, "[ SKIP     ] %s: not enough device memory for 2^31 + 5 u32\n", info->name);
        skip();
    }
    uint32_t *h = malloc(n * 4), *g = malloc(n * 4);
    uint8_t *f = malloc(n);
    assert_non_null(h), assert_non_null(g), assert_non_null(f);
    uint32_t x = 1, hw[256] = {0}, hc[256];
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        h[i] = x, f[i] = (uint8_t)((x >> 9) & 1), kept += f[i], hw[x >> 24]++;
    }
    ka_buffer in = upload(h, n * 4), fb = upload(f, n), out = make_buffer(dev, n * 4), cb = make_buffer(dev, 1024);
    ka_prims_plan *p;
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SELECT, KA_DTYPE_U32, n, 0, &p));
    KA_OK_OR_FAIL(ka_select(q, p, out, 0, cb, 0, in, 0, fb, 0, n, NULL));
    uint64_t cnt;
    KA_OK_OR_FAIL(ka_buffer_read(q, &cnt, cb, 0, 8));
    assert_int_equal(cnt, kept);
    KA_OK_OR_FAIL(ka_buffer_read(q, g, out, 0, kept * 4));
    for (size_t i = 0, j = 0; i < n; i++)
        if (f[i] && g[j++] != h[i]) fail_msg("big select: element %zu of the output", j - 1);
    ka_prims_plan_release(p);
    ka_prims_desc d = {.kind = KA_PRIM_HISTOGRAM, .dtype = KA_DTYPE_U32, .max_n = n, .bins = 256};
    KA_OK_OR_FAIL(ka_prims_plan_create_desc(dev, &d, &p));
    KA_OK_OR_FAIL(ka_histogram(q, p, cb, 0, in, 0, n, 0, 4294967295.0, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(q, hc, cb, 0, 1024));
    /* [0, 2^32 - 1) in 256 bins: x's bin is its top byte, but for x = 2^32 - 1 (outside). */
    for (size_t i = 0; i < n; i++)
        if (h[i] == UINT32_MAX) hw[255]--;
    for (int b = 0; b < 256; b++)
        if (hc[b] != hw[b]) fail_msg("big histogram: bin %d holds %u, want %u", b, hc[b], hw[b]);
    ka_prims_plan_release(p);
    ka_buffer_release(in), ka_buffer_release(fb), ka_buffer_release(out), ka_buffer_release(cb);
    free(h), free(g), free(f);
}

/* The look-back under an adversarial schedule (KA_PRIMS_ADVERSARY=1: groups
 * wait pseudo-random whiles after taking a tile, after publishing its count
 * and before publishing its prefix; tiles of WG elements, so look-backs walk
 * far): flags and predicates, 4- and 8-byte types, calls in a row. Must not
 * hang. */
static void select_adversary(void **state) {
    (void)state;
    setenv("KA_PRIMS_ADVERSARY", "1", 1), setenv("KA_PRIMS_LAYOUT", "gpu", 1);
    ka_prims_plan *a = select_plan(KA_DTYPE_U32, 300000, PRED_NONE), *b = select_plan(KA_DTYPE_I64, 300000, PRED_GT3);
    ka_prims_plan *c = select_plan(KA_DTYPE_F32, 300000, PRED_ODD);
    unsetenv("KA_PRIMS_ADVERSARY"), unsetenv("KA_PRIMS_LAYOUT");
    static const size_t ns[] = {0, 1, 255, 256, 257, 5000, 65537, 300000};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        check_select(a, KA_DTYPE_U32, ns[i], PRED_NONE, i % 2 ? FL_RANDOM : FL_SPARSE, i == 5 ? 5 : 0, (uint32_t)i);
        check_select(b, KA_DTYPE_I64, ns[i], PRED_GT3, FL_ZERO, 0, (uint32_t)i + 3);
        check_select(c, KA_DTYPE_F32, ns[i], PRED_ODD, FL_ZERO, i % 3 == 1 ? 2 : 0, (uint32_t)i + 7);
    }
    ka_prims_plan_release(a), ka_prims_plan_release(b), ka_prims_plan_release(c);
}

/* A failed case leaves its KA_PRIMS_* settings behind (a failure jumps past
 * its unsetenv): the next case starts without them. */
static int clean_env(void **state) {
    (void)state;
    static const char *const vars[] = {"KA_PRIMS_LAYOUT", "KA_PRIMS_GROUPS", "KA_PRIMS_SELECT_K", "KA_PRIMS_ADVERSARY"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
    return 0;
}
#define CASE(f) cmocka_unit_test_setup(f, clean_env)

int main(void) {
    const struct CMUnitTest tests[] = {
        CASE(bad_input),  CASE(select_all_types), CASE(select_predicates), CASE(select_layouts), CASE(histogram_all_types),
        CASE(histogram_layouts), CASE(zero_alloc), CASE(big_inputs), CASE(select_adversary),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
