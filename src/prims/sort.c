/* ka_sort, ka_sort_pairs, ka_argsort: the checks, then the passes of 8 bits
 * (src_sort.h). CPUs: per pass three launches (digit counts, their scan, the
 * stable scatter). GPUs (onesweep): a fill of the counters, the upsweep, the
 * scan of its counts, then one launch a pass. The caller's event is on the
 * last launch. Nothing here allocates.
 * Scratch: b[0] digit counts (CPUs: per work-item; GPUs: per pass, then the
 * passes' tile counters), b[1] keys, b[2] values or indices, b[3] the
 * look-back status (GPUs: 256 words a tile), b[4] argsort's second keys (the
 * caller's keys are only read). */
#include "prims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src_sort.h"

static const char *const kernels[] = {"kaprims_hist",     "kaprims_hist_scan", "kaprims_scatter",
                                      "kaprims_upsweep", "kaprims_upscan",    "kaprims_onesweep", NULL};
enum { K_HIST, K_HIST_SCAN, K_SCATTER, K_UPSWEEP, K_UPSCAN, K_ONESWEEP };
#define SORT_CNT_WORDS (8 * 256 + 8) /* counts of up to 8 passes, then 8 tile counters (SORT_CTR): cleared a call */
#define SORT_EPOCH SORT_CNT_WORDS     /* then the last look-back stamp used and the call's first (src_sort.h) */
#define ARG_FLAGS (KA_PRIM_SORT_VALUES | KA_PRIM_SORT_VALUES8 | KA_PRIM_ARGSORT | KA_PRIM_ARGSORT64)

static uint32_t vwidth(uint32_t f) { return f & KA_PRIM_SORT_VALUES ? 4 : f & KA_PRIM_SORT_VALUES8 ? 8 : 0; }
static uint32_t iwidth(uint32_t f) { return f & KA_PRIM_ARGSORT ? 4 : f & KA_PRIM_ARGSORT64 ? 8 : 0; }
/* The onesweep tile (GPUs): WG x items keys, the items by the width of the
 * local exchange; p->tile holds it. */
static uint32_t xwidth(const ka_prims_plan *p) {
    uint32_t v = vwidth(p->flags), i = iwidth(p->flags);
    return p->esize == 8 || v == 8 || i == 8 ? 8 : 4;
}
static uint64_t otile(const ka_prims_plan *p) { return p->tile; }

static ka_status setup(ka_prims_plan *p, const ka_prims_desc *d) {
    if (d->flags & ~ARG_FLAGS) return ka__fail(KA_ERR_INVALID_ARGUMENT, "flags 0x%x not valid for sort", d->flags);
    if ((d->flags & KA_PRIM_SORT_VALUES) && (d->flags & KA_PRIM_SORT_VALUES8))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "KA_PRIM_SORT_VALUES and KA_PRIM_SORT_VALUES8 exclude each other");
    if ((d->flags & KA_PRIM_ARGSORT) && (d->flags & KA_PRIM_ARGSORT64))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "KA_PRIM_ARGSORT and KA_PRIM_ARGSORT64 exclude each other");
    if ((d->flags & KA_PRIM_ARGSORT) && d->max_n > UINT32_MAX)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "max_n %zu past u32 indices: use KA_PRIM_ARGSORT64", d->max_n);
    if (!p->contig && !p->di->has_atomic64)
        return ka__fail(KA_ERR_UNSUPPORTED, "sort on %s needs 64-bit atomics (its look-back status)", p->di->name);
    if (!p->contig && (uint64_t)d->max_n >= (1ull << 40)) /* the status words' counts */
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "max_n %zu: sort takes fewer than 2^40 keys", d->max_n);
    /* CPUs: one group of 8 work-items a core. Each work-item scatters its run
     * into 256 streams; fewer, longer runs write faster (as OpenMP's sort with
     * one run a thread). */
    if (p->contig) {
        uint32_t k = p->tile / p->wg;
        if (p->wg > 8) p->wg = 8, p->tile = 8 * k;
        if (!getenv("KA_PRIMS_GROUPS")) p->max_groups = p->di->compute_units ? p->di->compute_units : 1;
    }
    /* A group counts its chunk's digits in 32-bit local counters. */
    if (p->max_n / p->max_groups >= (1ull << 31)) p->max_groups = p->max_n / (1ull << 31) + 1;
    /* tests: "emu" ranks as CUDA does, with warps emulated in local memory;
     * KA_PRIMS_ADVERSARY=1 adds the onesweep pass's delays (src_common.h's
     * LB_DELAY), stamps that wrap every few calls and, unless the items are
     * set, one key a work-item, so look-backs walk far; tuning: the items of
     * a work-item (1 to 24), CUDA's groups a multiprocessor the registers are
     * bounded for (0: no bound) */
    const char *emu = getenv("KA_PRIMS_SORT_BALLOT"), *it = getenv("KA_PRIMS_SORT_ITEMS"),
               *mb = getenv("KA_PRIMS_SORT_MINB"), *adv = getenv("KA_PRIMS_ADVERSARY");
    int adversary = !p->contig && adv && !strcmp(adv, "1");
    unsigned items = adversary ? 1 : xwidth(p) == 4 ? 15 : 12, minb = 3;
    if (it && atoi(it) >= 1 && atoi(it) <= 24) items = (unsigned)atoi(it);
    if (mb && atoi(mb) >= 0 && atoi(mb) <= 16) minb = (unsigned)atoi(mb);
    if (!p->contig) p->tile = p->wg * items;
    snprintf(p->defs, sizeof p->defs, "#define SORT_XW %u\n#define SORT_ITEMS %u\n#define SORT_MINB %u\n%s%s", xwidth(p),
             items, minb, emu && !strcmp(emu, "emu") ? "#define SORT_EMU_BALLOT 1\n" : "",
             adversary ? "#define PRIMS_ADVERSARY 1\n" : "");
    return KA_OK;
}

static ka_status alloc(ka_prims_plan *p) {
    uint32_t vw = vwidth(p->flags), iw = iwidth(p->flags), w = vw > iw ? vw : iw;
    ka_status st;
    if (p->contig) {
        uint64_t parts = p->max_groups * p->wg; /* counts per work-item */
        st = ka__plan_scratch(p, 0, 256 * parts * 8, "digit counts");
    } else {
        /* the stamps from 1 (tests: KA_PRIMS_SORT_STAMP, the last one used, to cross the wrap) */
        uint64_t c0[SORT_CNT_WORDS + 2] = {0};
        const char *seq = getenv("KA_PRIMS_SORT_STAMP");
        c0[SORT_EPOCH] = seq ? strtoull(seq, NULL, 10) % ((1u << 22) - 1) : 0;
        st = ka__plan_scratch_init(p, 0, sizeof c0, c0, "digit counts");
        /* The status words start cleared (stamp 0 is never used). */
        size_t sb = ka__cdiv(p->max_n, otile(p)) * 256 * 8;
        if (st == KA_OK) st = ka__plan_scratch_init(p, 3, sb, NULL, "look-back status");
    }
    if (st == KA_OK) st = ka__plan_scratch(p, 1, p->max_n * p->esize, "keys");
    if (st == KA_OK && w) st = ka__plan_scratch(p, 2, p->max_n * w, "values");
    if (st == KA_OK && iw) st = ka__plan_scratch(p, 4, p->max_n * p->esize, "argsort keys");
    return st;
}

const ka__prim_impl ka__prim_sort = {KA_PRIM_SORT, "sort", ka__prims_src_sort, kernels, setup, alloc, NULL};

/* One pass's buffers: keys from ks to kd, values (or indices) from vs to vd,
 * offsets in elements. */
typedef struct pass_io {
    ka_buffer ks, kd, vs, vd;
    uint64_t kso, kdo, vso, vdo;
    uint32_t gen, wk;
} pass_io;

/* Sort: even passes read the caller's buffers (at their offsets) into scratch
 * (at 0), odd ones the other way; passes are even in number, so the result
 * ends in the caller's. Argsort: keys from the caller's into b[1], then
 * between b[1] and b[4], not written by the last pass; indices made by the
 * first pass into b[2], then between perm and b[2], into perm last. */
static pass_io pass_buffers(const ka_prims_plan *p, int pass, int passes, ka_buffer keys, uint64_t ko, ka_buffer vals,
                            uint64_t vo, int argsort) {
    int odd = pass % 2;
    pass_io io = {.wk = 1};
    if (!argsort) {
        io.ks = odd ? p->b[1] : keys, io.kd = odd ? keys : p->b[1];
        io.kso = odd ? 0 : ko, io.kdo = odd ? ko : 0;
    } else {
        io.ks = pass == 0 ? keys : odd ? p->b[1] : p->b[4], io.kso = pass == 0 ? ko : 0;
        io.kd = odd ? p->b[4] : p->b[1], io.kdo = 0;
        io.gen = pass == 0, io.wk = pass != passes - 1;
    }
    io.vs = odd ? p->b[2] : vals, io.vd = odd ? vals : p->b[2];
    io.vso = odd ? 0 : vo, io.vdo = odd ? vo : 0;
    if (!vals.id) io.vs = io.vd = io.kd; /* unread: any buffer of the call */
    return io;
}

/* keys (at element ko) sorted with values of vw bytes (0: none; argsort:
 * perm, the indices made on the fly, and the keys left alone). */
static ka_status run(ka_queue q, ka_prims_plan *p, ka_buffer keys, uint64_t ko, ka_buffer vals, uint64_t vo,
                     uint32_t vw, int argsort, size_t n, ka_event *ev) {
    ka_status st;
    int passes = (int)p->esize; /* 8 bits a pass: 4 or 8, even */
    if (n == 0 || (n == 1 && !argsort)) {
        ka_arg a[] = {ka_arg_buffer(p->b[0])};
        return ka__prims_launch(q, p->k[K_UPSCAN], 0, p->wg, a, 1, ev); /* nothing to move: a complete event */
    }
    uint32_t vwa = vals.id ? vw : 0;
    if (p->contig) {
        uint64_t g0 = ka__cdiv(n, p->wg);
        if (g0 > p->max_groups) g0 = p->max_groups;
        uint64_t c = ka__cdiv(ka__cdiv(n, g0), p->wg) * p->wg; /* whole tiles per group */
        uint64_t g = ka__cdiv(n, c);
        for (int pass = 0; pass < passes; pass++) {
            pass_io io = pass_buffers(p, pass, passes, keys, ko, vals, vo, argsort);
            uint32_t shift = (uint32_t)pass * 8;
            ka_arg ah[] = {ka_arg_buffer(io.ks), ka_arg_u64(io.kso), ka_arg_buffer(p->b[0]), ka_arg_u64(n), ka_arg_u64(c),
                           ka_arg_u32(shift)};
            ka_arg as[] = {ka_arg_buffer(p->b[0]), ka_arg_u64(256 * g * p->wg)};
            ka_arg ao[] = {ka_arg_buffer(io.ks), ka_arg_u64(io.kso), ka_arg_buffer(io.kd), ka_arg_u64(io.kdo),
                           ka_arg_buffer(io.vs), ka_arg_buffer(io.vd), ka_arg_buffer(io.vs), ka_arg_buffer(io.vd),
                           ka_arg_u64(io.vso), ka_arg_u64(io.vdo), ka_arg_buffer(p->b[0]), ka_arg_u64(n), ka_arg_u64(c),
                           ka_arg_u32(shift), ka_arg_u32(vwa), ka_arg_u32(io.gen), ka_arg_u32(io.wk)};
            if ((st = ka__prims_launch(q, p->k[K_HIST], g, p->wg, ah, 6, NULL)) != KA_OK) return st;
            if ((st = ka__prims_launch(q, p->k[K_HIST_SCAN], 1, p->wg, as, 2, NULL)) != KA_OK) return st;
            if ((st = ka__prims_launch(q, p->k[K_SCATTER], g, p->wg, ao, 17, pass == passes - 1 ? ev : NULL)) != KA_OK)
                return st;
        }
        return KA_OK;
    }
    /* GPUs. The upsweep's groups: at most max_groups, each whole tiles of wg. */
    uint64_t g0 = ka__cdiv(n, p->wg);
    if (g0 > p->max_groups) g0 = p->max_groups;
    uint64_t c = ka__cdiv(ka__cdiv(n, g0), p->wg) * p->wg, g = ka__cdiv(n, c);
    uint64_t tiles = ka__cdiv(n, otile(p)), zero = 0, nst = ka__cdiv(p->max_n, otile(p)) * 256;
    if ((st = ka_buffer_fill(q, p->b[0], 0, &zero, 8, SORT_CNT_WORDS * 8, NULL)) != KA_OK) return st;
    ka_arg au[] = {ka_arg_buffer(keys), ka_arg_u64(ko), ka_arg_buffer(p->b[0]), ka_arg_u64(n), ka_arg_u64(c),
                   ka_arg_buffer(p->b[3]), ka_arg_u64(nst)};
    ka_arg as[] = {ka_arg_buffer(p->b[0])};
    if ((st = ka__prims_launch(q, p->k[K_UPSWEEP], g, p->wg, au, 7, NULL)) != KA_OK) return st;
    if ((st = ka__prims_launch(q, p->k[K_UPSCAN], (uint64_t)passes, p->wg, as, 1, NULL)) != KA_OK) return st;
    for (int pass = 0; pass < passes; pass++) {
        pass_io io = pass_buffers(p, pass, passes, keys, ko, vals, vo, argsort);
        ka_arg ao[] = {ka_arg_buffer(io.ks), ka_arg_u64(io.kso), ka_arg_buffer(io.kd), ka_arg_u64(io.kdo),
                       ka_arg_buffer(io.vs), ka_arg_buffer(io.vd), ka_arg_buffer(io.vs), ka_arg_buffer(io.vd),
                       ka_arg_u64(io.vso), ka_arg_u64(io.vdo), ka_arg_buffer(p->b[0]), ka_arg_buffer(p->b[3]),
                       ka_arg_u64(n), ka_arg_u32((uint32_t)pass), ka_arg_u32(vwa), ka_arg_u32(io.gen), ka_arg_u32(io.wk)};
        if ((st = ka__prims_launch(q, p->k[K_ONESWEEP], tiles, p->wg, ao, 17, pass == passes - 1 ? ev : NULL)) != KA_OK)
            return st;
    }
    return KA_OK;
}

/* ka_sort's body, ka_sort_pairs' too (one public call inside another would
 * leave the inner one's name current). */
static ka_status sort_(ka_queue q, ka_prims_plan *plan, ka_buffer keys, size_t keys_offset, ka_buffer values,
                       size_t values_offset, size_t n, ka_event *ev) {
    ka_status st = ka__plan_check(plan, KA_PRIM_SORT);
    if (st != KA_OK) return st;
    ka_prims_plan *p = plan;
    uint32_t vw = vwidth(p->flags);
    if (values.id && !vw)
        return ka__fail(KA_ERR_INVALID_ARGUMENT,
                        "values given, but the plan was made without KA_PRIM_SORT_VALUES or KA_PRIM_SORT_VALUES8");
    uint64_t ko, vo = 0;
    st = ka__prims_check_n(p, n);
    if (st == KA_OK) st = ka__prims_check_at(keys, keys_offset, n, p->esize, "keys", &ko);
    if (st == KA_OK && values.id) st = ka__prims_check_at(values, values_offset, n, vw, "values", &vo);
    if (st != KA_OK) return st;
    if (values.id && values.id == keys.id) return ka__fail(KA_ERR_INVALID_ARGUMENT, "keys and values are one buffer");
    return run(q, p, keys, ko, values, vo, vw, 0, n, ev);
}

ka_status ka_sort(ka_queue q, ka_prims_plan *plan, ka_buffer keys, size_t keys_offset, ka_buffer values,
                  size_t values_offset, size_t n, ka_event *ev) {
    KA__ENTRY();
    return sort_(q, plan, keys, keys_offset, values, values_offset, n, ev);
}

ka_status ka_sort_pairs(ka_queue q, ka_prims_plan *plan, ka_buffer keys, size_t keys_offset, ka_buffer values,
                        size_t values_offset, size_t n, ka_event *ev) {
    KA__ENTRY();
    if (!values.id) return ka__fail(KA_ERR_INVALID_ARGUMENT, "values is not a buffer");
    ka_status st = ka__plan_check(plan, KA_PRIM_SORT);
    if (st == KA_OK && !vwidth(plan->flags))
        st = ka__fail(KA_ERR_INVALID_ARGUMENT,
                      "the plan was made without KA_PRIM_SORT_VALUES or KA_PRIM_SORT_VALUES8");
    return st != KA_OK ? st : sort_(q, plan, keys, keys_offset, values, values_offset, n, ev);
}

ka_status ka_argsort(ka_queue q, ka_prims_plan *plan, ka_buffer perm, size_t perm_offset, ka_buffer keys,
                     size_t keys_offset, size_t n, ka_event *ev) {
    KA__ENTRY();
    ka_status st = ka__plan_check(plan, KA_PRIM_SORT);
    if (st != KA_OK) return st;
    ka_prims_plan *p = plan;
    uint32_t iw = iwidth(p->flags);
    if (!iw) return ka__fail(KA_ERR_INVALID_ARGUMENT, "the plan was made without KA_PRIM_ARGSORT or KA_PRIM_ARGSORT64");
    uint64_t ko, po;
    st = ka__prims_check_n(p, n);
    if (st == KA_OK) st = ka__prims_check_at(keys, keys_offset, n, p->esize, "keys", &ko);
    if (st == KA_OK) st = ka__prims_check_at(perm, perm_offset, n, iw, "perm", &po);
    if (st != KA_OK) return st;
    if (perm.id == keys.id) return ka__fail(KA_ERR_INVALID_ARGUMENT, "perm and keys are one buffer");
    return run(q, p, keys, ko, perm, po, iw, 1, n, ev);
}
