/* The launch, the hot path. cuLaunchKernel's parameter array is built on
 * the stack: the hidden range first, then one pointer per argument (buffers
 * and local-memory offsets in a stack array of 64-bit values); a graph's
 * kernel nodes (cuda_graph.c) get theirs from the same code, in the graph's
 * storage. Dynamic local memory: each KA_ARG_LOCAL gets a 16-byte aligned
 * offset into the block's dynamic shared memory, passed as the argument (the
 * prelude's ka_local_ptr<T> adds it to the extern __shared__ base), and the
 * total is the launch's sharedMemBytes. */
#include "cuda_internal.h"

/* Raises the function's dynamic shared-memory limit to at least `bytes`. The
 * limit only grows, so a launch that read a large enough value needs no lock. */
static ka_status raise_dyn_smem(ka__kernel *k, ka__cu_kern *nk, uint32_t bytes) {
    ka__cu_dev *nd = k->prog->dev->native;
    if (k->local_mem + bytes > nd->smem_optin)
        return ka__fail(KA_ERR_INVALID_ARGUMENT,
                        "kernel '%s' needs %u bytes of local memory arguments + %llu static, over the device's %u",
                        k->name, bytes, (unsigned long long)k->local_mem, nd->smem_optin);
    ka_status st = KA_OK;
    pthread_mutex_lock(&nk->lock);
    if (atomic_load_explicit(&nk->dyn_smem, memory_order_relaxed) < bytes) {
        CUresult r = CUDA_SUCCESS;
        for (int i = 0; i < 3 && r == CUDA_SUCCESS; i++) /* each dimension's entry point */
            r = ka__cu.cuFuncSetAttribute(nk->fn[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes);
        if (r == CUDA_SUCCESS) atomic_store_explicit(&nk->dyn_smem, bytes, memory_order_release);
        else st = ka__cu_fail(r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    }
    pthread_mutex_unlock(&nk->lock);
    return st;
}

/* One body for ka__cuda_launch (the hot path: static, so the compiler may
 * inline it there) and, through ka__cuda_kernel_params, the graph's kernel
 * nodes. */
static inline ka_status kernel_params(ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs,
                                      void **params, uint64_t *vals, CUDA_KERNEL_NODE_PARAMS *kp) {
    ka__cu_kern *nk = k->bk;
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
                return ka__fail(KA_ERR_ARG_TYPE, "kernel '%s' argument %u ('%s') is a %u-byte value, not KA_LOCAL_ARG",
                                k->name, i, k->sig[i].name, k->sig[i].size);
            shmem = (shmem + 15u) & ~15u;
            vals[i] = shmem;
            params[i + 1] = &vals[i];
            if (KA_UNLIKELY(a->size > UINT32_MAX - 16 - shmem))
                return ka__fail(KA_ERR_INVALID_ARGUMENT, "argument %u: local memory size overflows", i);
            shmem += a->size;
            break;
        case KA_ARG_BYTES: params[i + 1] = (void *)a->u.ptr; break;
        case KA_ARG_INT:
        case KA_ARG_FLOAT:
        case KA_ARG_SCALAR: params[i + 1] = (void *)&a->u; break; /* the value's bytes lead the union */
        default: /* only past the fast check: garbage of exactly an unknown argument's tag */
            return ka__fail(KA_ERR_ARG_TYPE, "kernel '%s' argument %u ('%s'): unknown argument kind %u", k->name, i,
                            k->sig[i].name, a->kind);
        }
    }
    size_t gx = l->global[0] / l->local[0], gy = l->global[1] / l->local[1], gz = l->global[2] / l->local[2];
    if (KA_UNLIKELY(gx > 0x7fffffffu || gy > KA__GRID_YZ_MAX || gz > KA__GRID_YZ_MAX))
        return ka__fail(KA_ERR_INVALID_RANGE,
                        "kernel '%s': the range (%llu,%llu,%llu) in work-groups of (%zu,%zu,%zu) needs %zu x %zu x "
                        "%zu work-groups, over CUDA's grid limit (2^31-1 x 65535 x 65535)",
                        k->name, (unsigned long long)l->nd[0], (unsigned long long)l->nd[1],
                        (unsigned long long)l->nd[2], l->local[0], l->local[1], l->local[2], gx, gy, gz);
    /* The 2- and 3-D entry points index dimension 0 in 32 bits (ka_kernel_cuda.h). */
    if (KA_UNLIKELY(l->dims > 1 && l->global[0] > UINT32_MAX))
        return ka__fail(KA_ERR_INVALID_RANGE,
                        "kernel '%s': a %u-D range's dimension 0 is at most 2^32 - 1 items on CUDA (padded to "
                        "work-groups: %zu); a 1-D range may be longer",
                        k->name, l->dims, l->global[0]);
    if (KA_UNLIKELY(shmem > atomic_load_explicit(&nk->dyn_smem, memory_order_acquire))) {
        ka_status st = raise_dyn_smem(k, nk, shmem);
        if (st != KA_OK) return st;
    }
    *kp = (CUDA_KERNEL_NODE_PARAMS){
        .func = nk->fn[l->dims - 1], /* the core checked 1 <= dims <= 3 */
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

ka_status ka__cuda_kernel_params(ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs, void **params,
                                 uint64_t *vals, CUDA_KERNEL_NODE_PARAMS *kp) {
    return kernel_params(k, l, args, nargs, params, vals, kp);
}

ka_status ka__cuda_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs,
                          void **ev) {
    ka__cu_queue *nq = q->native;
    void *params[KA_MAX_ARGS + 3];
    uint64_t vals[KA_MAX_ARGS];
    CUDA_KERNEL_NODE_PARAMS kp = {0}; /* kernel_params fills it; gcc -O3 cannot see that its failures are not KA_OK */
    ka_status st = ka__cuda_bind(nq->nd);
    if (KA_UNLIKELY(st != KA_OK)) return st;
    if (KA_UNLIKELY((st = kernel_params(k, l, args, nargs, params, vals, &kp)) != KA_OK)) return st;
    if (KA_UNLIKELY(((ka__cu_kern *)k->bk)->asserts)) { /* ka_assert: the queue's record, the kernel's handle */
        kp.kernelParams[nargs + 1] = &nq->arec; /* params, or the core's list (ka__launch.argp) */
        kp.kernelParams[nargs + 2] = &k->id;
        ka__queue_mark_asserts(q);
    }
    KA__CU_EVENT_BEGIN(nq, ev, ne);
    CUresult r = ka__cu.cuLaunchKernel(kp.func, kp.gridDimX, kp.gridDimY, kp.gridDimZ, kp.blockDimX, kp.blockDimY,
                                       kp.blockDimZ, kp.sharedMemBytes, nq->stream, kp.kernelParams, NULL);
    return ka__cuda_event_after(ne, r, "cuLaunchKernel", ev);
}
