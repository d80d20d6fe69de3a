/* ka_queue_wait_event: a dependency between queues, enqueued on the device
 * (clEnqueueBarrierWithWaitList, cuStreamWaitEvent), so the host never waits
 * and a copy queue and a compute queue overlap. Allocates nothing. */
#include "event.h"

ka_status ka_queue_wait_event(ka_queue queue, ka_event ev) {
    ka__slot *qs, *es;
    ka__queue *q = ka__pin(queue.id, KA__T_QUEUE, &qs);
    if (KA_UNLIKELY(!q)) return ka__fail(KA_ERR_INVALID_HANDLE, "ka_queue_wait_event: invalid or released queue");
    /* Pinned: its queue cannot go (ka__events_fini drains the slots), nor
     * the native event, which the user's reference keeps until release. */
    ka__event *e = ka__event_pin(ev, &es);
    if (KA_UNLIKELY(!e)) {
        ka__unpin(qs);
        return ka__fail(KA_ERR_INVALID_HANDLE, "ka_queue_wait_event: invalid, released or stale event");
    }
    ka_status st = KA_OK;
    if (KA_UNLIKELY(q->rec)) {
        st = ka__fail(KA_ERR_INVALID_ARGUMENT,
                      "ka_queue_wait_event: the queue is recording a graph, which holds no dependency on an event "
                      "(wait before ka_graph_launch)");
    } else if (ka__event_poll(e)) {
        /* Done (an inline launch's, a no-op's, or finished): nothing to wait
         * for. A failed command's dependents would never have their input. */
        ka_status es_st = (ka_status)atomic_load_explicit(&e->status, memory_order_acquire);
        if (KA_UNLIKELY(es_st != KA_OK))
            st = ka__fail(es_st, "ka_queue_wait_event: the event's command failed (%s); nothing was enqueued",
                          ka_status_name(es_st));
    } else if (KA_UNLIKELY(e->q->dev != q->dev)) {
        st = ka__fail(KA_ERR_INVALID_ARGUMENT,
                      "ka_queue_wait_event: the event is of another device's queue (wait for it on the host)");
    } else if (e->q != q) { /* a queue's own commands are in order already */
        st = ka__be_queue_wait(q, e->native);
    }
    ka__unpin(es);
    ka__unpin(qs);
    return st;
}
