/* ka_histogram: the checks and the bounds made into the kernels' terms,
 * then the launches of the plan's variant, the caller's event on the last.
 * GPUs: the counts zeroed, then one pass adding per-group histograms (local
 * memory) to them. CPUs: per-work-item histograms, then their sum. More bins
 * than either holds: the counts zeroed, then an atomic add per sample.
 * Nothing here allocates. Scratch: b[0] the per-work-item histograms (CPUs). */
#include "prims.h"

#include <math.h> /* isnan, isinf: macros, no libm */
#include <stdio.h>
#include <string.h>

#include "src_histogram.h"

/* x, inside [-2^63, 2^64), has no fraction (libka does not link libm). */
static int whole(double x) { return x >= 0 ? (double)(uint64_t)x == x : (double)(int64_t)x == x; }

static const char *const kernels[] = {"kaprims_histogram_zero", "kaprims_histogram_count", "kaprims_histogram_sum",
                                      NULL};

/* Bins a histogram in local memory (GPUs) or a work-item's private memory
 * (CPUs) holds; more go to global atomics. */
#define HIST_LOCAL_MAX 4096u
#define HIST_PRIVATE_MAX 4096u

static int hist_global(const ka_prims_plan *p) {
    if (p->contig) return p->bins > HIST_PRIVATE_MAX;
    uint64_t lm = p->di->local_mem_size > 1024 ? (p->di->local_mem_size - 1024) / 4 : 0;
    return p->bins > HIST_LOCAL_MAX || p->bins > lm;
}

static ka_status setup(ka_prims_plan *p, const ka_prims_desc *d) {
    if (d->bins == 0 || d->bins > (1u << 31))
        return ka__fail(KA_ERR_INVALID_ARGUMENT,
                        "a histogram plan needs 1 <= bins <= 2^31 (bins %u)", d->bins);
    size_t n = strlen(p->defs);
    snprintf(p->defs + n, sizeof p->defs - n, "#define HB %uu\n%s", d->bins,
             hist_global(p) ? "#define HIST_GLOBAL 1\n" : "");
    return KA_OK;
}

/* Samples a work-group takes at least: CPUs' private variant, enough per
 * work-item that its histogram's zeroing, store and sum stay a small part
 * of the work. */
static uint64_t group_min(const ka_prims_plan *p) {
    if (p->contig && !hist_global(p)) return (uint64_t)p->wg * (p->bins > 256 ? p->bins : 256) * 16;
    return (uint64_t)p->wg * 16;
}

static ka_status alloc(ka_prims_plan *p) {
    if (!p->contig || hist_global(p)) return KA_OK;
    uint64_t gm = ka__cdiv(p->max_n, group_min(p));
    if (p->max_groups > gm) p->max_groups = gm; /* no call uses more */
    uint64_t w = p->max_groups * p->wg;
    if (w > SIZE_MAX / 4 / p->bins)
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "%u bins too many", p->bins);
    return ka__plan_scratch(p, 0, w * p->bins * 4, "per-work-item histograms");
}

const ka__prim_impl ka__prim_histogram = {KA_PRIM_HISTOGRAM, "histogram", ka__prims_src_histogram, kernels, setup,
                                          alloc, NULL};

/* The bounds as the kernels take them: lo and hi in the sample type, R =
 * hi - lo (integers), the scale bins / (hi - lo) (float; double for f64;
 * 32-bit integers: the fixed-point terms of src_histogram.h). */
static ka_status bounds(const ka_prims_plan *p, double lower, double upper, ka_arg *lo, ka_arg *hi, uint64_t *R,
                        ka_arg *s) {
    if (isnan(lower) || isnan(upper) || isinf(lower) || isinf(upper) || !(lower < upper))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "the range [%g, %g) is empty, not finite or NaN", lower,
                        upper);
    double b = (double)p->bins;
    *R = 0;
    switch (p->dtype) {
    case KA_DTYPE_F32: {
        float l = (float)lower, h = (float)upper;
        if (isinf(l) || isinf(h) || !(l < h))
            return ka__fail(KA_ERR_INVALID_ARGUMENT, "[%g, %g) is empty or not finite as f32", lower, upper);
        float sc = (float)(b / ((double)h - (double)l));
        if (!isnormal(sc)) /* inf: x == lower would make 0 * inf; subnormal: flushed to 0 on GPUs */
            return ka__fail(KA_ERR_INVALID_ARGUMENT, "[%g, %g) is too narrow for %u f32 bins (the scale %g)",
                            lower, upper, p->bins, (double)sc);
        *lo = ka_arg_f32(l), *hi = ka_arg_f32(h), *s = ka_arg_f32(sc);
        return KA_OK;
    }
    case KA_DTYPE_F64:
        if (isinf(upper - lower) || !isnormal(b / (upper - lower)))
            return ka__fail(KA_ERR_INVALID_ARGUMENT, "[%g, %g) is too wide or too narrow for %u f64 bins",
                            lower, upper, p->bins);
        *lo = ka_arg_f64(lower), *hi = ka_arg_f64(upper), *s = ka_arg_f64(b / (upper - lower));
        return KA_OK;
    default: break;
    }
    /* Integers: whole bounds inside the type; R and the bins exact. */
    static const double tmin[] = {0, -2147483648.0, 0, -9223372036854775808.0, 0};
    static const double tend[] = {0, 2147483648.0, 4294967296.0, 9223372036854775808.0, 18446744073709551616.0};
    int t = (int)p->dtype;
    if (!(lower >= tmin[t] && lower < tend[t] && upper >= tmin[t] && upper < tend[t]) || !whole(lower) || !whole(upper))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "the bounds [%.17g, %.17g) of an integer histogram must be whole "
                        "numbers inside the sample type", lower, upper);
    switch (p->dtype) {
    case KA_DTYPE_I32: *lo = ka_arg_i32((int32_t)lower), *hi = ka_arg_i32((int32_t)upper); break;
    case KA_DTYPE_U32: *lo = ka_arg_u32((uint32_t)lower), *hi = ka_arg_u32((uint32_t)upper); break;
    case KA_DTYPE_I64: *lo = ka_arg_i64((int64_t)lower), *hi = ka_arg_i64((int64_t)upper); break;
    default: *lo = ka_arg_u64((uint64_t)lower), *hi = ka_arg_u64((uint64_t)upper); break;
    }
    /* hi - lo in the unsigned type of the width: exact (the doubles are whole numbers in range). */
    *R = p->dtype == KA_DTYPE_I32 ? (uint64_t)((uint32_t)hi->u.i32 - (uint32_t)lo->u.i32)
         : p->dtype == KA_DTYPE_U32 ? (uint64_t)(hi->u.u32 - lo->u.u32)
         : p->dtype == KA_DTYPE_I64 ? (uint64_t)hi->u.i64 - (uint64_t)lo->u.i64
                                    : hi->u.u64 - lo->u.u64;
    if (p->esize == 8) {
        *s = ka_arg_f32((float)(b / (double)*R));
        return KA_OK;
    }
    /* 32-bit: bins / R in R's high word, and M = ceil(2^64 * (bins % R) / R)
     * by long division (R < 2^32, so the remainder's doubling fits). */
    uint64_t r = p->bins % *R, m = 0;
    for (int i = 0; i < 64; i++) {
        r <<= 1;
        m = m << 1 | (r >= *R);
        if (r >= *R) r -= *R;
    }
    *s = ka_arg_u64(m + (r != 0));
    *R |= (uint64_t)(p->bins / *R) << 32;
    return KA_OK;
}

ka_status ka_histogram(ka_queue q, ka_prims_plan *plan, ka_buffer counts, size_t counts_offset, ka_buffer in,
                       size_t in_offset, size_t n, double lower, double upper, ka_event *ev) {
    KA__ENTRY();
    ka_status st = ka__plan_check(plan, KA_PRIM_HISTOGRAM);
    if (st != KA_OK) return st;
    ka_prims_plan *p = plan;
    uint64_t ii, ci;
    st = ka__prims_check_n(p, n);
    if (st == KA_OK) st = ka__prims_check_at(in, in_offset, n, p->esize, "in", &ii);
    if (st == KA_OK) st = ka__prims_check_at(counts, counts_offset, p->bins, 4, "counts", &ci);
    if (st != KA_OK) return st;
    if (ka__prims_overlap(counts, counts_offset, (size_t)p->bins * 4, in, in_offset, n * p->esize))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "counts overlaps in");
    ka_arg lo, hi, s;
    uint64_t R;
    if ((st = bounds(p, lower, upper, &lo, &hi, &R, &s)) != KA_OK) return st;
    int global = hist_global(p), priv = p->contig && !global;
    uint32_t zw = p->wg;
    uint64_t zg = ka__cdiv(p->bins, zw); /* the zeroing and the sum: a work-item per bin */
    ka_arg a0[] = {ka_arg_buffer(counts), ka_arg_u64(ci)};
    if (n == 0) return ka__prims_launch(q, p->k[0], zg, zw, a0, 2, ev);
    uint64_t g = ka__cdiv(n, group_min(p));
    if (g > p->max_groups) g = p->max_groups;
    uint64_t c = ka__cdiv(n, g);
    ka_buffer part = priv ? p->b[0] : counts; /* read only by the CPU's private variant */
    ka_arg a1[] = {ka_arg_buffer(in), ka_arg_u64(ii), ka_arg_buffer(counts), ka_arg_u64(ci), ka_arg_buffer(part),
                   ka_arg_u64(n), ka_arg_u64(c), lo, hi, ka_arg_u64(R), s};
    if (!priv && (st = ka__prims_launch(q, p->k[0], zg, zw, a0, 2, NULL)) != KA_OK) return st;
    if ((st = ka__prims_launch(q, p->k[1], g, p->wg, a1, 11, priv ? NULL : ev)) != KA_OK) return st;
    if (!priv) return KA_OK;
    ka_arg a2[] = {ka_arg_buffer(p->b[0]), ka_arg_u64(g * p->wg), ka_arg_buffer(counts), ka_arg_u64(ci)};
    return ka__prims_launch(q, p->k[2], zg, zw, a2, 4, ev);
}
