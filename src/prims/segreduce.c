/* ka_segmented_reduce: not built yet. */
#include "prims.h"

ka_status ka_segmented_reduce(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer in,
                              size_t in_offset, ka_buffer offsets, size_t offsets_offset, size_t n_segments,
                              ka_reduce_op op, ka_event *ev) {
    (void)q, (void)plan, (void)out, (void)out_offset, (void)in, (void)in_offset, (void)offsets, (void)offsets_offset;
    (void)n_segments, (void)op, (void)ev;
    return ka__fail(KA_ERR_UNSUPPORTED, "ka_segmented_reduce: not implemented");
}
