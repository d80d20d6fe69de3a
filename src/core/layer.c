/* The library calls each back-end directly, or through the tracing layer
 * when KA_TRACE or a tracer asks for it at device open (trace.c). The tests'
 * fault injection build links tests/fault_layer.c in place of this file. */
#include "ka_internal.h"
#include "backend.h"
#include "trace.h"

const ka__backend *ka__backend_layer(const ka__backend *be) { return ka__trace_layer(be); }
