/* ka_histogram: not built yet. */
#include "prims.h"

ka_status ka_histogram(ka_queue q, ka_prims_plan *plan, ka_buffer counts, size_t counts_offset, ka_buffer in,
                       size_t in_offset, size_t n, double lower, double upper, ka_event *ev) {
    (void)q, (void)plan, (void)counts, (void)counts_offset, (void)in, (void)in_offset, (void)n, (void)lower;
    (void)upper, (void)ev;
    return ka__fail(KA_ERR_UNSUPPORTED, "ka_histogram: not implemented");
}
