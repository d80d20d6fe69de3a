/* The launch, the hot path: the arguments that changed set from the
 * kernel's cache, the kernel enqueued on the main queue (cl_args.h, shared
 * with PoCL routing's launch). */
#include "cl_args.h"

ka_status __attribute__((noinline)) ka__cl_set_assert(ka__queue *q, const ka__kernel *k, cl_kernel ck, cl_mem *last) {
    ka__cl_queue *nq = q->native;
    if (*last != nq->arec) {
        cl_ulong kid = k->id;
        KA__CL_CHECK("clSetKernelArg(ka_assert record)", clSetKernelArg(ck, k->nargs + 1, sizeof(cl_mem), &nq->arec));
        KA__CL_CHECK("clSetKernelArg(ka_assert kernel)", clSetKernelArg(ck, k->nargs + 2, sizeof kid, &kid));
        *last = nq->arec;
    }
    ka__queue_mark_asserts(q);
    return KA_OK;
}

ka_status ka__cl_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs,
                        void **ev) {
    return ka__cl_launch_main(q, k, l, args, nargs, ev);
}
