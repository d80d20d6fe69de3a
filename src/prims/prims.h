/* What the primitives' files share: the plan, each primitive's hooks, the
 * checks of a call's arguments. */
#ifndef KA_PRIMS_INTERNAL_H
#define KA_PRIMS_INTERNAL_H
#include "ka_internal.h"
#include "ka_prims.h"

/* The public calls the primitives make, each wrapped so that the primitive's
 * call is current again after it, and its failure is named after the
 * primitive ("ka_reduce: ..."), not after the inner call. A call of one of
 * these names anywhere in src/prims gets the wrapper; a public call new to
 * src/prims needs its line here. */
#define KA__PRIMS_NESTED(call)                                                                             \
    __extension__({                                                                                        \
        const char *outer_ = ka__call;                                                                     \
        ka_status st_ = (call);                                                                            \
        ka__call = outer_;                                                                                 \
        KA_UNLIKELY(st_ != KA_OK) ? ka__named(st_, outer_) : KA_OK;                                        \
    })
#define ka_launch(...) KA__PRIMS_NESTED(ka_launch(__VA_ARGS__))
#define ka_buffer_create(...) KA__PRIMS_NESTED(ka_buffer_create(__VA_ARGS__))
#define ka_buffer_create_with(...) KA__PRIMS_NESTED(ka_buffer_create_with(__VA_ARGS__))
#define ka_buffer_create_zeroed(...) KA__PRIMS_NESTED(ka_buffer_create_zeroed(__VA_ARGS__))
#define ka_buffer_release(...) KA__PRIMS_NESTED(ka_buffer_release(__VA_ARGS__))
#define ka_buffer_size(...) KA__PRIMS_NESTED(ka_buffer_size(__VA_ARGS__))
#define ka_buffer_fill(...) KA__PRIMS_NESTED(ka_buffer_fill(__VA_ARGS__))
#define ka_program_build(...) KA__PRIMS_NESTED(ka_program_build(__VA_ARGS__))
#define ka_program_release(...) KA__PRIMS_NESTED(ka_program_release(__VA_ARGS__))
#define ka_kernel_get(...) KA__PRIMS_NESTED(ka_kernel_get(__VA_ARGS__))
#define ka_device_get_info(...) KA__PRIMS_NESTED(ka_device_get_info(__VA_ARGS__))

#define KA__PLAN_MAGIC 0x6b615052u /* "kaPR": a plan pointer that is not one is refused */
#define KA__PLAN_KERNELS 12
#define KA__PLAN_BUFFERS 6

struct ka_prims_plan {
    uint32_t magic;
    ka_prim_kind kind;
    ka_dtype dtype;
    uint32_t flags;
    size_t max_n, esize;
    uint32_t bins;           /* histogram */
    int user_op, predicate;  /* made with desc.op; with desc.predicate */
    ka_device dev;
    const ka_device_info *di;
    ka_program prog;
    ka_kernel k[KA__PLAN_KERNELS];   /* the primitive's, in the order of its impl's names */
    ka_buffer b[KA__PLAN_BUFFERS];   /* scratch, each primitive's own meaning; released with the plan */
    uint32_t wg, tile;       /* work-group; scan tile (wg * K elements) */
    int contig;              /* CPU layout: work-items own contiguous runs */
    uint64_t max_groups;     /* work-groups of a call at most (scratch is sized for them) */
    char defs[256];          /* source lines the primitive's setup adds before the common source */
};

/* One primitive: its kernels' source and names, and the two hooks of plan
 * creation. setup runs before the build, on a plan whose fields above are set
 * with the default layout (GPUs: 256 work-items, K 8, 8 groups a compute
 * unit; CPUs: 64, 16, 4 a core, contig); it may change the layout, append to
 * defs, and refuse the desc (KA_ERR_INVALID_ARGUMENT, KA_ERR_UNSUPPORTED).
 * alloc runs after the kernels are fetched and makes the scratch buffers with
 * ka__plan_scratch. Either may be NULL. */
typedef struct ka__prim_impl {
    ka_prim_kind kind;
    const char *name;
    const char *src;
    const char *const *kernels; /* NULL-terminated, at most KA__PLAN_KERNELS */
    ka_status (*setup)(ka_prims_plan *p, const ka_prims_desc *d);
    ka_status (*alloc)(ka_prims_plan *p);
    const char *const *gpu_kernels; /* the GPU layout's (not contig) where they differ; NULL: kernels */
} ka__prim_impl;

extern const ka__prim_impl ka__prim_reduce, ka__prim_scan, ka__prim_sort;
extern const ka__prim_impl ka__prim_searchsorted, ka__prim_segreduce;
extern const ka__prim_impl ka__prim_select, ka__prim_histogram;

const char *ka__prim_name(ka_prim_kind k);
/* A scratch buffer of bytes (at least 8) into p->b[i], with what in the detail on failure;
 * _init: made with its contents, data's bytes (data NULL: zeroed). */
ka_status ka__plan_scratch(ka_prims_plan *p, int i, size_t bytes, const char *what);
ka_status ka__plan_scratch_init(ka_prims_plan *p, int i, size_t bytes, const void *data, const char *what);
/* The bytes of local memory a primitive's kernel may declare statically: the
 * device's, at most 48 KiB (CUDA's cap on static shared memory, whatever the
 * opt-in maximum). setup hooks fit their tiles to it. */
uint64_t ka__plan_static_local(const ka_prims_plan *p);

/* The checks of a call: each KA_OK or the failure with its detail. */
ka_status ka__plan_check(const ka_prims_plan *p, ka_prim_kind kind);
/* A reduce op: one of ka_reduce_op, KA_REDUCE_USER only on a plan with an operator. */
ka_status ka__prims_check_op(const ka_prims_plan *p, ka_reduce_op op);
ka_status ka__prims_check_n(const ka_prims_plan *p, size_t n);
/* A byte offset of a call: a multiple of the element size es, inside the
 * buffer with room for n elements after it; *el gets it in elements. */
ka_status ka__prims_check_at(ka_buffer b, size_t off, size_t n, size_t es, const char *what,
                             uint64_t *el);
/* A 1-D launch of groups work-groups of wg (KA_LAUNCH_SPREAD where more than one). */
ka_status ka__prims_launch(ka_queue q, ka_kernel k, uint64_t groups, uint32_t wg, const ka_arg *a, uint32_t na,
                           ka_event *ev);
static inline uint64_t ka__cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
/* The byte ranges [a, a + na) of x and [b, b + nb) of y overlap (one buffer). */
static inline int ka__prims_overlap(ka_buffer x, size_t a, size_t na, ka_buffer y, size_t b, size_t nb) {
    return x.id == y.id && na && nb && a < b + nb && b < a + na;
}
#endif
