/* Programs through NVRTC, kernels through the module loader.
 *
 * The build hooks (src/core/build.c composes the CUDA prelude + `#line 1
 * "<program name>"` + the user's source and runs the cache): NVRTC compiles
 * for the device's own architecture (a cubin: no JIT at load). When this NVRTC cannot
 * target the device (a newer GPU), it emits PTX for the newest architecture
 * it knows and the driver JIT-compiles it. OpenCL-style options are
 * translated where CUDA has an equivalent. */
#include "cuda_internal.h"
#include "kdecl.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* ---- options ------------------------------------------------------------ */
static const struct {
    const char *cl, *cuda; /* cuda NULL: dropped */
} option_map[] = {
    {"-cl-fast-relaxed-math", "--use_fast_math"},
    {"-cl-unsafe-math-optimizations", "--use_fast_math"},
    {"-cl-finite-math-only", NULL},
    {"-cl-mad-enable", "--fmad=true"},
    {"-cl-no-signed-zeros", NULL},
    {"-cl-denorms-are-zero", "--ftz=true"},
    {"-cl-opt-disable", "--dopt=off"},
    {"-cl-single-precision-constant", NULL},
    {"-cl-kernel-arg-info", NULL},
    {"-Werror", "--Werror=all-warnings"},
};

/* Splits opts on blanks (double quotes group) into argv, translating OpenCL
 * options; "-D X" becomes "-DX". buf holds the split copy. Returns argc. */
static int split_options(char *buf, const char **argv, int cap) {
    int argc = 0;
    char *s = buf;
    while (*s && argc < cap) {
        while (*s && isspace((unsigned char)*s)) s++;
        if (!*s) break;
        char *start = s, *o = s;
        bool quoted = false;
        while (*s && (quoted || !isspace((unsigned char)*s))) {
            if (*s == '"') quoted = !quoted;
            else *o++ = *s;
            s++;
        }
        if (*s) s++;
        *o = 0;
        const char *tok = start;
        if (!strncmp(tok, "-cl-std=", 8)) continue;
        bool mapped = false;
        for (size_t i = 0; i < sizeof option_map / sizeof option_map[0]; i++)
            if (!strcmp(tok, option_map[i].cl)) {
                if (option_map[i].cuda) argv[argc++] = option_map[i].cuda;
                mapped = true;
                break;
            }
        if (mapped) continue;
        /* "-D NAME": join with the next word, which the loop above wrote in place */
        if ((!strcmp(tok, "-D") || !strcmp(tok, "-U") || !strcmp(tok, "-I")) && *s) {
            while (*s && isspace((unsigned char)*s)) s++;
            char *next = s;
            while (*s && !isspace((unsigned char)*s)) s++;
            if (*s) *s++ = 0;
            /* tok is 2 chars + NUL at start; move next right after it */
            size_t nl = strlen(next);
            memmove(start + 2, next, nl + 1);
        }
        argv[argc++] = tok;
    }
    return argc;
}

/* ---- architecture -------------------------------------------------------- */
/* "--gpu-architecture=sm_XY" when NVRTC knows the device, else compute_ of the
 * newest it knows below it (PTX for the driver to JIT). */
static ka_status choose_arch(int cc, char *opt, size_t len, bool *cubin) {
    int n = 0, archs[256];
    if (ka__nvrtc.nvrtcGetNumSupportedArchs && ka__nvrtc.nvrtcGetSupportedArchs &&
        ka__nvrtc.nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0 && n <= 256)
        ka__nvrtc.nvrtcGetSupportedArchs(archs);
    else
        n = 0;
    bool have_cubin = ka__nvrtc.nvrtcGetCUBINSize && ka__nvrtc.nvrtcGetCUBIN;
    int best = 0;
    for (int i = 0; i < n; i++) {
        if (archs[i] == cc) best = cc;
        else if (archs[i] < cc && archs[i] > best && best != cc) best = archs[i];
    }
    if (n == 0) best = cc; /* old NVRTC without the query: try the device's own */
    if (!best)
        return ka__fail(KA_ERR_UNSUPPORTED, "NVRTC cannot compile for compute capability %d.%d (oldest supported: sm_%d)",
                        cc / 10, cc % 10, archs[0]);
    *cubin = best == cc && have_cubin;
    snprintf(opt, len, "--gpu-architecture=%s_%d", *cubin ? "sm" : "compute", best);
    return KA_OK;
}

/* ---- build --------------------------------------------------------------- */
static ka_status nvrtc_fail(nvrtcResult r, const char *call) {
    return ka__fail(r == NVRTC_ERROR_OUT_OF_MEMORY ? KA_ERR_OUT_OF_MEMORY : KA_ERR_BUILD_FAILED, "%s: %s", call,
                    ka__nvrtc_name(r));
}

/* Loads image (a cubin, or NUL-terminated PTX) into m->mod; keeps the PTX
 * when the driver lacks cuFuncGetParamInfo (signatures are read from it):
 * then image passes to m (*kept). */
static CUresult module_load(ka__cudev *d, void *image, size_t image_len, bool cubin, ka__cumod *m, bool *kept) {
    if (ka__cuda_bind(d) != KA_OK) return CUDA_ERROR_INVALID_CONTEXT;
    CUresult r = ka__cu.cuModuleLoadData(&m->mod, image);
    if (r != CUDA_SUCCESS) return r;
    if (!ka__cu.cuFuncGetParamInfo && !cubin) {
        m->ptx = image;
        m->ptx_len = image_len;
        *kept = true;
    }
    return CUDA_SUCCESS;
}

/* b->be_text: the architecture option; b->be_flags: */
#define CU_CUBIN 1u /* it makes a cubin (else PTX) */

/* NVRTC loaded, the architecture chosen, and the persistent kernel cache's
 * target: the architecture (cubin or PTX), the language standard and
 * NVRTC's version. Not cached when a cubin's signatures would need the PTX
 * (driver without cuFuncGetParamInfo). */
ka_status ka__cuda_build_target(ka__build *b) {
    ka_status st = ka__nvrtc_load();
    if (st != KA_OK) return st;
    ka__cudev *d = b->prog->dev->native;
    bool cubin = false;
    if ((st = choose_arch(d->cc, b->be_text, sizeof b->be_text, &cubin)) != KA_OK) return st;
    b->be_flags = cubin ? CU_CUBIN : 0;
    int maj = 0, min = 0;
    ka__nvrtc.nvrtcVersion(&maj, &min);
    snprintf(b->target_name, sizeof b->target_name, "cuda: %s -std=c++17 | nvrtc %d.%d", b->be_text, maj, min);
    b->cache = ka__cu.cuFuncGetParamInfo || !cubin;
    return KA_OK;
}

ka_status ka__cuda_module_load(ka__build *b, void *image, size_t len, void **module) {
    ka__cudev *d = b->prog->dev->native;
    bool cubin = b->be_flags & CU_CUBIN;
    CUresult r = CUDA_ERROR_INVALID_IMAGE;
    if (!cubin && (len == 0 || ((char *)image)[len - 1] != 0)) /* PTX is NUL-terminated text */
        return ka__build_fail(b, KA_ERR_BUILD_FAILED, "cuModuleLoadData (%s): %s", b->be_text, ka__cu_name(r));
    ka__cumod *m = ka__calloc(1, sizeof *m);
    if (!m) return ka__build_fail(b, KA_ERR_OUT_OF_MEMORY, "ka_program_build: out of memory");
    ka_status st;
    /* A fresh image: a context that cannot be bound fails the build with its own status. */
    if (!b->from_cache && (st = ka__cuda_bind(d)) != KA_OK) {
        ka__free(m, sizeof *m);
        return st;
    }
    bool kept = false;
    if ((r = module_load(d, image, len, cubin, m, &kept)) != CUDA_SUCCESS) {
        ka__free(m, sizeof *m);
        return ka__build_fail(b,
                              ka__cu_status(r) == KA_ERR_DEVICE_OUT_OF_MEMORY ? KA_ERR_DEVICE_OUT_OF_MEMORY
                                                                               : KA_ERR_BUILD_FAILED,
                              "cuModuleLoadData (%s): %s", b->be_text, ka__cu_name(r));
    }
    b->kept = kept;
    *module = m;
    return KA_OK;
}

/* NVRTC: the image (cubin or PTX) is the binary, loaded by the core through
 * ka__cuda_module_load and stored once the driver accepted it. */
ka_status ka__cuda_compile(ka__build *b, void **binary, size_t *size, void **module) {
    bool cubin = b->be_flags & CU_CUBIN;
    size_t olen = strlen(b->options);
    int cap = (int)(olen / 2 + 4);
    size_t argv_bytes = sizeof(const char *) * (size_t)cap;
    char *obuf = ka__alloc(olen + 1);
    const char **argv = ka__alloc(argv_bytes);
    char *log = NULL;
    void *image = NULL;
    size_t log_len = 0, image_len = 0;
    nvrtcProgram prog = NULL;
    ka_status st;
    if (!obuf || !argv) {
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_program_build: out of memory");
        goto out;
    }
    memcpy(obuf, b->options, olen + 1);
    int argc = 0;
    argv[argc++] = b->be_text;
    argv[argc++] = "-std=c++17";
    argc += split_options(obuf, argv + argc, cap - argc);

    nvrtcResult nr = ka__nvrtc.nvrtcCreateProgram(&prog, b->source, "kernel.cu", 0, NULL, NULL);
    if (nr != NVRTC_SUCCESS) {
        prog = NULL;
        st = nvrtc_fail(nr, "nvrtcCreateProgram");
        goto out;
    }
    nr = ka__nvrtc.nvrtcCompileProgram(prog, argc, argv);
    if (nr != NVRTC_SUCCESS) {
        st = nvrtc_fail(nr, "nvrtcCompileProgram");
        if (ka__nvrtc.nvrtcGetProgramLogSize(prog, &log_len) == NVRTC_SUCCESS && log_len > 1 &&
            (log = ka__alloc(log_len)) && ka__nvrtc.nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS) {
            ka__append_detail("\n");
            ka__append_detail(log);
        }
        if (nr == NVRTC_ERROR_INVALID_OPTION) {
            ka__append_detail("\noptions:");
            for (int i = 0; i < argc; i++) {
                ka__append_detail(" ");
                ka__append_detail(argv[i]);
            }
        }
        goto out;
    }
    nr = cubin ? ka__nvrtc.nvrtcGetCUBINSize(prog, &image_len) : ka__nvrtc.nvrtcGetPTXSize(prog, &image_len);
    if (nr != NVRTC_SUCCESS || !(image = ka__alloc(image_len))) {
        st = nr != NVRTC_SUCCESS ? nvrtc_fail(nr, cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize")
                                 : ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_program_build: out of memory");
        goto out;
    }
    nr = cubin ? ka__nvrtc.nvrtcGetCUBIN(prog, image) : ka__nvrtc.nvrtcGetPTX(prog, image);
    if (nr != NVRTC_SUCCESS) {
        st = nvrtc_fail(nr, cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX");
        goto out;
    }
    if (!ka__cu.cuFuncGetParamInfo && cubin) {
        /* Old driver: signatures come from the PTX, kept beside the cubin's
         * module; such a build is not cached (ka__cuda_build_target). */
        if ((st = ka__cuda_module_load(b, image, image_len, module)) != KA_OK) goto out;
        ka__cumod *m = *module;
        size_t ptx_len = 0;
        if (ka__nvrtc.nvrtcGetPTXSize(prog, &ptx_len) == NVRTC_SUCCESS && (m->ptx = ka__alloc(ptx_len)) &&
            ka__nvrtc.nvrtcGetPTX(prog, m->ptx) == NVRTC_SUCCESS)
            m->ptx_len = ptx_len;
        else if (m->ptx) {
            ka__free(m->ptx, ptx_len);
            m->ptx = NULL;
        }
    } else {
        *binary = image;
        *size = image_len;
        image = NULL;
    }
    st = KA_OK;
out:
    if (prog) ka__nvrtc.nvrtcDestroyProgram(&prog);
    if (log) ka__free(log, log_len);
    if (image) ka__free(image, image_len);
    if (argv) ka__free(argv, argv_bytes);
    if (obuf) ka__free(obuf, olen + 1);
    return st;
}

void ka__cuda_module_release(ka__program *p, void *module, uint32_t target) {
    (void)target;
    ka__cumod *m = module;
    if (ka__cuda_bind(p->dev->native) == KA_OK) ka__cu.cuModuleUnload(m->mod);
    if (m->ptx) ka__free(m->ptx, m->ptx_len);
    ka__free(m, sizeof *m);
}

/* ---- kernels ------------------------------------------------------------- */
/* The name of the next `.entry` of PTX at or after *s (*len bytes, not
 * terminated); *s moves past it. NULL when there is none. */
static const char *ptx_next_entry(const char **s, size_t *len) {
    const char *e = strstr(*s, ".entry ");
    if (!e) return NULL;
    e += 7;
    while (*e == ' ' || *e == '\t') e++;
    *len = strcspn(e, "( \t\n\v\f\r");
    *s = e + *len;
    return e;
}

/* Parameter sizes of `.entry name(...)` in PTX; -1 if not found. */
static int ptx_params(const char *ptx, const char *name, uint32_t *sizes, int cap) {
    size_t nl = strlen(name), len;
    const char *s = ptx, *e;
    while ((e = ptx_next_entry(&s, &len)) != NULL && (len != nl || strncmp(e, name, nl))) {}
    if (!e) return -1;
    s = strchr(e, '(');
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

/* The start of KA_KERNEL's instantiation for `dims` dimensions' mangled
 * name, _Z<length>ka_k_<name>ILi<dims>EE (the parameter types follow): the
 * length makes it unique. 0, or -1 when it does not fit. */
static int entry_prefix(const char *native_name, int dims, char *out, size_t cap) {
    int n = snprintf(out, cap, "_Z%zu%sILi%dEE", strlen(native_name), native_name, dims);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* name (NUL-terminated) as the entry point fn[d] when it starts with pre[d];
 * mangled (cap bytes) gets the 1-D one's name. */
static CUresult take_entry(const ka__cumod *m, char pre[3][300], const char *name, CUfunction fn[3], char *mangled,
                           size_t cap) {
    for (int d = 0; d < 3; d++) {
        if (strncmp(name, pre[d], strlen(pre[d]))) continue;
        CUresult r = ka__cu.cuModuleGetFunction(&fn[d], m->mod, name);
        if (r != CUDA_SUCCESS) return r;
        if (d == 0) snprintf(mangled, cap, "%s", name);
    }
    return CUDA_SUCCESS;
}

/* The entry points of KA_KERNEL's instantiations for 1, 2 and 3 dimensions:
 * from the PTX where the module keeps it (an older driver), else from the
 * driver's list of the module's functions (CUDA 12.4). Found: every fn set;
 * mangled (cap bytes) the first one's name. Each is taken by its name
 * through cuModuleGetFunction: the listed handles may be unloaded (lazy
 * module loading). */
static ka_status find_entries(const ka__cumod *m, const char *native_name, CUfunction fn[3], char *mangled, size_t cap) {
    char pre[3][300];
    for (int d = 0; d < 3; d++)
        if (entry_prefix(native_name, d + 1, pre[d], sizeof pre[d])) return KA_ERR_KERNEL_NOT_FOUND;
    fn[0] = fn[1] = fn[2] = NULL;
    mangled[0] = 0;
    CUresult r = CUDA_SUCCESS;
    if (m->ptx) {
        size_t len;
        for (const char *s = m->ptx, *e; r == CUDA_SUCCESS && (e = ptx_next_entry(&s, &len)) != NULL;) {
            char name[512];
            if (len >= cap || len >= sizeof name) continue; /* its signature could not be read back by name */
            memcpy(name, e, len);
            name[len] = 0;
            r = take_entry(m, pre, name, fn, mangled, cap);
        }
    } else if (ka__cu.cuModuleGetFunctionCount && ka__cu.cuModuleEnumerateFunctions && ka__cu.cuFuncGetName) {
        unsigned count = 0;
        if ((r = ka__cu.cuModuleGetFunctionCount(&count, m->mod)) != CUDA_SUCCESS)
            return ka__cu_fail(r, "cuModuleGetFunctionCount");
        CUfunction *all = ka__calloc(count ? count : 1, sizeof *all);
        if (!all) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_kernel_get: out of memory");
        if ((r = ka__cu.cuModuleEnumerateFunctions(all, count, m->mod)) != CUDA_SUCCESS) {
            ka__free(all, sizeof *all * (count ? count : 1));
            return ka__cu_fail(r, "cuModuleEnumerateFunctions");
        }
        for (unsigned i = 0; i < count && r == CUDA_SUCCESS; i++) {
            const char *name = NULL;
            if (ka__cu.cuFuncGetName(&name, all[i]) == CUDA_SUCCESS && name) r = take_entry(m, pre, name, fn, mangled, cap);
        }
        ka__free(all, sizeof *all * (count ? count : 1));
    }
    if (r != CUDA_SUCCESS) return ka__cu_fail(r, "cuModuleGetFunction");
    return fn[0] && fn[1] && fn[2] ? KA_OK : KA_ERR_KERNEL_NOT_FOUND;
}

ka_status ka__cuda_kernel_create(ka__kernel *k) {
    ka__cumod *m = k->var->native;
    ka__cudev *d = k->prog->dev->native;
    ka_status st = ka__cuda_bind(d);
    if (st != KA_OK) return st;
    CUfunction fn[3], f;
    char mangled[512];
    CUresult r;
    if ((st = find_entries(m, k->native_name, fn, mangled, sizeof mangled)) != KA_OK) {
        if (st != KA_ERR_KERNEL_NOT_FOUND) return st;
        /* A bare __kernel / __global__ of that name: not a libka kernel (no hidden range). */
        if (ka__cu.cuModuleGetFunction(&f, m->mod, k->name) == CUDA_SUCCESS)
            return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_kernel_get: kernel '%s' is not declared with KA_KERNEL(...)",
                            k->name);
        return ka__fail(KA_ERR_KERNEL_NOT_FOUND,
                        "ka_kernel_get: no kernel '%s' in the program (no entry point %s<1..3> declared by KA_KERNEL)",
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
        n = m->ptx ? ptx_params(m->ptx, mangled, sizes, KA_MAX_ARGS + 2 + hidden) : -1;
        if (n < 0)
            return ka__fail(KA_ERR_UNSUPPORTED, "kernel '%s': the driver lacks cuFuncGetParamInfo (CUDA 12.4) and the PTX "
                            "signature could not be read", k->name);
    }
    /* Too many first: past the limit the last sizes were not read. */
    if (n > KA_MAX_ARGS + 1 + hidden)
        return ka__fail(KA_ERR_UNSUPPORTED, "kernel '%s' has more than %d arguments", k->name, KA_MAX_ARGS);
    if (hidden && (n < 3 || sizes[n - 2] != 8 || sizes[n - 1] != 8))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_kernel_get: kernel '%s' lacks ka_assert's hidden parameters", k->name);
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
    ka__cukern *ck = ka__calloc(1, sizeof *ck);
    if (!sig || !ck) {
        if (sig) ka__free(sig, sizeof *sig * (nargs ? nargs : 1));
        if (ck) ka__free(ck, sizeof *ck);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_kernel_get: out of memory");
    }
    /* Sizes from the driver; a buffer, a dynamic local-memory argument and a
     * 64-bit scalar are all 8 bytes, so kinds and names come from the
     * KA_KERNEL declaration when it can be read (kdecl.h), else stay unknown. */
    for (uint32_t i = 0; i < nargs; i++) {
        sig[i].kind = KA__SIG_UNKNOWN;
        sig[i].size = sizes[i + 1];
        snprintf(sig[i].name, sizeof sig[i].name, "#%u", i);
    }
    ka__kdecl_signature(k->prog->source, k->name, sig, nargs);
    memcpy(ck->fn, fn, sizeof ck->fn);
    ck->asserts = hidden != 0;
    pthread_mutex_init(&ck->lock, NULL);
    /* CUDA lets a block use 48 KiB of static + dynamic shared memory unless the
     * function opts in to more (cuda_backend.c raises it on demand). */
    atomic_init(&ck->dyn_smem, smem < 48 * 1024 ? (uint32_t)(48 * 1024 - smem) : 0);
    k->native = f;
    k->bk = ck;
    k->nargs = nargs;
    k->sig = sig; /* the core frees it */
    k->max_wg = (uint32_t)max_threads;
    k->pref_multiple = 32;
    k->local_mem = (uint64_t)smem;
    return KA_OK;
}

void ka__cuda_kernel_release(ka__kernel *k) {
    ka__cukern *ck = k->bk;
    if (ck) {
        pthread_mutex_destroy(&ck->lock);
        ka__free(ck, sizeof *ck);
    }
    k->bk = NULL;
    k->native = NULL;
}
