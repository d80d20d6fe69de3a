/* Kernels: the cl_kernel, its argument signature (kinds from the address
 * qualifier, sizes from the type name or PoCL's size probe) and its
 * work-group limits. */
#include "cl_internal.h"

#include <stdio.h>
#include <string.h>

static uint32_t type_size(const char *t) {
    static const struct { const char *name; uint32_t size; } base[] = {
        {"char", 1}, {"uchar", 1}, {"bool", 1}, {"short", 2}, {"ushort", 2}, {"half", 2}, {"int", 4},
        {"uint", 4}, {"float", 4}, {"long", 8}, {"ulong", 8}, {"double", 8}, {"size_t", 8},
        {"ptrdiff_t", 8}, {"intptr_t", 8}, {"uintptr_t", 8}, {"ulong4", 32},
    };
    if (!strncmp(t, "unsigned ", 9)) t += 9, t = !strncmp(t, "char", 4) ? "uchar" : t;
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
        size_t n = strlen(base[i].name);
        if (strncmp(t, base[i].name, n)) continue;
        const char *rest = t + n;
        if (!*rest) return base[i].size;
        int w = 0;
        if (sscanf(rest, "%d", &w) == 1 && (w == 2 || w == 3 || w == 4 || w == 8 || w == 16))
            return base[i].size * (uint32_t)(w == 3 ? 4 : w);
    }
    return 0; /* struct or unknown: the driver checks the size */
}

/* A by-value parameter's size from its probe (cl_program.c), 0 if none. */
static uint32_t probed_size(ka__kernel *k, uint32_t i) {
    char name[KA__NAME_DIRECT_MAX + 32]; /* the probe is named after the kernel's symbol (cl_program.c) */
    if (snprintf(name, sizeof name, "ka__sizeof_%s_%u", k->native_name + strlen(KA__KERNEL_PREFIX), i) >= (int)sizeof name)
        return 0;
    cl_int err;
    cl_kernel pk = clCreateKernel(k->var->native, name, &err);
    if (err != CL_SUCCESS) return 0;
    size_t w[3] = {0, 0, 0};
    if (clGetKernelWorkGroupInfo(pk, ka__cl_dev_of(k->prog->dev)->device, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof w, w,
                                 NULL) != CL_SUCCESS)
        w[0] = 0;
    clReleaseKernel(pk);
    return w[0] <= UINT32_MAX ? (uint32_t)w[0] : 0;
}

/* At least one entry, as for k->sig: a kernel without user arguments too. */
static size_t argcache_count(const ka__kernel *k) { return k->nargs ? k->nargs : 1; }

ka__cl_argcache *ka__cl_argcache_new(const ka__kernel *k) {
    return ka__calloc(argcache_count(k), sizeof(ka__cl_argcache));
}

void ka__cl_argcache_free(const ka__kernel *k, ka__cl_argcache *cache) {
    ka__free(cache, sizeof(ka__cl_argcache) * argcache_count(k));
}

ka_status ka__cl_kernel_create(ka__kernel *k) {
    ka__cl_dev *nd = ka__cl_dev_of(k->prog->dev);
    cl_int err;
    cl_kernel ck = clCreateKernel(k->var->native, k->native_name, &err);
    if (err == CL_INVALID_KERNEL_NAME) {
        /* A bare __kernel of that name: not a libka kernel (no hidden range). */
        cl_int e2;
        cl_kernel bare = clCreateKernel(k->var->native, k->name, &e2);
        if (e2 == CL_SUCCESS) {
            clReleaseKernel(bare);
            return ka__fail(KA_ERR_INVALID_ARGUMENT, "kernel '%s' is not declared with KA_KERNEL(...)",
                            k->name);
        }
        if (strlen(k->name) > KA__NAME_DIRECT_MAX)
            return ka__fail(KA_ERR_KERNEL_NOT_FOUND,
                            "no kernel '%.64s...' (%zu characters) in the program: a name over %d characters is "
                            "compiled as %s, which libka gives a KA_KERNEL(name, ...) or KA_KERNEL_NOARGS(name) "
                            "that spells the name out whole (not one a macro makes)",
                            k->name, strlen(k->name), KA__NAME_DIRECT_MAX, k->native_name);
        return ka__fail(KA_ERR_KERNEL_NOT_FOUND, "no kernel '%s' in the program (clCreateKernel(\"%s\"): %s)",
                        k->name, k->native_name, ka__cl_error_name(err));
    }
    if (err != CL_SUCCESS) return ka__cl_fail("clCreateKernel", err);
    k->native = ck;
    cl_uint n = 0;
    KA__CL_CHECK("clGetKernelInfo", clGetKernelInfo(ck, CL_KERNEL_NUM_ARGS, sizeof n, &n, NULL));
    char name[64] = "";
    if (n == 0 || clGetKernelArgInfo(ck, 0, CL_KERNEL_ARG_NAME, sizeof name, name, NULL) != CL_SUCCESS ||
        strcmp(name, "ka__nd"))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "kernel '%s' is not declared with KA_KERNEL(...)", k->name);
    /* ka_assert's record and the kernel's handle close the list (KA__ASSERT_PARAMS). */
    bool asserts = k->prog->asserts;
    if (asserts && (n < 3 || clGetKernelArgInfo(ck, n - 2, CL_KERNEL_ARG_NAME, sizeof name, name, NULL) != CL_SUCCESS ||
                    strcmp(name, "ka__arec")))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "kernel '%s' lacks ka_assert's hidden parameters", k->name);
    if (asserts) n -= 2;
    k->nargs = n - 1;
    k->sig = ka__calloc(k->nargs ? k->nargs : 1, sizeof *k->sig);
    if (!k->sig) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    ka__cl_kern *nk = ka__calloc(1, sizeof *nk);
    if (!nk) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    nk->asserts = asserts;
    k->bk = nk;
    if (!(nk->cache = ka__cl_argcache_new(k))) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    for (cl_uint i = 1; i < n; i++) {
        ka__argsig *s = &k->sig[i - 1];
        cl_kernel_arg_address_qualifier aq = CL_KERNEL_ARG_ADDRESS_PRIVATE;
        char tname[64] = "";
        KA__CL_CHECK("clGetKernelArgInfo(CL_KERNEL_ARG_ADDRESS_QUALIFIER)",
                     clGetKernelArgInfo(ck, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq, &aq, NULL));
        /* A type name longer than tname: CL_INVALID_VALUE, and the size stays unknown (0), checked by the driver. */
        if (clGetKernelArgInfo(ck, i, CL_KERNEL_ARG_TYPE_NAME, sizeof tname, tname, NULL) != CL_SUCCESS) tname[0] = 0;
        if (clGetKernelArgInfo(ck, i, CL_KERNEL_ARG_NAME, sizeof s->name, s->name, NULL) != CL_SUCCESS) s->name[0] = 0;
        s->name[sizeof s->name - 1] = 0;
        tname[sizeof tname - 1] = 0;
        if (aq == CL_KERNEL_ARG_ADDRESS_GLOBAL || aq == CL_KERNEL_ARG_ADDRESS_CONSTANT) {
            s->kind = KA__SIG_BUFFER;
            s->size = sizeof(cl_mem);
        } else if (aq == CL_KERNEL_ARG_ADDRESS_LOCAL) {
            s->kind = KA__SIG_LOCAL;
        } else {
            s->kind = KA__SIG_SCALAR;
            s->size = strchr(tname, '*') ? 0 : type_size(tname);
            if (!s->size && nd->pocl && !k->var->plain) s->size = probed_size(k, i - 1);
        }
    }
    size_t wg = 0, mult = 0;
    cl_ulong lm = 0;
    KA__CL_CHECK("clGetKernelWorkGroupInfo",
                 clGetKernelWorkGroupInfo(ck, nd->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL));
    /* Hints only: a driver that cannot say leaves them 0 (no preference, unknown). */
    if (clGetKernelWorkGroupInfo(ck, nd->device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof mult, &mult, NULL))
        mult = 0;
    if (clGetKernelWorkGroupInfo(ck, nd->device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL)) lm = 0;
    k->max_wg = wg > UINT32_MAX ? UINT32_MAX : (uint32_t)wg;
    k->pref_multiple = (uint32_t)mult;
    k->local_mem = lm;
    return KA_OK;
}

void ka__cl_kernel_release(ka__kernel *k) {
    if (k->native) clReleaseKernel(k->native);
    ka__cl_kern *nk = k->bk;
    if (!nk) return;
    ka__cl_argcache_free(k, nk->cache);
    ka__free(nk, sizeof *nk);
}
