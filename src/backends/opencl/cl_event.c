/* Native events: the cl_event of a command. A launch routed to `basic` has
 * none (pocl/pocl_launch.c): the core completes its event at once. */
#include "cl_internal.h"

int ka__cl_event_query(void *ev, ka_status *st) {
    cl_int s = CL_QUEUED;
    cl_int err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
    if (err != CL_SUCCESS) s = err;
    if (s == CL_COMPLETE) return 1;
    if (s < 0) {
        *st = KA_ERR_KERNEL_FAILED;
        ka__log(KA_LOG_ERROR, "command failed on the device: %s", ka__cl_error_name(s));
        return -1;
    }
    return 0;
}

const char *ka__cl_event_error(void *ev) {
    cl_int s = CL_COMPLETE;
    if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL) != CL_SUCCESS || s >= 0) return NULL;
    return ka__cl_error_name(s);
}

static void CL_CALLBACK on_complete(cl_event ev, cl_int status, void *ctx) {
    (void)ev;
    ka__event_native_done(ctx, status < 0 ? KA_ERR_KERNEL_FAILED : KA_OK);
}

ka_status ka__cl_event_callback(void *ev, ka__native_cb cb, void *ctx) {
    (void)cb; /* always ka__event_native_done: called directly, so nothing is stored */
    KA__CL_CHECK("clSetEventCallback", clSetEventCallback(ev, CL_COMPLETE, on_complete, ctx));
    return KA_OK;
}

ka_status ka__cl_event_wait(void *ev) {
    cl_event e = ev;
    cl_int err = clWaitForEvents(1, &e);
    if (err == CL_SUCCESS) return KA_OK;
    ka__cl_fail("clWaitForEvents", err);
    return KA_ERR_KERNEL_FAILED;
}

void ka__cl_event_release(void *ev) { clReleaseEvent(ev); }

ka_status ka__cl_event_elapsed(void *ev, uint64_t *ns) {
    cl_ulong t0 = 0, t1 = 0;
    KA__CL_CHECK("clGetEventProfilingInfo(START)",
                 clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL));
    KA__CL_CHECK("clGetEventProfilingInfo(END)", clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL));
    *ns = t1 > t0 ? t1 - t0 : 0;
    return KA_OK;
}
