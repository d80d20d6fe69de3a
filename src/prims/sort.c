/* ka_sort: the checks, then per 8-bit digit three launches (digit counts,
 * their scan, the stable scatter), the caller's event on the last. Nothing
 * here allocates. Scratch: b[0] digit counts, b[1] keys, b[2] values. */
#include "prims.h"

#include "src_sort.h"

static const char *const kernels[] = {"kaprims_hist", "kaprims_hist_scan", "kaprims_scatter", NULL};

static ka_status setup(ka_prims_plan *p, const ka_prims_desc *d) {
    if (d->flags & ~KA_PRIM_SORT_VALUES)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_prims_plan_create: flags 0x%x not valid for sort", d->flags);
    /* A group counts its chunk's digits in 32-bit local counters. */
    if (p->max_n / p->max_groups >= (1ull << 31)) p->max_groups = p->max_n / (1ull << 31) + 1;
    return KA_OK;
}

static ka_status alloc(ka_prims_plan *p) {
    uint64_t parts = p->max_groups * (p->contig ? p->wg : 1); /* CPUs: counts per work-item */
    ka_status st = ka__plan_scratch(p, 0, 256 * parts * 8, "digit counts");
    if (st == KA_OK) st = ka__plan_scratch(p, 1, p->max_n * p->esize, "keys");
    if (st == KA_OK && (p->flags & KA_PRIM_SORT_VALUES)) st = ka__plan_scratch(p, 2, p->max_n * 4, "values");
    return st;
}

const ka__prim_impl ka__prim_sort = {KA_PRIM_SORT, "sort", ka__prims_src_sort, kernels, setup, alloc};

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
    st = ka__prims_check_n(p, n, fn);
    if (st == KA_OK) st = ka__prims_check_at(keys, keys_offset, n, p->esize, fn, "keys", &ko);
    if (st == KA_OK && vals) st = ka__prims_check_at(values, values_offset, n, 4, fn, "values", &vo);
    if (st != KA_OK) return st;
    if (vals && values.id == keys.id) return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s: keys and values are one buffer", fn);
    uint64_t g0 = ka__cdiv(n, p->wg);
    if (g0 > p->max_groups) g0 = p->max_groups;
    uint64_t c = n ? ka__cdiv(ka__cdiv(n, g0), p->wg) * p->wg : p->wg; /* whole tiles per group */
    uint64_t g = ka__cdiv(n, c);
    ka_buffer vb = vals ? values : keys, vs = vals ? p->b[2] : p->b[1]; /* unread when vals is 0 */
    if (n <= 1) {
        ka_arg a[] = {ka_arg_buffer(keys), ka_arg_buffer(p->b[1]), ka_arg_buffer(vb), ka_arg_buffer(vs),
                      ka_arg_buffer(p->b[0]), ka_arg_u64(0), ka_arg_u64(c), ka_arg_u32(0), ka_arg_u32(vals),
                      ka_arg_u64(ko), ka_arg_u64(0), ka_arg_u64(vo), ka_arg_u64(0)};
        return ka__prims_launch(q, p->k[2], 0, p->wg, a, 13, ev); /* nothing to move: a complete event */
    }
    int passes = (int)p->esize * 8 / 8; /* 8 bits a pass: 4 or 8, even, so the keys end where they started */
    for (int pass = 0; pass < passes; pass++) {
        /* Even passes read the caller's buffers (at their offsets) into scratch (at 0); odd ones the other way. */
        int odd = pass % 2;
        ka_buffer ks = odd ? p->b[1] : keys, kd = odd ? keys : p->b[1];
        ka_buffer vsrc = odd ? vs : vb, vdst = odd ? vb : vs;
        uint64_t kso = odd ? 0 : ko, kdo = odd ? ko : 0, vso = odd ? 0 : vo, vdo = odd ? vo : 0;
        uint32_t shift = (uint32_t)pass * 8;
        ka_arg ah[] = {ka_arg_buffer(ks), ka_arg_u64(kso), ka_arg_buffer(p->b[0]), ka_arg_u64(n), ka_arg_u64(c),
                       ka_arg_u32(shift)};
        ka_arg as[] = {ka_arg_buffer(p->b[0]), ka_arg_u64(256 * g * (p->contig ? p->wg : 1))}; /* CPU: per work-item */
        ka_arg ao[] = {ka_arg_buffer(ks), ka_arg_buffer(kd), ka_arg_buffer(vsrc), ka_arg_buffer(vdst),
                       ka_arg_buffer(p->b[0]), ka_arg_u64(n), ka_arg_u64(c), ka_arg_u32(shift), ka_arg_u32(vals),
                       ka_arg_u64(kso), ka_arg_u64(kdo), ka_arg_u64(vso), ka_arg_u64(vdo)};
        if ((st = ka__prims_launch(q, p->k[0], g, p->wg, ah, 6, NULL)) != KA_OK) return st;
        if ((st = ka__prims_launch(q, p->k[1], 1, p->wg, as, 2, NULL)) != KA_OK) return st;
        if ((st = ka__prims_launch(q, p->k[2], g, p->wg, ao, 13, pass == passes - 1 ? ev : NULL)) != KA_OK) return st;
    }
    return KA_OK;
}

ka_status ka_sort_pairs(ka_queue q, ka_prims_plan *plan, ka_buffer keys, size_t keys_offset, ka_buffer values,
                        size_t values_offset, size_t n, ka_event *ev) {
    if (!values.id) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_sort_pairs: values is not a buffer");
    return ka_sort(q, plan, keys, keys_offset, values, values_offset, n, ev);
}

ka_status ka_argsort(ka_queue q, ka_prims_plan *plan, ka_buffer perm, size_t perm_offset, ka_buffer keys,
                     size_t keys_offset, size_t n, ka_event *ev) {
    (void)q, (void)plan, (void)perm, (void)perm_offset, (void)keys, (void)keys_offset, (void)n, (void)ev;
    return ka__fail(KA_ERR_UNSUPPORTED, "ka_argsort: not implemented");
}
