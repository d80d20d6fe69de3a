/* libka's parallel primitives: reduce, scan and radix sort, written in the
 * kernel dialect, so they run on every back-end (docs/PRIMITIVES.md).
 *
 * A plan is made once per (device, primitive, element type, largest n): it
 * builds the kernels and holds all scratch memory, so calls allocate nothing
 * and can sit in a time loop. Calls only enqueue on the queue (of the plan's
 * device); ev, if not NULL, completes when the result is in place. A plan may
 * serve one call at a time in flight per queue order: two calls whose work
 * overlaps on the device (two queues) must use two plans (they share scratch).
 */
#ifndef KA_PRIMS_H
#define KA_PRIMS_H
#include <ka.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ka_dtype {
    KA_DTYPE_I32 = 1, KA_DTYPE_U32, KA_DTYPE_I64, KA_DTYPE_U64, KA_DTYPE_F32, KA_DTYPE_F64
} ka_dtype;

typedef enum ka_prim_kind { KA_PRIM_REDUCE = 1, KA_PRIM_SCAN, KA_PRIM_SORT } ka_prim_kind;

typedef enum ka_reduce_op { KA_REDUCE_SUM = 0, KA_REDUCE_MIN = 1, KA_REDUCE_MAX = 2 } ka_reduce_op;

/* Sort plans: scratch for u32 values that travel with the keys. */
#define KA_PRIM_SORT_VALUES 1u

typedef struct ka_prims_plan ka_prims_plan;

/* Builds kind's kernels for dtype on dev (KA_ERR_UNSUPPORTED: f64 on a device
 * without double) and allocates scratch for inputs of up to max_n elements
 * (max_n >= 1). flags: 0, or KA_PRIM_SORT_VALUES for a sort plan. */
KA_API ka_status ka_prims_plan_create(ka_device dev, ka_prim_kind kind, ka_dtype dtype, size_t max_n,
                                      uint32_t flags, ka_prims_plan **out);
/* Releases the kernels and scratch; finish the calls that use it first. NULL is a no-op. */
KA_API ka_status ka_prims_plan_release(ka_prims_plan *plan);

/* Destination first, as in memcpy and the transfers of ka.h; each buffer is
 * followed by its offset in bytes (a multiple of the element size: 4 for
 * sort values). */

/* out[at out_offset] = op over the n elements of in from in_offset (of the
 * plan's type). Sums of integers wrap; floats sum in their own type, in an
 * order that is not the host's (results differ by rounding). min and max of
 * floats propagate NaN. n = 0 gives the identity: 0, the type's largest
 * (+inf) for min, its smallest (-inf) for max. */
KA_API ka_status ka_reduce(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer in,
                           size_t in_offset, size_t n, ka_reduce_op op, ka_event *ev);
/* out[i] = in[0] + ... + in[i] (inclusive) or in[0] + ... + in[i-1] (exclusive,
 * out[0] = 0), for i < n, each array at its offset. out may be in at the same
 * offset (in place); other overlaps are refused. */
KA_API ka_status ka_scan(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer in,
                         size_t in_offset, size_t n, int exclusive, ka_event *ev);
/* Sorts the n keys at keys_offset ascending in place, stable; values (u32,
 * {0} for none; needs a plan made with KA_PRIM_SORT_VALUES) move with their
 * keys. Floats order -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN (by
 * sign bit). */
KA_API ka_status ka_sort(ka_queue q, ka_prims_plan *plan, ka_buffer keys, size_t keys_offset, ka_buffer values,
                         size_t values_offset, size_t n, ka_event *ev);

#ifdef __cplusplus
}
#endif
#endif
