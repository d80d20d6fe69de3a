/* ka_searchsorted: not built yet. */
#include "prims.h"

ka_status ka_searchsorted(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer sorted,
                          size_t sorted_offset, size_t n_sorted, ka_buffer needles, size_t needles_offset,
                          size_t n_needles, int upper, ka_event *ev) {
    (void)q, (void)plan, (void)out, (void)out_offset, (void)sorted, (void)sorted_offset, (void)n_sorted;
    (void)needles, (void)needles_offset, (void)n_needles, (void)upper, (void)ev;
    return ka__fail(KA_ERR_UNSUPPORTED, "ka_searchsorted: not implemented");
}
