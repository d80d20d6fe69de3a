/* ka_reduce, ka_scan, ka_sort: the checks, then the plan's kernels enqueued
 * in order on the queue, the caller's event on the last one. Nothing here
 * allocates (ka_launch does not, and the plan holds every kernel and buffer). */
#include "prims.h"

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* b holds at least n elements of size es. */
static ka_status check_buf(ka_buffer b, size_t n, size_t es, const char *fn, const char *what) {
    size_t bytes;
    if (ka_buffer_size(b, &bytes) != KA_OK) return ka__fail(KA_ERR_INVALID_HANDLE, "%s: %s: invalid or released buffer", fn, what);
    if (bytes / es < n)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s: %s holds %zu bytes, %zu elements of %zu bytes need %zu", fn, what,
                        bytes, n, es, n * es);
    return KA_OK;
}

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

ka_status ka_reduce(ka_queue q, ka_prims_plan *plan, ka_buffer in, size_t n, ka_reduce_op op, ka_buffer out,
                    size_t out_offset, ka_event *ev) {
    static const char fn[] = "ka_reduce";
    ka_status st = ka__plan_check(plan, KA_PRIM_REDUCE, fn);
    if (st != KA_OK) return st;
    ka_prims_plan *p = plan;
    if (op != KA_REDUCE_SUM && op != KA_REDUCE_MIN && op != KA_REDUCE_MAX)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s: unknown op %d", fn, (int)op);
    st = check_n(p, n, fn);
    if (st == KA_OK && n) st = check_buf(in, n, p->esize, fn, "in");
    if (st != KA_OK) return st;
    if (out_offset % p->esize)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s: out_offset %zu is not a multiple of the element size %zu", fn,
                        out_offset, p->esize);
    if ((st = check_buf(out, out_offset / p->esize + 1, p->esize, fn, "out")) != KA_OK) return st;
    uint64_t g = cdiv(n, (uint64_t)p->wg * 4);
    if (g > p->max_groups) g = p->max_groups;
    if (g == 0) g = 1;
    ka_arg a1[] = {ka_arg_buffer(in), ka_arg_buffer(p->part), ka_arg_u64(n), ka_arg_u32((uint32_t)op)};
    if ((st = launch(q, p->k[KP_RED1], g, p->wg, a1, 4, NULL)) != KA_OK) return st;
    ka_arg a2[] = {ka_arg_buffer(p->part), ka_arg_u64(g), ka_arg_buffer(out), ka_arg_u64(out_offset / p->esize),
                   ka_arg_u32((uint32_t)op)};
    return launch(q, p->k[KP_RED2], 1, p->wg, a2, 5, ev);
}

ka_status ka_scan(ka_queue q, ka_prims_plan *plan, ka_buffer in, ka_buffer out, size_t n, int exclusive, ka_event *ev) {
    static const char fn[] = "ka_scan";
    ka_status st = ka__plan_check(plan, KA_PRIM_SCAN, fn);
    if (st != KA_OK) return st;
    ka_prims_plan *p = plan;
    st = check_n(p, n, fn);
    if (st == KA_OK) st = check_buf(in, n, p->esize, fn, "in");
    if (st == KA_OK) st = check_buf(out, n, p->esize, fn, "out");
    if (st != KA_OK) return st;
    uint64_t g0 = cdiv(n, p->tile);
    if (g0 > p->max_groups) g0 = p->max_groups;
    uint64_t c = n ? cdiv(cdiv(n, g0), p->tile) * p->tile : p->tile; /* a whole number of tiles per group */
    uint64_t g = cdiv(n, c);
    ka_arg a1[] = {ka_arg_buffer(in), ka_arg_buffer(p->part), ka_arg_u64(n), ka_arg_u64(c)};
    ka_arg a2[] = {ka_arg_buffer(p->part), ka_arg_u64(p->contig ? g * p->wg : g)}; /* CPU: a partial per work-item */
    ka_arg a3[] = {ka_arg_buffer(in), ka_arg_buffer(out), ka_arg_buffer(p->part), ka_arg_u64(n), ka_arg_u64(c),
                   ka_arg_u32(exclusive ? 1 : 0)};
    if (n == 0) return launch(q, p->k[KP_SCAN3], 0, p->wg, a3, 6, ev); /* a zero range: a complete event */
    if ((st = launch(q, p->k[KP_SCAN1], g, p->wg, a1, 4, NULL)) != KA_OK) return st;
    if ((st = launch(q, p->k[KP_SCAN2], 1, p->wg, a2, 2, NULL)) != KA_OK) return st;
    return launch(q, p->k[KP_SCAN3], g, p->wg, a3, 6, ev);
}

ka_status ka_sort(ka_queue q, ka_prims_plan *plan, ka_buffer keys, ka_buffer values, size_t n, ka_event *ev) {
    static const char fn[] = "ka_sort";
    ka_status st = ka__plan_check(plan, KA_PRIM_SORT, fn);
    if (st != KA_OK) return st;
    ka_prims_plan *p = plan;
    uint32_t vals = values.id != 0;
    if (vals && !(p->flags & KA_PRIM_SORT_VALUES))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s: values given, but the plan was made without KA_PRIM_SORT_VALUES", fn);
    st = check_n(p, n, fn);
    if (st == KA_OK) st = check_buf(keys, n, p->esize, fn, "keys");
    if (st == KA_OK && vals) st = check_buf(values, n, 4, fn, "values");
    if (st != KA_OK) return st;
    if (vals && values.id == keys.id) return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s: keys and values are one buffer", fn);
    uint64_t g0 = cdiv(n, p->wg);
    if (g0 > p->max_groups) g0 = p->max_groups;
    uint64_t c = n ? cdiv(cdiv(n, g0), p->wg) * p->wg : p->wg; /* whole tiles per group */
    uint64_t g = cdiv(n, c);
    ka_buffer vb = vals ? values : keys, vs = vals ? p->vscratch : p->kscratch; /* unread when vals is 0 */
    if (n <= 1) {
        ka_arg a[] = {ka_arg_buffer(keys), ka_arg_buffer(p->kscratch), ka_arg_buffer(vb), ka_arg_buffer(vs),
                      ka_arg_buffer(p->counts), ka_arg_u64(0), ka_arg_u64(c), ka_arg_u32(0), ka_arg_u32(vals)};
        return launch(q, p->k[KP_SCATTER], 0, p->wg, a, 9, ev); /* nothing to move: a complete event */
    }
    int passes = (int)p->esize * 8 / 8; /* 8 bits a pass: 4 or 8, even, so the keys end where they started */
    for (int pass = 0; pass < passes; pass++) {
        ka_buffer ks = pass % 2 ? p->kscratch : keys, kd = pass % 2 ? keys : p->kscratch;
        ka_buffer vsrc = pass % 2 ? vs : vb, vdst = pass % 2 ? vb : vs;
        uint32_t shift = (uint32_t)pass * 8;
        ka_arg ah[] = {ka_arg_buffer(ks), ka_arg_buffer(p->counts), ka_arg_u64(n), ka_arg_u64(c), ka_arg_u32(shift)};
        ka_arg as[] = {ka_arg_buffer(p->counts), ka_arg_u64(256 * g * (p->contig ? p->wg : 1))}; /* CPU: per work-item */
        ka_arg ao[] = {ka_arg_buffer(ks), ka_arg_buffer(kd), ka_arg_buffer(vsrc), ka_arg_buffer(vdst),
                       ka_arg_buffer(p->counts), ka_arg_u64(n), ka_arg_u64(c), ka_arg_u32(shift), ka_arg_u32(vals)};
        if ((st = launch(q, p->k[KP_HIST], g, p->wg, ah, 5, NULL)) != KA_OK) return st;
        if ((st = launch(q, p->k[KP_HIST_SCAN], 1, p->wg, as, 2, NULL)) != KA_OK) return st;
        if ((st = launch(q, p->k[KP_SCATTER], g, p->wg, ao, 9, pass == passes - 1 ? ev : NULL)) != KA_OK) return st;
    }
    return KA_OK;
}
