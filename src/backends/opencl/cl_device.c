/* OpenCL devices: enumeration, limits read once, the probe kernel, PoCL's
 * `basic` device found, hidden and put in the threaded device's context for
 * the PoCL routing layer (pocl/), the device's native objects. */
#include "cl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PoCL shows its `basic` device (commands run in the calling thread) only
 * when POCL_DEVICES names it, and reads that variable once, when OpenCL is
 * first used. Unless the user set it, or turned routing off with
 * KA_INLINE_MAX_ITEMS=0, libka asks for both devices before its first OpenCL
 * call and hides `basic` from the device list: it is reached through routing. */
static bool basic_hidden;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void setup_env(void) {
    const char *inl = getenv("KA_INLINE_MAX_ITEMS");
    if (getenv("POCL_DEVICES") || (inl && !strcmp(inl, "0"))) return;
    if (setenv("POCL_DEVICES", "pthread basic", 0) == 0) basic_hidden = true;
}

#define POCL_PLATFORM "Portable Computing Language"

static bool is_pocl(const ka_device_info *d) { return ka__icontains(d->platform, POCL_PLATFORM); }

/* "pocl" is PoCL's threaded CPU device (which routes small launches to its
 * basic device itself), not basic (named cpu-minimal from PoCL 5 on). */
bool ka__cl_preferred(const ka_device_info *d) {
    return is_pocl(d) && strncmp(d->name, "basic", 5) != 0 && strncmp(d->name, "cpu-minimal", 11) != 0;
}
bool ka__cl_selects(const char *sel, const ka_device_info *d) { return !strcmp(sel, "pocl") && ka__cl_preferred(d); }

/* PoCL 5 renamed `basic` to `cpu-minimal` (and `pthread` to `cpu`); POCL_DEVICES
 * still takes the old names, the device names are the new ones. */
static bool is_basic(cl_device_id d) {
    char name[64] = "";
    if (clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof name, name, NULL) != CL_SUCCESS) return false;
    return !strncmp(name, "basic", 5) || !strncmp(name, "cpu-minimal", 11);
}

static bool is_pocl_platform(cl_platform_id p) {
    char name[128] = "";
    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof name, name, NULL);
    return strstr(name, POCL_PLATFORM) != NULL;
}

/* Flat list of OpenCL devices in platform order; n set to total. */
static cl_int list_devices(cl_platform_id *plats_out, cl_device_id *devs, uint32_t cap, uint32_t *n) {
    pthread_once(&env_once, setup_env);
    cl_platform_id plats[16];
    cl_uint np = 0;
    *n = 0;
    cl_int err = clGetPlatformIDs(16, plats, &np);
    if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && np == 0)) return CL_SUCCESS;
    if (err != CL_SUCCESS) return err;
    if (np > 16) np = 16;
    for (cl_uint p = 0; p < np; p++) {
        cl_device_id ds[16];
        cl_uint ndevs = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, ds, &ndevs) != CL_SUCCESS) continue;
        if (ndevs > 16) ndevs = 16;
        bool pocl = basic_hidden && is_pocl_platform(plats[p]);
        for (cl_uint i = 0; i < ndevs; i++) {
            if (pocl && is_basic(ds[i])) continue;
            if (*n < cap) {
                plats_out[*n] = plats[p];
                devs[*n] = ds[i];
            }
            (*n)++;
        }
    }
    return CL_SUCCESS;
}

static void copy_trunc(char *dst, size_t size, const char *src) {
    size_t n = strlen(src);
    if (n >= size) n = size - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* Reads a string property, truncated to size (OpenCL refuses a short buffer). */
static void str_info(cl_device_id d, cl_device_info what, char *buf, size_t size) {
    char tmp[8192];
    buf[0] = 0;
    size_t n = 0;
    if (clGetDeviceInfo(d, what, 0, NULL, &n) != CL_SUCCESS || n > sizeof tmp) return;
    if (clGetDeviceInfo(d, what, n, tmp, NULL) != CL_SUCCESS) return;
    tmp[n ? n - 1 : 0] = 0;
    copy_trunc(buf, size, tmp);
}

static bool has_ext(const char *exts, const char *name) {
    size_t n = strlen(name);
    for (const char *p = exts; (p = strstr(p, name)); p += n)
        if ((p == exts || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return true;
    return false;
}

static void fill_info(cl_platform_id plat, cl_device_id d, uint32_t index, ka_device_info *info) {
    memset(info, 0, sizeof *info);
    info->backend = KA_BACKEND_OPENCL;
    snprintf(info->selector, sizeof info->selector, "opencl:%u", index);
    str_info(d, CL_DEVICE_NAME, info->name, sizeof info->name);
    str_info(d, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor);
    str_info(d, CL_DEVICE_VERSION, info->version, sizeof info->version);
    str_info(d, CL_DRIVER_VERSION, info->driver_version, sizeof info->driver_version);
    char pname[1024];
    if (clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof pname, pname, NULL) != CL_SUCCESS) pname[0] = 0;
    pname[sizeof pname - 1] = 0;
    copy_trunc(info->platform, sizeof info->platform, pname);
    char cver[64];
    str_info(d, CL_DEVICE_OPENCL_C_VERSION, cver, sizeof cver);
    sscanf(cver, "OpenCL C %d.%d", &info->opencl_c_major, &info->opencl_c_minor);
    cl_device_type type = 0;
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    info->is_cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    cl_uint u = 0;
    size_t sz = 0;
    cl_ulong ul = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof u, &u, NULL) == CL_SUCCESS) info->compute_units = u;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof sz, &sz, NULL) == CL_SUCCESS)
        info->max_workgroup_size = sz > UINT32_MAX ? UINT32_MAX : (uint32_t)sz;
    size_t dims[3] = {0, 0, 0};
    cl_uint ndims = 0;
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, sizeof ndims, &ndims, NULL);
    if (ndims >= 3 && clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof dims, dims, NULL) == CL_SUCCESS)
        for (int i = 0; i < 3; i++) info->max_workgroup[i] = dims[i] > UINT32_MAX ? UINT32_MAX : (uint32_t)dims[i];
    if (clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS) info->local_mem_size = ul;
    if (clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS) info->global_mem_size = ul;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS) info->max_alloc_size = ul;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_PARAMETER_SIZE, sizeof sz, &sz, NULL) == CL_SUCCESS)
        info->max_arg_bytes = (uint32_t)sz;
    char exts[8192];
    str_info(d, CL_DEVICE_EXTENSIONS, exts, sizeof exts); /* truncation only loses the tail's extensions */
    info->has_double = has_ext(exts, "cl_khr_fp64");
    info->has_atomic64 = has_ext(exts, "cl_khr_int64_base_atomics") && has_ext(exts, "cl_khr_int64_extended_atomics");
    info->has_atomic_float_add = 2; /* emulated with compare-exchange in the prelude */
    info->has_printf = 1;
    info->has_subgroup_shuffle = has_ext(exts, "cl_khr_subgroup_shuffle") || has_ext(exts, "cl_intel_subgroups");
    if (has_ext(exts, "cl_intel_required_subgroup_size")) {
        size_t sizes[KA_MAX_SUBGROUP_SIZES], got = 0;
        if (clGetDeviceInfo(d, CL_DEVICE_SUB_GROUP_SIZES_INTEL, sizeof sizes, sizes, &got) == CL_SUCCESS)
            for (size_t i = 0; i < got / sizeof(size_t) && i < KA_MAX_SUBGROUP_SIZES; i++)
                info->subgroup_sizes[info->num_subgroup_sizes++] = (uint32_t)sizes[i];
    }
}

/* Builds a one-line kernel to read what OpenCL reports only per kernel: the
 * preferred work-group multiple and, without cl_intel_required_subgroup_size,
 * the sub-group size. */
static void probe(ka__cl_dev *nd, ka_device_info *info) {
    static const char src[] = "__kernel void ka__probe(__global int *p) { p[get_global_id(0)] = 0; }";
    const char *s = src;
    cl_int err;
    cl_program p = clCreateProgramWithSource(nd->context, 1, &s, NULL, &err);
    if (err != CL_SUCCESS) return;
    if (clBuildProgram(p, 1, &nd->device, nd->std_option, NULL, NULL) == CL_SUCCESS) {
        cl_kernel k = clCreateKernel(p, "ka__probe", &err);
        if (err == CL_SUCCESS) {
            size_t m = 0;
            if (clGetKernelWorkGroupInfo(k, nd->device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof m, &m,
                                         NULL) == CL_SUCCESS)
                info->preferred_workgroup_multiple = (uint32_t)m;
            cl_uint maxsg = 0;
            if (nd->cl_version >= 21 && !info->num_subgroup_sizes &&
                clGetDeviceInfo(nd->device, CL_DEVICE_MAX_NUM_SUB_GROUPS, sizeof maxsg, &maxsg, NULL) == CL_SUCCESS &&
                maxsg > 0) {
                size_t local = info->max_workgroup_size ? info->max_workgroup_size : 64, sg = 0;
                if (local > 256) local = 256;
                if (clGetKernelSubGroupInfo(k, nd->device, CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, sizeof local,
                                            &local, sizeof sg, &sg, NULL) == CL_SUCCESS &&
                    sg > 0)
                    info->subgroup_sizes[info->num_subgroup_sizes++] = (uint32_t)sg;
            }
            clReleaseKernel(k);
        }
    }
    clReleaseProgram(p);
}

/* The first KA__CL_MAX_DEVICES devices (list_devices), *total of them. */
#define KA__CL_MAX_DEVICES 64
static ka_status first_devices(cl_platform_id *plats, cl_device_id *devs, uint32_t *total) {
    *total = 0;
    cl_int err = list_devices(plats, devs, KA__CL_MAX_DEVICES, total);
    if (err != CL_SUCCESS) return ka__cl_fail("clGetPlatformIDs", err);
    if (*total > KA__CL_MAX_DEVICES) *total = KA__CL_MAX_DEVICES;
    return KA_OK;
}

ka_status ka__cl_enumerate(ka_device_info *out, uint32_t cap, uint32_t *n) {
    cl_platform_id plats[KA__CL_MAX_DEVICES];
    cl_device_id devs[KA__CL_MAX_DEVICES];
    uint32_t total;
    ka_status st = first_devices(plats, devs, &total);
    if (st != KA_OK) return st;
    for (uint32_t i = 0; i < total && i < cap; i++) fill_info(plats[i], devs[i], i, &out[i]);
    *n = total;
    return KA_OK;
}

ka_status ka__cl_device_open(ka__device *d, uint32_t index) {
    cl_platform_id plats[KA__CL_MAX_DEVICES];
    cl_device_id devs[KA__CL_MAX_DEVICES];
    uint32_t total;
    ka_status st = first_devices(plats, devs, &total);
    if (st != KA_OK) return st;
    if (index >= total) return ka__fail(KA_ERR_NO_DEVICE, "opencl:%u: no such device", index);
    ka__cl_dev *nd = ka__calloc(1, sizeof *nd);
    if (!nd) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    nd->platform = plats[index];
    nd->device = devs[index];
    fill_info(nd->platform, nd->device, index, &d->info);
    int maj = 1, min = 2;
    sscanf(d->info.version, "OpenCL %d.%d", &maj, &min);
    nd->cl_version = maj * 10 + min;
    /* The device's OpenCL C version (1.2 on PoCL 3.1, even on an OpenCL 3.0
     * platform): 3.0 mode costs PoCL generic-address-space code for nothing. */
    snprintf(nd->std_option, sizeof nd->std_option, "-cl-std=CL%d.%d", d->info.opencl_c_major ? d->info.opencl_c_major : 1,
             d->info.opencl_c_major ? d->info.opencl_c_minor : 2);
    snprintf(nd->build_options, sizeof nd->build_options, "%s -cl-kernel-arg-info", nd->std_option);
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)nd->platform, 0};
    /* PoCL's threaded device gets its `basic` sibling in the same context, for
     * routing small launches (buffers are shared within a context). */
    cl_device_id both[2] = {nd->device, NULL};
    cl_uint ndev = 1;
    nd->pocl = is_pocl_platform(nd->platform);
    if (nd->pocl && !is_basic(nd->device)) {
        cl_device_id ds[16];
        cl_uint n = 0;
        if (clGetDeviceIDs(nd->platform, CL_DEVICE_TYPE_ALL, 16, ds, &n) == CL_SUCCESS)
            for (cl_uint i = 0; i < n && i < 16 && ndev == 1; i++)
                if (is_basic(ds[i])) both[ndev++] = ds[i];
    }
    cl_int err;
    nd->context = clCreateContext(props, ndev, both, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        st = ka__cl_fail("clCreateContext", err);
        goto fail_context;
    }
    probe(nd, &d->info);
    d->info.subgroup_width = d->info.num_subgroup_sizes ? d->info.subgroup_sizes[0] : 0;
    d->native = nd;
    if (both[1] && (st = ka__pocl_device_attach(d, both[1])) != KA_OK) goto fail_attach;
    return KA_OK;
fail_attach:
    d->native = NULL;
    clReleaseContext(nd->context);
fail_context:
    ka__free(nd, sizeof *nd);
    return st;
}

const ka__backend *ka__cl_device_ops(const ka__device *d) {
    return ka__cl_dev_of(d)->ext ? &ka__pocl_backend : NULL;
}

void ka__cl_device_close(ka__device *d) {
    ka__cl_dev *nd = d->native;
    if (nd->guard_q) clReleaseCommandQueue(nd->guard_q);
    clReleaseContext(nd->context);
    ka__free(nd, sizeof *nd);
}

void ka__cl_device_native(ka__device *d, ka_native_device *out) {
    ka__cl_dev *nd = d->native;
    out->device = nd->device;
    out->context = nd->context;
}
