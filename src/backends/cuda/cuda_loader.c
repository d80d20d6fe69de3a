/* dlopen'd CUDA driver and NVRTC. See cuda_loader.h. */
#include "cuda_loader.h"
#include "nvrtc_names.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

ka__cu_api ka__cu;
ka__nvrtc_api ka__nvrtc;

#define KA__STR2(x) #x
#define KA__STR(x) KA__STR2(x)

static pthread_once_t cu_once = PTHREAD_ONCE_INIT;
static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;
static ka_status cu_state = KA_ERR_BACKEND_UNAVAILABLE, nvrtc_state = KA_ERR_BACKEND_UNAVAILABLE;
static char cu_why[256], nvrtc_why[256];

static void *open_first(const char *const *names, size_t n) {
    for (size_t i = 0; i < n; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
    }
    return NULL;
}

/* dlsym through a union: ISO C has no object-to-function pointer cast. */
static int sym(void *lib, const char *libname, const char *name, void *slot, int required, char *why,
               size_t whylen) {
    union { void *obj; void (*fn)(void); } u;
    u.obj = dlsym(lib, name);
    memcpy(slot, &u.fn, sizeof u.fn);
    if (!u.obj && required) {
        snprintf(why, whylen, "%s lacks %s (too old?)", libname, name);
        return -1;
    }
    return 0;
}

static void load_cu(void) {
    static const char *const names[] = {"libcuda.so.1", "libcuda.so"};
    void *lib = open_first(names, sizeof names / sizeof names[0]);
    if (!lib) {
        snprintf(cu_why, sizeof cu_why, "libcuda.so.1 not found (no NVIDIA driver)");
        return;
    }
    int bad = 0;
#define KA__REQ(name) bad |= sym(lib, "libcuda", KA__STR(name), &ka__cu.name, 1, cu_why, sizeof cu_why);
#define KA__OPT(name) sym(lib, "libcuda", KA__STR(name), &ka__cu.name, 0, cu_why, sizeof cu_why);
    KA__CU_REQUIRED(KA__REQ)
    KA__CU_OPTIONAL(KA__OPT)
#undef KA__REQ
#undef KA__OPT
    if (bad) {
        dlclose(lib);
        memset(&ka__cu, 0, sizeof ka__cu);
        return;
    }
    CUresult r = ka__cu.cuInit(0);
    if (r != CUDA_SUCCESS) {
        snprintf(cu_why, sizeof cu_why, "cuInit: %s", ka__cu_name(r));
        return; /* library stays loaded: a later cuInit would fail the same way */
    }
    cu_state = KA_OK;
}

static void load_nvrtc(void) {
    int drv = 0;
    ka__cu.cuDriverGetVersion(&drv);
    void *lib = ka__nvrtc_open(drv / 1000);
    if (!lib) {
        snprintf(nvrtc_why, sizeof nvrtc_why, "libnvrtc.so not found (install the CUDA toolkit's NVRTC)");
        return;
    }
    int bad = 0;
#define KA__REQ(name) bad |= sym(lib, "libnvrtc", KA__STR(name), &ka__nvrtc.name, 1, nvrtc_why, sizeof nvrtc_why);
#define KA__OPT(name) sym(lib, "libnvrtc", KA__STR(name), &ka__nvrtc.name, 0, nvrtc_why, sizeof nvrtc_why);
    KA__NVRTC_REQUIRED(KA__REQ)
    KA__NVRTC_OPTIONAL(KA__OPT)
#undef KA__REQ
#undef KA__OPT
    if (bad) {
        dlclose(lib);
        memset(&ka__nvrtc, 0, sizeof ka__nvrtc);
        return;
    }
    nvrtc_state = KA_OK;
}

ka_status ka__cuda_load(bool record) {
    pthread_once(&cu_once, load_cu);
    if (cu_state == KA_OK) return KA_OK;
    return record ? ka__fail(KA_ERR_BACKEND_UNAVAILABLE, "CUDA: %s", cu_why) : KA_ERR_BACKEND_UNAVAILABLE;
}

bool ka__cuda_has_graphs(void) {
    bool all = true;
#define KA__HAS(name) all = all && ka__cu.name != NULL;
    KA__CU_GRAPH(KA__HAS)
#undef KA__HAS
    return all;
}

ka_status ka__nvrtc_load(void) {
    if (ka__cuda_load(true) != KA_OK) return KA_ERR_BACKEND_UNAVAILABLE;
    pthread_once(&nvrtc_once, load_nvrtc);
    if (nvrtc_state != KA_OK) return ka__fail(KA_ERR_BACKEND_UNAVAILABLE, "NVRTC: %s", nvrtc_why);
    return KA_OK;
}
