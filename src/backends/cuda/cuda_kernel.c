/* Kernels: KA_KERNEL's three entry points (1, 2 and 3 dimensions) found in
 * a loaded module by their mangled names' start, the signature (sizes from
 * the driver or the PTX, names and kinds from the KA_KERNEL declaration),
 * the work-group and shared-memory limits. */
#include "cuda_internal.h"
#include "kdecl.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* The name of the next `.entry` of PTX at or after *s (*len bytes, not
 * terminated); *s moves past it. NULL when there is none. */
static const char *ptx_next_entry(const char **s, size_t *len) {
    const char *ent = strstr(*s, ".entry ");
    if (!ent) return NULL;
    ent += 7;
    while (*ent == ' ' || *ent == '\t') ent++;
    *len = strcspn(ent, "( \t\n\v\f\r");
    *s = ent + *len;
    return ent;
}

/* Parameter sizes of `.entry name(...)` in PTX (name: nl bytes); -1 if not found. */
static int ptx_params(const char *ptx, const char *name, size_t nl, uint32_t *sizes, int cap) {
    size_t len;
    const char *s = ptx, *ent;
    while ((ent = ptx_next_entry(&s, &len)) != NULL && (len != nl || strncmp(ent, name, nl))) {}
    if (!ent) return -1;
    s = strchr(ent, '(');
    if (!s) return -1;
    const char *end = strchr(s, ')');
    if (!end) return -1;
    int n = 0;
    for (const char *p = strstr(s, ".param"); p && p < end && n < cap; p = strstr(p + 6, ".param")) {
        const char *stop = p;
        while (stop < end && *stop != ',') stop++;
        uint32_t elem = 0, count = 1;
        for (const char *t = p + 6; t < stop; t++) {
            if (*t == '.' && (t[1] == 'b' || t[1] == 'u' || t[1] == 's' || t[1] == 'f') && isdigit((unsigned char)t[2]))
                elem = (uint32_t)strtoul(t + 2, NULL, 10) / 8;
            else if (*t == '[')
                count = (uint32_t)strtoul(t + 1, NULL, 10);
        }
        sizes[n++] = elem * count;
    }
    return n;
}

/* The starts of KA_KERNEL's instantiations' mangled names for 1, 2 and 3
 * dimensions, _Z<length>ka_k_<name>ILi<dims>EE (the parameter types follow:
 * the length makes each unique), and the entry points found for them. A
 * kernel's name has no length limit: the starts are allocated. */
typedef struct entries {
    char *pre[3];
    size_t cap;         /* bytes of each pre[] */
    CUfunction fn[3];
    const char *ptx1;   /* the 1-D entry's name in the PTX (not terminated), ptx1_len bytes */
    size_t ptx1_len;
} entries;

/* name (n bytes, not terminated) as the entry point of the dimensions whose
 * start it has, taken by its name through cuModuleGetFunction: the listed
 * handles may be unloaded (lazy module loading). */
static ka_status take_entry(const ka__cu_module *m, entries *e, const char *name, size_t n, bool in_ptx) {
    for (int dim = 0; dim < 3; dim++) {
        size_t pl = strlen(e->pre[dim]);
        if (n < pl || memcmp(name, e->pre[dim], pl)) continue;
        char *z = ka__alloc(n + 1);
        if (!z) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
        memcpy(z, name, n);
        z[n] = 0;
        CUresult r = ka__cu.cuModuleGetFunction(&e->fn[dim], m->mod, z);
        ka__free(z, n + 1);
        if (r != CUDA_SUCCESS) return ka__cu_fail(r, "cuModuleGetFunction");
        if (dim == 0 && in_ptx) {
            e->ptx1 = name;
            e->ptx1_len = n;
        }
        return KA_OK;
    }
    return KA_OK;
}

/* The entry points of KA_KERNEL's instantiations for 1, 2 and 3 dimensions:
 * from the PTX where the module keeps it (an older driver), else from the
 * driver's list of the module's functions (CUDA 12.4). KA_ERR_KERNEL_NOT_FOUND
 * (no detail) when one is missing. */
static ka_status find_entries(const ka__cu_module *m, entries *e) {
    ka_status st = KA_OK;
    if (m->ptx) {
        size_t len;
        for (const char *s = m->ptx, *ent; st == KA_OK && (ent = ptx_next_entry(&s, &len)) != NULL;)
            st = take_entry(m, e, ent, len, true);
    } else if (ka__cu.cuModuleGetFunctionCount && ka__cu.cuModuleEnumerateFunctions && ka__cu.cuFuncGetName) {
        unsigned count = 0;
        CUresult r = ka__cu.cuModuleGetFunctionCount(&count, m->mod);
        if (r != CUDA_SUCCESS) return ka__cu_fail(r, "cuModuleGetFunctionCount");
        CUfunction *all = ka__calloc(count ? count : 1, sizeof *all);
        if (!all) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
        if ((r = ka__cu.cuModuleEnumerateFunctions(all, count, m->mod)) != CUDA_SUCCESS)
            st = ka__cu_fail(r, "cuModuleEnumerateFunctions");
        for (unsigned i = 0; i < count && st == KA_OK && r == CUDA_SUCCESS; i++) {
            const char *name = NULL;
            if (ka__cu.cuFuncGetName(&name, all[i]) == CUDA_SUCCESS && name) st = take_entry(m, e, name, strlen(name), false);
        }
        ka__free(all, sizeof *all * (count ? count : 1));
    }
    if (st != KA_OK) return st;
    return e->fn[0] && e->fn[1] && e->fn[2] ? KA_OK : KA_ERR_KERNEL_NOT_FOUND;
}

/* e's starts for native_name; false when out of memory. */
static bool entries_init(entries *e, const char *native_name) {
    memset(e, 0, sizeof *e);
    e->cap = strlen(native_name) + 32; /* "_Z", the length's digits, "ILi1EE", NUL */
    char *b = ka__alloc(3 * e->cap);
    if (!b) return false;
    for (int dim = 0; dim < 3; dim++) {
        e->pre[dim] = b + (size_t)dim * e->cap;
        snprintf(e->pre[dim], e->cap, "_Z%zu%sILi%dEE", strlen(native_name), native_name, dim + 1);
    }
    return true;
}

static void entries_free(entries *e) { ka__free(e->pre[0], 3 * e->cap); }

ka_status ka__cuda_kernel_create(ka__kernel *k) {
    ka__cu_module *m = k->var->native;
    ka__cu_dev *nd = k->prog->dev->native;
    ka_status st = ka__cuda_bind(nd);
    if (st != KA_OK) return st;
    CUfunction fn[3], f;
    CUresult r;
    entries e;
    if (!entries_init(&e, k->native_name)) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    st = find_entries(m, &e);
    entries_free(&e);
    memcpy(fn, e.fn, sizeof fn);
    if (st != KA_OK) {
        if (st != KA_ERR_KERNEL_NOT_FOUND) return st;
        /* A bare __kernel / __global__ of that name: not a libka kernel (no hidden range). */
        if (ka__cu.cuModuleGetFunction(&f, m->mod, k->name) == CUDA_SUCCESS)
            return ka__fail(KA_ERR_INVALID_ARGUMENT, "kernel '%s' is not declared with KA_KERNEL(...)",
                            k->name);
        return ka__fail(KA_ERR_KERNEL_NOT_FOUND,
                        "no kernel '%s' in the program (no entry point %s<1..3> declared by KA_KERNEL)",
                        k->name, k->native_name);
    }
    f = fn[0];

    /* ka_assert's record and the kernel's handle close the list (KA__ASSERT_PARAMS). */
    int hidden = k->prog->asserts ? 2 : 0;
    uint32_t sizes[KA_MAX_ARGS + 4];
    int n = 0;
    if (ka__cu.cuFuncGetParamInfo) {
        for (;; n++) {
            size_t off = 0, sz = 0;
            r = ka__cu.cuFuncGetParamInfo(f, (size_t)n, &off, &sz);
            if (r == CUDA_ERROR_INVALID_VALUE) break; /* past the last parameter */
            if (r != CUDA_SUCCESS) return ka__cu_fail(r, "cuFuncGetParamInfo");
            if (n == KA_MAX_ARGS + 1 + hidden) {
                n++;
                break;
            }
            sizes[n] = (uint32_t)sz;
        }
    } else {
        n = m->ptx && e.ptx1 ? ptx_params(m->ptx, e.ptx1, e.ptx1_len, sizes, KA_MAX_ARGS + 2 + hidden) : -1;
        if (n < 0)
            return ka__fail(KA_ERR_UNSUPPORTED, "kernel '%s': the driver lacks cuFuncGetParamInfo (CUDA 12.4) and the PTX "
                            "signature could not be read", k->name);
    }
    /* Too many first: past the limit the last sizes were not read. */
    if (n > KA_MAX_ARGS + 1 + hidden)
        return ka__fail(KA_ERR_UNSUPPORTED, "kernel '%s' has more than %d arguments", k->name, KA_MAX_ARGS);
    if (hidden && (n < 3 || sizes[n - 2] != 8 || sizes[n - 1] != 8))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "kernel '%s' lacks ka_assert's hidden parameters", k->name);
    n -= hidden;
    if (n == 0 || sizes[0] != 32)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "kernel '%s' does not take libka's hidden range first: declare it with "
                        "KA_KERNEL or KA_KERNEL_NOARGS", k->name);

    /* The limits every entry point allows: their register counts may differ. */
    int max_threads = 0, smem = 0;
    for (int i = 0; i < 3; i++) {
        int mt = 0, sm = 0;
        if ((r = ka__cu.cuFuncGetAttribute(&mt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn[i])) != CUDA_SUCCESS ||
            (r = ka__cu.cuFuncGetAttribute(&sm, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn[i])) != CUDA_SUCCESS)
            return ka__cu_fail(r, "cuFuncGetAttribute");
        if (i == 0 || mt < max_threads) max_threads = mt;
        if (sm > smem) smem = sm;
    }

    uint32_t nargs = (uint32_t)n - 1;
    ka__argsig *sig = ka__calloc(nargs ? nargs : 1, sizeof *sig);
    if (!sig) goto fail_sig;
    ka__cu_kern *nk = ka__calloc(1, sizeof *nk);
    if (!nk) goto fail_nk;
    /* Sizes from the driver; a buffer, a dynamic local-memory argument and a
     * 64-bit scalar are all 8 bytes, so kinds and names come from the
     * KA_KERNEL declaration when it can be read (kdecl.h), else stay unknown. */
    for (uint32_t i = 0; i < nargs; i++) {
        sig[i].kind = KA__SIG_UNKNOWN;
        sig[i].size = sizes[i + 1];
        snprintf(sig[i].name, sizeof sig[i].name, "#%u", i);
    }
    ka__kdecl_signature(k->prog->source, k->name, sig, nargs);
    memcpy(nk->fn, fn, sizeof nk->fn);
    nk->asserts = hidden != 0;
    pthread_mutex_init(&nk->lock, NULL);
    /* CUDA lets a block use 48 KiB of static + dynamic shared memory unless the
     * function opts in to more (cuda_launch.c raises it on demand). */
    atomic_init(&nk->dyn_smem, smem < 48 * 1024 ? (uint32_t)(48 * 1024 - smem) : 0);
    k->native = f;
    k->bk = nk;
    k->nargs = nargs;
    k->sig = sig; /* the core frees it */
    k->max_wg = (uint32_t)max_threads;
    k->pref_multiple = 32;
    k->local_mem = (uint64_t)smem;
    return KA_OK;

fail_nk:
    ka__free(sig, sizeof *sig * (nargs ? nargs : 1));
fail_sig:
    return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
}

void ka__cuda_kernel_release(ka__kernel *k) {
    ka__cu_kern *nk = k->bk;
    if (nk) {
        pthread_mutex_destroy(&nk->lock);
        ka__free(nk, sizeof *nk);
    }
    k->bk = NULL;
    k->native = NULL;
}
