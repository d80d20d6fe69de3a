/* The checks every primitive's call makes, and its launches. */
#include "prims.h"

const char *ka__prim_name(ka_prim_kind k) {
    static const char *const names[] = {"?", "reduce", "scan", "sort", "select", "histogram", "searchsorted",
                                        "segmented reduce"};
    return k >= KA_PRIM_REDUCE && k <= KA_PRIM_SEGMENTED_REDUCE ? names[k] : "?";
}

ka_status ka__plan_check(const ka_prims_plan *p, ka_prim_kind kind) {
    if (!p || p->magic != KA__PLAN_MAGIC) return ka__fail(KA_ERR_INVALID_HANDLE, "plan is NULL or not a live plan");
    if (p->kind != kind)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "the plan was made for %s, not %s", ka__prim_name(p->kind),
                        ka__prim_name(kind));
    return KA_OK;
}

ka_status ka__prims_check_op(const ka_prims_plan *p, ka_reduce_op op) {
    if (op != KA_REDUCE_SUM && op != KA_REDUCE_MIN && op != KA_REDUCE_MAX && op != KA_REDUCE_USER)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "unknown op %d", (int)op);
    if (op == KA_REDUCE_USER && !p->user_op)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "KA_REDUCE_USER on a plan made without an operator (desc.op)");
    return KA_OK;
}

ka_status ka__prims_check_n(const ka_prims_plan *p, size_t n) {
    if (n > p->max_n)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "n = %zu is larger than the plan's max_n %zu", n, p->max_n);
    return KA_OK;
}

ka_status ka__prims_check_at(ka_buffer b, size_t off, size_t n, size_t es, const char *what,
                             uint64_t *el) {
    if (off % es)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s offset %zu is not a multiple of the element size %zu", what,
                        off, es);
    size_t bytes;
    if (ka_buffer_size(b, &bytes) != KA_OK) return ka__fail(KA_ERR_INVALID_HANDLE, "%s: invalid or released buffer", what);
    if (off > bytes || (bytes - off) / es < n)
        return ka__fail(KA_ERR_INVALID_ARGUMENT,
                        "%s holds %zu bytes; %zu elements of %zu bytes at offset %zu need %zu", what, bytes, n, es,
                        off, off + n * es);
    *el = off / es;
    return KA_OK;
}

ka_status ka__prims_launch(ka_queue q, ka_kernel k, uint64_t groups, uint32_t wg, const ka_arg *a, uint32_t na,
                           ka_event *ev) {
    /* A primitive's work-items loop over runs of elements on CPUs: spread
     * them over the device's threads even when they are few. */
    ka_range r = {.dims = 1, .size = {groups * wg}, .workgroup = {wg}, .flags = groups > 1 ? KA_LAUNCH_SPREAD : 0};
    return ka_launch(q, k, &r, a, na, ev);
}
