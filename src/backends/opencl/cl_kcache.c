/* The OpenCL side of the persistent kernel cache (src/core/kcache.c): a
 * program binary per (source, options, device) stored after a source build
 * and, in a later process, made into a program with clCreateProgramWithBinary
 * + clBuildProgram instead of compiling. */
#include "cl_internal.h"

#include <stdio.h>
#include <string.h>

/* The key for building src with opts for dev: the opened device's info, plus
 * the name, version and driver of the cl_device_id built for (PoCL's `basic`
 * device differs from the device libka opened). */
void ka__cl_cache_key(const ka__device *d, cl_device_id dev, const char *src, const char *opts, ka__kcache_key *key) {
    char target[512], name[192] = "", ver[128] = "", drv[128] = "";
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_VERSION, sizeof ver, ver, NULL);
    clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof drv, drv, NULL);
    name[sizeof name - 1] = ver[sizeof ver - 1] = drv[sizeof drv - 1] = 0;
    snprintf(target, sizeof target, "opencl device: %s | %s | %s", name, ver, drv);
    ka__kcache_key_make(d, target, src, opts, key);
}

bool ka__cl_cache_load(ka__cl_dev *cd, cl_device_id dev, ka__kcache_key *key, const char *opts, cl_program *out) {
    void *bin;
    size_t n;
    if (ka__kcache_load(key, &bin, &n) != KA_OK) return false;
    const unsigned char *b = bin;
    cl_int err, bstatus = CL_SUCCESS;
    cl_program prog = clCreateProgramWithBinary(cd->context, 1, &dev, &n, &b, &bstatus, &err);
    ka__free(bin, n);
    if (err != CL_SUCCESS || bstatus != CL_SUCCESS) {
        ka__log(KA_LOG_WARN, "kernel cache: the driver refused a cached binary (clCreateProgramWithBinary: %s); compiling",
                ka__cl_error_name(err != CL_SUCCESS ? err : bstatus));
        if (err == CL_SUCCESS) clReleaseProgram(prog);
        return false;
    }
    if ((err = clBuildProgram(prog, 1, &dev, opts, NULL, NULL)) != CL_SUCCESS) {
        ka__log(KA_LOG_WARN, "kernel cache: a cached binary failed to build (clBuildProgram: %s); compiling",
                ka__cl_error_name(err));
        clReleaseProgram(prog);
        return false;
    }
    *out = prog;
    return true;
}

void ka__cl_cache_store(cl_program prog, cl_device_id dev, ka__kcache_key *key) {
    /* The program may belong to several devices (PoCL's two share a context):
     * the binary is the entry of dev. */
    cl_uint ndev = 0;
    cl_device_id devs[16];
    size_t sizes[16] = {0}, got = 0;
    cl_int err;
    if ((err = clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof ndev, &ndev, NULL)) != CL_SUCCESS || ndev == 0 ||
        ndev > 16 ||
        (err = clGetProgramInfo(prog, CL_PROGRAM_DEVICES, sizeof(cl_device_id) * ndev, devs, NULL)) != CL_SUCCESS ||
        (err = clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof(size_t) * ndev, sizes, &got)) != CL_SUCCESS) {
        ka__log(KA_LOG_DEBUG, "kernel cache: no program binary from the driver (%s); nothing stored",
                ka__cl_error_name(err));
        return;
    }
    /* PoCL 3.1 writes the sizes (and binaries) of a program built for a
     * subset of its devices in the build's device order, and only that many:
     * a program built for `basic` alone has one size, first. Each program
     * here was built for dev alone, so a lone binary is dev's (one the driver
     * then refuses only costs a compile). */
    cl_uint written = got / sizeof(size_t) < ndev ? (cl_uint)(got / sizeof(size_t)) : ndev, i = 0, nonzero = 0, last = 0;
    while (i < ndev && devs[i] != dev) i++;
    for (cl_uint j = 0; j < written; j++)
        if (sizes[j]) nonzero++, last = j;
    if (written != ndev || i == ndev || sizes[i] == 0) {
        if (nonzero != 1) {
            ka__log(KA_LOG_DEBUG, "kernel cache: no single program binary for the device (%u of %u); nothing stored",
                    nonzero, ndev);
            return;
        }
        i = last;
    }
    unsigned char *bins[16] = {0}; /* NULL entries: binaries not wanted */
    size_t n = sizes[i];
    if (!(bins[i] = ka__alloc(n))) return;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof(unsigned char *) * ndev, bins, NULL) == CL_SUCCESS)
        ka__kcache_store(key, bins[i], n);
    else
        ka__log(KA_LOG_INFO, "kernel cache: the driver gave no program binary; nothing stored");
    ka__free(bins[i], n);
}
