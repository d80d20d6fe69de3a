/* ka_segmented_reduce: the checks, then one launch, or two where segments
 * are split (the parts, their fold), the caller's event on the last.
 * Nothing here allocates. */
#include "prims.h"

#include "src_segreduce.h"

static const char *const kernels[] = {"kaprims_segred", "kaprims_segfix", NULL};

/* The parts of split segments: one per group (GPUs), per work-item (CPUs). */
static uint64_t parts(const ka_prims_plan *p) { return p->max_groups * (p->contig ? p->wg : 1); }

static ka_status alloc(ka_prims_plan *p) { return ka__plan_scratch(p, 0, parts(p) * p->esize, "parts"); }

const ka__prim_impl ka__prim_segreduce = {KA_PRIM_SEGMENTED_REDUCE, "segmented reduce", ka__prims_src_segreduce,
                                          kernels, NULL, alloc, NULL};

ka_status ka_segmented_reduce(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer in,
                              size_t in_offset, ka_buffer offsets, size_t offsets_offset, size_t n_segments,
                              ka_reduce_op op, ka_event *ev) {
    KA__ENTRY();
    ka_status st = ka__plan_check(plan, KA_PRIM_SEGMENTED_REDUCE);
    if (st != KA_OK) return st;
    ka_prims_plan *p = plan;
    if ((st = ka__prims_check_op(p, op)) != KA_OK) return st;
    uint64_t oi, ii, fi;
    size_t in_bytes = 0;
    st = ka__prims_check_n(p, n_segments);
    if (st == KA_OK) st = ka__prims_check_at(out, out_offset, n_segments, p->esize, "out", &oi);
    if (st == KA_OK) st = ka__prims_check_at(offsets, offsets_offset, n_segments + 1, 8, "offsets", &fi);
    if (st == KA_OK) st = ka__prims_check_at(in, in_offset, 0, p->esize, "in", &ii);
    if (st != KA_OK) return st;
    if (ka__prims_overlap(out, out_offset, n_segments * p->esize, offsets, offsets_offset, (n_segments + 1) * 8))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "out overlaps offsets");
    ka_buffer_size(in, &in_bytes);
    /* Offsets are clamped on the device to in's elements after in_offset. */
    uint64_t nin = (in_bytes - in_offset) / p->esize;
    /* GPUs: a group a long segment; CPUs: a run of segments a work-item. At
     * most half as many segments as groups (work-items): each is split in F
     * parts, so a few huge segments still occupy the whole device. */
    uint64_t P = parts(p), F = n_segments && n_segments <= P / 2 ? P / n_segments : 1;
    uint64_t g = p->contig ? ka__cdiv(F > 1 ? n_segments * F : n_segments, p->wg) : F > 1 ? P : n_segments;
    if (g > p->max_groups) g = p->max_groups;
    ka_arg a[] = {ka_arg_buffer(out), ka_arg_u64(oi),         ka_arg_buffer(in),       ka_arg_u64(ii),
                  ka_arg_u64(nin),    ka_arg_buffer(offsets), ka_arg_u64(fi),          ka_arg_u64(n_segments),
                  ka_arg_u32((uint32_t)op), ka_arg_buffer(p->b[0]), ka_arg_u64(F)};
    /* n_segments = 0: an empty range, a complete event */
    if ((st = ka__prims_launch(q, p->k[0], g, p->wg, a, 11, F > 1 ? NULL : ev)) != KA_OK || F == 1) return st;
    ka_arg f[] = {ka_arg_buffer(out),     ka_arg_u64(oi),          ka_arg_buffer(offsets), ka_arg_u64(fi),
                  ka_arg_u64(nin),        ka_arg_u64(n_segments),  ka_arg_u32((uint32_t)op),
                  ka_arg_buffer(p->b[0]), ka_arg_u64(F)};
    return ka__prims_launch(q, p->k[1], ka__cdiv(n_segments, p->wg), p->wg, f, 9, ev);
}
