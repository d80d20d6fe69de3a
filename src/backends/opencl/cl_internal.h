/* OpenCL back-end internals. */
#ifndef KA_CL_INTERNAL_H
#define KA_CL_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include "ka_internal.h"

typedef struct cl_dev {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    int cl_version;      /* device OpenCL version * 10, e.g. 30 */
    char std_option[24]; /* "-cl-std=CL3.0" */
} cl_dev;

const char *ka__cl_error_name(cl_int err);
/* Maps an OpenCL error to a status and records "call: CL_NAME" in the detail. */
ka_status ka__cl_fail(const char *call, cl_int err);

/* Flat list of OpenCL devices in platform order; n set to total. */
cl_int ka__cl_devices(cl_platform_id *plats, cl_device_id *devs, uint32_t cap, uint32_t *n);
void ka__cl_fill_info(cl_platform_id plat, cl_device_id dev, uint32_t index, ka_device_info *info);

ka_status ka__cl_enumerate(ka_device_info *out, uint32_t cap, uint32_t *n);
ka_status ka__cl_device_open(ka__device *d, uint32_t index);
void ka__cl_device_close(ka__device *d);


#endif
