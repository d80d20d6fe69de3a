/* A launch's arguments checked against its kernel's signature: the one
 * place ka_launch (launch.c) and graph recording and updates (graph.c) both
 * use, so neither reaches into the other. Not installed. */
#ifndef KA_ARGS_H
#define KA_ARGS_H

#include "backend.h"
#include "ka_internal.h"

#include <string.h>

/* The full check of argument i, whose (kind, size) word is not the one its
 * parameter most likely gets. dyn_local sums the dynamic local memory. Cold:
 * a launch whose arguments match their likely words never calls it. */
ka_status ka__arg_check(const ka__kernel *k, uint32_t i, const ka_arg *a, uint64_t *dyn_local)
    __attribute__((cold));
/* The error of buffer argument i: b NULL (released) or of another device. */
ka_status ka__arg_bad_buffer(const ka__kernel *k, uint32_t i, const ka__buffer *b) __attribute__((cold));

/* Checks every argument against the kernel's signature and resolves each
 * buffer argument, once for every back-end: mem[i] gets its native object,
 * argp[1 + i] a pointer to the argument's value as a driver takes it (&mem[i],
 * or the ka_arg's bytes), and *plain whether every argument is a buffer or a
 * scalar (ka__launch.argp). A launch checks in full only an argument whose
 * (kind, size) word is not its parameter's likely one (one compare each); full
 * checks every argument, so garbage of exactly that word is refused here, not
 * left to the back-end. */
static inline __attribute__((always_inline)) ka_status ka__args_check(const ka__kernel *k, const ka__device *dev,
                                                                      const ka_arg *args, uint32_t nargs, void **mem,
                                                                      void **argp, bool *plain, bool full) {
    if (KA_UNLIKELY(nargs != k->nargs))
        return ka__fail(KA_ERR_ARG_COUNT, "kernel '%s' takes %u arguments, %u given", k->name, k->nargs, nargs);
    if (KA_UNLIKELY(nargs && !args)) return ka__fail(KA_ERR_INVALID_ARGUMENT, "args is NULL");
    uint64_t dyn_local = 0;
    for (uint32_t i = 0; i < nargs; i++) {
        const ka_arg *a = &args[i];
        uint64_t tag;
        memcpy(&tag, a, sizeof tag); /* kind and size */
        ka_status st;
        if (KA_UNLIKELY(full || tag != k->fast_tag[i]) && (st = ka__arg_check(k, i, a, &dyn_local)) != KA_OK) return st;
        if ((uint32_t)tag == KA_ARG_BUFFER) { /* the kind: tag's low half (ka_arg starts with it; little-endian) */
            const ka__buffer *b = ka__resolve(a->u.buffer, KA__T_BUFFER);
            if (KA_UNLIKELY(!b || b->dev != dev)) return ka__arg_bad_buffer(k, i, b);
            mem[i] = b->native;
            argp[i + 1] = &mem[i];
        } else {
            argp[i + 1] = (void *)&a->u; /* a scalar's bytes lead the union */
            /* Local memory, bytes, and an unknown kind (garbage of exactly a
             * struct parameter's tag passes the one compare) take the
             * back-end's own loop, which refuses the last. */
            uint32_t kind = (uint32_t)tag;
            if (KA_UNLIKELY(kind != KA_ARG_INT && kind != KA_ARG_FLOAT && kind != KA_ARG_SCALAR)) *plain = false;
        }
    }
    return KA_OK;
}

/* ka__args_check with full set, its pointers of a driver's view dropped:
 * what a graph keeps must not hold an argument a back-end would refuse. */
ka_status ka__args_check_full(const ka__kernel *k, const ka__device *dev, const ka_arg *args, uint32_t nargs, void **mem);

#endif
