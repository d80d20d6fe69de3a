/* ka_select: the checks, then the launches of the plan's layout, the
 * caller's event on the last. GPUs: the tile states' reset, then one pass
 * with decoupled look-back. CPUs: per-work-item counts, their scan, the
 * copy. Nothing here allocates. Scratch: b[0] the tile counter and states
 * (GPUs) or the per-work-item counts (CPUs). */
#include "prims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src_select.h"

static const char *const kernels[] = {"kaprims_sel_prep", "kaprims_sel_scan", "kaprims_sel_move", NULL};
/* GPUs: the tile states' reset, then the one pass (no separate scan). */
static const char *const gpu_kernels[] = {"kaprims_sel_prep", "kaprims_sel_move", NULL};

static ka_status setup(ka_prims_plan *p, const ka_prims_desc *d) {
    (void)d;
    if (p->contig) return KA_OK;
    /* The look-back's states are 64-bit words read and written atomically. */
    if (!p->di->has_atomic64)
        return ka__fail(KA_ERR_UNSUPPORTED, "select needs 64-bit atomics, which %s lacks",
                        p->di->name);
    /* Larger tiles than a scan's, as CUB's select takes: the look-back and
     * the barriers are paid once a tile. KA_PRIMS_SELECT_K (1 to 32: a
     * work-item's kept elements are a 32-bit mask) sets the elements per
     * work-item, for tuning, lowered where the tile would not fit.
     * KA_PRIMS_ADVERSARY=1 (tests) adds the delays of src_common.h's
     * LB_DELAY and, unless K is set, tiles of WG elements, so look-backs
     * walk far. */
    const char *e = getenv("KA_PRIMS_SELECT_K"), *adv = getenv("KA_PRIMS_ADVERSARY");
    int adversary = adv && !strcmp(adv, "1");
    uint32_t k = adversary ? 1 : p->esize == 4 ? 24 : 12;
    if (e && atoi(e) >= 1 && atoi(e) <= 32) k = (uint32_t)atoi(e);
    /* The tile's kept elements sit in static local memory (cmp), beside the
     * group scan's and the look-back's words. */
    uint64_t cap = ka__plan_static_local(p);
    uint64_t fixed = 2ull * p->wg * 4 + 32 * 8 + 8;
    while (k > 1 && (uint64_t)p->wg * k * p->esize + fixed > cap) k--;
    p->tile = p->wg * k;
    if (adversary) {
        size_t n = strlen(p->defs);
        snprintf(p->defs + n, sizeof p->defs - n, "#define PRIMS_ADVERSARY 1\n");
    }
    return KA_OK;
}

static ka_status alloc(ka_prims_plan *p) {
    uint64_t words = p->contig ? p->max_groups * p->wg : 1 + ka__cdiv(p->max_n, p->tile);
    return ka__plan_scratch(p, 0, words * 8, p->contig ? "counts" : "tile states");
}

const ka__prim_impl ka__prim_select = {KA_PRIM_SELECT, "select", ka__prims_src_select, kernels, setup, alloc, gpu_kernels};

ka_status ka_select(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer count,
                    size_t count_offset, ka_buffer in, size_t in_offset, ka_buffer flags, size_t flags_offset, size_t n,
                    ka_event *ev) {
    KA__ENTRY();
    ka_status st = ka__plan_check(plan, KA_PRIM_SELECT);
    if (st != KA_OK) return st;
    ka_prims_plan *p = plan;
    if (p->predicate && flags.id)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "flags given, but the plan selects by its predicate (pass {0})");
    if (!p->predicate && !flags.id)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "flags missing (the plan was made without a predicate)");
    uint64_t ii, oi, ci, fi = 0;
    st = ka__prims_check_n(p, n);
    if (st == KA_OK) st = ka__prims_check_at(in, in_offset, n, p->esize, "in", &ii);
    if (st == KA_OK) st = ka__prims_check_at(out, out_offset, n, p->esize, "out", &oi);
    if (st == KA_OK) st = ka__prims_check_at(count, count_offset, 1, 8, "count", &ci);
    if (st == KA_OK && flags.id) st = ka__prims_check_at(flags, flags_offset, n, 1, "flags", &fi);
    if (st != KA_OK) return st;
    size_t ob = n * p->esize, ib = n * p->esize, fb = flags.id ? n : 0;
    if (ka__prims_overlap(out, out_offset, ob, in, in_offset, ib) ||
        ka__prims_overlap(out, out_offset, ob, flags, flags_offset, fb))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "out overlaps in or flags");
    if (ka__prims_overlap(count, count_offset, 8, in, in_offset, ib) ||
        ka__prims_overlap(count, count_offset, 8, out, out_offset, ob) ||
        ka__prims_overlap(count, count_offset, 8, flags, flags_offset, fb))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "count overlaps in, out or flags");
    ka_buffer fl = flags.id ? flags : in; /* a predicate plan's kernels never read it */
    if (!p->contig) {
        uint64_t tiles = n ? ka__cdiv(n, p->tile) : 1; /* n = 0: one empty tile writes the count */
        ka_arg a0[] = {ka_arg_buffer(p->b[0]), ka_arg_u64(tiles)};
        ka_arg a2[] = {ka_arg_buffer(in), ka_arg_u64(ii), ka_arg_buffer(fl), ka_arg_u64(fi), ka_arg_buffer(out),
                       ka_arg_u64(oi), ka_arg_buffer(count), ka_arg_u64(ci), ka_arg_buffer(p->b[0]), ka_arg_u64(n),
                       ka_arg_u64(tiles)};
        if ((st = ka__prims_launch(q, p->k[0], ka__cdiv(tiles + 1, p->wg), p->wg, a0, 2, NULL)) != KA_OK) return st;
        return ka__prims_launch(q, p->k[1], tiles, p->wg, a2, 11, ev);
    }
    uint64_t g0 = ka__cdiv(n, p->tile);
    if (g0 > p->max_groups) g0 = p->max_groups;
    if (g0 == 0) g0 = 1;
    uint64_t c = n ? ka__cdiv(ka__cdiv(n, g0), p->tile) * p->tile : p->tile;
    uint64_t g = n ? ka__cdiv(n, c) : 1; /* n = 0: one group, whose last work-item writes the count */
    ka_arg a0[] = {ka_arg_buffer(in), ka_arg_u64(ii), ka_arg_buffer(fl), ka_arg_u64(fi), ka_arg_buffer(p->b[0]),
                   ka_arg_u64(n), ka_arg_u64(c)};
    ka_arg a1[] = {ka_arg_buffer(p->b[0]), ka_arg_u64(g * p->wg)};
    ka_arg a2[] = {ka_arg_buffer(in), ka_arg_u64(ii), ka_arg_buffer(fl), ka_arg_u64(fi), ka_arg_buffer(out),
                   ka_arg_u64(oi), ka_arg_buffer(count), ka_arg_u64(ci), ka_arg_buffer(p->b[0]), ka_arg_u64(n),
                   ka_arg_u64(c)};
    if ((st = ka__prims_launch(q, p->k[0], g, p->wg, a0, 7, NULL)) != KA_OK) return st;
    if ((st = ka__prims_launch(q, p->k[1], 1, p->wg, a1, 2, NULL)) != KA_OK) return st;
    return ka__prims_launch(q, p->k[2], g, p->wg, a2, 11, ev);
}
