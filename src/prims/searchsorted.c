/* ka_searchsorted: the checks, then one launch of binary searches, the
 * caller's event on it. Nothing here allocates; the plan holds no scratch. */
#include "prims.h"

#include "src_search.h"

static const char *const kernels[] = {"kaprims_search", NULL};

const ka__prim_impl ka__prim_searchsorted = {KA_PRIM_SEARCHSORTED, "searchsorted", ka__prims_src_search, kernels,
                                             NULL, NULL, NULL};

ka_status ka_searchsorted(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer sorted,
                          size_t sorted_offset, size_t n_sorted, ka_buffer needles, size_t needles_offset,
                          size_t n_needles, int upper, ka_event *ev) {
    KA__ENTRY();
    ka_status st = ka__plan_check(plan, KA_PRIM_SEARCHSORTED);
    if (st != KA_OK) return st;
    ka_prims_plan *p = plan;
    uint64_t oi, si = 0, ni;
    st = ka__prims_check_n(p, n_needles);
    if (st == KA_OK) st = ka__prims_check_at(out, out_offset, n_needles, 8, "out", &oi);
    if (st == KA_OK) st = ka__prims_check_at(needles, needles_offset, n_needles, p->esize, "needles", &ni);
    if (st == KA_OK && n_sorted) st = ka__prims_check_at(sorted, sorted_offset, n_sorted, p->esize, "sorted", &si);
    if (st != KA_OK) return st;
    if (!n_sorted) sorted = needles; /* not read: any valid buffer */
    if (ka__prims_overlap(out, out_offset, n_needles * 8, needles, needles_offset, n_needles * p->esize) ||
        (n_sorted && ka__prims_overlap(out, out_offset, n_needles * 8, sorted, sorted_offset, n_sorted * p->esize)))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "out overlaps sorted or needles");
    uint64_t g = ka__cdiv(n_needles, p->wg);
    if (g > p->max_groups) g = p->max_groups;
    ka_arg a[] = {ka_arg_buffer(out), ka_arg_u64(oi),           ka_arg_buffer(sorted),
                  ka_arg_u64(si),     ka_arg_u64(n_sorted),     ka_arg_buffer(needles),
                  ka_arg_u64(ni),     ka_arg_u64(n_needles),    ka_arg_u32(upper ? 1u : 0u)};
    return ka__prims_launch(q, p->k[0], g, p->wg, a, 9, ev); /* n_needles = 0: an empty range, a complete event */
}
