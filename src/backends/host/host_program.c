/* Programs and kernels of the host back-end: a build compiles the source
 * (host_compile.c, host_source.c) and loads the object; a kernel is its
 * entry function and its parameters' table, both read from the object. */
#include "host_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* ka__fiber_barrier, as the kernels' ka_barrier() calls it. */
static void barrier_hook(void) { ka__fiber_barrier(); }

/* The compile target beyond the device's info (the CPU's model name): the
 * compiler (its resolved path, size and mtime: an upgrade changes them) and
 * the CPU's feature flags, which -march=native compiles for (a cache shared
 * by machines of one model name whose flags differ must not mix them). */
ka_status ka__host_build_target(ka__build *b) {
    ka__hdev *hd = b->prog->dev->native;
    snprintf(b->target_name, sizeof b->target_name, "%s", hd->target);
    return KA_OK;
}

/* The build hooks' compile: the object from the user's source, which the
 * back-end composes itself (host_source.c: its per-kernel entries stand
 * between the prelude and the user's source); b->source, the core's
 * composition of the same defines, prelude and source, keys the cache. */
ka_status ka__host_compile_hook(ka__build *b, void **binary, size_t *size, void **module) {
    *module = NULL;
    return ka__host_compile(b->prog->dev->native, b, binary, size);
}

ka_status ka__host_load_hook(ka__build *b, void *binary, size_t size, void **module) {
    ka__hprog *hp;
    ka_status st = ka__host_load(b, binary, size, &hp);
    if (st != KA_OK) return st;
    /* Atomic, as the object's reads: a later object may be mapped where an
     * unloaded one was, which ThreadSanitizer does not see (ld.so unmaps
     * without its interceptor), so plain accesses there read as races. */
    void (**hook)(void) = (void (**)(void))dlsym(hp->dl, "ka__barrier_fn");
    if (hook) __atomic_store_n(hook, barrier_hook, __ATOMIC_RELAXED);
    *module = hp;
    return KA_OK;
}

void ka__host_module_release(ka__program *p, void *module, uint32_t target) {
    (void)p;
    (void)target;
    /* A command enqueued before may still run its kernels. */
    ka__host_defer(p->dev->native, KA__HD_MODULE, module, sizeof(ka__hprog));
}

/* The object's symbol prefix + the kernel's name; buf holds the name and
 * the longest prefix (a name has no length limit). */
static void *sym(ka__hprog *hp, char *buf, const char *prefix, const char *name) {
    strcat(strcpy(buf, prefix), name);
    return dlsym(hp->dl, buf);
}

ka_status ka__host_kernel_create(ka__kernel *k) {
    ka__hprog *hp = k->var->native;
    size_t cap = strlen(k->name) + sizeof "ka__argnames_";
    char *b = ka__alloc(cap);
    if (!b) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    const unsigned *nargs = sym(hp, b, "ka__nargs_", k->name), *sizes = sym(hp, b, "ka__argsz_", k->name);
    const unsigned char *kinds = sym(hp, b, "ka__argkind_", k->name);
    const char *names = sym(hp, b, "ka__argnames_", k->name);
    const unsigned long *local = sym(hp, b, "ka__localsz_", k->name);
    static const char *const prefix[] = {"ka__rows_", "ka__groups_", "ka__item_"};
    void *fn = NULL;
    uint8_t path = 0;
    while (path < 3 && !(fn = sym(hp, b, prefix[path], k->name))) path++;
    ka__free(b, cap);
    if (!nargs || !sizes || !kinds || !names || !local || !fn)
        return ka__fail(KA_ERR_KERNEL_NOT_FOUND, "no kernel '%s' in the program (no KA_KERNEL or "
                        "KA_KERNEL_NOARGS of that name in the source the compiler saw)", k->name);
    uint32_t n = *nargs;
    size_t hsize = sizeof(ka__hkern) + strlen(k->name) + 1;
    ka__hkern *hk = ka__calloc(1, hsize);
    ka__argsig *sig = ka__calloc(n ? n : 1, sizeof *sig);
    if (!hk || !sig) {
        if (hk) ka__free(hk, hsize);
        if (sig) ka__free(sig, sizeof *sig * (n ? n : 1));
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (uint32_t i = 0; i < n; i++, names += strlen(names) + 1) {
        sig[i].kind = kinds[i];
        sig[i].size = kinds[i] == KA__SIG_LOCAL ? 0 : kinds[i] == KA__SIG_BUFFER ? 8 : sizes[i];
        snprintf(sig[i].name, sizeof sig[i].name, "%s", names);
        hk->has_local_arg |= kinds[i] == KA__SIG_LOCAL;
    }
    hk->path = path;
    hk->size = hsize;
    memcpy(hk->name, k->name, hsize - sizeof(ka__hkern));
    /* dlsym's object pointer to the function pointer it is (POSIX). */
    memcpy(&hk->fn, &fn, sizeof fn);
    k->native = hk;
    k->bk = hk;
    k->nargs = n;
    k->sig = sig;
    k->max_wg = KA__HOST_MAX_WG;
    k->pref_multiple = 1;
    k->local_mem = *local;
    return KA_OK;
}

void ka__host_kernel_release(ka__kernel *k) {
    ka__hkern *hk = k->bk;
    if (hk) ka__host_defer(k->prog->dev->native, KA__HD_KERNEL, hk, hk->size);
}
