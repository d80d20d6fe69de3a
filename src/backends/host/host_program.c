/* Programs and kernels of the host back-end: a build composes the source
 * (host_source.c), compiles it and loads the object (host_compile.c); a
 * kernel is its entry function and its parameters' sizes from the object,
 * their names and kinds from the declaration (kdecl.h). */
#include "host_internal.h"
#include "kdecl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* ka__fiber_barrier, as the kernels' ka_barrier() calls it. */
static void barrier_hook(void) { ka__fiber_barrier(); }

ka_status ka__host_program_build(ka__program *p, ka__variant *v, const char *options) {
    ka__hdev *hd = p->dev->native;
    char *src;
    size_t len;
    ka_status st = ka__host_compose(p->source, &src, &len);
    if (st != KA_OK) return st;
    void *bin = NULL;
    size_t n = 0;
    st = ka__host_compile(hd->cc, src, options, &bin, &n);
    ka__free(src, len);
    if (st != KA_OK) return st;
    ka__hprog *hp;
    st = ka__host_load(bin, n, &hp);
    ka__free(bin, n ? n : 1);
    if (st != KA_OK) return st;
    void (**hook)(void) = (void (**)(void))dlsym(hp->dl, "ka__barrier_fn");
    if (hook) *hook = barrier_hook;
    v->native = hp;
    return KA_OK;
}

void ka__host_program_release(ka__program *p, ka__variant *v) {
    (void)p;
    ka__hprog *hp = v->native;
    dlclose(hp->dl);
    ka__free(hp, sizeof *hp);
}

static void *sym(ka__hprog *hp, const char *prefix, const char *name) {
    char buf[256];
    int n = snprintf(buf, sizeof buf, "%s%s", prefix, name);
    if (n < 0 || (size_t)n >= sizeof buf) return NULL;
    return dlsym(hp->dl, buf);
}

/* Names and kinds from the declaration: a pointer or KA_CONST(T) a buffer,
 * KA_LOCAL_ARG(T) local memory, anything else a value of its size. */
static void sig_fill(const ka__kparam *par, uint32_t n, const unsigned *sizes, ka__argsig *sig, bool *local) {
    *local = false;
    for (uint32_t i = 0; i < n; i++) {
        size_t len = (size_t)(par[i].name_end - par[i].name);
        if (len > sizeof sig[i].name - 1) len = sizeof sig[i].name - 1;
        memcpy(sig[i].name, par[i].name, len);
        sig[i].name[len] = 0;
        const char *tb = par[i].type, *te = par[i].type_end;
        bool star = memchr(tb, '*', (size_t)(te - tb)) != NULL;
        bool loc = ka__kdecl_has(tb, te, "KA_LOCAL_ARG"), cnst = ka__kdecl_has(tb, te, "KA_CONST");
        *local |= loc;
        if (loc) sig[i].kind = KA__SIG_LOCAL, sig[i].size = 0;
        else if (star || cnst) sig[i].kind = KA__SIG_BUFFER, sig[i].size = 8;
        else sig[i].kind = KA__SIG_SCALAR, sig[i].size = sizes[i];
    }
}

ka_status ka__host_kernel_create(ka__kernel *k) {
    ka__hprog *hp = k->var->native;
    const unsigned *sizes = sym(hp, "ka__argsz_", k->name);
    if (!sizes)
        return ka__fail(KA_ERR_KERNEL_NOT_FOUND, "ka_kernel_get: no kernel '%s' in the program (no KA_KERNEL of that name "
                        "in the source the compiler saw)", k->name);
    ka__kparam *par = ka__alloc(sizeof(ka__kparam) * KA_MAX_ARGS);
    if (!par) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_kernel_get: out of memory");
    uint32_t n = 0;
    /* KA_KERNEL_NOARGS kernels have no KA_KERNEL declaration: no parameters. */
    if (!ka__kdecl_find(k->prog->source, k->name, par, KA_MAX_ARGS, &n)) n = 0;
    ka__hkern *hk = ka__calloc(1, sizeof *hk);
    ka__argsig *sig = ka__calloc(n ? n : 1, sizeof *sig);
    if (!hk || !sig) {
        ka__free(par, sizeof(ka__kparam) * KA_MAX_ARGS);
        if (hk) ka__free(hk, sizeof *hk);
        if (sig) ka__free(sig, sizeof *sig * (n ? n : 1));
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_kernel_get: out of memory");
    }
    sig_fill(par, n, sizes, sig, &hk->has_local_arg);
    ka__free(par, sizeof(ka__kparam) * KA_MAX_ARGS);
    hk->path = (uint8_t)ka__host_path_of(k->prog->source, k->name);
    static const char *const prefix[] = {"ka__rows_", "ka__groups_", "ka__item_"};
    void *fn = sym(hp, prefix[hk->path], k->name);
    if (!fn) {
        ka__free(hk, sizeof *hk);
        ka__free(sig, sizeof *sig * (n ? n : 1));
        return ka__fail(KA_ERR_KERNEL_NOT_FOUND, "ka_kernel_get: kernel '%s' has no %s entry in its object", k->name,
                        prefix[hk->path]);
    }
    /* dlsym's object pointer to the function pointer it is (POSIX). */
    memcpy(&hk->fn, &fn, sizeof fn);
    k->native = hk;
    k->bk = hk;
    k->nargs = n;
    k->sig = sig;
    k->max_wg = KA__HOST_MAX_WG;
    k->pref_multiple = 1;
    k->local_mem = 0;
    return KA_OK;
}

void ka__host_kernel_release(ka__kernel *k) {
    if (k->bk) ka__free(k->bk, sizeof(ka__hkern));
}
