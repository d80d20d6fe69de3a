/* CUDA devices: enumeration, limits, primary contexts, native handles. */
#include "cuda_internal.h"

#include <stdio.h>
#include <string.h>

static int attr(CUdevice dev, CUdevice_attribute a) {
    int v = 0;
    if (ka__cu.cuDeviceGetAttribute(&v, a, dev) != CUDA_SUCCESS) return 0;
    return v;
}

/* The kernel module's version ("580.159.04"), which the driver API does not
 * give: the first word starting with a digit after "Kernel Module" in
 * "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...". */
static void kernel_driver_version(char *out, size_t len) {
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f) return;
    char line[256];
    if (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "Kernel Module");
        while (p && *p) {
            p += strcspn(p, " \t\n");
            p += strspn(p, " \t");
            if (*p >= '0' && *p <= '9') {
                size_t n = strcspn(p, " \t\n");
                if (n < len) {
                    memcpy(out, p, n);
                    out[n] = 0;
                }
                break;
            }
        }
    }
    fclose(f);
}

static ka_status fill_info(int ordinal, CUdevice dev, ka_device_info *info) {
    memset(info, 0, sizeof *info);
    info->backend = KA_BACKEND_CUDA;
    snprintf(info->selector, sizeof info->selector, "cuda:%d", ordinal);
    CUresult r = ka__cu.cuDeviceGetName(info->name, (int)sizeof info->name, dev);
    if (r != CUDA_SUCCESS) return ka__cu_fail(r, "cuDeviceGetName");
    snprintf(info->vendor, sizeof info->vendor, "NVIDIA Corporation");
    snprintf(info->platform, sizeof info->platform, "NVIDIA CUDA");
    int drv = 0;
    ka__cu.cuDriverGetVersion(&drv);
    snprintf(info->version, sizeof info->version, "CUDA %d.%d", drv / 1000, drv % 1000 / 10);
    snprintf(info->driver_version, sizeof info->driver_version, "%d.%d", drv / 1000, drv % 1000 / 10);
    kernel_driver_version(info->driver_version, sizeof info->driver_version);
    int major = attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    int minor = attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    info->compute_capability = major * 10 + minor;
    info->compute_units = (uint32_t)attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    info->max_workgroup_size = (uint32_t)attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    info->max_workgroup[0] = (uint32_t)attr(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
    info->max_workgroup[1] = (uint32_t)attr(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
    info->max_workgroup[2] = (uint32_t)attr(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
    int warp = attr(dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    if (warp <= 0) warp = 32;
    info->preferred_workgroup_multiple = (uint32_t)warp;
    /* The launch path raises a kernel's dynamic shared-memory limit as needed,
     * so the opt-in maximum is what a work-group can use. */
    int smem = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    if (smem <= 0) smem = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    info->local_mem_size = (uint64_t)smem;
    size_t total = 0;
    r = ka__cu.cuDeviceTotalMem(&total, dev);
    if (r != CUDA_SUCCESS) return ka__cu_fail(r, "cuDeviceTotalMem");
    info->global_mem_size = total;
    info->max_alloc_size = total;
    /* 32764 bytes of parameters from CUDA 12.1 on Volta and newer, else 4 KiB. */
    info->max_arg_bytes = drv >= 12010 && major >= 7 ? 32764 : 4096;
    info->num_subgroup_sizes = 1;
    info->subgroup_sizes[0] = (uint32_t)warp;
    info->subgroup_width = (uint32_t)warp;
    info->has_double = 1;
    info->has_atomic_float_add = 1;
    info->has_atomic64 = 1;
    info->has_subgroup_shuffle = 1;
    info->has_printf = 1;
    return KA_OK;
}

ka_status ka__cuda_enumerate(ka_device_info *out, uint32_t cap, uint32_t *n) {
    *n = 0;
    if (ka__cuda_load(false) != KA_OK) return KA_OK; /* no driver: no devices, no error */
    int count = 0;
    if (ka__cu.cuDeviceGetCount(&count) != CUDA_SUCCESS || count <= 0) return KA_OK;
    /* Entry i is ordinal i (device_open takes the index as the ordinal), so a
     * device whose query fails is listed with what could be read. */
    for (int i = 0; i < count && (uint32_t)i < cap; i++) {
        CUdevice dev;
        if (ka__cu.cuDeviceGet(&dev, i) != CUDA_SUCCESS || fill_info(i, dev, &out[i]) != KA_OK) {
            out[i].backend = KA_BACKEND_CUDA;
            snprintf(out[i].selector, sizeof out[i].selector, "cuda:%d", i);
        }
    }
    *n = (uint32_t)count;
    return KA_OK;
}

ka_status ka__cuda_device_open(ka__device *d, uint32_t index) {
    ka_status st = ka__cuda_load(true);
    if (st != KA_OK) return st;
    CUdevice dev;
    CUresult r = ka__cu.cuDeviceGet(&dev, (int)index);
    if (r != CUDA_SUCCESS) return ka__cu_fail(r, "cuDeviceGet");
    if ((st = fill_info((int)index, dev, &d->info)) != KA_OK) return st;
    ka__cu_dev *nd = ka__calloc(1, sizeof *nd);
    if (!nd) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    nd->dev = dev;
    nd->ordinal = (int)index;
    nd->cc = d->info.compute_capability;
    nd->smem_optin = (uint32_t)d->info.local_mem_size;
    if ((r = ka__cu.cuDevicePrimaryCtxRetain(&nd->ctx, dev)) != CUDA_SUCCESS) {
        st = ka__cu_fail(r, "cuDevicePrimaryCtxRetain");
        goto fail_ctx;
    }
    d->native = nd;
    return KA_OK;

fail_ctx:
    ka__free(nd, sizeof *nd);
    return st;
}

void ka__cuda_device_close(ka__device *d) {
    ka__cu_dev *nd = d->native;
    if (!nd) return;
    ka__cu.cuDevicePrimaryCtxRelease(nd->dev);
    ka__free(nd, sizeof *nd);
    d->native = NULL;
}

/* Interop: the CUdevice (an int, carried in the pointer) and the retained
 * primary context, which any CUDA runtime code on the device also uses. */
void ka__cuda_device_native(ka__device *d, ka_native_device *out) {
    ka__cu_dev *nd = d->native;
    out->device = (void *)(intptr_t)nd->dev;
    out->context = nd->ctx;
}
