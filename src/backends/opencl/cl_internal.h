/* The OpenCL back-end's own objects and the functions its files share. Not
 * installed. Everything here is ka__cl_*: Khronos owns cl_ and CL_. */
#ifndef KA_CL_INTERNAL_H
#define KA_CL_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include "backend.h"

/* Returns the failure of an OpenCL call as a status (ka__cl_fail). */
#define KA__CL_CHECK(call, expr)                                             \
    do {                                                                     \
        cl_int err_ = (expr);                                                \
        if (KA_UNLIKELY(err_ != CL_SUCCESS)) return ka__cl_fail(call, err_); \
    } while (0)

/* ka__device.native */
typedef struct ka__cl_dev {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    int cl_version;      /* device OpenCL version * 10, e.g. 30 */
    char std_option[24]; /* "-cl-std=CL3.0" */
    char build_options[48]; /* every build's first: std_option -cl-kernel-arg-info */
    bool pocl;           /* on PoCL's platform: builds add the size probes */
    cl_command_queue guard_q;   /* KA_DEBUG's guard zones (buffer_guard), made at first use; else NULL */
    void *ext;           /* a layer's own state for the device (PoCL routing: pocl/pocl.h), else NULL */
} ka__cl_dev;

/* ka__queue.native */
typedef struct ka__cl_queue {
    cl_command_queue main;
    cl_mem arec;                /* ka_assert's record (KA__ASSERT_WORDS words), zeroed */
    /* Where waits read and clear arec: a queue of its own, so a wait does
     * not also wait for the commands enqueued on main after its event. */
    cl_command_queue aux;
    void *ext;                  /* a layer's own state for the queue, else NULL */
} ka__cl_queue;

/* Argument values last set on a cl_kernel (values persist there): a launch
 * skips clSetKernelArg for an argument that did not change. One per user
 * argument (ka__cl_argcache_new). */
typedef struct ka__cl_argcache {
    uint32_t kind; /* KA_ARG_*, 0 = never set */
    uint32_t size; /* kind and size: laid out as ka_arg's, so set_args compares both in one */
    uint64_t v;
} ka__cl_argcache;

/* ka__kernel.bk: what was last set on the cl_kernel (k->native). */
typedef struct ka__cl_kern {
    _Atomic uint32_t spin;     /* set-args + enqueue on the cl_kernel must not interleave */
    bool asserts;              /* the program calls ka_assert: two hidden arguments last */
    uint64_t last_nd[4];       /* hidden argument last set (under spin) */
    ka__cl_argcache *cache;
    cl_mem arec;               /* ka_assert's record last set (under spin) */
    void *ext;                 /* a layer's own state for the kernel, else NULL */
} ka__cl_kern;

static inline ka__cl_dev *ka__cl_dev_of(const ka__device *d) { return d->native; }
static inline cl_command_queue ka__cl_main_q(const ka__queue *q) { return ((ka__cl_queue *)q->native)->main; }

/* ---- cl_errors.c ---- */
const char *ka__cl_error_name(cl_int err);
/* Maps an OpenCL error to a status and records "call: CL_NAME" in the detail. */
ka_status ka__cl_fail(const char *call, cl_int err);

/* ---- cl_device.c ---- */
ka_status ka__cl_enumerate(ka_device_info *out, uint32_t cap, uint32_t *n);
/* Selector words of the OpenCL back-end ("pocl"), and the default device. */
bool ka__cl_selects(const char *sel, const ka_device_info *d);
bool ka__cl_preferred(const ka_device_info *d);
ka_status ka__cl_device_open(ka__device *d, uint32_t index);
void ka__cl_device_close(ka__device *d);
void ka__cl_device_native(ka__device *d, ka_native_device *out);
/* The table d calls through: the PoCL routing layer where d has `basic`. */
const ka__backend *ka__cl_device_ops(const ka__device *d);

/* ---- cl_queue.c ---- */
ka_status ka__cl_queue_create(ka__queue *q, const ka_queue_config *cfg);
void ka__cl_queue_release(ka__queue *q);
ka_status ka__cl_queue_finish(ka__queue *q);
ka_status ka__cl_queue_flush(ka__queue *q);
void ka__cl_queue_native(ka__queue *q, ka_native_queue *out);

/* ---- cl_memory.c ---- */
ka_status ka__cl_buffer_create(ka__buffer *b);
void ka__cl_buffer_release(ka__buffer *b);
ka_status ka__cl_buffer_write(ka__queue *q, ka__buffer *b, size_t off, size_t n, const void *src, void **ev, bool block);
ka_status ka__cl_buffer_read(ka__queue *q, ka__buffer *b, size_t off, size_t n, void *dst, void **ev, bool block);
ka_status ka__cl_buffer_copy(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n, void **ev, bool block);
ka_status ka__cl_buffer_fill(ka__queue *q, ka__buffer *b, const void *pat, size_t psz, size_t off, size_t n, void **ev, bool block);
ka_status ka__cl_buffer_guard(ka__buffer *b, void *host, bool write);
/* buffer_guard's copy on the queue *slot, made on dev at first use. */
ka_status ka__cl_guard_copy(cl_command_queue *slot, cl_device_id dev, ka__buffer *b, void *host, bool write);

/* ---- cl_hostmem.c ---- */
ka_status ka__cl_buffer_wrap(ka__buffer *b);
ka_status ka__cl_buffer_init(ka__buffer *b, const void *src);
ka_status ka__cl_buffer_map(ka__queue *q, ka__buffer *b, size_t off, size_t n, uint32_t flags, void **ptr, void **token);
ka_status ka__cl_buffer_unmap(ka__queue *q, ka__buffer *b, const struct ka__map *m);
ka_status ka__cl_queue_wait(ka__queue *q, void *ev);

/* ---- cl_program.c: the build hooks (src/core/build.c runs them) ---- */
size_t ka__cl_source_rewrite(const ka__program *p, char *out);
size_t ka__cl_source_append(const ka__program *p, char *out);
const char *ka__cl_build_options(const ka__device *d);
ka_status ka__cl_compile(ka__build *b, void **binary, size_t *size, void **module);
void ka__cl_module_release(ka__program *p, void *module, uint32_t target);
/* The compile for dev: the device opened, or a layer's other device in its context. */
ka_status ka__cl_compile_for(ka__build *b, cl_device_id dev, void **binary, size_t *size, void **module);
/* The file name of the size probes' #line, so a build log that names it is theirs. */
#define KA__CL_PROBE_FILE "libka-size-probes"

/* ---- cl_kernel.c ---- */
ka_status ka__cl_kernel_create(ka__kernel *k);
void ka__cl_kernel_release(ka__kernel *k);
/* A zeroed argument cache for k (NULL when out of memory), and its release. */
ka__cl_argcache *ka__cl_argcache_new(const ka__kernel *k);
void ka__cl_argcache_free(const ka__kernel *k, ka__cl_argcache *cache);

/* ---- cl_launch.c (the shared steps: cl_args.h) ---- */
ka_status ka__cl_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs, void **ev);

/* ---- cl_event.c ---- */
int ka__cl_event_query(void *ev, ka_status *st);
const char *ka__cl_event_error(void *ev);
ka_status ka__cl_event_callback(void *ev, ka__native_cb cb, void *ctx);
ka_status ka__cl_event_wait(void *ev);
void ka__cl_event_release(void *ev);
ka_status ka__cl_event_elapsed(void *ev, uint64_t *ns);
ka_status ka__cl_assert_take(ka__queue *q, uint32_t *rec);

/* ---- cl_kcache.c: program binaries for the persistent kernel cache ---- */
/* The target device's name, version and driver (PoCL's `basic` differs from the device opened). */
ka_status ka__cl_build_target(ka__build *b);
/* A program from a binary, built with b->options. */
ka_status ka__cl_load(ka__build *b, void *binary, size_t size, void **module);
/* The two for dev (ka__cl_compile_for). */
ka_status ka__cl_build_target_for(ka__build *b, cl_device_id dev);
ka_status ka__cl_load_for(ka__build *b, cl_device_id dev, void *binary, size_t size, void **module);
/* The binary of prog for dev (ka__alloc'd), or NULL when the driver gives none. */
void *ka__cl_program_binary(cl_program prog, cl_device_id dev, size_t *size);

/* ---- pocl/: the PoCL routing layer stacked over this back-end ---- */
/* The layer's table (pocl/pocl_layer.c), and its device state made by
 * device_open for a device whose context also holds `basic` (d->native's ext). */
extern const ka__backend ka__pocl_backend;
ka_status ka__pocl_device_attach(ka__device *d, cl_device_id basic);

#endif
