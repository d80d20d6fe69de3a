/* libka's parallel primitives: reduce, scan, sort, select, histogram,
 * searchsorted and segmented reduce, written in the kernel dialect, so they
 * run on every back-end (docs/PRIMITIVES.md).
 *
 * A plan is made once per (device, primitive, element type, largest n,
 * operator): it builds the kernels and holds all scratch memory, so calls
 * allocate nothing and can sit in a time loop. Calls only enqueue on the queue
 * (of the plan's device); ev, if not NULL, completes when the result is in
 * place. A plan may serve one call at a time in flight per queue order: two
 * calls whose work overlaps on the device (two queues) must use two plans
 * (they share scratch).
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

typedef enum ka_prim_kind {
    KA_PRIM_REDUCE = 1, KA_PRIM_SCAN, KA_PRIM_SORT, KA_PRIM_SELECT, KA_PRIM_HISTOGRAM, KA_PRIM_SEARCHSORTED,
    KA_PRIM_SEGMENTED_REDUCE
} ka_prim_kind;

/* KA_REDUCE_USER: the operator the plan was made with (ka_prims_desc.op). */
typedef enum ka_reduce_op { KA_REDUCE_SUM = 0, KA_REDUCE_MIN = 1, KA_REDUCE_MAX = 2, KA_REDUCE_USER = 3 } ka_reduce_op;

/* Sort plan flags. Values travel with their keys (ka_sort, ka_sort_pairs):
 * 4-byte or 8-byte, one of the two. ka_argsort writes u32 or u64 indices and
 * leaves the keys as they were (one more key buffer of scratch). */
#define KA_PRIM_SORT_VALUES 1u
#define KA_PRIM_SORT_VALUES8 2u
#define KA_PRIM_ARGSORT 4u
#define KA_PRIM_ARGSORT64 8u

typedef struct ka_prims_plan ka_prims_plan;

/* What a plan is made for. Zero-initialise, then set what applies. */
typedef struct ka_prims_desc {
    ka_prim_kind kind;
    ka_dtype dtype;    /* elements; sort: keys; histogram: samples; searchsorted: the sorted array and needles */
    size_t max_n;      /* largest n of a call (>= 1); searchsorted: of needles; segmented reduce: of segments */
    uint32_t flags;    /* sort: KA_PRIM_SORT_* and KA_PRIM_ARGSORT*; 0 otherwise */
    /* A user operator (reduce, scan, segmented reduce): op is an expression in
     * the kernel dialect of a and b (the element type, T in source), e.g.
     * "a + b" or "my_op(a, b)"; identity its neutral element, e.g. "0". op must
     * be associative: the primitives combine in a tree, not left to right;
     * scan keeps the elements' order, reduce does not (its op must commute).
     * source: definitions placed before the kernels (KA_DEVICE_FN functions),
     * or NULL. map: an expression of x applied to each input element first
     * (e.g. "x * x" for a sum of squares; on a reduce plan, for every op of
     * its calls), or NULL. A plan with op serves
     * KA_REDUCE_USER; a scan plan with op scans with it. */
    const char *source;
    const char *op;
    const char *identity;
    const char *map;
    /* select: keep the elements for which this expression of x is true, e.g.
     * "x > 0.5f"; NULL: select by a flags buffer. */
    const char *predicate;
    uint32_t bins;     /* histogram: the number of bins (>= 1) */
} ka_prims_desc;

/* Builds the kernels of desc's primitive for its type on dev
 * (KA_ERR_UNSUPPORTED: f64 on a device without double; KA_ERR_BUILD_FAILED
 * with the compiler's log: an operator or predicate that does not compile) and
 * allocates scratch for calls of up to max_n elements. */
KA_API ka_status ka_prims_plan_create_desc(ka_device dev, const ka_prims_desc *desc, ka_prims_plan **out);
/* The same for the built-in operators: {kind, dtype, max_n, flags}. */
KA_API ka_status ka_prims_plan_create(ka_device dev, ka_prim_kind kind, ka_dtype dtype, size_t max_n,
                                      uint32_t flags, ka_prims_plan **out);
/* Releases the kernels and scratch; finish the calls that use it first. NULL is a no-op. */
KA_API ka_status ka_prims_plan_release(ka_prims_plan *plan);

/* Destination first, as in memcpy and the transfers of ka.h; each buffer is
 * followed by its offset in bytes (a multiple of its element size). */

/* out[at out_offset] = op over the n elements of in from in_offset (of the
 * plan's type). Sums of integers wrap; floats sum in their own type, in an
 * order that is not the host's (results differ by rounding). min and max of
 * floats propagate NaN. n = 0 gives the identity: 0, the type's largest
 * (+inf) for min, its smallest (-inf) for max, the plan's for KA_REDUCE_USER. */
KA_API ka_status ka_reduce(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer in,
                           size_t in_offset, size_t n, ka_reduce_op op, ka_event *ev);
/* out[i] = in[0] + ... + in[i] (inclusive) or in[0] + ... + in[i-1] (exclusive,
 * out[0] = the identity), for i < n, each array at its offset; + is the plan's
 * operator (sum without one). out may be in at the same offset (in place);
 * other overlaps are refused. */
KA_API ka_status ka_scan(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer in,
                         size_t in_offset, size_t n, int exclusive, ka_event *ev);
/* Sorts the n keys at keys_offset ascending in place, stable; values ({0} for
 * none; 4 or 8 bytes each, as the plan's flag says) move with their keys.
 * Floats order -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN (by sign
 * bit). */
KA_API ka_status ka_sort(ka_queue q, ka_prims_plan *plan, ka_buffer keys, size_t keys_offset, ka_buffer values,
                         size_t values_offset, size_t n, ka_event *ev);
/* ka_sort with values required. */
KA_API ka_status ka_sort_pairs(ka_queue q, ka_prims_plan *plan, ka_buffer keys, size_t keys_offset, ka_buffer values,
                               size_t values_offset, size_t n, ka_event *ev);
/* perm[i] = the index of the i-th smallest of the n keys (stable: equal keys
 * by index), u32 (KA_PRIM_ARGSORT) or u64 (KA_PRIM_ARGSORT64); keys unchanged. */
KA_API ka_status ka_argsort(ka_queue q, ka_prims_plan *plan, ka_buffer perm, size_t perm_offset, ka_buffer keys,
                            size_t keys_offset, size_t n, ka_event *ev);
/* Stream compaction, stable: out gets, in order, the elements in[i] (i < n)
 * whose flag (one byte each, nonzero keeps; plans without a predicate) or
 * predicate (plans made with one; flags {0}) holds; the number kept is
 * written to count as a u64. out must not overlap in. */
KA_API ka_status ka_select(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer count,
                           size_t count_offset, ka_buffer in, size_t in_offset, ka_buffer flags, size_t flags_offset,
                           size_t n, ka_event *ev);
/* counts[b] (u32, the plan's bins of them, overwritten) = the number of the n
 * samples in bin b of bins evenly splitting [lower, upper): integers, bin
 * floor((x - lower) * bins / (upper - lower)) exactly (whole bounds inside
 * the type); floats, (x - lower) * (bins / (upper - lower)) in the sample's
 * type, truncated, what rounds to bins in the last bin. Samples outside the
 * range and NaN are not counted. lower < upper. */
KA_API ka_status ka_histogram(ka_queue q, ka_prims_plan *plan, ka_buffer counts, size_t counts_offset, ka_buffer in,
                              size_t in_offset, size_t n, double lower, double upper, ka_event *ev);
/* out[j] (u64) = the first index i of the ascending sorted[0, n_sorted) with
 * sorted[i] >= needles[j] (upper = 0: lower bound) or sorted[i] > needles[j]
 * (upper != 0: upper bound); n_sorted where there is none. j < n_needles <=
 * the plan's max_n; n_sorted is any size sorted holds. Elements compare in
 * ka_sort's order (floats by sign bit: -NaN first, +NaN last, -0.0 before
 * +0.0), so an array sorted by ka_sort is searched exactly. out must not
 * overlap sorted or needles. */
KA_API ka_status ka_searchsorted(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer sorted,
                                 size_t sorted_offset, size_t n_sorted, ka_buffer needles, size_t needles_offset,
                                 size_t n_needles, int upper, ka_event *ev);
/* out[s] = op over in[offsets[s], offsets[s + 1]) for s < n_segments <= the
 * plan's max_n; offsets: n_segments + 1 ascending u64 element indices into in
 * (from in_offset). An empty segment gives the identity (as ka_reduce's).
 * Offsets are not checked but clamped on the device: one past in's end counts
 * as its end, a segment ending before its start is empty; nothing outside in
 * is read. op: sum, min, max, or KA_REDUCE_USER on a plan made with
 * desc.op; a plan's map, if any, applies to each element first, whatever the
 * op. A user op must be commutative as well as associative. out must not
 * overlap in or offsets. */
KA_API ka_status ka_segmented_reduce(ka_queue q, ka_prims_plan *plan, ka_buffer out, size_t out_offset, ka_buffer in,
                                     size_t in_offset, ka_buffer offsets, size_t offsets_offset, size_t n_segments,
                                     ka_reduce_op op, ka_event *ev);

#ifdef __cplusplus
}
#endif
#endif
