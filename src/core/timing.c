/* ka_event_elapsed_ns: the device's own time of a command, on queues made
 * with ka_queue_config.profiling (off by default: the back-ends then create
 * their queues and events exactly as without it). */
#include "event.h"

ka_status ka_event_elapsed_ns(ka_event ev, uint64_t *ns) {
    if (!ns) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_event_elapsed_ns: ns is NULL");
    *ns = 0;
    ka__slot *s;
    ka__event *e = ka__event_pin(ev, &s);
    if (!e) return ka__fail(KA_ERR_INVALID_HANDLE, "ka_event_elapsed_ns: invalid, released or stale event");
    ka_status st = KA_OK;
    if (!e->q->profiling)
        st = ka__fail(KA_ERR_UNSUPPORTED,
                      "ka_event_elapsed_ns: the event's queue does not profile (ka_queue_config.profiling = 1)");
    else if (!e->q->dev->ops->event_elapsed) /* the null back-end: it times nothing, even what ran nothing */
        st = ka__be_event_elapsed(e->q, NULL, ns);
    else if (!ka__event_poll(e))
        st = ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_event_elapsed_ns: the command is not complete (wait for it first)");
    else if (e->native) /* none: the command ran nothing (an empty range) */
        st = ka__be_event_elapsed(e->q, e->native, ns);
    ka__unpin(s);
    return st;
}
