/* Where NVRTC is looked for, and the one function that opens it: libka's
 * loader (cuda_loader.c), ka-bench's raw CUDA (bench/bench_cuda.c) and the
 * tests (tests/test_util.h) include this header, so the three find the same
 * library. Needs only <dlfcn.h> and <stdio.h>: no CUDA header. */
#ifndef KA_NVRTC_NAMES_H
#define KA_NVRTC_NAMES_H

#include <dlfcn.h>
#include <stdio.h>

/* Tried in order, after the driver's own major version (ka__nvrtc_open). */
#define KA__NVRTC_NAMES                                                                                    \
    "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so",               \
        "/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so", "/usr/local/cuda/targets/sbsa-linux/lib/libnvrtc.so", \
        "libnvrtc.so.11.2"

/* dlopens NVRTC: first libnvrtc.so.<driver_major> (its cubins surely load on
 * that driver; skipped when driver_major <= 0, e.g. without libcuda), then
 * KA__NVRTC_NAMES. NULL when none opens. */
static inline void *ka__nvrtc_open(int driver_major) {
    static const char *const names[] = {KA__NVRTC_NAMES};
    void *lib = NULL;
    if (driver_major > 0) {
        char first[32];
        snprintf(first, sizeof first, "libnvrtc.so.%d", driver_major);
        lib = dlopen(first, RTLD_NOW | RTLD_LOCAL);
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    return lib;
}

#endif
