/* ka_reduce: the checks, then two launches (partials, their fold), the
 * caller's event on the last. Nothing here allocates. */
#include "prims.h"

#include "src_reduce.h"

static const char *const kernels[] = {"kaprims_red1", "kaprims_red2", NULL};

static ka_status alloc(ka_prims_plan *p) { return ka__plan_scratch(p, 0, p->max_groups * p->esize, "partials"); }

const ka__prim_impl ka__prim_reduce = {KA_PRIM_REDUCE, "reduce", ka__prims_src_reduce, kernels, NULL, alloc, NULL};

ka_status ka_reduce(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer in, size_t in_offset,
                    size_t n, ka_reduce_op op, ka_event *ev) {
    KA__ENTRY();
    ka_status st = ka__plan_check(plan, KA_PRIM_REDUCE);
    if (st != KA_OK) return st;
    ka_prims_plan *p = plan;
    if ((st = ka__prims_check_op(p, op)) != KA_OK) return st;
    uint64_t oi, ii = 0;
    st = ka__prims_check_n(p, n);
    if (st == KA_OK && n) st = ka__prims_check_at(in, in_offset, n, p->esize, "in", &ii);
    if (st == KA_OK) st = ka__prims_check_at(out, out_offset, 1, p->esize, "out", &oi);
    if (st != KA_OK) return st;
    uint64_t g = ka__cdiv(n, (uint64_t)p->wg * 4);
    if (g > p->max_groups) g = p->max_groups;
    if (g == 0) g = 1;
    ka_arg a1[] = {ka_arg_buffer(in), ka_arg_u64(ii), ka_arg_buffer(p->b[0]), ka_arg_u64(n), ka_arg_u32((uint32_t)op)};
    if ((st = ka__prims_launch(q, p->k[0], g, p->wg, a1, 5, NULL)) != KA_OK) return st;
    ka_arg a2[] = {ka_arg_buffer(p->b[0]), ka_arg_u64(g), ka_arg_buffer(out), ka_arg_u64(oi), ka_arg_u32((uint32_t)op)};
    return ka__prims_launch(q, p->k[1], 1, p->wg, a2, 5, ev);
}

