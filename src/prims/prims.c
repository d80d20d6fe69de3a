/* ka_reduce, ka_scan, ka_sort: the checks, then the plan's kernels enqueued
 * in order on the queue, the caller's event on the last one. Nothing here
 * allocates (ka_launch does not, and the plan holds every kernel and buffer). */
#include "prims.h"

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static ka_status check_n(const ka_prims_plan *p, size_t n, const char *fn) {
    if (n > p->max_n)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s: n = %zu is larger than the plan's max_n %zu", fn, n, p->max_n);
    return KA_OK;
}

static ka_status launch(ka_queue q, ka_kernel k, uint64_t groups, uint32_t wg, const ka_arg *a, uint32_t na,
                        ka_event *ev) {
    ka_range r = {.dims = 1, .size = {groups * wg}, .workgroup = {wg}};
    return ka_launch(q, k, &r, a, na, ev);
}

/* A byte offset of a prims call: a multiple of the element size es, inside
 * the buffer with room for n elements after it; *el gets it in elements. */
static ka_status check_at(ka_buffer b, size_t off, size_t n, size_t es, const char *fn, const char *what, uint64_t *el) {
    if (off % es)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s: %s offset %zu is not a multiple of the element size %zu", fn, what,
                        off, es);
    size_t bytes;
    if (ka_buffer_size(b, &bytes) != KA_OK) return ka__fail(KA_ERR_INVALID_HANDLE, "%s: %s: invalid or released buffer", fn, what);
    if (off > bytes || (bytes - off) / es < n)
        return ka__fail(KA_ERR_INVALID_ARGUMENT,
                        "%s: %s holds %zu bytes; %zu elements of %zu bytes at offset %zu need %zu", fn, what, bytes, n, es,
                        off, off + n * es);
    *el = off / es;
    return KA_OK;
}

ka_status ka_reduce(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer in, size_t in_offset,
                    size_t n, ka_reduce_op op, ka_event *ev) {
    static const char fn[] = "ka_reduce";
    ka_status st = ka__plan_check(plan, KA_PRIM_REDUCE, fn);
    if (st != KA_OK) return st;
    ka_prims_plan *p = plan;
    if (op != KA_REDUCE_SUM && op != KA_REDUCE_MIN && op != KA_REDUCE_MAX)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s: unknown op %d", fn, (int)op);
    uint64_t oi, ii = 0;
    st = check_n(p, n, fn);
    if (st == KA_OK && n) st = check_at(in, in_offset, n, p->esize, fn, "in", &ii);
    if (st == KA_OK) st = check_at(out, out_offset, 1, p->esize, fn, "out", &oi);
    if (st != KA_OK) return st;
    uint64_t g = cdiv(n, (uint64_t)p->wg * 4);
    if (g > p->max_groups) g = p->max_groups;
    if (g == 0) g = 1;
    ka_arg a1[] = {ka_arg_buffer(in), ka_arg_u64(ii), ka_arg_buffer(p->part), ka_arg_u64(n), ka_arg_u32((uint32_t)op)};
    if ((st = launch(q, p->k[KP_RED1], g, p->wg, a1, 5, NULL)) != KA_OK) return st;
    ka_arg a2[] = {ka_arg_buffer(p->part), ka_arg_u64(g), ka_arg_buffer(out), ka_arg_u64(oi), ka_arg_u32((uint32_t)op)};
    return launch(q, p->k[KP_RED2], 1, p->wg, a2, 5, ev);
}

ka_status ka_scan(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer in, size_t in_offset,
                  size_t n, int exclusive, ka_event *ev) {
    static const char fn[] = "ka_scan";
    ka_status st = ka__plan_check(plan, KA_PRIM_SCAN, fn);
    if (st != KA_OK) return st;
    ka_prims_plan *p = plan;
    uint64_t ii, oi;
    st = check_n(p, n, fn);
    if (st == KA_OK) st = check_at(in, in_offset, n, p->esize, fn, "in", &ii);
    if (st == KA_OK) st = check_at(out, out_offset, n, p->esize, fn, "out", &oi);
    if (st != KA_OK) return st;
    /* In place is fine; a shifted overlap would read what the scan already wrote. */
    if (n && in.id == out.id && ii != oi && ii < oi + n && oi < ii + n)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s: in and out overlap at different offsets", fn);
    uint64_t g0 = cdiv(n, p->tile);
    if (g0 > p->max_groups) g0 = p->max_groups;
    uint64_t c = n ? cdiv(cdiv(n, g0), p->tile) * p->tile : p->tile; /* a whole number of tiles per group */
    uint64_t g = cdiv(n, c);
    ka_arg a1[] = {ka_arg_buffer(in), ka_arg_u64(ii), ka_arg_buffer(p->part), ka_arg_u64(n), ka_arg_u64(c)};
    ka_arg a2[] = {ka_arg_buffer(p->part), ka_arg_u64(p->contig ? g * p->wg : g)}; /* CPU: a partial per work-item */
    ka_arg a3[] = {ka_arg_buffer(in), ka_arg_u64(ii), ka_arg_buffer(out), ka_arg_u64(oi), ka_arg_buffer(p->part),
                   ka_arg_u64(n), ka_arg_u64(c), ka_arg_u32(exclusive ? 1 : 0)};
    if (n == 0) return launch(q, p->k[KP_SCAN3], 0, p->wg, a3, 8, ev); /* a zero range: a complete event */
    if ((st = launch(q, p->k[KP_SCAN1], g, p->wg, a1, 5, NULL)) != KA_OK) return st;
    if ((st = launch(q, p->k[KP_SCAN2], 1, p->wg, a2, 2, NULL)) != KA_OK) return st;
    return launch(q, p->k[KP_SCAN3], g, p->wg, a3, 8, ev);
}

ka_status ka_sort(ka_queue q, ka_prims_plan *plan, ka_buffer keys, size_t keys_offset, ka_buffer values,
                  size_t values_offset, size_t n, ka_event *ev) {
    static const char fn[] = "ka_sort";
    ka_status st = ka__plan_check(plan, KA_PRIM_SORT, fn);
    if (st != KA_OK) return st;
    ka_prims_plan *p = plan;
    uint32_t vals = values.id != 0;
    if (vals && !(p->flags & KA_PRIM_SORT_VALUES))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s: values given, but the plan was made without KA_PRIM_SORT_VALUES", fn);
    uint64_t ko, vo = 0;
    st = check_n(p, n, fn);
    if (st == KA_OK) st = check_at(keys, keys_offset, n, p->esize, fn, "keys", &ko);
    if (st == KA_OK && vals) st = check_at(values, values_offset, n, 4, fn, "values", &vo);
    if (st != KA_OK) return st;
    if (vals && values.id == keys.id) return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s: keys and values are one buffer", fn);
    uint64_t g0 = cdiv(n, p->wg);
    if (g0 > p->max_groups) g0 = p->max_groups;
    uint64_t c = n ? cdiv(cdiv(n, g0), p->wg) * p->wg : p->wg; /* whole tiles per group */
    uint64_t g = cdiv(n, c);
    ka_buffer vb = vals ? values : keys, vs = vals ? p->vscratch : p->kscratch; /* unread when vals is 0 */
    if (n <= 1) {
        ka_arg a[] = {ka_arg_buffer(keys), ka_arg_buffer(p->kscratch), ka_arg_buffer(vb), ka_arg_buffer(vs),
                      ka_arg_buffer(p->counts), ka_arg_u64(0), ka_arg_u64(c), ka_arg_u32(0), ka_arg_u32(vals),
                      ka_arg_u64(ko), ka_arg_u64(0), ka_arg_u64(vo), ka_arg_u64(0)};
        return launch(q, p->k[KP_SCATTER], 0, p->wg, a, 13, ev); /* nothing to move: a complete event */
    }
    int passes = (int)p->esize * 8 / 8; /* 8 bits a pass: 4 or 8, even, so the keys end where they started */
    for (int pass = 0; pass < passes; pass++) {
        /* Even passes read the caller's buffers (at their offsets) into scratch (at 0); odd ones the other way. */
        int odd = pass % 2;
        ka_buffer ks = odd ? p->kscratch : keys, kd = odd ? keys : p->kscratch;
        ka_buffer vsrc = odd ? vs : vb, vdst = odd ? vb : vs;
        uint64_t kso = odd ? 0 : ko, kdo = odd ? ko : 0, vso = odd ? 0 : vo, vdo = odd ? vo : 0;
        uint32_t shift = (uint32_t)pass * 8;
        ka_arg ah[] = {ka_arg_buffer(ks), ka_arg_u64(kso), ka_arg_buffer(p->counts), ka_arg_u64(n), ka_arg_u64(c),
                       ka_arg_u32(shift)};
        ka_arg as[] = {ka_arg_buffer(p->counts), ka_arg_u64(256 * g * (p->contig ? p->wg : 1))}; /* CPU: per work-item */
        ka_arg ao[] = {ka_arg_buffer(ks), ka_arg_buffer(kd), ka_arg_buffer(vsrc), ka_arg_buffer(vdst),
                       ka_arg_buffer(p->counts), ka_arg_u64(n), ka_arg_u64(c), ka_arg_u32(shift), ka_arg_u32(vals),
                       ka_arg_u64(kso), ka_arg_u64(kdo), ka_arg_u64(vso), ka_arg_u64(vdo)};
        if ((st = launch(q, p->k[KP_HIST], g, p->wg, ah, 6, NULL)) != KA_OK) return st;
        if ((st = launch(q, p->k[KP_HIST_SCAN], 1, p->wg, as, 2, NULL)) != KA_OK) return st;
        if ((st = launch(q, p->k[KP_SCATTER], g, p->wg, ao, 13, pass == passes - 1 ? ev : NULL)) != KA_OK) return st;
    }
    return KA_OK;
}
