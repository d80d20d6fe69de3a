/* ka_select: not built yet. */
#include "prims.h"

ka_status ka_select(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer count,
                    size_t count_offset, ka_buffer in, size_t in_offset, ka_buffer flags, size_t flags_offset, size_t n,
                    ka_event *ev) {
    (void)q, (void)plan, (void)out, (void)out_offset, (void)count, (void)count_offset, (void)in, (void)in_offset;
    (void)flags, (void)flags_offset, (void)n, (void)ev;
    return ka__fail(KA_ERR_UNSUPPORTED, "ka_select: not implemented");
}
