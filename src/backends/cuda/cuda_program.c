/* Programs through NVRTC, loaded as modules (the build hooks).
 *
 * The build hooks (src/core/build.c composes the CUDA prelude + `#line 1
 * "<program name>"` + the user's source and runs the cache): NVRTC compiles
 * for the device's own architecture (a cubin: no JIT at load). When this NVRTC cannot
 * target the device (a newer GPU), it emits PTX for the newest architecture
 * it knows and the driver JIT-compiles it. OpenCL-style options are
 * translated where CUDA has an equivalent. */
#include "cuda_internal.h"

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
static CUresult module_load(ka__cu_dev *nd, void *image, size_t image_len, bool cubin, ka__cu_module *m, bool *kept) {
    if (ka__cuda_bind(nd) != KA_OK) return CUDA_ERROR_INVALID_CONTEXT;
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
    ka__cu_dev *nd = b->prog->dev->native;
    bool cubin = false;
    if ((st = choose_arch(nd->cc, b->be_text, sizeof b->be_text, &cubin)) != KA_OK) return st;
    b->be_flags = cubin ? CU_CUBIN : 0;
    int maj = 0, min = 0;
    ka__nvrtc.nvrtcVersion(&maj, &min);
    snprintf(b->target_name, sizeof b->target_name, "cuda: %s -std=c++17 | nvrtc %d.%d", b->be_text, maj, min);
    b->cache = ka__cu.cuFuncGetParamInfo || !cubin;
    return KA_OK;
}

ka_status ka__cuda_module_load(ka__build *b, void *image, size_t len, void **module) {
    ka__cu_dev *nd = b->prog->dev->native;
    bool cubin = b->be_flags & CU_CUBIN;
    CUresult r = CUDA_ERROR_INVALID_IMAGE;
    if (!cubin && (len == 0 || ((char *)image)[len - 1] != 0)) /* PTX is NUL-terminated text */
        return ka__build_fail(b, KA_ERR_BUILD_FAILED, "cuModuleLoadData (%s): %s", b->be_text, ka__cu_name(r));
    ka__cu_module *m = ka__calloc(1, sizeof *m);
    if (!m) return ka__build_fail(b, KA_ERR_OUT_OF_MEMORY, "out of memory");
    ka_status st;
    /* A fresh image: a context that cannot be bound fails the build with its own status. */
    if (!b->from_cache && (st = ka__cuda_bind(nd)) != KA_OK) goto fail;
    bool kept = false;
    if ((r = module_load(nd, image, len, cubin, m, &kept)) != CUDA_SUCCESS) {
        st = ka__build_fail(b,
                            ka__cu_status(r) == KA_ERR_DEVICE_OUT_OF_MEMORY ? KA_ERR_DEVICE_OUT_OF_MEMORY
                                                                             : KA_ERR_BUILD_FAILED,
                            "cuModuleLoadData (%s): %s", b->be_text, ka__cu_name(r));
        goto fail;
    }
    b->kept = kept;
    *module = m;
    return KA_OK;

fail:
    ka__free(m, sizeof *m);
    return st;
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
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
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
                                 : ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
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
        ka__cu_module *m = *module;
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
    ka__cu_module *m = module;
    if (ka__cuda_bind(p->dev->native) == KA_OK) ka__cu.cuModuleUnload(m->mod);
    if (m->ptx) ka__free(m->ptx, m->ptx_len);
    ka__free(m, sizeof *m);
}
