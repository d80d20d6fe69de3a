/* The CUDA back-end's own objects and the functions its files share. Not
 * installed. Names: the core's objects are d q b p k e g, their native state
 * nd nq nb nk ne (ka__cu_dev, ka__cu_queue, ..., as in the OpenCL back-end). */
#ifndef KA_CUDA_INTERNAL_H
#define KA_CUDA_INTERNAL_H

#include "backend.h"
#include "cuda_loader.h"
#include "freelist.h"

/* ka__device.native */
typedef struct ka__cu_dev {
    CUdevice dev;
    CUcontext ctx;             /* the device's primary context, retained */
    int ordinal;
    int cc;                    /* major*10 + minor */
    uint32_t smem_optin;       /* largest static + dynamic shared memory of a block */
} ka__cu_dev;

typedef struct ka__cu_queue ka__cu_queue;

/* A native event: one pooled CUevent. The core holds one reference from the
 * command that recorded it until it calls event_release; an armed completion
 * callback holds another until it has run. At zero it goes back to the pool. */
typedef struct ka__cu_event {
    CUevent ev;                /* recorded behind the command: default sync (cheap to record) */
    CUevent bev;               /* blocking sync, recorded on the side stream behind ev when a wait sleeps */
    CUevent sev;               /* profiling queues only: recorded before the command (ev then times too) */
    _Atomic uint32_t chain;    /* bev for this recording of ev: 0 none, 1 being recorded, 2 recorded, 3 failed */
    ka__cu_queue *nq;
    _Atomic uint32_t refs;
    uint32_t index;            /* in the queue's pool */
    _Atomic uint32_t next_free; /* pool link, index + 1 (freelist.h) */
    uint64_t seq;              /* record order on the queue's stream */
    struct ka__cu_event *armed_next; /* helper's list, under nq->lock */
    ka__native_cb cb;
    void *cb_ctx;
} ka__cu_event;

/* The event pool grows in chunks (see cuda_events.c); up to the core's
 * largest queue capacity (2^20) plus a margin. */
#define KA__CU_EVENT_CHUNK 1024u
#define KA__CU_EVENT_MAX_CHUNKS ((1u << 20) / KA__CU_EVENT_CHUNK + 2u)

/* ka__queue.native */
struct ka__cu_queue {
    ka__cu_dev *nd;
    ka__queue *q;
    CUstream stream;
    CUstream side;             /* where blocking-sync events follow the stream's (cuda_events.c) */
    ka__cu_event *_Atomic chunks[KA__CU_EVENT_MAX_CHUNKS];
    _Atomic uint32_t nev;      /* events made */
    pthread_mutex_t grow_lock;
    ka__freelist free_head;    /* the pool's free list (freelist.h) */
    _Atomic uint64_t seq;
    /* completion-callback helper thread */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    ka__cu_event *armed;       /* events with a callback to run, under lock */
    bool stop;
    bool thread_started;
    bool profiling;            /* events time their command: sev before it, ev after */
    CUdeviceptr arec;          /* ka_assert's record (KA__ASSERT_WORDS words), zeroed on the stream */
    CUstream astream;          /* where waits read and clear arec (not after the stream's later commands) */
    pthread_t thread;
};

/* A module (ka__variant.native) */
typedef struct ka__cu_module {
    CUmodule mod;
    char *ptx;                 /* kept only when the driver lacks cuFuncGetParamInfo */
    size_t ptx_len;
} ka__cu_module;

/* ka__kernel.bk */
typedef struct ka__cu_kern {
    CUfunction fn[3];          /* by the launch's dimensions - 1: KA_KERNEL's instantiations */
    _Atomic uint32_t dyn_smem; /* MAX_DYNAMIC_SHARED_SIZE_BYTES set so far (only grows) */
    pthread_mutex_t lock;      /* raising dyn_smem */
    bool asserts;              /* the program calls ka_assert: two hidden parameters last */
} ka__cu_kern;

/* Makes the device's context current on the calling thread (a no-op when it
 * already is). */
static inline ka_status ka__cuda_bind(const ka__cu_dev *nd) {
    CUcontext cur = NULL;
    if (KA_LIKELY(ka__cu.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == nd->ctx)) return KA_OK;
    CUresult r = ka__cu.cuCtxSetCurrent(nd->ctx);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuCtxSetCurrent");
}

/* cuda_device.c */
ka_status ka__cuda_enumerate(ka_device_info *out, uint32_t cap, uint32_t *n);
ka_status ka__cuda_device_open(ka__device *d, uint32_t index);
void ka__cuda_device_close(ka__device *d);
void ka__cuda_device_native(ka__device *d, ka_native_device *out);

/* cuda_queue.c */
ka_status ka__cuda_queue_create(ka__queue *q, const ka_queue_config *cfg);
void ka__cuda_queue_release(ka__queue *q);
ka_status ka__cuda_queue_finish(ka__queue *q);
ka_status ka__cuda_queue_flush(ka__queue *q);
ka_status ka__cuda_assert_take(ka__queue *q, uint32_t *rec);
void ka__cuda_queue_native(ka__queue *q, ka_native_queue *out);

/* cuda_events.c */
/* Makes n pooled events and starts the callback thread; on failure leaves
 * nothing made. */
ka_status ka__cuda_events_init(ka__cu_queue *nq, uint32_t n);
/* After a successful ka__cuda_events_init and an idle stream. */
void ka__cuda_events_fini(ka__cu_queue *nq);
/* Pops a pooled event (refs = 1). Called before the command is enqueued: a
 * profiling queue records the event's start there. NULL, with the detail
 * recorded, when all are in use or that record failed. */
ka__cu_event *ka__cuda_event_pop(ka__cu_queue *nq);
/* Before an enqueue: declares ne, the event the command will record when ev
 * asks for one, popped first; when none can be had, returns the failure
 * ka__cuda_event_pop recorded (KA_ERR_EVENT_POOL_EXHAUSTED, or a driver
 * call's) from the caller. Then ka__cuda_event_after. */
#define KA__CU_EVENT_BEGIN(nq, ev, ne) \
    ka__cu_event *ne = NULL;             \
    if ((ev) && KA_UNLIKELY(!(ne = ka__cuda_event_pop(nq)))) return ka__fail_status()
/* Returns an event that was popped but never recorded. */
void ka__cuda_event_unpop(ka__cu_event *ne);
/* Records ne on the queue's stream. */
ka_status ka__cuda_event_record(ka__cu_event *ne);
/* The end of an enqueue (r, named call) that popped ne when an event was
 * asked for: on success records ne behind it and hands it out in *ev; on
 * failure gives ne back to the pool. */
static inline ka_status ka__cuda_event_after(ka__cu_event *ne, CUresult r, const char *call, void **ev) {
    if (KA_UNLIKELY(r != CUDA_SUCCESS)) {
        if (ne) ka__cuda_event_unpop(ne);
        return ka__cu_fail(r, call);
    }
    if (ne) {
        ka_status st = ka__cuda_event_record(ne);
        if (KA_UNLIKELY(st != KA_OK)) {
            ka__cuda_event_unpop(ne);
            return st;
        }
        *ev = ne;
    }
    return KA_OK;
}
int ka__cuda_event_query(void *ev, ka_status *st);
const char *ka__cuda_event_error(void *ev);
ka_status ka__cuda_event_callback(void *ev, ka__native_cb cb, void *ctx);
ka_status ka__cuda_event_wait(void *ev);
void ka__cuda_event_release(void *ev);
ka_status ka__cuda_event_elapsed(void *ev, uint64_t *ns);

/* cuda_memory.c */
/* Smallest period (1, 2 or 4 bytes) a fill pattern repeats with, else psz. */
size_t ka__cuda_fill_period(const unsigned char *pat, size_t psz);
/* The first per (1, 2 or 4) bytes of a pattern as the memset element's value. */
unsigned int ka__cuda_fill_value(const unsigned char *pat, size_t per);
ka_status ka__cuda_buffer_create(ka__buffer *b);
void ka__cuda_buffer_release(ka__buffer *b);
ka_status ka__cuda_buffer_write(ka__queue *q, ka__buffer *b, size_t off, size_t n, const void *src, void **ev, bool block);
ka_status ka__cuda_buffer_read(ka__queue *q, ka__buffer *b, size_t off, size_t n, void *dst, void **ev, bool block);
ka_status ka__cuda_buffer_copy(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n, void **ev, bool block);
ka_status ka__cuda_buffer_fill(ka__queue *q, ka__buffer *b, const void *pat, size_t psz, size_t off, size_t n, void **ev, bool block);
void ka__cuda_buffer_native(ka__buffer *b, ka_native_buffer *out);

/* cuda_hostmem.c: wrapped buffers, initial contents, maps, waits on another
 * queue's event, page-locked host memory */
ka_status ka__cuda_buffer_wrap(ka__buffer *b);
void ka__cuda_buffer_unwrap(ka__buffer *b);
ka_status ka__cuda_buffer_init(ka__buffer *b, const void *src);
ka_status ka__cuda_buffer_guard(ka__buffer *b, void *host, bool write);
ka_status ka__cuda_buffer_map(ka__queue *q, ka__buffer *b, size_t off, size_t n, uint32_t flags, void **ptr, void **token);
ka_status ka__cuda_buffer_unmap(ka__queue *q, ka__buffer *b, const struct ka__map *m);
ka_status ka__cuda_queue_wait(ka__queue *q, void *ev);
ka_status ka__cuda_host_alloc(ka__device *d, size_t bytes, void **ptr);
void ka__cuda_host_free(ka__device *d, void *ptr);
ka_status ka__cuda_host_register(ka__device *d, void *ptr, size_t bytes);
void ka__cuda_host_unregister(ka__device *d, void *ptr);

/* cuda_program.c: the build hooks */
ka_status ka__cuda_build_target(ka__build *b);
ka_status ka__cuda_compile(ka__build *b, void **binary, size_t *size, void **module);
ka_status ka__cuda_module_load(ka__build *b, void *image, size_t len, void **module);
void ka__cuda_module_release(ka__program *p, void *module, uint32_t target);

/* cuda_kernel.c */
ka_status ka__cuda_kernel_create(ka__kernel *k);
void ka__cuda_kernel_release(ka__kernel *k);

/* cuda_launch.c */
ka_status ka__cuda_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs,
                          void **ev);
/* cuLaunchKernel's parameters for k on l (l->mem: the buffers' CUdeviceptrs)
 * with args, into storage the caller provides: params (nargs + 1 pointers:
 * the hidden range, then each argument's value, pointing into l, args and
 * vals), vals (nargs: local-memory offsets) and *kp (kernelParams = params;
 * func, grid, block, dynamic shared memory). Checks the grid limit and
 * raises the function's dynamic shared-memory limit when needed. Shared by
 * ka_launch and the graph's kernel nodes. */
ka_status ka__cuda_kernel_params(ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs, void **params,
                                 uint64_t *vals, CUDA_KERNEL_NODE_PARAMS *kp);

/* cuda_graph.c: the graph hooks (backend.h) */
ka_status ka__cuda_graph_make(ka__graph *g);
ka_status ka__cuda_graph_launch(ka__queue *q, ka__graph *g, void **ev);
ka_status ka__cuda_graph_update(ka__graph *g, uint32_t node);
void ka__cuda_graph_release(ka__graph *g);

#endif
