/* ka_scan: the checks, then the launches (src_scan.h), the caller's event on
 * the last. GPU layout: one launch of the look-back scan, a work-group per
 * tile; nothing is reset from the host between calls (the kernel's last group
 * does it on the device). CPU layout: three barrier-free launches. Nothing
 * here allocates. */
#include "prims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src_scan.h"

static const char *const kernels[] = {"kaprims_scan", "kaprims_scan1", "kaprims_scan2", "kaprims_scan3", NULL};

/* The GPU layout's elements per work-item of a tile, K (the CPU layout keeps
 * the plan's): 32 of 4 bytes (32 loads in flight a work-item, and a quarter as
 * many tiles to look back over as with 8), 8 of 8 bytes (the tile's local
 * memory still lets 8 groups share a multiprocessor). KA_PRIMS_SCAN_K
 * (1..32) overrides, for tuning; KA_PRIMS_ADVERSARY=1 (tests) adds the delays
 * of src_scan.h and tiles of WG elements, so look-backs walk far. Either is
 * lowered where the tile would not fit. */
static ka_status setup(ka_prims_plan *p, const ka_prims_desc *d) {
    (void)d;
    uint32_t k = p->contig ? p->tile / p->wg : p->esize == 4 ? 32 : 8;
    const char *adv = getenv("KA_PRIMS_ADVERSARY");
    int adversary = adv && !strcmp(adv, "1");
    if (adversary && !p->contig) k = 1;
    const char *env = getenv("KA_PRIMS_SCAN_K");
    if (!p->contig && env && atoi(env) > 0 && atoi(env) <= 32) k = (uint32_t)atoi(env);
    /* The tile (padded: TILE_LOCAL), the group totals and the carry sit in
     * static local memory. */
    uint64_t cap = ka__plan_static_local(p);
    while (!p->contig && k > 1 && ((uint64_t)p->wg * k + p->wg * k / 32 + 1 + 2ull * p->wg + 1) * p->esize + 8 > cap)
        k--;
    p->tile = p->wg * k;
    if (ka__cdiv(p->max_n, p->tile) >= 0xffffffffu)
        return ka__fail(KA_ERR_UNSUPPORTED, "scan of %zu elements: more than 2^32 tiles of %u",
                        p->max_n, p->tile);
    if (adversary) {
        size_t n = strlen(p->defs);
        snprintf(p->defs + n, sizeof p->defs - n, "#define PRIMS_ADVERSARY 1\n");
    }
    return KA_OK;
}

static uint64_t status_tiles(const ka_prims_plan *p) {
    uint64_t m = ka__cdiv(p->max_n, p->tile);
    return m + (m & 1);
}

/* GPU layout: b[0] the control words {tickets, groups done, epoch}, b[1] the
 * status of M tiles (M even): packed, 8 bytes a tile, or a flag word and two
 * values; both start zeroed (epoch 0, no flag published). CPU layout: b[2]
 * one partial per work-item. */
static ka_status alloc(ka_prims_plan *p) {
    if (p->contig) return ka__plan_scratch(p, 2, p->max_groups * p->wg * p->esize, "partials");
    uint64_t m = status_tiles(p);
    ka_status st = ka__plan_scratch_init(p, 0, 16, NULL, "the look-back's control words");
    return st != KA_OK ? st : ka__plan_scratch_init(p, 1, (size_t)m * (4 + 2 * 8), NULL, "look-back status");
}

const ka__prim_impl ka__prim_scan = {KA_PRIM_SCAN, "scan", ka__prims_src_scan, kernels, setup, alloc, NULL};

ka_status ka_scan(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer in, size_t in_offset,
                  size_t n, int exclusive, ka_event *ev) {
    KA__ENTRY();
    ka_status st = ka__plan_check(plan, KA_PRIM_SCAN);
    if (st != KA_OK) return st;
    ka_prims_plan *p = plan;
    uint64_t ii, oi;
    st = ka__prims_check_n(p, n);
    if (st == KA_OK) st = ka__prims_check_at(in, in_offset, n, p->esize, "in", &ii);
    if (st == KA_OK) st = ka__prims_check_at(out, out_offset, n, p->esize, "out", &oi);
    if (st != KA_OK) return st;
    /* In place is fine; a shifted overlap would read what the scan already wrote. */
    if (n && in.id == out.id && ii != oi && ii < oi + n && oi < ii + n)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "in and out overlap at different offsets");
    if (p->contig) {
        uint64_t g0 = ka__cdiv(n, p->tile);
        if (g0 > p->max_groups) g0 = p->max_groups;
        uint64_t c = n ? ka__cdiv(ka__cdiv(n, g0), p->tile) * p->tile : p->tile; /* whole tiles per group */
        uint64_t g = ka__cdiv(n, c);
        ka_arg a1[] = {ka_arg_buffer(in), ka_arg_u64(ii), ka_arg_buffer(p->b[2]), ka_arg_u64(n), ka_arg_u64(c)};
        ka_arg a2[] = {ka_arg_buffer(p->b[2]), ka_arg_u64(g * p->wg)};
        ka_arg a3[] = {ka_arg_buffer(in), ka_arg_u64(ii), ka_arg_buffer(out), ka_arg_u64(oi), ka_arg_buffer(p->b[2]),
                       ka_arg_u64(n), ka_arg_u64(c), ka_arg_u32(exclusive ? 1 : 0)};
        if (n == 0) return ka__prims_launch(q, p->k[3], 0, p->wg, a3, 8, ev); /* a zero range: a complete event */
        if ((st = ka__prims_launch(q, p->k[1], g, p->wg, a1, 5, NULL)) != KA_OK) return st;
        if ((st = ka__prims_launch(q, p->k[2], 1, p->wg, a2, 2, NULL)) != KA_OK) return st;
        return ka__prims_launch(q, p->k[3], g, p->wg, a3, 8, ev);
    }
    ka_arg a[] = {ka_arg_buffer(in), ka_arg_u64(ii),        ka_arg_buffer(out), ka_arg_u64(oi),
                  ka_arg_buffer(p->b[0]), ka_arg_buffer(p->b[1]), ka_arg_u64(status_tiles(p)), ka_arg_u64(n),
                  ka_arg_u32(exclusive ? 1 : 0)};
    return ka__prims_launch(q, p->k[0], ka__cdiv(n, p->tile), p->wg, a, 9, ev); /* n = 0: a complete event */
}
