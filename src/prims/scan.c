/* ka_scan: the checks, then three launches (tile sums, their scan, the
 * tiles scanned with their carry), the caller's event on the last. Nothing
 * here allocates. */
#include "prims.h"

#include "src_scan.h"

static const char *const kernels[] = {"kaprims_scan1", "kaprims_scan2", "kaprims_scan3", NULL};

/* One partial per group; on CPUs one per work-item. */
static ka_status alloc(ka_prims_plan *p) {
    return ka__plan_scratch(p, 0, p->max_groups * (p->contig ? p->wg : 1) * p->esize, "partials");
}

const ka__prim_impl ka__prim_scan = {KA_PRIM_SCAN, "scan", ka__prims_src_scan, kernels, NULL, alloc};

ka_status ka_scan(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer in, size_t in_offset,
                  size_t n, int exclusive, ka_event *ev) {
    static const char fn[] = "ka_scan";
    ka_status st = ka__plan_check(plan, KA_PRIM_SCAN, fn);
    if (st != KA_OK) return st;
    ka_prims_plan *p = plan;
    uint64_t ii, oi;
    st = ka__prims_check_n(p, n, fn);
    if (st == KA_OK) st = ka__prims_check_at(in, in_offset, n, p->esize, fn, "in", &ii);
    if (st == KA_OK) st = ka__prims_check_at(out, out_offset, n, p->esize, fn, "out", &oi);
    if (st != KA_OK) return st;
    /* In place is fine; a shifted overlap would read what the scan already wrote. */
    if (n && in.id == out.id && ii != oi && ii < oi + n && oi < ii + n)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s: in and out overlap at different offsets", fn);
    uint64_t g0 = ka__cdiv(n, p->tile);
    if (g0 > p->max_groups) g0 = p->max_groups;
    uint64_t c = n ? ka__cdiv(ka__cdiv(n, g0), p->tile) * p->tile : p->tile; /* a whole number of tiles per group */
    uint64_t g = ka__cdiv(n, c);
    ka_arg a1[] = {ka_arg_buffer(in), ka_arg_u64(ii), ka_arg_buffer(p->b[0]), ka_arg_u64(n), ka_arg_u64(c)};
    ka_arg a2[] = {ka_arg_buffer(p->b[0]), ka_arg_u64(p->contig ? g * p->wg : g)}; /* CPU: a partial per work-item */
    ka_arg a3[] = {ka_arg_buffer(in), ka_arg_u64(ii), ka_arg_buffer(out), ka_arg_u64(oi), ka_arg_buffer(p->b[0]),
                   ka_arg_u64(n), ka_arg_u64(c), ka_arg_u32(exclusive ? 1 : 0)};
    if (n == 0) return ka__prims_launch(q, p->k[2], 0, p->wg, a3, 8, ev); /* a zero range: a complete event */
    if ((st = ka__prims_launch(q, p->k[0], g, p->wg, a1, 5, NULL)) != KA_OK) return st;
    if ((st = ka__prims_launch(q, p->k[1], 1, p->wg, a2, 2, NULL)) != KA_OK) return st;
    return ka__prims_launch(q, p->k[2], g, p->wg, a3, 8, ev);
}

