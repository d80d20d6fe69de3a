/* The OpenCL side of the persistent kernel cache (the protocol is the
 * core's: src/core/build.c, kcache.c): the target in the key, a program
 * binary per (source, options, device) taken after a source build, and, in
 * a later process, a program made from it with clCreateProgramWithBinary +
 * clBuildProgram instead of compiling. */
#include "cl_internal.h"

#include <stdio.h>
#include <string.h>

/* The name, version and driver of the cl_device_id built for (PoCL's `basic`
 * device differs from the device libka opened). */
ka_status ka__cl_build_target_for(ka__build *b, cl_device_id dev) {
    char name[192] = "", ver[128] = "", drv[128] = "";
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_VERSION, sizeof ver, ver, NULL);
    clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof drv, drv, NULL);
    name[sizeof name - 1] = ver[sizeof ver - 1] = drv[sizeof drv - 1] = 0;
    snprintf(b->target_name, sizeof b->target_name, "opencl device: %s | %s | %s", name, ver, drv); /* fits: 512 */
    return KA_OK;
}

ka_status ka__cl_build_target(ka__build *b) { return ka__cl_build_target_for(b, ka__cl_dev_of(b->prog->dev)->device); }

ka_status ka__cl_load_for(ka__build *b, cl_device_id dev, void *binary, size_t size, void **module) {
    const unsigned char *bin = binary;
    cl_int err, bstatus = CL_SUCCESS;
    cl_program prog = clCreateProgramWithBinary(ka__cl_dev_of(b->prog->dev)->context, 1, &dev, &size, &bin, &bstatus, &err);
    if (err != CL_SUCCESS || bstatus != CL_SUCCESS) {
        if (err == CL_SUCCESS) clReleaseProgram(prog);
        return ka__build_fail(b, KA_ERR_BUILD_FAILED, "clCreateProgramWithBinary: %s",
                              ka__cl_error_name(err != CL_SUCCESS ? err : bstatus));
    }
    if ((err = clBuildProgram(prog, 1, &dev, b->options, NULL, NULL)) != CL_SUCCESS) {
        clReleaseProgram(prog);
        return ka__build_fail(b, KA_ERR_BUILD_FAILED, "clBuildProgram of the binary: %s",
                              ka__cl_error_name(err));
    }
    *module = prog;
    return KA_OK;
}

ka_status ka__cl_load(ka__build *b, void *binary, size_t size, void **module) {
    return ka__cl_load_for(b, ka__cl_dev_of(b->prog->dev)->device, binary, size, module);
}

void *ka__cl_program_binary(cl_program prog, cl_device_id dev, size_t *size) {
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
        return NULL;
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
            return NULL;
        }
        i = last;
    }
    unsigned char *bins[16] = {0}; /* NULL entries: binaries not wanted */
    size_t n = sizes[i];
    if (!(bins[i] = ka__alloc(n))) return NULL;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof(unsigned char *) * ndev, bins, NULL) != CL_SUCCESS) {
        ka__log(KA_LOG_INFO, "kernel cache: the driver gave no program binary; nothing stored");
        ka__free(bins[i], n);
        return NULL;
    }
    *size = n;
    return bins[i];
}
