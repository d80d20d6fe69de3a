/* Tracing (trace.c): the layer a device calls through when KA_TRACE is set or
 * a tracer is installed (ka_set_tracer), and the spans the core's waits add.
 * Not installed. */
#ifndef KA_TRACE_H
#define KA_TRACE_H
#include "ka_internal.h"

/* True once a traced device was opened: the waits then ask ka__trace_begin. */
extern _Atomic bool ka__tracing;

/* Whether d calls through the tracing layer. */
bool ka__trace_device(const ka__device *d);

/* The tracing layer over be when tracing is asked for at this device open,
 * else be itself (layer.c). */
const ka__backend *ka__trace_layer(const ka__backend *be);

/* Starts a span of q's (te zeroed but for kind and name) when q's device is
 * traced: fills queue and time, tells the tracer; false when not traced. */
bool ka__trace_begin(const ka__queue *q, ka_trace_event *te);
/* Ends it: tells the tracer, records it for the trace file. */
void ka__trace_end(const ka__queue *q, ka_trace_event *te, ka_status st);

/* te is filled only when tracing: an untraced wait writes nothing to it. */
static inline bool ka__trace_waits(const ka__queue *q, ka_trace_event *te, const char *name) {
    if (KA_LIKELY(!atomic_load_explicit(&ka__tracing, memory_order_relaxed))) return false;
    *te = (ka_trace_event){.kind = KA_TRACE_WAIT, .name = name};
    return ka__trace_begin(q, te);
}
#endif
