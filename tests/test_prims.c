/* ka_reduce and ka_scan (sort: test_prims_sort.c) on the default device ($KA_DEVICE: PoCL, or
 * cuda:0 on the GPU machine), checked element by element against a host
 * reference: every type, empty, 1-element, odd and multi-tile sizes, many
 * work-groups over small inputs (KA_PRIMS_GROUPS), NaN rules, stability with
 * values, bad input, and calls that allocate nothing. KA_BIG_TESTS=1 adds
 * inputs of 2^31 + 5 elements (a GPU's memory; skipped where it is lacking). */
#include "prims_util.h"

/* Host reduce as doubles/integers, into out (an element of t). */
#define HOST_RED(TY, ACC)                                                                           \
    do {                                                                                            \
        const TY *a = in;                                                                           \
        TY r = op == KA_REDUCE_SUM ? (TY)0 : a[0];                                                  \
        if (!n) r = op == KA_REDUCE_SUM ? (TY)0 : op == KA_REDUCE_MIN ? hi_ : lo_;                  \
        for (size_t i = 0; i < n; i++) {                                                            \
            if (op == KA_REDUCE_SUM) r = (TY)((ACC)r + (ACC)a[i]);                                  \
            else if (op == KA_REDUCE_MIN) r = a[i] < r ? a[i] : r;                                  \
            else r = a[i] > r ? a[i] : r;                                                           \
        }                                                                                           \
        memcpy(out, &r, sizeof r);                                                                  \
    } while (0)
static void host_reduce(ka_dtype t, const void *in, size_t n, ka_reduce_op op, void *out) {
    switch (t) {
    case KA_DTYPE_I32: { int32_t hi_ = INT32_MAX, lo_ = INT32_MIN; HOST_RED(int32_t, uint32_t); break; }
    case KA_DTYPE_U32: { uint32_t hi_ = UINT32_MAX, lo_ = 0; HOST_RED(uint32_t, uint32_t); break; }
    case KA_DTYPE_I64: { int64_t hi_ = INT64_MAX, lo_ = INT64_MIN; HOST_RED(int64_t, uint64_t); break; }
    case KA_DTYPE_U64: { uint64_t hi_ = UINT64_MAX, lo_ = 0; HOST_RED(uint64_t, uint64_t); break; }
    case KA_DTYPE_F32: { float hi_ = INFINITY, lo_ = -INFINITY; HOST_RED(float, double); break; }
    case KA_DTYPE_F64: { double hi_ = INFINITY, lo_ = -INFINITY; HOST_RED(double, double); break; }
    }
}

static void check_reduce(ka_prims_plan *p, ka_dtype t, size_t n, uint32_t seed) {
    size_t es = esize(t);
    void *h = malloc(n * es + 8);
    gen(t, h, n, seed, 64);
    ka_buffer in = upload(h, n * es), out = make_buffer(dev, 3 * 8);
    for (int op = 0; op < 3; op++) {
        ka_event ev;
        KA_OK_OR_FAIL(ka_reduce(q, p, out, (size_t)op * es, in, 0, n, (ka_reduce_op)op, &ev));
        KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_event_release(ev));
        uint64_t got = 0, want = 0;
        KA_OK_OR_FAIL(ka_buffer_read(q, &got, out, (size_t)op * es, es));
        host_reduce(t, h, n, (ka_reduce_op)op, &want);
        if (memcmp(&got, &want, es)) fail_msg("reduce %s op %d n %zu: got 0x%llx, want 0x%llx", tname(t), op, n,
                                              (unsigned long long)got, (unsigned long long)want);
    }
    ka_buffer_release(in), ka_buffer_release(out);
    free(h);
}

/* Around the GPU tiles too: 2048 (8-byte scan), 4096, 8192 (4-byte scan) elements. */
static const size_t sizes[] = {0, 1, 2, 3, 63, 64, 65, 255, 1000, 2047, 2048, 2049, 4097, 8191, 8192, 8193, 65537, 1000003};
#define NSIZES (sizeof sizes / sizeof sizes[0])


static void reduce_all_types(void **state) {
    (void)state;
    for (ka_dtype t = KA_DTYPE_I32; t <= KA_DTYPE_F64; t++) {
        if (!type_ok(t)) continue;
        ka_prims_plan *p;
        KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_REDUCE, t, 1000003, 0, &p));
        for (size_t i = 0; i < NSIZES; i++) check_reduce(p, t, sizes[i], (uint32_t)(i * 7 + t));
        KA_OK_OR_FAIL(ka_prims_plan_release(p));
    }
}

/* Float sums of fractions: within a relative 1e-5 of the double sum (f32:
 * the device's order, in float, differs from the host's). */
static void reduce_float_tolerance(void **state) {
    (void)state;
    size_t n = 300001;
    float *h = malloc(n * 4);
    double want = 0;
    uint32_t s = 7;
    for (size_t i = 0; i < n; i++) s = s * 1103515245u + 12345u, h[i] = (float)(s >> 8) / 16777216.0f, want += h[i];
    ka_prims_plan *p;
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_REDUCE, KA_DTYPE_F32, n, 0, &p));
    ka_buffer in = upload(h, n * 4), out = make_buffer(dev, 8);
    KA_OK_OR_FAIL(ka_reduce(q, p, out, 0, in, 0, n, KA_REDUCE_SUM, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(q));
    float got;
    KA_OK_OR_FAIL(ka_buffer_read(q, &got, out, 0, 4));
    if (fabs(got - want) > 1e-5 * want) fail_msg("f32 sum %.9g, double sum %.9g", (double)got, want);
    ka_buffer_release(in), ka_buffer_release(out), ka_prims_plan_release(p);
    free(h);
}

/* min/max propagate NaN; an all-NaN input gives NaN; sum with NaN is NaN. */
static void reduce_nan(void **state) {
    (void)state;
    float h[1001];
    for (int i = 0; i < 1001; i++) h[i] = (float)(i % 17) - 8.0f;
    h[777] = NAN;
    ka_prims_plan *p;
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_REDUCE, KA_DTYPE_F32, 1001, 0, &p));
    ka_buffer in = upload(h, sizeof h), out = make_buffer(dev, 16);
    float r[3];
    for (int op = 0; op < 3; op++) KA_OK_OR_FAIL(ka_reduce(q, p, out, (size_t)op * 4, in, 0, 1001, (ka_reduce_op)op, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(q, r, out, 0, 12));
    for (int op = 0; op < 3; op++)
        if (!isnan(r[op])) fail_msg("op %d with a NaN: %g, want NaN", op, (double)r[op]);
    /* Without the NaN: -8 and 8 exactly. */
    KA_OK_OR_FAIL(ka_reduce(q, p, out, 0, in, 0, 777, KA_REDUCE_MIN, NULL));
    KA_OK_OR_FAIL(ka_reduce(q, p, out, 4, in, 0, 777, KA_REDUCE_MAX, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(q, r, out, 0, 8));
    assert_true(r[0] == -8.0f && r[1] == 8.0f);
    for (int i = 0; i < 1001; i++) h[i] = NAN;
    KA_OK_OR_FAIL(ka_buffer_write(q, in, 0, h, sizeof h));
    KA_OK_OR_FAIL(ka_reduce(q, p, out, 0, in, 0, 1001, KA_REDUCE_MIN, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(q, r, out, 0, 4));
    assert_true(isnan(r[0]));
    ka_buffer_release(in), ka_buffer_release(out), ka_prims_plan_release(p);
}

#define HOST_SCAN(TY, ACC)                                                                          \
    do {                                                                                            \
        const TY *a = in;                                                                           \
        TY *o = out, c = 0;                                                                         \
        for (size_t i = 0; i < n; i++) {                                                            \
            TY x = a[i];                                                                            \
            if (excl) o[i] = c;                                                                     \
            c = (TY)((ACC)c + (ACC)x);                                                              \
            if (!excl) o[i] = c;                                                                    \
        }                                                                                           \
    } while (0)
static void host_scan(ka_dtype t, const void *in, void *out, size_t n, int excl) {
    switch (t) {
    case KA_DTYPE_I32: HOST_SCAN(int32_t, uint32_t); break;
    case KA_DTYPE_U32: HOST_SCAN(uint32_t, uint32_t); break;
    case KA_DTYPE_I64: HOST_SCAN(int64_t, uint64_t); break;
    case KA_DTYPE_U64: HOST_SCAN(uint64_t, uint64_t); break;
    case KA_DTYPE_F32: HOST_SCAN(float, double); break;
    case KA_DTYPE_F64: HOST_SCAN(double, double); break;
    }
}

static void check_scan(ka_prims_plan *p, ka_dtype t, size_t n, int excl, int in_place, uint32_t seed) {
    size_t es = esize(t);
    uint8_t *h = malloc(n * es + 8), *want = malloc(n * es + 8), *got = malloc(n * es + 8);
    gen(t, h, n, seed, 16);
    host_scan(t, h, want, n, excl);
    ka_buffer in = upload(h, n * es), out = in_place ? in : make_buffer(dev, n * es + 8);
    ka_event ev;
    KA_OK_OR_FAIL(ka_scan(q, p, out, 0, in, 0, n, excl, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    if (n) KA_OK_OR_FAIL(ka_buffer_read(q, got, out, 0, n * es));
    for (size_t i = 0; i < n; i++)
        if (memcmp(got + i * es, want + i * es, es))
            fail_msg("scan %s %s n %zu: element %zu differs", tname(t), excl ? "exclusive" : "inclusive", n, i);
    ka_buffer_release(in);
    if (!in_place) ka_buffer_release(out);
    free(h), free(want), free(got);
}

/* Every type in the device's layout, then in the GPU layout (its tiles'
 * edges among the sizes) on whatever device runs the test. */
static void scan_all_types(void **state) {
    (void)state;
    for (int gpu = 0; gpu < 2; gpu++) {
        for (ka_dtype t = KA_DTYPE_I32; t <= KA_DTYPE_F64; t++) {
            if (!type_ok(t)) continue;
            ka_prims_plan *p;
            if (gpu) setenv("KA_PRIMS_LAYOUT", "gpu", 1);
            ka_status st = ka_prims_plan_create(dev, KA_PRIM_SCAN, t, 1000003, 0, &p);
            unsetenv("KA_PRIMS_LAYOUT");
            KA_OK_OR_FAIL(st);
            for (size_t i = 0; i < NSIZES; i++) check_scan(p, t, sizes[i], (int)(i & 1), i == 5, (uint32_t)(i + 100 * t));
            check_scan(p, t, 1000003, 1, 0, 9);
            KA_OK_OR_FAIL(ka_prims_plan_release(p));
        }
    }
}

/* ---- user operators ------------------------------------------------------ */
/* The host's fold or scan of a user operator, by name: "max" (a > b ? a : b),
 * "sq" (sum of squares: map x * x, op a + b), "absmax" (max of |a|, |b|,
 * from desc.source), "first" (the first nonzero: a != 0 ? a : b, which does
 * not commute). Integer sums wrap; float inputs are small integers, so their
 * sums are exact. */
#define UOP_HOST(TY, UT, SG)                                                                          \
    do {                                                                                            \
        const TY *a = in;                                                                           \
        TY *o = out, c = id;                                                                        \
        for (size_t i = 0; i < n; i++) {                                                            \
            TY x = a[i], y;                                                                         \
            if (kind == 1) x = (TY)((UT)x * (UT)x);                                                 \
            if (kind == 0) y = c > x ? c : x;                                                       \
            else if (kind == 1) y = (TY)((UT)c + (UT)x);                                            \
            else if (kind == 2) {                                                                   \
                TY pa = SG(c) ? (TY)((UT)0 - (UT)c) : c;                                            \
                TY pb = SG(x) ? (TY)((UT)0 - (UT)x) : x;                                            \
                y = pa > pb ? pa : pb;                                                              \
            } else y = c != (TY)0 ? c : x;                                                          \
            if (excl && o) o[i] = c;                                                                \
            c = y;                                                                                  \
            if (!excl && o) o[i] = c;                                                               \
        }                                                                                           \
        memcpy(res, &c, sizeof c);                                                                  \
    } while (0)
#define NEG(v) ((v) < 0)
#define NONNEG(v) 0
/* out (NULL: none) gets the scan, res the fold. */
static void uop_host(ka_dtype t, int kind, const void *in, void *out, size_t n, int excl, void *res) {
    switch (t) {
    case KA_DTYPE_I32: { int32_t id = kind == 0 ? INT32_MIN : 0; UOP_HOST(int32_t, uint32_t, NEG); break; }
    case KA_DTYPE_U32: { uint32_t id = 0; UOP_HOST(uint32_t, uint32_t, NONNEG); break; }
    case KA_DTYPE_I64: { int64_t id = kind == 0 ? INT64_MIN : 0; UOP_HOST(int64_t, uint64_t, NEG); break; }
    case KA_DTYPE_U64: { uint64_t id = 0; UOP_HOST(uint64_t, uint64_t, NONNEG); break; }
    case KA_DTYPE_F32: { float id = kind == 0 ? -INFINITY : 0; UOP_HOST(float, float, NEG); break; }
    case KA_DTYPE_F64: { double id = kind == 0 ? -INFINITY : 0; UOP_HOST(double, double, NEG); break; }
    }
}
static const char *const absmax_src =
    "KA_DEVICE_FN T absmax(T a, T b) {\n"
    "    T p = a < (T)0 ? (T)0 - a : a, q = b < (T)0 ? (T)0 - b : b;\n"
    "    return p > q ? p : q;\n"
    "}\n";
/* The smallest value of each type, as source: max's identity. */
static const char *low_of(ka_dtype t) {
    static const char *const l[] = {"", "(-2147483647 - 1)", "0u", "(-9223372036854775807L - 1L)", "0ul",
                                    "(-1.0f / 0.0f)", "(-1.0 / 0.0)"};
    return l[t];
}
static ka_status uop_plan(ka_prim_kind k, ka_dtype t, int kind, size_t max_n, ka_prims_plan **p) {
    ka_prims_desc d = {.kind = k, .dtype = t, .max_n = max_n};
    if (kind == 0) d.op = "a > b ? a : b", d.identity = low_of(t);
    else if (kind == 1) d.op = "a + b", d.identity = "0", d.map = "x * x";
    else if (kind == 2) d.op = "absmax(a, b)", d.identity = "0", d.source = absmax_src;
    else d.op = "a != (T)0 ? a : b", d.identity = "0";
    return ka_prims_plan_create_desc(dev, &d, p);
}

/* ka_reduce with KA_REDUCE_USER, every type, each operator; the built-in sum
 * on a plan with a map sums the mapped elements. */
static void reduce_user_ops(void **state) {
    (void)state;
    static const size_t usz[] = {0, 1, 3, 64, 65, 4097, 65537, 300007};
    for (ka_dtype t = KA_DTYPE_I32; t <= KA_DTYPE_F64; t++) {
        if (!type_ok(t)) continue;
        size_t es = esize(t);
        for (int kind = 0; kind < 3; kind++) {
            ka_prims_plan *p;
            KA_OK_OR_FAIL(uop_plan(KA_PRIM_REDUCE, t, kind, 300007, &p));
            for (size_t i = 0; i < sizeof usz / sizeof usz[0]; i++) {
                size_t n = usz[i];
                if (kind == 1 && t == KA_DTYPE_F32 && n > 4097) continue; /* exact float sums */
                void *h = malloc(n * es + 8);
                gen(t, h, n, (uint32_t)(i * 13 + t + kind), 64);
                ka_buffer in = upload(h, n * es), out = make_buffer(dev, 16);
                uint64_t got = 0, want = 0;
                KA_OK_OR_FAIL(ka_reduce(q, p, out, es, in, 0, n, KA_REDUCE_USER, NULL));
                KA_OK_OR_FAIL(ka_buffer_read(q, &got, out, es, es));
                uop_host(t, kind, h, NULL, n, 0, &want);
                if (memcmp(&got, &want, es))
                    fail_msg("user reduce %d %s n %zu: got 0x%llx, want 0x%llx", kind, tname(t), n,
                             (unsigned long long)got, (unsigned long long)want);
                if (kind == 1) { /* the sum on a plan with map x * x: the same sum of squares */
                    KA_OK_OR_FAIL(ka_reduce(q, p, out, 0, in, 0, n, KA_REDUCE_SUM, NULL));
                    KA_OK_OR_FAIL(ka_buffer_read(q, &got, out, 0, es));
                    if (memcmp(&got, &want, es)) fail_msg("sum with map %s n %zu", tname(t), n);
                }
                ka_buffer_release(in), ka_buffer_release(out);
                free(h);
            }
            KA_OK_OR_FAIL(ka_prims_plan_release(p));
        }
    }
}

/* ka_scan with a user operator: max, sum of squares, absmax and the first
 * nonzero (order matters), inclusive, exclusive and in place, every type, in
 * the device's layout and the GPU one. */
static void scan_user_ops(void **state) {
    (void)state;
    static const size_t usz[] = {0, 1, 3, 1000, 4097, 65537, 300007};
    for (int gpu = 0; gpu < 2; gpu++) {
        if (gpu) setenv("KA_PRIMS_LAYOUT", "gpu", 1);
        for (ka_dtype t = KA_DTYPE_I32; t <= KA_DTYPE_F64; t++) {
            if (!type_ok(t)) continue;
            size_t es = esize(t);
            for (int kind = 0; kind < 4; kind++) {
                ka_prims_plan *p;
                ka_status st = uop_plan(KA_PRIM_SCAN, t, kind, 300007, &p);
                if (st != KA_OK) unsetenv("KA_PRIMS_LAYOUT");
                KA_OK_OR_FAIL(st);
                for (size_t i = 0; i < sizeof usz / sizeof usz[0]; i++) {
                    size_t n = usz[i];
                    int excl = (int)((i + kind) & 1), in_place = (i + t) % 3 == 0;
                    if (kind == 1 && t == KA_DTYPE_F32 && n > 4097) continue;
                    if (n > 70000 && (t + kind + gpu) % 3) continue; /* keep it short */
                    uint8_t *h = malloc(n * es + 8), *want = malloc(n * es + 8), *got = malloc(n * es + 8);
                    gen(t, h, n, (uint32_t)(i * 17 + t + kind), 64);
                    if (kind == 3) /* mostly zeros: the first nonzero moves along */
                        for (size_t j = 0; j < n; j++)
                            if ((j * 2654435761u) % 1000 > 3) memset(h + j * es, 0, es);
                    uint64_t r;
                    uop_host(t, kind, h, want, n, excl, &r);
                    ka_buffer in = upload(h, n * es), out = in_place ? in : make_buffer(dev, n * es + 8);
                    KA_OK_OR_FAIL(ka_scan(q, p, out, 0, in, 0, n, excl, NULL));
                    if (n) KA_OK_OR_FAIL(ka_buffer_read(q, got, out, 0, n * es));
                    for (size_t j = 0; j < n; j++)
                        if (memcmp(got + j * es, want + j * es, es))
                            fail_msg("user scan %d %s %s%s n %zu: element %zu differs", kind, tname(t),
                                     excl ? "exclusive" : "inclusive", gpu ? " gpu layout" : "", n, j);
                    ka_buffer_release(in);
                    if (!in_place) ka_buffer_release(out);
                    free(h), free(want), free(got);
                }
                KA_OK_OR_FAIL(ka_prims_plan_release(p));
            }
        }
    }
    unsetenv("KA_PRIMS_LAYOUT");
}

/* Operators that do not compile: KA_ERR_BUILD_FAILED with the compiler's
 * log; KA_REDUCE_USER on a plan without an operator is refused. */
static void user_op_errors(void **state) {
    (void)state;
    ka_prims_plan *p = NULL;
    ka_prims_desc d = {.kind = KA_PRIM_REDUCE, .dtype = KA_DTYPE_F32, .max_n = 100, .op = "a +* b", .identity = "0"};
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_prims_plan_create_desc(dev, &d, &p));
    assert_null(p);
    assert_true(strlen(ka_last_error()) > 20);
    d.kind = KA_PRIM_SCAN, d.op = "no_such_function(a, b)";
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_prims_plan_create_desc(dev, &d, &p));
    EXPECT_DETAIL("no_such_function");
    d.op = "a + b", d.map = "x *";
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_prims_plan_create_desc(dev, &d, &p));
    d.map = NULL, d.identity = NULL;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_prims_plan_create_desc(dev, &d, &p));
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_REDUCE, KA_DTYPE_F32, 100, 0, &p));
    ka_buffer b = make_buffer(dev, 400);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_reduce(q, p, b, 0, b, 0, 100, KA_REDUCE_USER, NULL));
    EXPECT_DETAIL("KA_REDUCE_USER");
    ka_buffer_release(b);
    KA_OK_OR_FAIL(ka_prims_plan_release(p));
}

/* Many work-groups over small inputs: chunks of one tile, 64-bit chunk
 * arithmetic and the partials' scan over several tiles of its own. */
static void many_groups(void **state) {
    (void)state;
    setenv("KA_PRIMS_GROUPS", "3001", 1);
    ka_prims_plan *r, *s, *o;
    ka_status st1 = ka_prims_plan_create(dev, KA_PRIM_REDUCE, KA_DTYPE_I64, 1 << 22, 0, &r);
    ka_status st2 = ka_prims_plan_create(dev, KA_PRIM_SCAN, KA_DTYPE_U32, 1 << 22, 0, &s);
    setenv("KA_PRIMS_GROUPS", "301", 1); /* CPUs count digits per work-item: 256 x 64 counters a group */
    ka_status st3 = ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_I32, 1 << 22, KA_PRIM_SORT_VALUES, &o);
    unsetenv("KA_PRIMS_GROUPS");
    KA_OK_OR_FAIL(st1);
    KA_OK_OR_FAIL(st2);
    KA_OK_OR_FAIL(st3);
    check_reduce(r, KA_DTYPE_I64, 1000003, 3);
    check_scan(s, KA_DTYPE_U32, (1 << 22) - 1, 0, 0, 4);
    check_sort(o, KA_DTYPE_I32, 300007, 1, 5, 0);
    ka_prims_plan_release(r), ka_prims_plan_release(s), ka_prims_plan_release(o);
}

/* The look-back under an adversarial schedule (KA_PRIMS_ADVERSARY=1: groups
 * wait pseudo-random whiles between taking a tile, publishing its aggregate
 * and its prefix; tiles of a few elements, so look-backs walk far and meet
 * unpublished tiles; the epoch wraps every few calls), in the device's layout
 * (CPUs: three launches, no look-back) and the GPU one: every type,
 * inclusive, exclusive, in place. Must not hang. */
static void scan_adversary(void **state) {
    (void)state;
    static const size_t asz[] = {0, 1, 2, 127, 128, 129, 1000, 65537, 1000003};
    setenv("KA_PRIMS_ADVERSARY", "1", 1);
    for (int gpu = 0; gpu < 2; gpu++) {
        if (gpu) setenv("KA_PRIMS_LAYOUT", "gpu", 1);
        for (ka_dtype t = KA_DTYPE_I32; t <= KA_DTYPE_F64; t++) {
            if (!type_ok(t)) continue;
            ka_prims_plan *p;
            ka_status st = ka_prims_plan_create(dev, KA_PRIM_SCAN, t, 1000003, 0, &p);
            if (st != KA_OK) unsetenv("KA_PRIMS_ADVERSARY"), unsetenv("KA_PRIMS_LAYOUT");
            KA_OK_OR_FAIL(st);
            for (size_t i = 0; i < sizeof asz / sizeof asz[0]; i++) {
                if (asz[i] > 70000 && (t + gpu) % 3) continue; /* the largest size for two types a layout */
                check_scan(p, t, asz[i], (int)((i + t) & 1), (i + t) % 3 == 0, (uint32_t)(i * 31 + t));
            }
            KA_OK_OR_FAIL(ka_prims_plan_release(p));
        }
    }
    unsetenv("KA_PRIMS_ADVERSARY");
    unsetenv("KA_PRIMS_LAYOUT");
}

/* The GPU layout (256 work-items, coalesced strided loops; a scan's tile 32
 * elements a work-item of 4 bytes, 8 of 8 bytes) on whatever device runs the
 * test: on PoCL, the code path of GPUs. */
static void gpu_layout(void **state) {
    (void)state;
    setenv("KA_PRIMS_LAYOUT", "gpu", 1);
    ka_prims_plan *r, *s, *o;
    ka_status st1 = ka_prims_plan_create(dev, KA_PRIM_REDUCE, KA_DTYPE_I32, 1 << 20, 0, &r);
    ka_status st2 = ka_prims_plan_create(dev, KA_PRIM_SCAN, KA_DTYPE_F32, 1 << 20, 0, &s);
    ka_status st3 = ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_F64, 1 << 20, KA_PRIM_SORT_VALUES, &o);
    unsetenv("KA_PRIMS_LAYOUT");
    KA_OK_OR_FAIL(st1);
    KA_OK_OR_FAIL(st2);
    KA_OK_OR_FAIL(st3);
    for (size_t i = 0; i < NSIZES; i++) check_reduce(r, KA_DTYPE_I32, sizes[i], (uint32_t)i);
    check_scan(s, KA_DTYPE_F32, 1000003, 0, 0, 1);
    check_scan(s, KA_DTYPE_F32, 4097, 1, 1, 2);
    check_sort(o, KA_DTYPE_F64, 200003, 1, 3, 0);
    check_sort(o, KA_DTYPE_F64, 5001, 1, 4, 1);
    ka_prims_plan_release(r), ka_prims_plan_release(s), ka_prims_plan_release(o);
}

static void bad_input(void **state) {
    (void)state;
    ka_prims_plan *p = (ka_prims_plan *)1, *sp;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_prims_plan_create(dev, KA_PRIM_REDUCE, KA_DTYPE_U32, 0, 0, &p));
    assert_null(p);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_prims_plan_create(dev, (ka_prim_kind)9, KA_DTYPE_U32, 10, 0, &p));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_prims_plan_create(dev, KA_PRIM_SCAN, (ka_dtype)0, 10, 0, &p));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_prims_plan_create(dev, KA_PRIM_SCAN, KA_DTYPE_U32, 10, KA_PRIM_SORT_VALUES, &p));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_prims_plan_create(dev, KA_PRIM_SCAN, KA_DTYPE_U32, 10, 0, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_prims_plan_create(BAD_DEVICE, KA_PRIM_SCAN, KA_DTYPE_U32, 10, 0, &p));
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_REDUCE, KA_DTYPE_U32, 100, 0, &p));
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_U32, 100, 0, &sp));
    ka_buffer b = make_buffer(dev, 400), small = make_buffer(dev, 40);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_reduce(q, p, b, 0, b, 0, 101, KA_REDUCE_SUM, NULL));
    EXPECT_DETAIL("n = 101", "max_n 100");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_reduce(q, p, b, 0, small, 0, 100, KA_REDUCE_SUM, NULL));
    EXPECT_DETAIL("in holds 40 bytes");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_reduce(q, p, small, 40, b, 0, 100, KA_REDUCE_SUM, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_reduce(q, p, small, 2, b, 0, 100, KA_REDUCE_SUM, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_reduce(q, p, small, 0, b, 0, 100, (ka_reduce_op)7, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_reduce(q, p, small, 0, BAD_BUFFER, 0, 100, KA_REDUCE_SUM, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_scan(q, p, b, 0, b, 0, 10, 0, NULL));
    EXPECT_DETAIL("made for reduce, not scan");
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_scan(q, NULL, b, 0, b, 0, 10, 0, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_sort(q, sp, b, 0, small, 0, 10, NULL));
    EXPECT_DETAIL("KA_PRIM_SORT_VALUES");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_sort(q, sp, small, 0, (ka_buffer){0}, 0, 100, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_reduce(BAD_QUEUE, p, small, 0, b, 0, 100, KA_REDUCE_SUM, NULL));
    KA_OK_OR_FAIL(ka_prims_plan_release(p));
    KA_OK_OR_FAIL(ka_prims_plan_release(sp));
    KA_OK_OR_FAIL(ka_prims_plan_release(NULL));
    ka_buffer_release(b), ka_buffer_release(small);
}

/* After a warm-up call, reduce, scan and sort allocate nothing in libka (on
 * the default queue: on PoCL, the routed path). */
static void zero_alloc(void **state) {
    (void)state;
    ka_prims_plan *r, *s, *o;
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_REDUCE, KA_DTYPE_F32, 5000, 0, &r));
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SCAN, KA_DTYPE_I32, 5000, 0, &s));
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_U32, 5000, KA_PRIM_SORT_VALUES, &o));
    ka_buffer a = make_buffer(dev, 5000 * 4), b = make_buffer(dev, 5000 * 4), c = make_buffer(dev, 5000 * 4);
    int zero = 0;
    KA_OK_OR_FAIL(ka_buffer_fill(qr, a, 0, &zero, 4, 5000 * 4, NULL));
    for (int it = -1; it < 50; it++) {
        if (it == 0) heap_start();
        ka_event ev;
        size_t n = it < 0 ? 5000 : (size_t)(4000 + it * 17);
        if (ka_reduce(qr, r, b, 4, a, 0, n, KA_REDUCE_MAX, NULL) || ka_scan(qr, s, b, 0, a, 0, n, it & 1, NULL) ||
            ka_sort(qr, o, a, 0, c, 0, n, &ev) || ka_event_wait(ev, KA_WAIT_FOREVER) || ka_event_release(ev))
            fail_msg("iteration %d: %s", it, ka_last_error());
    }
    uint64_t calls = heap_stop();
    if (calls) fail_msg("%llu allocations and frees in libka over 50 reduce + scan + sort calls", (unsigned long long)calls);
    ka_buffer_release(a), ka_buffer_release(b), ka_buffer_release(c);
    ka_prims_plan_release(r), ka_prims_plan_release(s), ka_prims_plan_release(o);
}

/* KA_BIG_TESTS=1: 2^31 + 5 elements (past 32-bit indices). */
static void big_inputs(void **state) {
    (void)state;
    const char *e = getenv("KA_BIG_TESTS");
    if (!e || strcmp(e, "1")) skip();
    size_t n = (1ull << 31) + 5;
    if (info->global_mem_size < 6 * n * 4 || info->max_alloc_size < n * 4) {
        fprintf(stderr, "[ SKIP     ] %s: not enough device memory for 2^31 + 5 u32\n", info->name);
        skip();
    }
    uint32_t *h = malloc(n * 4), *g = malloc(n * 4);
    assert_non_null(h), assert_non_null(g);
    uint32_t x = 1;
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) x ^= x << 13, x ^= x >> 17, x ^= x << 5, h[i] = x & 7, sum += h[i];
    ka_buffer in = upload(h, n * 4), out = make_buffer(dev, 8);
    ka_prims_plan *p;
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_REDUCE, KA_DTYPE_U32, n, 0, &p));
    KA_OK_OR_FAIL(ka_reduce(q, p, out, 0, in, 0, n, KA_REDUCE_SUM, NULL));
    uint32_t r;
    KA_OK_OR_FAIL(ka_buffer_read(q, &r, out, 0, 4));
    assert_int_equal(r, (uint32_t)sum);
    ka_prims_plan_release(p);
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SCAN, KA_DTYPE_U32, n, 0, &p));
    KA_OK_OR_FAIL(ka_scan(q, p, in, 0, in, 0, n, 0, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(q, g, in, 0, n * 4));
    uint32_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (g[i] != (c += h[i])) fail_msg("big scan: element %zu", i);
    ka_prims_plan_release(p);
    KA_OK_OR_FAIL(ka_buffer_write(q, in, 0, h, n * 4));
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_U32, n, 0, &p));
    KA_OK_OR_FAIL(ka_sort(q, p, in, 0, (ka_buffer){0}, 0, n, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(q, g, in, 0, n * 4));
    size_t cnt[8] = {0};
    for (size_t i = 0; i < n; i++) cnt[h[i]]++;
    size_t i = 0;
    for (uint32_t d = 0; d < 8; d++)
        for (size_t j = 0; j < cnt[d]; j++, i++)
            if (g[i] != d) fail_msg("big sort: element %zu is %u, want %u", i, g[i], d);
    ka_prims_plan_release(p);
    ka_buffer_release(in), ka_buffer_release(out);
    free(h), free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_input),        cmocka_unit_test(reduce_all_types), cmocka_unit_test(reduce_float_tolerance),
        cmocka_unit_test(reduce_nan),       cmocka_unit_test(scan_all_types),   cmocka_unit_test(scan_adversary),
        cmocka_unit_test(reduce_user_ops),  cmocka_unit_test(scan_user_ops),    cmocka_unit_test(user_op_errors),
        cmocka_unit_test(many_groups),      cmocka_unit_test(gpu_layout),      cmocka_unit_test(zero_alloc),
        cmocka_unit_test(big_inputs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
