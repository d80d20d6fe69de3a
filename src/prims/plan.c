/* Plans of the primitives: the kernels built once for (device, type) and the
 * scratch buffers sized for the largest n, so calls allocate nothing. */
#include "prims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prims_kernels.h"

static const char *const kernel_names[KP_NKERNELS] = {
    "kaprims_red1", "kaprims_red2", "kaprims_scan1", "kaprims_scan2", "kaprims_scan3",
    "kaprims_hist", "kaprims_hist_scan", "kaprims_scatter"};

static const char *kind_name(ka_prim_kind k) {
    return k == KA_PRIM_REDUCE ? "reduce" : k == KA_PRIM_SCAN ? "scan" : k == KA_PRIM_SORT ? "sort" : "?";
}

ka_status ka__plan_check(const ka_prims_plan *p, ka_prim_kind kind, const char *fn) {
    if (!p || p->magic != KA__PLAN_MAGIC) return ka__fail(KA_ERR_INVALID_HANDLE, "%s: plan is NULL or not a live plan", fn);
    if (p->kind != kind)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s: the plan was made for %s, not %s", fn, kind_name(p->kind),
                        kind_name(kind));
    return KA_OK;
}

static void plan_free(ka_prims_plan *p) {
    if (p->part.id) ka_buffer_release(p->part);
    if (p->counts.id) ka_buffer_release(p->counts);
    if (p->kscratch.id) ka_buffer_release(p->kscratch);
    if (p->vscratch.id) ka_buffer_release(p->vscratch);
    if (p->prog.id) ka_program_release(p->prog);
    p->magic = 0;
    ka__free(p, sizeof *p);
}

ka_status ka_prims_plan_release(ka_prims_plan *p) {
    if (!p) return KA_OK;
    if (p->magic != KA__PLAN_MAGIC)
        return ka__fail(KA_ERR_INVALID_HANDLE, "ka_prims_plan_release: not a live plan");
    plan_free(p);
    return KA_OK;
}

/* A buffer of bytes, with the call's name in the detail on failure. */
static ka_status scratch(ka_device dev, size_t bytes, ka_buffer *b, const char *what) {
    ka_status st = ka_buffer_create(dev, bytes ? bytes : 8, b);
    if (st != KA_OK) {
        char d[256];
        snprintf(d, sizeof d, "%s", ka_last_error());
        return ka__fail(st, "ka_prims_plan_create: scratch for %s (%zu bytes): %s", what, bytes, d);
    }
    return KA_OK;
}

ka_status ka_prims_plan_create(ka_device dev, ka_prim_kind kind, ka_dtype dtype, size_t max_n, uint32_t flags,
                               ka_prims_plan **out) {
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_prims_plan_create: out is NULL");
    *out = NULL;
    if (kind != KA_PRIM_REDUCE && kind != KA_PRIM_SCAN && kind != KA_PRIM_SORT)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_prims_plan_create: unknown kind %d", (int)kind);
    if (dtype < KA_DTYPE_I32 || dtype > KA_DTYPE_F64)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_prims_plan_create: unknown dtype %d", (int)dtype);
    if (max_n == 0) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_prims_plan_create: max_n is 0");
    if (flags & ~KA_PRIM_SORT_VALUES || (flags && kind != KA_PRIM_SORT))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_prims_plan_create: flags 0x%x not valid for %s", flags,
                        kind_name(kind));
    const ka_device_info *di;
    ka_status st = ka_device_get_info(dev, &di);
    if (st != KA_OK) return st;
    if (dtype == KA_DTYPE_F64 && !di->has_double)
        return ka__fail(KA_ERR_UNSUPPORTED, "ka_prims_plan_create: %s has no double", di->name);
    size_t esize = dtype == KA_DTYPE_I32 || dtype == KA_DTYPE_U32 || dtype == KA_DTYPE_F32 ? 4 : 8;
    if (max_n > SIZE_MAX / 8 / esize)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_prims_plan_create: max_n %zu too large", max_n);

    ka_prims_plan *p = ka__calloc(1, sizeof *p);
    if (!p) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_prims_plan_create: out of memory");
    p->magic = KA__PLAN_MAGIC;
    p->kind = kind, p->dtype = dtype, p->flags = flags, p->max_n = max_n, p->esize = esize, p->dev = dev;
    /* GPUs: 256 work-items of 8 scan elements each, 8 groups per
     * multiprocessor; CPUs (PoCL): 64 of 16, 4 groups per core. */
    const char *lay = getenv("KA_PRIMS_LAYOUT"); /* tests: "gpu" runs the GPU layout on a CPU */
    int cpu = di->is_cpu && !(lay && !strcmp(lay, "gpu"));
    uint32_t wg = cpu ? 64 : 256, kk = cpu ? 16 : 8;
    while (wg > di->max_workgroup_size && wg > 1) wg /= 2;
    p->wg = wg, p->tile = wg * kk, p->contig = cpu;
    uint64_t groups = (uint64_t)(di->compute_units ? di->compute_units : 1) * (cpu ? 4 : 8);
    const char *env = getenv("KA_PRIMS_GROUPS"); /* tests: many groups over a small input */
    if (env && atoi(env) > 0) groups = (uint64_t)atoi(env);
    /* A sort group counts its chunk's digits in 32-bit local counters. */
    if (kind == KA_PRIM_SORT && max_n / groups >= (1ull << 31)) groups = max_n / (1ull << 31) + 1;
    p->max_groups = groups;

    char d_kind[16], d_tid[16], d_wg[16], d_k[16], d_contig[16];
    snprintf(d_kind, sizeof d_kind, "KIND=%d", (int)kind);
    snprintf(d_tid, sizeof d_tid, "TID=%d", (int)dtype);
    snprintf(d_wg, sizeof d_wg, "WG=%u", wg);
    snprintf(d_k, sizeof d_k, "K=%u", kk);
    snprintf(d_contig, sizeof d_contig, "CONTIG=%d", cpu);
    const char *defs[] = {d_kind, d_tid, d_wg, d_k, d_contig, "KA_PRIMS_NO_SUBGROUPS"};
    const char *sg = getenv("KA_PRIMS_SUBGROUPS"); /* "0": the local-memory scans on CUDA too */
    ka_build_options bo = {.options = NULL, .defines = defs, .num_defines = sg && !strcmp(sg, "0") ? 6 : 5};
    st = ka_program_build(dev, ka__prims_src, &bo, &p->prog);
    for (int i = 0; st == KA_OK && i < KP_NKERNELS; i++) {
        int need = kind == KA_PRIM_REDUCE ? i <= KP_RED2
                 : kind == KA_PRIM_SCAN   ? i >= KP_SCAN1 && i <= KP_SCAN3
                                          : i >= KP_HIST;
        if (need) st = ka_kernel_get(p->prog, kernel_names[i], NULL, &p->k[i]);
    }
    uint64_t parts = kind != KA_PRIM_REDUCE && cpu ? groups * wg : groups; /* CPU scan, sort: per work-item */
    if (st == KA_OK && kind != KA_PRIM_SORT) st = scratch(dev, parts * esize, &p->part, "partials");
    if (st == KA_OK && kind == KA_PRIM_SORT) {
        st = scratch(dev, 256 * parts * 8, &p->counts, "digit counts");
        if (st == KA_OK) st = scratch(dev, max_n * esize, &p->kscratch, "keys");
        if (st == KA_OK && (flags & KA_PRIM_SORT_VALUES)) st = scratch(dev, max_n * 4, &p->vscratch, "values");
    }
    if (st != KA_OK) {
        plan_free(p);
        return st;
    }
    *out = p;
    return KA_OK;
}
