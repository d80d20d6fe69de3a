/* The CUDA driver API and NVRTC, loaded at run time.
 *
 * cuda.h and nvrtc.h are included for their types only: every call goes
 * through the tables below, filled by dlopen/dlsym, so one libka build runs
 * where CUDA is absent. cuda.h renames many entry points by macro
 * (cuMemAlloc -> cuMemAlloc_v2); the tables use the same spelling, so the
 * field, the declared type and the looked-up symbol always agree. */
#ifndef KA_CUDA_LOADER_H
#define KA_CUDA_LOADER_H

#include <cuda.h>
#include <nvrtc.h>

#include "objects.h"

/* Required driver entry points: X(name). */
#define KA__CU_REQUIRED(X)                                                                   \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuDeviceGetCount) X(cuDeviceGet)     \
    X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem)                           \
    X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent)              \
    X(cuCtxGetCurrent) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamWaitEvent) \
    X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventQuery)                      \
    X(cuEventSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoDAsync)                    \
    X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemsetD8Async) X(cuMemsetD16Async)         \
    X(cuMemsetD32Async) X(cuMemsetD2D32Async) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)         \
    X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuLaunchKernel) KA__CU_HOSTMEM(X)
/* Page-locked host memory (cuda_hostmem.c). */
#define KA__CU_HOSTMEM(X)                                                                    \
    X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemHostRegister) X(cuMemHostUnregister)           \
    X(cuMemHostGetDevicePointer) X(cuMemAllocHost)

/* Optional driver entry points (NULL when the driver is older). The graph
 * ones (cuda_graph.c) as cuda.h 12+ maps them: cuGraphAddKernelNode_v2 and
 * cuGraphExecKernelNodeSetParams_v2 (CUDA_KERNEL_NODE_PARAMS_v2, driver
 * 12.0+), the others unversioned; without any of them graphs are replayed
 * node by node. */
#define KA__CU_OPTIONAL(X) X(cuFuncGetParamInfo) X(cuModuleGetFunctionCount) X(cuModuleEnumerateFunctions) X(cuFuncGetName) X(cuLaunchHostFunc) X(cuEventElapsedTime) KA__CU_GRAPH(X)
#define KA__CU_GRAPH(X)                                                                      \
    X(cuGraphCreate) X(cuGraphDestroy) X(cuGraphAddKernelNode) X(cuGraphAddMemcpyNode)       \
    X(cuGraphAddMemsetNode) X(cuGraphInstantiateWithFlags) X(cuGraphExecKernelNodeSetParams) \
    X(cuGraphLaunch) X(cuGraphExecDestroy)

#define KA__NVRTC_REQUIRED(X)                                                                \
    X(nvrtcGetErrorString) X(nvrtcVersion) X(nvrtcCreateProgram) X(nvrtcDestroyProgram)      \
    X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetPTXSize) \
    X(nvrtcGetPTX)

#define KA__NVRTC_OPTIONAL(X) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcGetNumSupportedArchs) \
    X(nvrtcGetSupportedArchs)

#define KA__FIELD(name) __typeof__(&name) name;
typedef struct ka__cu_api {
    KA__CU_REQUIRED(KA__FIELD)
    KA__CU_OPTIONAL(KA__FIELD)
} ka__cu_api;
typedef struct ka__nvrtc_api {
    KA__NVRTC_REQUIRED(KA__FIELD)
    KA__NVRTC_OPTIONAL(KA__FIELD)
} ka__nvrtc_api;
#undef KA__FIELD

extern ka__cu_api ka__cu;
extern ka__nvrtc_api ka__nvrtc;

/* Loads libcuda once (thread-safe) and calls cuInit(0). KA_OK, or
 * KA_ERR_BACKEND_UNAVAILABLE, with the reason in the detail when `record`
 * (enumeration passes false: a machine without CUDA is not an error). */
ka_status ka__cuda_load(bool record);
/* Loads NVRTC once, after ka__cuda_load succeeded; records the reason on failure.
 * The library matching the driver's major version is tried first. */
ka_status ka__nvrtc_load(void);
/* Every KA__CU_GRAPH entry point was found (after ka__cuda_load). */
bool ka__cuda_has_graphs(void);

/* ---- errors (cuda_errors.c) -------------------------------------------- */
/* "CUDA_ERROR_INVALID_VALUE" etc.; never NULL. */
const char *ka__cu_name(CUresult r);
const char *ka__nvrtc_name(nvrtcResult r);
/* The libka status a CUresult stands for. */
ka_status ka__cu_status(CUresult r);
/* Records "<call>: <CUDA_ERROR_NAME>" (plus an optional note) and returns the mapped status. */
ka_status ka__cu_fail(CUresult r, const char *call);

#endif
