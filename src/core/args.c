/* A launch's arguments checked against its kernel's signature: the full
 * check of one argument and its messages (cold), and the full check of every
 * argument (graph recording, ka_graph_set_arg). The per-launch check, one
 * compare an argument, is inline in args.h. */
#include "args.h"

#include <stdio.h>

static const char *kind_name(uint32_t k) {
    switch (k) {
    case KA_ARG_BUFFER: return "buffer";
    case KA_ARG_SCALAR: return "scalar";
    case KA_ARG_LOCAL: return "local memory";
    case KA_ARG_BYTES: return "bytes";
    case KA_ARG_INT: return "an integer (KA_ARG_INT)";
    case KA_ARG_FLOAT: return "a float (KA_ARG_FLOAT)";
    default: return "unknown kind";
    }
}

ka_status ka__arg_check(const ka__kernel *k, uint32_t i, const ka_arg *a, uint64_t *dyn_local) {
    const ka__argsig *s = &k->sig[i];
    const ka_device_info *di = &k->prog->dev->info;
    uint32_t max_bytes = di->max_arg_bytes ? di->max_arg_bytes : 1024;
    bool ok;
    switch (a->kind) {
    case KA_ARG_BUFFER: ok = s->kind == KA__SIG_BUFFER || (s->kind == KA__SIG_UNKNOWN && (!s->size || s->size == 8)); break;
    case KA_ARG_LOCAL: {
        ok = s->kind == KA__SIG_LOCAL || s->kind == KA__SIG_UNKNOWN;
        if (ok && !a->size) /* OpenCL refuses a 0-byte __local argument; a graph must refuse it when recorded */
            return ka__fail(KA_ERR_INVALID_ARGUMENT, "kernel '%s' argument %u ('%s'): 0 bytes of local memory",
                            k->name, i, s->name);
        uint64_t limit = di->local_mem_size, local = k->local_mem + (*dyn_local += a->size);
        if (ok && limit && local > limit)
            return ka__fail(KA_ERR_INVALID_ARGUMENT,
                            "kernel '%s' argument %u ('%s'): %u bytes of local memory bring the kernel to "
                            "%llu bytes, over the device's %llu",
                            k->name, i, s->name, a->size, (unsigned long long)local, (unsigned long long)limit);
        break;
    }
    case KA_ARG_INT:
    case KA_ARG_FLOAT:
        if (s->cls && s->cls != (a->kind == KA_ARG_FLOAT ? KA__CLS_FLOAT : KA__CLS_INT))
            return ka__fail(KA_ERR_ARG_TYPE,
                            "kernel '%s' argument %u ('%s'): declared '%s', given %s of %u bytes (ka_arg_%s%u); "
                            "pass ka_arg_%s%u, or convert the value", k->name, i, s->name, s->type, kind_name(a->kind),
                            a->size, a->kind == KA_ARG_FLOAT ? "f" : "i", a->size * 8,
                            s->cls == KA__CLS_FLOAT ? "f" : "i", (s->size ? s->size : a->size) * 8);
        __attribute__((fallthrough)); /* then as an untyped scalar, by size */
    case KA_ARG_SCALAR:
        ok = (s->kind == KA__SIG_SCALAR || s->kind == KA__SIG_UNKNOWN) && (!s->size || s->size == a->size) &&
             (a->size == 1 || a->size == 2 || a->size == 4 || a->size == 8);
        break;
    case KA_ARG_BYTES: /* by the parameter's size where known, always by the device's limit */
        ok = (s->kind == KA__SIG_SCALAR || s->kind == KA__SIG_UNKNOWN) && (s->size ? s->size == a->size : a->size > 0) &&
             a->size <= max_bytes && a->u.ptr;
        break;
    default: ok = false;
    }
    if (KA_LIKELY(ok)) return KA_OK;
    char want[64];
    if (s->kind == KA__SIG_BUFFER) snprintf(want, sizeof want, "a buffer");
    else if (s->kind == KA__SIG_LOCAL) snprintf(want, sizeof want, "local memory");
    else if (s->size && s->type[0]) snprintf(want, sizeof want, "a value of %u bytes ('%s')", s->size, s->type);
    else if (s->size) snprintf(want, sizeof want, "a value of %u bytes", s->size);
    else snprintf(want, sizeof want, "a value of 1 to %u bytes", max_bytes);
    if (a->kind == KA_ARG_BYTES && !a->u.ptr)
        return ka__fail(KA_ERR_ARG_TYPE, "kernel '%s' argument %u ('%s'): bytes with a NULL pointer", k->name, i,
                        s->name);
    if (a->kind < KA_ARG_BUFFER || a->kind > KA_ARG_FLOAT)
        return ka__fail(KA_ERR_ARG_TYPE,
                        "kernel '%s' argument %u ('%s'): unknown argument kind %u (a zeroed or "
                        "uninitialized ka_arg?), expected %s",
                        k->name, i, s->name, a->kind, want);
    return ka__fail(KA_ERR_ARG_TYPE, "kernel '%s' argument %u ('%s'): got %s of %u bytes, expected %s", k->name,
                    i, s->name, kind_name(a->kind), a->size, want);
}

ka_status ka__arg_bad_buffer(const ka__kernel *k, uint32_t i, const ka__buffer *b) {
    if (!b)
        return ka__fail(KA_ERR_INVALID_HANDLE, "kernel '%s' argument %u ('%s'): invalid or released buffer", k->name,
                        i, k->sig[i].name);
    return ka__fail(KA_ERR_INVALID_ARGUMENT, "kernel '%s' argument %u ('%s'): a buffer of another device", k->name,
                    i, k->sig[i].name);
}

ka_status ka__args_check_full(const ka__kernel *k, const ka__device *dev, const ka_arg *args, uint32_t nargs, void **mem) {
    void *argp[KA_MAX_ARGS + 3];
    bool plain = true;
    return ka__args_check(k, dev, args, nargs, mem, argp, &plain, true);
}

