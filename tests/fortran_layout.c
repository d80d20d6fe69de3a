/* The C side of test_fortran_layout: sizes and offsets of the structs the
 * Fortran module mirrors, and values built by ka.h's own argument helpers. */
#include <stddef.h>
#include <string.h>

#include "ka.h"
#include "ka_prims.h"

void ka_ftest_layout(int64_t *out) {
    int64_t v[] = {(int64_t)sizeof(ka_arg), (int64_t)offsetof(ka_arg, size), (int64_t)offsetof(ka_arg, u),
                   (int64_t)sizeof(ka_range), (int64_t)offsetof(ka_range, size), (int64_t)offsetof(ka_range, workgroup),
                   (int64_t)offsetof(ka_range, flags), (int64_t)sizeof(ka_queue_config),
                   (int64_t)offsetof(ka_queue_config, spin_ns), (int64_t)offsetof(ka_queue_config, inline_max_items),
                   (int64_t)offsetof(ka_queue_config, profiling), (int64_t)sizeof(ka_allocator),
                   (int64_t)sizeof(ka_device), (int64_t)sizeof(ka_event), (int64_t)sizeof(ka_graph_node),
                   /* the primitives: the desc, a plan pointer, the last value of each enum */
                   (int64_t)sizeof(ka_prims_desc), (int64_t)offsetof(ka_prims_desc, max_n),
                   (int64_t)offsetof(ka_prims_desc, flags), (int64_t)offsetof(ka_prims_desc, source),
                   (int64_t)offsetof(ka_prims_desc, predicate), (int64_t)offsetof(ka_prims_desc, bins),
                   (int64_t)sizeof(ka_prims_plan *), KA_DTYPE_F64, KA_PRIM_SEGMENTED_REDUCE, KA_REDUCE_USER,
                   KA_PRIM_ARGSORT64};
    memcpy(out, v, sizeof v);
}

/* ka.h's helpers for the values the Fortran test builds with its own. */
void ka_ftest_args(ka_arg *out) {
    out[0] = ka_arg_buffer((ka_buffer){0x123456789abcull});
    out[1] = ka_arg_f64(-2.5);
    out[2] = ka_arg_f32(1.25f);
    out[3] = ka_arg_i32(-7);
    out[4] = ka_arg_i64(-1234567890123ll);
    out[5] = ka_arg_local(96);
}
