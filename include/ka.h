/* libka: portable compute kernels for C.
 *
 * One public header. Every call returns a ka_status (0 = KA_OK); on failure a
 * per-thread detail message is available from ka_last_error(). Handles are
 * small structs holding a slot index and a generation: a released or stale
 * handle is reported as KA_ERR_INVALID_HANDLE, never dereferenced.
 *
 * Hot path (no heap allocation once a kernel is compiled): ka_kernel_get for a
 * known configuration, ka_launch, ka_event_wait / ka_wait_all / ka_wait_any,
 * ka_event_release, ka_event_on_complete, ka_event_notify. One exception: on
 * PoCL, the first small launch of a kernel builds it for the `basic` device
 * (routing, see docs/DESIGN.md) and allocates then; warm each kernel up.
 */
#ifndef KA_H
#define KA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KA_VERSION_MAJOR 0
#define KA_VERSION_MINOR 2
#define KA_VERSION_PATCH 0
#define KA_VERSION_STRING "0.2.0"

#if defined(__GNUC__)
#define KA_API __attribute__((visibility("default")))
#else
#define KA_API
#endif

/* ---- status codes: one table (X-macro) gives the enum, names and messages */
#define KA_STATUS_MAP(X)                                                       \
    X(OK, 0, "success")                                                        \
    X(ERR_INVALID_ARGUMENT, -1, "invalid argument")                            \
    X(ERR_INVALID_HANDLE, -2, "invalid or released handle")                    \
    X(ERR_OUT_OF_MEMORY, -3, "out of host memory")                             \
    X(ERR_DEVICE_OUT_OF_MEMORY, -4, "out of device memory")                    \
    X(ERR_NO_DEVICE, -5, "no matching device")                                 \
    X(ERR_BUILD_FAILED, -6, "kernel source failed to build")                   \
    X(ERR_KERNEL_NOT_FOUND, -7, "no kernel of that name in the program")       \
    X(ERR_INVALID_RANGE, -8, "invalid ndrange")                                \
    X(ERR_INVALID_WORKGROUP, -9, "invalid work-group size")                    \
    X(ERR_ARG_COUNT, -10, "wrong number of kernel arguments")                  \
    X(ERR_ARG_TYPE, -11, "kernel argument does not match the signature")       \
    X(ERR_UNSUPPORTED, -12, "not supported by this device")                    \
    X(ERR_EVENT_POOL_EXHAUSTED, -13, "no free event slot in the queue's pool") \
    X(ERR_TIMEOUT, -14, "timed out")                                           \
    X(ERR_DEVICE, -15, "device or driver error")                               \
    X(ERR_IN_USE, -16, "object still has live dependents")                     \
    X(ERR_BACKEND_UNAVAILABLE, -17, "back-end library not available")          \
    X(ERR_KERNEL_FAILED, -18, "a command on the device failed")                \
    X(ERR_IO, -19, "file input/output failed")                                 \
    X(ERR_OUT_OF_BOUNDS, -20, "a kernel wrote past the end of a buffer")

typedef enum ka_status {
#define KA__ENUM(name, value, msg) KA_##name = value,
    KA_STATUS_MAP(KA__ENUM)
#undef KA__ENUM
} ka_status;

/* Static strings, never NULL. ka_status_name gives "KA_ERR_TIMEOUT" etc. */
KA_API const char *ka_strerror(ka_status s);
KA_API const char *ka_status_name(ka_status s);
/* The detail of the calling thread's last failure ("" if none); valid until the
 * thread's next failing libka call. Names the native call and error, e.g.
 * "clEnqueueNDRangeKernel: CL_INVALID_WORK_GROUP_SIZE", and build logs. */
KA_API const char *ka_last_error(void);

/* ---- allocator and logger hooks (process-wide) -------------------------- */
typedef struct ka_allocator {
    void *(*alloc)(size_t size, void *user);   /* NULL on failure */
    void (*free)(void *ptr, size_t size, void *user);
    void *user;
} ka_allocator;
/* NULL restores malloc/free. Swap only when no libka object is alive, or with
 * an allocator whose free accepts blocks from the previous one (e.g. a counter
 * wrapping malloc). */
KA_API void ka_set_allocator(const ka_allocator *a);

typedef enum ka_log_level { KA_LOG_ERROR = 0, KA_LOG_WARN, KA_LOG_INFO, KA_LOG_DEBUG } ka_log_level;
typedef void (*ka_log_fn)(ka_log_level level, const char *msg, void *user);
/* Silent by default; libka never prints on its own. */
KA_API void ka_set_logger(ka_log_fn fn, void *user);

/* ---- handles ------------------------------------------------------------ */
typedef struct ka_device { uint64_t id; } ka_device;
typedef struct ka_queue { uint64_t id; } ka_queue;
typedef struct ka_buffer { uint64_t id; } ka_buffer;
typedef struct ka_program { uint64_t id; } ka_program;
typedef struct ka_kernel { uint64_t id; } ka_kernel;
typedef struct ka_event { uint64_t id; } ka_event;
#define KA_NULL_EVENT ((ka_event){0})

/* ---- devices ------------------------------------------------------------ */
typedef enum ka_backend { KA_BACKEND_NULL = 0, KA_BACKEND_OPENCL = 1, KA_BACKEND_CUDA = 2, KA_BACKEND_HOST = 3 } ka_backend;
/* "opencl", "cuda", "host", "null": the word of device selectors ("cuda:0"); "unknown"
 * for another value. A static string. */
KA_API const char *ka_backend_name(ka_backend b);

#define KA_MAX_SUBGROUP_SIZES 8

typedef struct ka_device_info {
    ka_backend backend;
    char selector[32];        /* e.g. "opencl:0", "cuda:0": opens this device */
    char name[128];
    char vendor[64];
    char platform[128];
    char version[64];         /* OpenCL version string or "CUDA x.y" */
    char driver_version[64];
    int opencl_c_major, opencl_c_minor; /* 0 on CUDA */
    int compute_capability;   /* CUDA: major*10+minor; 0 elsewhere */
    int is_cpu;
    uint32_t compute_units;
    uint32_t max_workgroup_size;
    uint32_t max_workgroup[3];
    uint32_t preferred_workgroup_multiple; /* from a probe kernel; warp size on CUDA */
    uint64_t local_mem_size;
    uint64_t global_mem_size;
    uint64_t max_alloc_size;
    uint32_t max_arg_bytes;   /* CL_DEVICE_MAX_PARAMETER_SIZE / CUDA param space */
    uint32_t num_subgroup_sizes; /* 0: the device has no sub-groups */
    uint32_t subgroup_sizes[KA_MAX_SUBGROUP_SIZES];
    uint32_t subgroup_width;  /* default sub-group size (first of the list), 0 if none */
    int has_double;
    int has_atomic_float_add; /* native or emulated float atomic add in the dialect */
    int has_atomic64;         /* 64-bit integer atomics */
    int has_subgroup_shuffle;
    int has_printf;
} ka_device_info;

/* Number of devices over all back-ends available in this process. */
KA_API ka_status ka_device_count(uint32_t *count);
/* Info of device `index` (0..count-1) without opening it. */
KA_API ka_status ka_device_describe(uint32_t index, ka_device_info *out);
/* Open by selector: "opencl:N", "cuda:N", "null", "pocl", or a case-insensitive
 * substring of the device or platform name. NULL or "" reads $KA_DEVICE, else
 * the first PoCL device (not its `basic` one), else device 0. Limits are read
 * here, once (ka_device_describe leaves the probed ones, the preferred
 * multiple and sub-group sizes, at 0). The null device is not counted. */
KA_API ka_status ka_device_open(const char *selector, ka_device *out);
/* KA_ERR_IN_USE while queues, buffers, programs or graphs of the device are alive. */
KA_API ka_status ka_device_close(ka_device dev);
KA_API ka_status ka_device_get_info(ka_device dev, const ka_device_info **out);
/* The native objects behind a device, for interop with raw OpenCL or CUDA:
 * OpenCL: cl_device_id, cl_context, and PoCL's `basic` device used for
 * routing (NULL if none); CUDA: the CUdevice (as an integer), the CUcontext. */
typedef struct ka_native_device {
    void *device;
    void *context;
    void *inline_device;
} ka_native_device;
KA_API ka_status ka_device_get_native(ka_device dev, ka_native_device *out);

/* ---- queues ------------------------------------------------------------- */
typedef struct ka_queue_config {
    uint32_t event_capacity;  /* events alive at once; 0 = 1024 */
    int64_t spin_ns;          /* waits poll this long before sleeping; 0 = off; negative
                                 (KA_SPIN_DEFAULT): ka_set_wait_spin's value if set, else the
                                 device's default (0 on CPUs, 50 us on GPUs). A zeroed
                                 config therefore has spinning off. */
    int64_t inline_max_items; /* PoCL: launches of at most this many work-items (padded)
                                 run on PoCL's `basic` device, in the calling thread;
                                 0 = $KA_INLINE_MAX_ITEMS, else adaptive: the faster path,
                                 measured per kernel and size;
                                 KA_INLINE_OFF (-1) = every launch on the threaded device */
    uint32_t profiling;       /* 1: the device times each command for ka_event_elapsed_ns
                                 (OpenCL queue profiling, timed CUDA events); 0 = off */
} ka_queue_config;
#define KA_SPIN_DEFAULT (-1)
#define KA_INLINE_OFF (-1)

/* In-order queue. cfg may be NULL. */
KA_API ka_status ka_queue_create(ka_device dev, const ka_queue_config *cfg, ka_queue *out);
/* Finishes outstanding work, then releases. Events of the queue become stale. */
KA_API ka_status ka_queue_release(ka_queue q);
/* The native queue behind a queue, for interop with raw OpenCL or CUDA:
 * OpenCL: its cl_command_queue and, where small launches run inline on PoCL's
 * `basic` device, that device's queue (else NULL); CUDA: its CUstream. The
 * objects stay libka's: do not release them. */
typedef struct ka_native_queue {
    void *queue;
    void *inline_queue;
} ka_native_queue;
KA_API ka_status ka_queue_get_native(ka_queue q, ka_native_queue *out);
KA_API ka_status ka_queue_finish(ka_queue q);
KA_API ka_status ka_queue_flush(ka_queue q);
/* Commands enqueued on q after this call start only once ev (an event of any
 * queue of q's device) has completed; the host does not block, and nothing is
 * allocated. A complete event (an inline launch's on PoCL is complete when
 * ka_launch returns) costs nothing. One already complete and failed returns
 * the status its command failed with (what ka_event_wait on it returns, e.g.
 * KA_ERR_KERNEL_FAILED or a driver error) and enqueues nothing; one still
 * pending is waited for as it is. ev may be released right after the call.
 * An event of another device is KA_ERR_INVALID_ARGUMENT, complete or not: wait
 * for it on the host (ka_event_wait, ka_wait_all). */
KA_API ka_status ka_queue_wait_event(ka_queue q, ka_event ev);

/* ---- buffers ------------------------------------------------------------ */
KA_API ka_status ka_buffer_create(ka_device dev, size_t bytes, ka_buffer *out);
KA_API ka_status ka_buffer_release(ka_buffer b);
KA_API ka_status ka_buffer_size(ka_buffer b, size_t *bytes);
/* The native memory behind a buffer, for interop with MPI and raw OpenCL or
 * CUDA. mem: OpenCL's cl_mem; CUDA's CUdeviceptr, as (void *)(uintptr_t);
 * the host memory on the null back-end. address: the buffer's first byte
 * where other code may read and write it directly (the CUdeviceptr that a
 * CUDA-aware MPI sends from and receives into; the null back-end's host
 * memory), NULL where the buffer has no address (OpenCL). The memory stays
 * libka's: valid until ka_buffer_release. */
typedef struct ka_native_buffer {
    void *mem;
    void *address;
    size_t bytes;
} ka_native_buffer;
KA_API ka_status ka_buffer_get_native(ka_buffer b, ka_native_buffer *out);
/* Transfers, in memcpy's order: destination first, each buffer followed by
 * its byte offset, the byte count last. ka_buffer_write and ka_buffer_read
 * block until the bytes are in place; their _async twins only enqueue (the
 * host memory must stay valid and untouched until the command is complete:
 * *ev completes then, or finish the queue; ev may be NULL). */
KA_API ka_status ka_buffer_write(ka_queue q, ka_buffer dst, size_t dst_offset, const void *src, size_t bytes);
KA_API ka_status ka_buffer_read(ka_queue q, void *dst, ka_buffer src, size_t src_offset, size_t bytes);
KA_API ka_status ka_buffer_write_async(ka_queue q, ka_buffer dst, size_t dst_offset, const void *src, size_t bytes,
                                       ka_event *ev);
KA_API ka_status ka_buffer_read_async(ka_queue q, void *dst, ka_buffer src, size_t src_offset, size_t bytes,
                                      ka_event *ev);
/* Copies and fills run on the device: they only enqueue (ev may be NULL). */
KA_API ka_status ka_buffer_copy(ka_queue q, ka_buffer dst, size_t dst_offset, ka_buffer src, size_t src_offset,
                                size_t bytes, ka_event *ev);
/* Repeats a pattern of 1, 2, 4, 8, 16, 32, 64 or 128 bytes; offset and bytes
 * must be multiples of pattern_size. */
KA_API ka_status ka_buffer_fill(ka_queue q, ka_buffer dst, size_t dst_offset, const void *pattern,
                                size_t pattern_size, size_t bytes, ka_event *ev);
/* A buffer of `bytes` zero bytes, or holding a copy of the `bytes` bytes at
 * src: the contents are in place when the call returns. */
KA_API ka_status ka_buffer_create_zeroed(ka_device dev, size_t bytes, ka_buffer *out);
KA_API ka_status ka_buffer_create_with(ka_device dev, size_t bytes, const void *src, ka_buffer *out);

/* A buffer over the caller's host memory [host, host + bytes), which must
 * outlive the buffer. OpenCL: CL_MEM_USE_HOST_PTR; PoCL's kernels then use
 * that memory in place (no copy in or out), at any alignment; other drivers
 * may keep a copy of memory not KA_HOST_ALIGN-aligned (ka_host_alloc's is),
 * seen by the host only between ka_buffer_map and unmap.
 * CUDA: the memory is page-locked (cuMemHostRegister, unless ka_host_alloc or
 * ka_host_register did it already) and kernels read and write it over the
 * bus; KA_ERR_UNSUPPORTED where the device cannot map host memory. Portable
 * code reads and writes the memory only between ka_buffer_map and unmap. */
KA_API ka_status ka_buffer_wrap(ka_device dev, void *host, size_t bytes, ka_buffer *out);
#define KA_HOST_ALIGN 4096
#define KA_MAP_READ 1u  /* the mapped bytes hold the buffer's contents */
#define KA_MAP_WRITE 2u /* what the host writes there is in the buffer after unmap */
/* Host access to bytes [offset, offset + bytes) of any buffer: blocks until
 * the queue's earlier commands are complete, then *ptr points at the bytes.
 * Without KA_MAP_READ they are undefined until written. Wrapped buffers map
 * to the user's memory where the driver uses it in place (PoCL, CUDA); CUDA
 * device memory maps through a page-locked copy. Until ka_buffer_unmap,
 * commands must not use the range. At most KA_MAX_MAPS maps of a buffer at once; a mapped buffer's
 * release is KA_ERR_IN_USE. */
#define KA_MAX_MAPS 4
KA_API ka_status ka_buffer_map(ka_queue q, ka_buffer b, size_t offset, size_t bytes, uint32_t flags, void **ptr);
/* Ends the map whose pointer is ptr; blocks until the buffer holds what was
 * written (KA_MAP_WRITE), so later commands of any queue see it. */
KA_API ka_status ka_buffer_unmap(ka_queue q, ka_buffer b, void *ptr);

/* ---- host memory -------------------------------------------------------- */
/* KA_HOST_ALIGN-aligned host memory for transfers and ka_buffer_wrap: on
 * CUDA page-locked and mapped for the device (cuMemHostAlloc), so transfers
 * run at full bus speed; elsewhere plain aligned memory, so the same code
 * runs everywhere. Freed with ka_host_free on the same device, before it is
 * closed (ka_device_close is KA_ERR_IN_USE until then). */
KA_API ka_status ka_host_alloc(ka_device dev, size_t bytes, void **ptr);
KA_API ka_status ka_host_free(ka_device dev, void *ptr);
/* Page-locks the caller's memory for fast transfers (CUDA: cuMemHostRegister);
 * elsewhere only recorded. Unregister before freeing the memory. */
KA_API ka_status ka_host_register(ka_device dev, void *ptr, size_t bytes);
KA_API ka_status ka_host_unregister(ka_device dev, void *ptr);

/* ---- programs and kernels ----------------------------------------------- */
typedef struct ka_build_options {
    const char *options;            /* extra compiler options, e.g. "-cl-fast-relaxed-math" */
    const char *const *defines;     /* "NAME" or "NAME=VALUE" each */
    uint32_t num_defines;
    const char *name;               /* the program's name in build logs, e.g. its file path ("name:3:5:
                                       error"); lines are the source's own. NULL = "program" (a file: its path) */
    const char *const *include_dirs; /* searched by #include, in order; no blanks or quotes in a path */
    uint32_t num_include_dirs;
} ka_build_options;

/* Builds the source (the dialect's prelude is prepended) for the device. On a
 * compile error returns KA_ERR_BUILD_FAILED and ka_last_error() holds the log.
 * opts may be NULL. */
KA_API ka_status ka_program_build(ka_device dev, const char *source, const ka_build_options *opts,
                                  ka_program *out);
/* ka_program_build of the file at path (1 byte to 16 MiB of text): its
 * directory is searched first by #include "...", then opts->include_dirs;
 * build logs name path unless opts->name is set. KA_ERR_IO when the file
 * cannot be read. A program whose source has an #include directive is not
 * kept in the persistent kernel cache (the cache cannot see the headers). */
KA_API ka_status ka_program_build_file(ka_device dev, const char *path, const ka_build_options *opts,
                                       ka_program *out);
/* Releases the program and every kernel got from it. */
KA_API ka_status ka_program_release(ka_program p);
/* The warnings libka's reading of the source gave at the build ("" if none),
 * one a line, "name:line: warning: ...": e.g. a `return` that can skip a
 * ka_barrier(). Each is also logged (KA_LOG_WARN); with KA_DEBUG=1 it fails
 * the build instead. Valid until the program's release. */
KA_API ka_status ka_program_build_log(ka_program p, const char **log);
/* Number of native builds made for this program so far (variants included). */
KA_API ka_status ka_program_build_count(ka_program p, uint32_t *count);
/* How many of the program's native builds were loaded from the persistent
 * kernel cache instead of compiled: each variant's build for the device and,
 * on PoCL, its lazy build for the `basic` device of routed small launches
 * (which ka_program_build_count does not count). The cache keeps compiled
 * binaries under $KA_CACHE_DIR, else $XDG_CACHE_HOME/libka, else
 * $HOME/.cache/libka; KA_CACHE=0 turns it off (docs/DESIGN.md). */
KA_API ka_status ka_program_cache_hits(ka_program p, uint32_t *hits);

/* A kernel configuration. Zero means "not fixed": defaults are settled when a
 * configuration is first seen by ka_kernel_get and become part of its key. */
typedef struct ka_kernel_config {
    uint32_t workgroup[3];    /* static work-group size (compiled in); all 0 = the kernel's KA_WORKGROUP if it
                                 declares one (another size: KA_ERR_INVALID_WORKGROUP), else dynamic */
    uint64_t ndrange[3];      /* static ndrange (compiled in); 0 = dynamic */
    uint32_t subgroup_size;   /* required sub-group size; 0 = the device's width */
    const char *defines;      /* extra "-D..." options for this variant only */
} ka_kernel_config;

/* Looks up (or compiles, the first time) kernel `name` of the program under
 * configuration cfg (NULL = all dynamic). A known (name, configuration) pair
 * costs a hash and a table probe: no allocation, no device query. Kernels live
 * as long as their program. */
KA_API ka_status ka_kernel_get(ka_program p, const char *name, const ka_kernel_config *cfg,
                               ka_kernel *out);

typedef struct ka_kernel_info {
    uint32_t num_args;               /* user arguments (the hidden range excluded) */
    uint32_t max_workgroup_size;     /* for this kernel on its device */
    uint32_t preferred_workgroup_multiple;
    uint32_t static_workgroup[3];    /* the configuration's or the kernel's KA_WORKGROUP; 0 = none */
    uint64_t static_ndrange[3];
    uint32_t subgroup_size;          /* settled default; 0 = no sub-groups */
    uint64_t local_mem_bytes;        /* statically declared local memory */
} ka_kernel_info;
KA_API ka_status ka_kernel_get_info(ka_kernel k, ka_kernel_info *out);

/* ---- persistent kernel cache -------------------------------------------- */
/* The cache's state as a build would find it now (the environment is read at
 * each call): on; off (KA_CACHE=0); or unusable (no directory can be named,
 * its path is too long, it cannot be made, or it is not a directory owned by
 * this user and writable only by it). */
typedef enum ka_cache_state { KA_CACHE_ON = 0, KA_CACHE_OFF = 1, KA_CACHE_UNUSABLE = 2 } ka_cache_state;
typedef struct ka_cache_info {
    ka_cache_state state;
    char dir[4096];      /* the directory ("" when none can be named; a longer path cut, ending "...") */
    char reason[256];    /* why off or unusable; "" when on */
    uint64_t entries;    /* entry files in the directory (0 while it does not exist) */
    uint64_t bytes;      /* their total size */
    uint64_t max_bytes;  /* the bound (KA_CACHE_MAX_BYTES, default 1 GiB); 0: none */
    uint64_t locks;      /* lock files (each a build of that entry in progress, or left by a crash) */
    uint64_t temps;      /* temporary files (stores in progress, or left by a crash) */
} ka_cache_info;
/* Fills *out (nothing is made or changed). Allocates nothing. */
KA_API ka_status ka_cache_get_info(ka_cache_info *out);
/* Removes every entry, temporary file and idle lock file from the cache
 * directory, nothing else; safe while other processes use the cache. *removed
 * (may be NULL) counts the files removed. KA_ERR_IO when the directory is
 * unusable or a file could not be removed. Allocates nothing. */
KA_API ka_status ka_cache_clear(uint64_t *removed);

/* ---- launch ------------------------------------------------------------- */
/* Values by value carry a type class: KA_ARG_INT (ka_arg_i8..u64) is taken
 * only by a parameter of an integer type, KA_ARG_FLOAT (ka_arg_f32/f64) by
 * float or double, each of the value's size; signedness is not checked (an
 * int parameter takes ka_arg_u32 too). KA_ARG_SCALAR, untyped, is matched
 * by size alone. A kind of its own per class keeps the launch's check one
 * compare of (kind, size). */
typedef enum ka_arg_kind {
    KA_ARG_BUFFER = 1,
    KA_ARG_SCALAR,   /* untyped by value: value bytes in .u, size in .size (1, 2, 4 or 8) */
    KA_ARG_LOCAL,    /* dynamic local memory of .size bytes */
    KA_ARG_BYTES,    /* raw bytes (a struct by value): .size bytes at .ptr */
    KA_ARG_INT,      /* an integer by value, as KA_ARG_SCALAR: for a parameter of an integer type */
    KA_ARG_FLOAT     /* a float or double by value, as KA_ARG_SCALAR: for a float or double parameter */
} ka_arg_kind;

typedef struct ka_arg {
    uint32_t kind;
    uint32_t size;
    union {
        uint64_t buffer;   /* ka_buffer.id */
        int8_t i8; uint8_t u8; int16_t i16; uint16_t u16;
        int32_t i32; uint32_t u32; int64_t i64; uint64_t u64;
        float f32; double f64;
        const void *ptr;
    } u;
} ka_arg;

static inline ka_arg ka_arg_buffer(ka_buffer b) { ka_arg a = {KA_ARG_BUFFER, 8, {0}}; a.u.buffer = b.id; return a; }
static inline ka_arg ka_arg_i8(int8_t v) { ka_arg a = {KA_ARG_INT, 1, {0}}; a.u.i8 = v; return a; }
static inline ka_arg ka_arg_u8(uint8_t v) { ka_arg a = {KA_ARG_INT, 1, {0}}; a.u.u8 = v; return a; }
static inline ka_arg ka_arg_i16(int16_t v) { ka_arg a = {KA_ARG_INT, 2, {0}}; a.u.i16 = v; return a; }
static inline ka_arg ka_arg_u16(uint16_t v) { ka_arg a = {KA_ARG_INT, 2, {0}}; a.u.u16 = v; return a; }
static inline ka_arg ka_arg_i32(int32_t v) { ka_arg a = {KA_ARG_INT, 4, {0}}; a.u.i32 = v; return a; }
static inline ka_arg ka_arg_u32(uint32_t v) { ka_arg a = {KA_ARG_INT, 4, {0}}; a.u.u32 = v; return a; }
static inline ka_arg ka_arg_i64(int64_t v) { ka_arg a = {KA_ARG_INT, 8, {0}}; a.u.i64 = v; return a; }
static inline ka_arg ka_arg_u64(uint64_t v) { ka_arg a = {KA_ARG_INT, 8, {0}}; a.u.u64 = v; return a; }
static inline ka_arg ka_arg_f32(float v) { ka_arg a = {KA_ARG_FLOAT, 4, {0}}; a.u.f32 = v; return a; }
static inline ka_arg ka_arg_f64(double v) { ka_arg a = {KA_ARG_FLOAT, 8, {0}}; a.u.f64 = v; return a; }
/* Sizes past 4 GiB saturate (never wrap to a small size): the launch then fails with an error. */
#define KA__ARG_SIZE(n) ((n) > 0xffffffffu ? 0xffffffffu : (uint32_t)(n))
static inline ka_arg ka_arg_local(size_t bytes) { ka_arg a = {KA_ARG_LOCAL, KA__ARG_SIZE(bytes), {0}}; return a; }
static inline ka_arg ka_arg_bytes(const void *p, size_t n) { ka_arg a = {KA_ARG_BYTES, KA__ARG_SIZE(n), {0}}; a.u.ptr = p; return a; }

/* The most arguments a kernel may take (ka_kernel_get refuses more: KA_ERR_UNSUPPORTED). */
#define KA_MAX_ARGS 64

typedef struct ka_range {
    uint32_t dims;          /* 1, 2 or 3; anything else is KA_ERR_INVALID_RANGE */
    uint64_t size[3];       /* logical ndrange; unused dimensions may be 0 (taken as 1) */
    uint32_t workgroup[3];  /* all 0 = the kernel's static size (KA_WORKGROUP or its configuration's), else
                               chosen by libka; nonzero = that size (KA_ERR_INVALID_WORKGROUP where it differs
                               from a static size) */
    uint32_t flags;         /* KA_LAUNCH_*; 0 = the queue's behaviour */
} ka_range;
/* Never run in the calling thread: on PoCL the launch skips routing and goes
 * to the threaded device, so ka_launch returns at once (CUDA: always so). */
#define KA_LAUNCH_ASYNC 1u
/* Spread the work-groups over every thread of a CPU device whatever the
 * range's size: for kernels whose work-items each do much work (a loop over a
 * run of elements). The host back-end otherwise runs a launch of fewer than
 * 4096 work-items in one thread; other back-ends ignore it. */
#define KA_LAUNCH_SPREAD 2u

/* Enqueues the kernel over the range. Padded lanes of a partial last group
 * see ka_in_range() false. A range with a zero extent is a no-op (an event,
 * if asked for, is complete). ev may be NULL. Allocates nothing. Safe to call
 * from several threads on one kernel.
 * On PoCL a launch of few work-items (the queue's inline_max_items, or by
 * default where measured faster) may run in the calling thread, on PoCL's `basic` device (routing): ka_launch returns
 * when the kernel has run, so a kernel that loops for a second blocks
 * ka_launch for that second, and a later wait, even a timed one, finds it
 * complete and cannot time out. For a launch that returns at once, set
 * KA_LAUNCH_ASYNC in range->flags, or inline_max_items = KA_INLINE_OFF for
 * the whole queue. */
KA_API ka_status ka_launch(ka_queue q, ka_kernel k, const ka_range *range, const ka_arg *args,
                           uint32_t nargs, ka_event *ev);

/* ---- events and waits --------------------------------------------------- */
#define KA_WAIT_FOREVER INT64_MAX
/* KA_OK when complete; KA_ERR_TIMEOUT if not done within timeout_ns (0 = poll);
 * KA_ERR_KERNEL_FAILED if the command failed; KA_ERR_INVALID_HANDLE if stale. */
KA_API ka_status ka_event_wait(ka_event ev, int64_t timeout_ns);
KA_API ka_status ka_wait_all(const ka_event *evs, uint32_t n, int64_t timeout_ns);
/* *index gets the position of one completed event. */
KA_API ka_status ka_wait_any(const ka_event *evs, uint32_t n, int64_t timeout_ns, uint32_t *index);
/* The handle becomes stale. A pending command still completes. */
KA_API ka_status ka_event_release(ka_event ev);
/* fn(ev_status, user) runs once when the event completes: on the driver's
 * callback thread, or in this call if already complete. Not run if this call
 * fails. Releasing the event afterwards is safe. fn must not block or call
 * wait functions on the same queue. */
typedef void (*ka_event_fn)(ka_status status, void *user);
KA_API ka_status ka_event_on_complete(ka_event ev, ka_event_fn fn, void *user);
/* A file descriptor (eventfd) that becomes readable when an event of the queue
 * whose notification was requested with ka_event_notify completes. */
KA_API ka_status ka_queue_fd(ka_queue q, int *fd);
KA_API ka_status ka_event_notify(ka_event ev);

/* Device time of a completed command of a profiling queue
 * (ka_queue_config.profiling), from the start to the end the driver
 * reports (OpenCL: CL_PROFILING_COMMAND_START/END; CUDA: timed events around
 * the command, 0.5 us resolution). A command that ran nothing (an empty
 * range) takes 0. KA_ERR_UNSUPPORTED: the queue does not profile, or the
 * back-end cannot (null); KA_ERR_INVALID_ARGUMENT: not complete yet (wait first). */
KA_API ka_status ka_event_elapsed_ns(ka_event ev, uint64_t *ns);

/* Counters of how waits on a queue's events ended (for tests and tuning). */
typedef struct ka_queue_stats {
    uint64_t waits_polled;   /* waits that saw completion while polling or spinning */
    uint64_t waits_slept;    /* waits that armed the completion callback and slept */
    uint64_t callbacks;      /* driver completion callbacks run */
    uint64_t inline_max_items; /* routing limit in effect (0: every launch on the device) */
    uint64_t inline_launches;  /* launches that ran inline on PoCL's `basic` device */
} ka_queue_stats;
KA_API ka_status ka_queue_get_stats(ka_queue q, ka_queue_stats *out);

/* Process-wide default spin before sleeping in waits (ns); 0 turns spinning off. */
KA_API void ka_set_wait_spin(int64_t spin_ns);

/* ---- recorded launch graphs -------------------------------------------- */
/* Launches, copies and fills recorded once and replayed many times: a time
 * step replayed at a fraction of its launches' cost. Between ka_graph_begin
 * and ka_graph_end, ka_launch, ka_buffer_copy and ka_buffer_fill on the queue
 * are checked as always and recorded instead of run; ka_graph_last_node
 * names the command just recorded. CUDA replays a CUDA graph; OpenCL and null replay the
 * pre-validated launches. docs/API.md, section 16. */
typedef struct ka_graph { uint64_t id; } ka_graph;
typedef struct ka_graph_info {
    uint32_t nodes;      /* commands recorded */
    uint32_t launches;   /* of which kernel launches */
    uint32_t native;     /* 1: replayed as the driver's own graph (CUDA) */
} ka_graph_info;
/* Starts recording on q. Nothing recorded runs until ka_graph_launch. */
KA_API ka_status ka_graph_begin(ka_queue q);
/* Stops recording and makes the graph (CUDA: builds and instantiates it). On
 * failure the recording is discarded and *out is {0}. An empty recording is
 * KA_ERR_INVALID_ARGUMENT. */
KA_API ka_status ka_graph_end(ka_queue q, ka_graph *out);
/* Replays the graph on q (any queue of its device, after q's earlier
 * commands). ev, if not NULL, completes when the whole graph has. Allocates
 * nothing. A buffer or kernel of the graph released since: a clean error,
 * nothing enqueued. */
KA_API ka_status ka_graph_launch(ka_queue q, ka_graph g, ka_event *ev);
/* A recorded command, named by the id recording gave it (never counted:
 * primitives such as ka_reduce record several commands). */
typedef struct ka_graph_node { uint32_t index; } ka_graph_node;
/* While q records: the id of the command recorded last on q (call it right
 * after the ka_launch whose arguments will change). KA_ERR_INVALID_ARGUMENT
 * when q is not recording or nothing is recorded yet. */
KA_API ka_status ka_graph_last_node(ka_queue q, ka_graph_node *out);
/* Argument `index` of launch node `node` for later replays, checked like a
 * ka_launch argument (a buffer of the graph's device; bytes of the size
 * recorded). Allocates nothing. Not concurrently with a replay of g. */
KA_API ka_status ka_graph_set_arg(ka_graph g, ka_graph_node node, uint32_t index, ka_arg arg);
KA_API ka_status ka_graph_get_info(ka_graph g, ka_graph_info *out);
/* Waits for nothing: a replay already enqueued still runs. */
KA_API ka_status ka_graph_release(ka_graph g);

/* ---- tracing ------------------------------------------------------------ */
/* Launches, transfers, fills, queue finishes and waits, timed on the host
 * (CLOCK_MONOTONIC) around each call. KA_TRACE=file.json writes them as a
 * Chrome trace (chrome://tracing, Perfetto); ka_set_tracer hands each to a
 * function (NVTX ranges, a profiler). Either is chosen when a device opens:
 * devices opened without either cost nothing more. docs/API.md, "Tracing". */
typedef enum ka_trace_kind {
    KA_TRACE_LAUNCH = 1, KA_TRACE_WRITE, KA_TRACE_READ, KA_TRACE_COPY, KA_TRACE_FILL, KA_TRACE_FINISH, KA_TRACE_WAIT
} ka_trace_kind;
typedef struct ka_trace_event {
    uint32_t kind;        /* ka_trace_kind */
    uint32_t end;         /* 0: the call begins; 1: it returned */
    const char *name;     /* the kernel's name, else the call's ("ka_buffer_write"); valid during the call */
    uint64_t queue;       /* ka_queue.id (a wait: its first event's queue) */
    int64_t t_ns;         /* CLOCK_MONOTONIC */
    uint64_t bytes;       /* transfers and fills */
    uint32_t dims;        /* launches: the padded range and work-group */
    uint64_t global[3], local[3];
    ka_status status;     /* end: what the call returns */
} ka_trace_event;
typedef void (*ka_tracer_fn)(const ka_trace_event *ev, void *user);
/* Installs fn (NULL removes it). A device is traced or not from its open:
 * one opened while a tracer is installed or KA_TRACE names a file is traced,
 * and every traced device calls the tracer installed at the time of the call,
 * so a tracer set later is called by devices already traced too; devices
 * opened untraced never call it. fn is called in the calling thread before
 * and after each traced call and must not call libka. fn and user are stored
 * separately, and the call does not wait for a tracer running in another
 * thread: install, replace or remove the tracer only while no traced call
 * runs in another thread. */
KA_API void ka_set_tracer(ka_tracer_fn fn, void *user);

/* ---- version ------------------------------------------------------------ */
KA_API const char *ka_version(void);

#ifdef __cplusplus
}
#endif
#endif /* KA_H */
