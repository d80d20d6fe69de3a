/* What the primitives' files share: the plan. */
#ifndef KA_PRIMS_INTERNAL_H
#define KA_PRIMS_INTERNAL_H
#include "ka_internal.h"
#include "ka_prims.h"

#define KA__PLAN_MAGIC 0x6b615052u /* "kaPR": a plan pointer that is not one is refused */

enum { KP_RED1, KP_RED2,
       KP_SCAN1, KP_SCAN2, KP_SCAN3, KP_HIST, KP_HIST_SCAN, KP_SCATTER, KP_NKERNELS };

struct ka_prims_plan {
    uint32_t magic;
    ka_prim_kind kind;
    ka_dtype dtype;
    uint32_t flags;
    size_t max_n, esize;
    ka_device dev;
    ka_program prog;
    ka_kernel k[KP_NKERNELS];
    uint32_t wg, tile;       /* work-group; scan tile (wg * K elements) */
    int contig;              /* CPU layout: a scan has one partial per work-item */
    uint64_t max_groups;     /* work-groups of a call at most (scratch is sized for them) */
    ka_buffer part;          /* reduce and scan: one partial per group */
    ka_buffer counts;        /* sort: 256 digit counts per group (ulong) */
    ka_buffer kscratch, vscratch; /* sort: the other half of each pass's ping-pong */
};

/* KA_OK if p is a live plan of kind, else the failure with its detail. */
ka_status ka__plan_check(const ka_prims_plan *p, ka_prim_kind kind, const char *fn);
#endif
