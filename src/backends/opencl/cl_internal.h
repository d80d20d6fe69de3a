/* OpenCL back-end internals. */
#ifndef KA_CL_INTERNAL_H
#define KA_CL_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include "backend.h"

typedef struct cl_dev {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    int cl_version;      /* device OpenCL version * 10, e.g. 30 */
    char std_option[24]; /* "-cl-std=CL3.0" */
    cl_device_id inline_device; /* PoCL's `basic` device in the same context, or NULL */
} cl_dev;

/* A queue: the device's own, and for PoCL a second one on `basic`, where a
 * launch of at most inline_max work-items runs in the calling thread. */
typedef struct cl_queue {
    cl_command_queue main;
    cl_command_queue inl;       /* NULL: no routing */
    uint64_t inline_max;        /* work-items; 0 = routing off */
    int64_t inline_slow_ns;     /* a timed inline launch slower than this counts as slow; 0 = never demote */
    /* Commands enqueued on main, and how many of them a clFinish has covered:
     * an inline launch finishes main only when they differ. Counters, not a
     * flag, so a command enqueued by another thread during that clFinish is
     * not forgotten; a command counts once its enqueue has returned. */
    _Atomic uint64_t main_enqueued, main_finished;
    _Atomic uint64_t inline_launches;
    /* Inline launches of one queue are serialized: otherwise one thread's
     * clFlush can run another's command, whose launch then returns before its
     * kernel ran; that thread then arms a completion callback while PoCL runs
     * the command, and PoCL 3.1 deadlocks on its event lock (seen in
     * ka_testsuite's concurrent launches). Taken before the kernel's lock. */
    _Atomic uint32_t inl_spin;
} cl_queue;

/* A build variant: the main device's program, and `basic`'s, built when a
 * small launch first needs it (PoCL compiles per device). */
typedef struct cl_prog {
    cl_program main;
    cl_program inl;
    char *opts;                /* the build options, for `basic` */
    bool probes;               /* built with the size probes (cl_backend.c) */
    size_t opts_len;
    pthread_mutex_t lock;
} cl_prog;

/* Argument values last set on a cl_kernel (values persist there): a launch
 * skips clSetKernelArg for an argument that did not change. */
typedef struct argcache {
    uint64_t v;
    uint32_t size;
    uint32_t kind; /* KA_ARG_*, 0 = never set */
} argcache;

/* Per-kernel state: the argument caches of the main and inline cl_kernels. */
typedef struct cl_kern {
    _Atomic uint32_t spin;     /* set-args + enqueue on the cl_kernel must not interleave */
    uint64_t last_nd[4];       /* hidden argument last set on the cl_kernel (under spin) */
    pthread_mutex_t lock;      /* making inl; off the launch path */
    cl_kernel inl;             /* created on first inline launch */
    uint64_t inl_nd[4];        /* hidden argument last set on inl */
    _Atomic uint32_t inl_spin;
    uint32_t inl_count;        /* inline launches (under inl_spin) */
    uint32_t slow_streak;      /* consecutive timed inline launches that were slow */
    _Atomic uint32_t demoted;  /* too slow inline: always on the threaded device */
    argcache *cache, *inl_cache;
} cl_kern;

bool ka__cl_is_basic(cl_device_id d);
/* Selector words of the OpenCL back-end ("pocl"), and the default device. */
bool ka__cl_selects(const char *sel, const ka_device_info *d);
bool ka__cl_preferred(const ka_device_info *d);

const char *ka__cl_error_name(cl_int err);
/* Maps an OpenCL error to a status and records "call: CL_NAME" in the detail. */
ka_status ka__cl_fail(const char *call, cl_int err);

/* Flat list of OpenCL devices in platform order; n set to total. */
cl_int ka__cl_devices(cl_platform_id *plats, cl_device_id *devs, uint32_t cap, uint32_t *n);
void ka__cl_fill_info(cl_platform_id plat, cl_device_id dev, uint32_t index, ka_device_info *info);

/* Persistent kernel cache (cl_kcache.c). */
void ka__cl_cache_key(const ka__device *d, cl_device_id dev, const char *src, const char *opts, ka__kcache_key *key);
/* A program for dev from a cached binary, built with opts; false on a miss or
 * if the driver refuses the binary (then compile). */
bool ka__cl_cache_load(cl_dev *cd, cl_device_id dev, const ka__kcache_key *key, const char *opts, cl_program *out);
/* Stores prog's binary for dev (nothing on failure). */
void ka__cl_cache_store(cl_program prog, cl_device_id dev, const ka__kcache_key *key);

ka_status ka__cl_enumerate(ka_device_info *out, uint32_t cap, uint32_t *n);
ka_status ka__cl_device_open(ka__device *d, uint32_t index);
void ka__cl_device_close(ka__device *d);


#endif
