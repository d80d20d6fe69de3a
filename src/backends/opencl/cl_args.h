/* The launch's shared steps, inlined into both launches (the plain one,
 * cl_launch.c, and PoCL routing's, pocl/pocl_launch.c): a called helper cost
 * each launch its prologue, epilogue and argument passing. */
#ifndef KA_CL_ARGS_H
#define KA_CL_ARGS_H

#include "cl_internal.h"

#include <stddef.h>
#include <string.h>

/* Sets the arguments of cl_kernel ck that differ from what it last had
 * (cache, last_nd): argument values persist on a cl_kernel. */
static inline __attribute__((always_inline)) ka_status ka__cl_set_args(ka__kernel *k, cl_kernel ck, ka__cl_argcache *cache,
                                                                        uint64_t last_nd[4], const ka__launch *l,
                                                                        const ka_arg *args, uint32_t nargs) {
    /* The hidden range argument is set only when it changed. */
    if (KA_UNLIKELY((last_nd[0] ^ l->nd[0]) | (last_nd[1] ^ l->nd[1]) | (last_nd[2] ^ l->nd[2]) | (last_nd[3] ^ l->nd[3]))) {
        KA__CL_CHECK("clSetKernelArg(hidden range)", clSetKernelArg(ck, 0, sizeof l->nd, l->nd));
        memcpy(last_nd, l->nd, sizeof l->nd);
    }
    for (uint32_t i = 0; i < nargs; i++) {
        const ka_arg *a = &args[i];
        ka__cl_argcache *c = &cache[i];
        /* An argument as last set (the common case but for the one that
         * changes): kind and size in one compare, then the value. Bytes are
         * never cached (kind 0); a local's value is not its own, so a new one
         * takes the switch, which compares its size alone. */
        uint64_t tag, ctag;
        _Static_assert(offsetof(ka_arg, u) == 8 && offsetof(ka__cl_argcache, v) == 8, "kind and size first");
        memcpy(&tag, a, sizeof tag);
        memcpy(&ctag, c, sizeof ctag);
        uint64_t v = (uint32_t)tag == KA_ARG_BUFFER ? (uint64_t)(uintptr_t)l->mem[i] : a->u.u64;
        if (KA_LIKELY(tag == ctag && v == c->v)) continue;
        cl_int err;
        switch (a->kind) {
        case KA_ARG_BUFFER: /* resolved by the core (v above) */
            err = clSetKernelArg(ck, i + 1, sizeof(cl_mem), &l->mem[i]);
            break;
        case KA_ARG_LOCAL:
            if (c->kind == KA_ARG_LOCAL && c->size == a->size) continue;
            err = clSetKernelArg(ck, i + 1, a->size, NULL);
            break;
        case KA_ARG_BYTES: /* not cached: the bytes live behind a pointer */
            c->kind = 0;
            err = clSetKernelArg(ck, i + 1, a->size, a->u.ptr);
            if (KA_UNLIKELY(err != CL_SUCCESS)) goto fail;
            continue;
        case KA_ARG_INT:
        case KA_ARG_FLOAT:
        case KA_ARG_SCALAR:
            err = clSetKernelArg(ck, i + 1, a->size, &a->u);
            break;
        default: /* reaches here only past the fast check: garbage of exactly an unknown argument's tag */
            c->kind = 0;
            return ka__fail(KA_ERR_ARG_TYPE, "kernel '%s' argument %u ('%s'): unknown argument kind %u", k->name, i,
                            k->sig[i].name, a->kind);
        }
        if (KA_UNLIKELY(err != CL_SUCCESS)) {
        fail:
            c->kind = 0;
            ka_status st = ka__cl_fail("clSetKernelArg", err);
            return ka__fail(st, "kernel '%s' argument %u ('%s'): clSetKernelArg: %s", k->name, i, k->sig[i].name,
                            ka__cl_error_name(err));
        }
        c->v = v;
        c->size = a->size;
        c->kind = a->kind;
    }
    return KA_OK;
}

/* A kernel calling ka_assert: q's record and the kernel's handle, its last
 * two arguments on ck, when the record is not the one last set (*last).
 * Out of line: rare, and large. */
ka_status ka__cl_set_assert(ka__queue *q, const ka__kernel *k, cl_kernel ck, cl_mem *last);

/* The plain launch: k's arguments set on its cl_kernel and the kernel
 * enqueued on q's main command queue. */
static inline __attribute__((always_inline)) ka_status ka__cl_launch_main(ka__queue *q, ka__kernel *k, const ka__launch *l,
                                                                           const ka_arg *args, uint32_t nargs, void **ev) {
    ka__cl_kern *nk = k->bk;
    /* clSetKernelArg + enqueue on one cl_kernel must not interleave between
     * threads. */
    ka__spin_lock(&nk->spin);
    ka_status st = ka__cl_set_args(k, k->native, nk->cache, nk->last_nd, l, args, nargs);
    if (KA_UNLIKELY(nk->asserts) && st == KA_OK) st = ka__cl_set_assert(q, k, k->native, &nk->arec);
    if (KA_LIKELY(st == KA_OK)) {
        cl_int err = clEnqueueNDRangeKernel(ka__cl_main_q(q), k->native, l->dims, NULL, l->global, l->local, 0, NULL,
                                            (cl_event *)ev);
        if (KA_UNLIKELY(err != CL_SUCCESS)) st = ka__cl_fail("clEnqueueNDRangeKernel", err);
    }
    ka__spin_unlock(&nk->spin);
    return st;
}

#endif
