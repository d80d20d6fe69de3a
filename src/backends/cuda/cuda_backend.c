/* The CUDA back-end's table (struct ka__backend, src/core/backend.h): queues and the launch path.
 *
 * A queue is a non-blocking CUstream plus a pool of CUevents and a callback
 * helper thread (cuda_events.c). The launch builds cuLaunchKernel's
 * parameter array on the stack: the hidden range first, then one pointer per
 * argument (buffers and local-memory offsets in a stack array of 64-bit
 * values); a graph's kernel nodes (cuda_graph.c) get theirs from the same
 * code, in the graph's storage. Dynamic local memory: each KA_ARG_LOCAL gets
 * a 16-byte aligned offset into the block's dynamic shared memory, passed as
 * the argument (the prelude's ka_local_ptr<T> adds it to the extern
 * __shared__ base), and the total is the launch's sharedMemBytes. */
#include "cuda_internal.h"

#include <string.h>

#ifdef KA_HAVE_CUDA

/* Events per queue: the core's slot count (its default when not yet known)
 * plus a margin for released events the callback helper still holds. */
#define KA__CUDA_EVENT_MARGIN 64
#define KA__CUDA_DEFAULT_EVENTS 1024

static ka_status cuda_queue_create(ka__queue *kq, const ka_queue_config *cfg) {
    (void)cfg; /* nothing in it is the back-end's */
    ka__cudev *d = kq->dev->native;
    ka_status st = ka__cuda_bind(d);
    if (st != KA_OK) return st;
    ka__cuq *q = ka__calloc(1, sizeof *q);
    if (!q) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_queue_create: out of memory");
    q->d = d;
    q->kq = kq;
    q->profiling = kq->profiling;
    CUresult r = ka__cu.cuStreamCreate(&q->stream, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) {
        ka__free(q, sizeof *q);
        return ka__cu_fail(r, "cuStreamCreate");
    }
    /* ka_assert's record: zeroed on the stream, before any kernel. */
    if ((r = ka__cu.cuMemAlloc(&q->arec, KA__ASSERT_WORDS * 4)) != CUDA_SUCCESS ||
        (r = ka__cu.cuMemsetD8Async(q->arec, 0, KA__ASSERT_WORDS * 4, q->stream)) != CUDA_SUCCESS ||
        (r = ka__cu.cuStreamCreate(&q->astream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
        if (q->arec) ka__cu.cuMemFree(q->arec);
        ka__cu.cuStreamDestroy(q->stream);
        ka__free(q, sizeof *q);
        return ka__cu_fail(r, "cuMemAlloc/cuMemsetD8Async(assertion record)");
    }
    /* The core's slot count when it is known here, else its default. */
    uint32_t slots = kq->nevents ? kq->nevents : KA__CUDA_DEFAULT_EVENTS;
    if ((st = ka__cuda_events_init(q, slots + KA__CUDA_EVENT_MARGIN)) != KA_OK) {
        ka__cu.cuStreamDestroy(q->astream);
        ka__cu.cuMemFree(q->arec);
        ka__cu.cuStreamDestroy(q->stream);
        ka__free(q, sizeof *q);
        return st;
    }
    kq->native = q;
    return KA_OK;
}

/* After a wait: the awaited command and those before it are complete and
 * the host saw it. The record is read on a stream of its own (non-blocking):
 * on the queue's stream the read would also wait for the commands enqueued
 * after the awaited one, and a timed wait would lose its timeout. */
static ka_status cuda_assert_take(ka__queue *kq, uint32_t *rec) {
    ka__cuq *q = kq->native;
    ka_status st = ka__cuda_bind(q->d);
    if (st != KA_OK) return st;
    CUresult r = ka__cu.cuMemcpyDtoHAsync(rec, q->arec, KA__ASSERT_WORDS * 4, q->astream);
    if (r == CUDA_SUCCESS) r = ka__cu.cuStreamSynchronize(q->astream);
    if (r == CUDA_SUCCESS && rec[0] &&
        (r = ka__cu.cuMemsetD8Async(q->arec, 0, KA__ASSERT_WORDS * 4, q->astream)) == CUDA_SUCCESS)
        r = ka__cu.cuStreamSynchronize(q->astream);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "reading the assertion record");
}

static void cuda_queue_release(ka__queue *kq) {
    ka__cuq *q = kq->native;
    if (!q) return;
    if (ka__cuda_bind(q->d) == KA_OK) ka__cu.cuStreamSynchronize(q->stream);
    ka__cuda_events_fini(q);
    ka__cu.cuMemFree(q->arec);
    ka__cu.cuStreamDestroy(q->astream);
    ka__cu.cuStreamDestroy(q->stream);
    ka__free(q, sizeof *q);
    kq->native = NULL;
}

static ka_status cuda_queue_finish(ka__queue *kq) {
    ka__cuq *q = kq->native;
    ka_status st = ka__cuda_bind(q->d);
    if (st != KA_OK) return st;
    CUresult r = ka__cu.cuStreamSynchronize(q->stream);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuStreamSynchronize");
}

/* Commands start as soon as they are enqueued. */
static ka_status cuda_queue_flush(ka__queue *kq) {
    (void)kq;
    return KA_OK;
}

/* Raises the function's dynamic shared-memory limit to at least `bytes`. The
 * limit only grows, so a launch that read a large enough value needs no lock. */
static ka_status raise_dyn_smem(const char *call, ka__kernel *k, ka__cukern *ck, uint32_t bytes) {
    ka__cudev *d = k->prog->dev->native;
    if (k->local_mem + bytes > d->smem_optin)
        return ka__fail(KA_ERR_INVALID_ARGUMENT,
                        "%s: kernel '%s' needs %u bytes of local memory arguments + %llu static, over the device's %u", call,
                        k->name, bytes, (unsigned long long)k->local_mem, d->smem_optin);
    ka_status st = KA_OK;
    pthread_mutex_lock(&ck->lock);
    if (atomic_load_explicit(&ck->dyn_smem, memory_order_relaxed) < bytes) {
        CUresult r = CUDA_SUCCESS;
        for (int i = 0; i < 3 && r == CUDA_SUCCESS; i++) /* each dimension's entry point */
            r = ka__cu.cuFuncSetAttribute(ck->fn[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes);
        if (r == CUDA_SUCCESS) atomic_store_explicit(&ck->dyn_smem, bytes, memory_order_release);
        else st = ka__cu_fail(r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    }
    pthread_mutex_unlock(&ck->lock);
    return st;
}

/* Inlined into cuda_launch (the hot path); the graph's kernel nodes call it
 * through ka__cuda_kernel_params. */
static inline ka_status kernel_params(const char *call, ka__kernel *k, const ka__launch *l, const ka_arg *args,
                                      uint32_t nargs, void **params, uint64_t *vals, CUDA_KERNEL_NODE_PARAMS *p) {
    ka__cukern *ck = k->bk;
    uint32_t shmem = 0;
    if (KA_LIKELY(l->argp)) { /* buffers and scalars only: the core's list is the driver's */
        params = l->argp;
        nargs = 0;
    }
    params[0] = (void *)l->nd;
    for (uint32_t i = 0; i < nargs; i++) {
        const ka_arg *a = &args[i];
        switch (a->kind) {
        case KA_ARG_BUFFER: params[i + 1] = (void *)&l->mem[i]; break; /* resolved by the core: the CUdeviceptr */
        case KA_ARG_LOCAL:
            if (KA_UNLIKELY(k->sig[i].size && k->sig[i].size != 8))
                return ka__fail(KA_ERR_ARG_TYPE, "%s: kernel '%s' argument %u ('%s') is a %u-byte value, not KA_LOCAL_ARG",
                                call, k->name, i, k->sig[i].name, k->sig[i].size);
            shmem = (shmem + 15u) & ~15u;
            vals[i] = shmem;
            params[i + 1] = &vals[i];
            if (KA_UNLIKELY(a->size > UINT32_MAX - 16 - shmem))
                return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s: argument %u: local memory size overflows", call, i);
            shmem += a->size;
            break;
        case KA_ARG_BYTES: params[i + 1] = (void *)a->u.ptr; break;
        case KA_ARG_INT:
        case KA_ARG_FLOAT:
        case KA_ARG_SCALAR: params[i + 1] = (void *)&a->u; break; /* the value's bytes lead the union */
        default: /* only past the fast check: garbage of exactly an unknown argument's tag */
            return ka__fail(KA_ERR_ARG_TYPE, "%s: kernel '%s' argument %u ('%s'): unknown argument kind %u", call, k->name,
                            i, k->sig[i].name, a->kind);
        }
    }
    size_t gx = l->global[0] / l->local[0], gy = l->global[1] / l->local[1], gz = l->global[2] / l->local[2];
    if (KA_UNLIKELY(gx > 0x7fffffffu || gy > KA__GRID_YZ_MAX || gz > KA__GRID_YZ_MAX))
        return ka__fail(KA_ERR_INVALID_RANGE,
                        "%s: kernel '%s': the range (%llu,%llu,%llu) in work-groups of (%zu,%zu,%zu) needs %zu x %zu x "
                        "%zu work-groups, over CUDA's grid limit (2^31-1 x 65535 x 65535)",
                        call, k->name, (unsigned long long)l->nd[0], (unsigned long long)l->nd[1],
                        (unsigned long long)l->nd[2], l->local[0], l->local[1], l->local[2], gx, gy, gz);
    /* The 2- and 3-D entry points index dimension 0 in 32 bits (ka_kernel_cuda.h). */
    if (KA_UNLIKELY(l->dims > 1 && l->global[0] > UINT32_MAX))
        return ka__fail(KA_ERR_INVALID_RANGE,
                        "%s: kernel '%s': a %u-D range's dimension 0 is at most 2^32 - 1 items on CUDA (padded to "
                        "work-groups: %zu); a 1-D range may be longer",
                        call, k->name, l->dims, l->global[0]);
    if (KA_UNLIKELY(shmem > atomic_load_explicit(&ck->dyn_smem, memory_order_acquire))) {
        ka_status st = raise_dyn_smem(call, k, ck, shmem);
        if (st != KA_OK) return st;
    }
    *p = (CUDA_KERNEL_NODE_PARAMS){
        .func = ck->fn[l->dims - 1], /* the core checked 1 <= dims <= 3 */
        .gridDimX = (unsigned)gx,
        .gridDimY = (unsigned)gy,
        .gridDimZ = (unsigned)gz,
        .blockDimX = (unsigned)l->local[0],
        .blockDimY = (unsigned)l->local[1],
        .blockDimZ = (unsigned)l->local[2],
        .sharedMemBytes = shmem,
        .kernelParams = params,
    };
    return KA_OK;
}

ka_status ka__cuda_kernel_params(const char *call, ka__kernel *k, const ka__launch *l, const ka_arg *args,
                                 uint32_t nargs, void **params, uint64_t *vals, CUDA_KERNEL_NODE_PARAMS *p) {
    return kernel_params(call, k, l, args, nargs, params, vals, p);
}

static ka_status cuda_launch(ka__queue *kq, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs,
                             void **ev) {
    ka__cuq *q = kq->native;
    void *params[KA_MAX_ARGS + 3];
    uint64_t vals[KA_MAX_ARGS];
    CUDA_KERNEL_NODE_PARAMS p = {0}; /* kernel_params fills it; gcc -O3 cannot see that its failures are not KA_OK */
    ka_status st = ka__cuda_bind(q->d);
    if (KA_UNLIKELY(st != KA_OK)) return st;
    if (KA_UNLIKELY((st = kernel_params("ka_launch", k, l, args, nargs, params, vals, &p)) != KA_OK)) return st;
    if (KA_UNLIKELY(((ka__cukern *)k->bk)->asserts)) { /* ka_assert: the queue's record, the kernel's handle */
        p.kernelParams[nargs + 1] = &q->arec; /* params, or the core's list (ka__launch.argp) */
        p.kernelParams[nargs + 2] = &k->id;
        ka__queue_mark_asserts(kq);
    }
    ka__cuev *e = NULL;
    if (ev && KA_UNLIKELY(!(e = ka__cuda_event_pop(q)))) return KA_ERR_EVENT_POOL_EXHAUSTED;
    CUresult r = ka__cu.cuLaunchKernel(p.func, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY, p.blockDimZ,
                                       p.sharedMemBytes, q->stream, p.kernelParams, NULL);
    return ka__cuda_event_after(e, r, "cuLaunchKernel", ev);
}

/* Interop: the CUdevice (an int, carried in the pointer) and the retained
 * primary context, which any CUDA runtime code on the device also uses. */
static void cuda_queue_native(ka__queue *kq, ka_native_queue *out) { out->queue = ((ka__cuq *)kq->native)->stream; }

/* The device pointer is both: what the driver calls the buffer and the
 * address a CUDA-aware MPI (or a kernel of the user's) uses. */
static void cuda_buffer_native(ka__buffer *b, ka_native_buffer *out) { out->address = b->native; }

static void cuda_device_native(ka__device *kd, ka_native_device *out) {
    ka__cudev *d = kd->native;
    out->device = (void *)(intptr_t)d->dev;
    out->context = d->ctx;
}

const ka__backend ka__cuda_backend = {
    .version = KA__BACKEND_VERSION,
    .name = "cuda",
    .kind = KA_BACKEND_CUDA,
    .flags = KA__BE_WAIT_SLEEPS,
    .enumerate = ka__cuda_enumerate,
    .device_open = ka__cuda_device_open,
    .device_close = ka__cuda_device_close,
    .queue_create = cuda_queue_create,
    .queue_release = cuda_queue_release,
    .queue_finish = cuda_queue_finish,
    .queue_flush = cuda_queue_flush,
    .buffer_create = ka__cuda_buffer_create,
    .buffer_release = ka__cuda_buffer_release,
    .buffer_write = ka__cuda_buffer_write,
    .buffer_read = ka__cuda_buffer_read,
    .buffer_copy = ka__cuda_buffer_copy,
    .buffer_fill = ka__cuda_buffer_fill,
    .buffer_wrap = ka__cuda_buffer_wrap,
    .buffer_init = ka__cuda_buffer_init,
    .buffer_guard = ka__cuda_buffer_guard,
    .buffer_map = ka__cuda_buffer_map,
    .buffer_unmap = ka__cuda_buffer_unmap,
    .queue_wait = ka__cuda_queue_wait,
    .host_alloc = ka__cuda_host_alloc,
    .host_free = ka__cuda_host_free,
    .host_register = ka__cuda_host_register,
    .host_unregister = ka__cuda_host_unregister,
    .prelude = ka__prelude_cuda,
    .source_file = "kernel source",
    .build_target = ka__cuda_build_target,
    .compile = ka__cuda_compile,
    .load = ka__cuda_module_load,
    .module_release = ka__cuda_module_release,
    .kernel_create = ka__cuda_kernel_create,
    .kernel_release = ka__cuda_kernel_release,
    .launch = cuda_launch,
    .event_query = ka__cuda_event_query,
    .event_error = ka__cuda_event_error,
    .event_callback = ka__cuda_event_callback,
    .event_wait = ka__cuda_event_wait,
    .event_release = ka__cuda_event_release,
    .event_elapsed = ka__cuda_event_elapsed,
    .assert_take = cuda_assert_take,
    .device_native = cuda_device_native,
    .queue_native = cuda_queue_native,
    .buffer_native = cuda_buffer_native,
    .graph_make = ka__cuda_graph_make,
    .graph_launch = ka__cuda_graph_launch,
    .graph_update = ka__cuda_graph_update,
    .graph_release = ka__cuda_graph_release,
};

#endif
