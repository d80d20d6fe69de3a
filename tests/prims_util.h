/* What the primitives' test programs share: the device and queues, element
 * types, generated inputs, uploads. */
#ifndef TEST_PRIMS_UTIL_H
#define TEST_PRIMS_UTIL_H
#include "test_util.h"

#include <ka_prims.h>
#include <math.h>

static ka_device dev;
static ka_queue q;  /* routing off: every launch on the threaded device (PoCL builds each kernel once) */
static ka_queue qr; /* the default queue: on PoCL, small launches run inline on `basic` */
static const ka_device_info *info;


static inline int setup(void **state) {
    (void)state;
    heap_install();
    if (ka_device_open(NULL, &dev) || ka_device_get_info(dev, &info) || ka_queue_create(dev, NULL, &qr) ||
        ka_queue_create(dev, &(ka_queue_config){.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF}, &q)) {
        fprintf(stderr, "setup: %s\n", ka_last_error());
        return -1;
    }
    return 0;
}
static inline int teardown(void **state) {
    (void)state;
    ka_queue_release(q);
    ka_queue_release(qr);
    ka_device_close(dev);
    return 0;
}

static inline size_t esize(ka_dtype t) { return t == KA_DTYPE_I32 || t == KA_DTYPE_U32 || t == KA_DTYPE_F32 ? 4 : 8; }
static inline const char *tname(ka_dtype t) {
    static const char *n[] = {"?", "i32", "u32", "i64", "u64", "f32", "f64"};
    return n[t];
}

/* Values: small integers (exact float sums up to 2^24), signed types get negatives. */
static inline void gen(ka_dtype t, void *p, size_t n, uint32_t seed, uint32_t range) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        uint32_t r = (seed >> 8) % range;
        int32_t s = (int32_t)r - (int32_t)(range / 2);
        switch (t) {
        case KA_DTYPE_I32: ((int32_t *)p)[i] = s; break;
        case KA_DTYPE_U32: ((uint32_t *)p)[i] = r; break;
        case KA_DTYPE_I64: ((int64_t *)p)[i] = (int64_t)s * 3000000000ll; break;
        case KA_DTYPE_U64: ((uint64_t *)p)[i] = (uint64_t)r * 5000000000ull; break;
        case KA_DTYPE_F32: ((float *)p)[i] = (float)s; break;
        case KA_DTYPE_F64: ((double *)p)[i] = (double)s; break;
        }
    }
}

static inline ka_buffer upload(const void *h, size_t bytes) {
    ka_buffer b = make_buffer(dev, bytes ? bytes : 8);
    if (bytes) KA_OK_OR_FAIL(ka_buffer_write(q, b, 0, h, bytes));
    return b;
}

static inline int type_ok(ka_dtype t) { return t != KA_DTYPE_F64 || info->has_double; }
/* ---- sort --------------------------------------------------------------- */
/* The key's order as an unsigned integer (the transform the sort uses). */
static inline uint64_t okey(ka_dtype t, const uint8_t *k) {
    uint32_t u;
    uint64_t v;
    switch (t) {
    case KA_DTYPE_U32: memcpy(&u, k, 4); return u;
    case KA_DTYPE_I32: memcpy(&u, k, 4); return u ^ 0x80000000u;
    case KA_DTYPE_F32: memcpy(&u, k, 4); return u >> 31 ? ~u : u | 0x80000000u;
    case KA_DTYPE_U64: memcpy(&v, k, 8); return v;
    case KA_DTYPE_I64: memcpy(&v, k, 8); return v ^ 0x8000000000000000ull;
    case KA_DTYPE_F64: memcpy(&v, k, 8); return v >> 63 ? ~v : v | 0x8000000000000000ull;
    }
    return 0;
}
static ka_dtype g_sort_t;
static inline int cmp_rec(const void *a, const void *b) { /* records: key bytes, then a u32 index; stable by index */
    size_t es = esize(g_sort_t);
    uint64_t x = okey(g_sort_t, a), y = okey(g_sort_t, b);
    if (x != y) return x < y ? -1 : 1;
    uint32_t i, j;
    memcpy(&i, (const uint8_t *)a + es, 4), memcpy(&j, (const uint8_t *)b + es, 4);
    return i < j ? -1 : i > j;
}

/* Float keys: some NaN, -NaN, -0.0 and an infinity among the values. */
static inline double special(double x, uint64_t r, double inf) {
    if (r % 29 == 3) return NAN;
    if (r % 31 == 4) return -NAN;
    if (r % 37 == 5) return -0.0;
    if (r % 41 == 6) return inf;
    return x;
}

/* What a sort check moves with the keys: nothing, 4- or 8-byte values
 * (ka_sort_pairs), or argsort's u32 or u64 indices. */
enum { SORT_KEYS = 0, SORT_V4 = 4, SORT_V8 = 8, SORT_ARG32 = 32, SORT_ARG64 = 64 };

/* Keys from few distinct values (many ties: stability shows) or wide ones
 * (every digit), values = index; keys, values and perm at an offset of off
 * elements. Checked against qsort, stable by index. */
static inline void check_sort_ex(ka_prims_plan *p, ka_dtype t, size_t n, int mode, uint32_t seed, int wide, size_t off) {
    size_t es = esize(t), rs = es + 4, vw = mode == SORT_V8 || mode == SORT_ARG64 ? 8 : 4;
    int arg = mode == SORT_ARG32 || mode == SORT_ARG64, vals = mode != SORT_KEYS;
    uint8_t *k = malloc((n + off) * es + 8), *rec = malloc(n * rs + 8), *got = malloc((n + off) * es + 8);
    uint8_t *v = malloc((n + off) * vw + 8), *gv = malloc((n + off) * vw + 8);
    memset(k, 0x5a, off * es), memset(v, 0x5a, off * vw);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        uint64_t r = wide ? ((uint64_t)seed << 32 | (seed * 2654435761u)) : (seed >> 8) % 97;
        int64_t s = (int64_t)(r % 97) - 48;
        uint8_t *kp = k + (off + i) * es;
        switch (t) {
        case KA_DTYPE_U32: { uint32_t x = wide ? (uint32_t)r : (uint32_t)(r * 0x01010101u); memcpy(kp, &x, 4); break; }
        case KA_DTYPE_I32: { int32_t x = wide ? (int32_t)(uint32_t)r : (int32_t)s * 40000000; memcpy(kp, &x, 4); break; }
        case KA_DTYPE_F32: { float x = (float)special(s * 0.37, r, INFINITY); memcpy(kp, &x, 4); break; }
        case KA_DTYPE_U64: { uint64_t x = wide ? r : r * 0x0101010101010101ull; memcpy(kp, &x, 8); break; }
        case KA_DTYPE_I64: { int64_t x = wide ? (int64_t)r : s * 90000000000000000ll; memcpy(kp, &x, 8); break; }
        case KA_DTYPE_F64: { double x = special(s * 0.37, r, -INFINITY); memcpy(kp, &x, 8); break; }
        }
        uint32_t ix = (uint32_t)i;
        uint64_t v8 = (uint64_t)i | (uint64_t)(i * 7 + 1) << 40; /* the high half matters too */
        if (vw == 4) memcpy(v + (off + i) * 4, &ix, 4);
        else memcpy(v + (off + i) * 8, &v8, 8);
        memcpy(rec + i * rs, kp, es), memcpy(rec + i * rs + es, &ix, 4);
    }
    g_sort_t = t;
    qsort(rec, n, rs, cmp_rec);
    ka_buffer kb = upload(k, (n + off) * es), vb = vals ? upload(v, (n + off) * vw) : (ka_buffer){0};
    ka_event ev;
    if (mode == SORT_KEYS) KA_OK_OR_FAIL(ka_sort(q, p, kb, off * es, vb, 0, n, &ev));
    else if (!arg) KA_OK_OR_FAIL(ka_sort_pairs(q, p, kb, off * es, vb, off * vw, n, &ev));
    else KA_OK_OR_FAIL(ka_argsort(q, p, vb, off * vw, kb, off * es, n, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_read(q, got, kb, 0, (n + off) * es));
    if (vals) KA_OK_OR_FAIL(ka_buffer_read(q, gv, vb, 0, (n + off) * vw));
    if (memcmp(got, k, off * es) || (vals && memcmp(gv, v, off * vw)))
        fail_msg("sort %s n %zu mode %d: the elements before the offset changed", tname(t), n, mode);
    if (arg && memcmp(got, k, (n + off) * es)) fail_msg("argsort %s n %zu: the keys changed", tname(t), n);
    for (size_t i = 0; i < n; i++) {
        uint32_t want;
        memcpy(&want, rec + i * rs + es, 4);
        if (!arg && memcmp(got + (off + i) * es, rec + i * rs, es)) fail_msg("sort %s n %zu mode %d: key %zu differs", tname(t), n, mode, i);
        if (!vals) continue;
        uint64_t gi, wv = vw == 4 || arg ? want : (uint64_t)want | (uint64_t)(want * 7ull + 1) << 40;
        if (vw == 4) { uint32_t x; memcpy(&x, gv + (off + i) * 4, 4); gi = x; }
        else memcpy(&gi, gv + (off + i) * 8, 8);
        if (gi != wv)
            fail_msg("sort %s n %zu mode %d: value %zu is %llu, want %llu (not stable)", tname(t), n, mode, i,
                     (unsigned long long)gi, (unsigned long long)wv);
    }
    ka_buffer_release(kb);
    if (vals) ka_buffer_release(vb);
    free(k), free(rec), free(got), free(v), free(gv);
}
static inline void check_sort(ka_prims_plan *p, ka_dtype t, size_t n, int with_vals, uint32_t seed, int wide) {
    check_sort_ex(p, t, n, with_vals ? SORT_V4 : SORT_KEYS, seed, wide, 0);
}


#endif
