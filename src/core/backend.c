/* The back-ends built in, the contract's check, and their public names. */
#include "ka_internal.h"
#include "backend.h"

const ka__backend *const ka__backends[] = {
    &ka__opencl_backend,
    &ka__host_backend,
#ifdef KA_HAVE_CUDA
    &ka__cuda_backend,
#endif
    &ka__null_backend,
};
const uint32_t ka__nbackends = sizeof ka__backends / sizeof ka__backends[0];

ka_status ka__backend_check(const ka__backend *be) {
    if (be->version != KA__BACKEND_VERSION)
        return ka__fail(KA_ERR_UNSUPPORTED, "the %s back-end implements contract version %u, libka needs %u",
                        be->name, be->version, KA__BACKEND_VERSION);
    /* The required hooks, by name (the optional ones are NULL-checked at each call). */
#define REQ(h) {#h, be->h == NULL}
    const struct { const char *name; bool missing; } req[] = {
        REQ(enumerate), REQ(device_open), REQ(device_close), REQ(queue_create), REQ(queue_release),
        REQ(queue_finish), REQ(queue_flush), REQ(buffer_create), REQ(buffer_release), REQ(buffer_write),
        REQ(buffer_read), REQ(buffer_copy), REQ(buffer_fill), REQ(prelude), REQ(build_target), REQ(compile),
        REQ(load), REQ(module_release), REQ(kernel_create), REQ(kernel_release), REQ(launch), REQ(event_query), REQ(event_callback),
        REQ(event_wait), REQ(event_release), REQ(buffer_wrap), REQ(buffer_init), REQ(buffer_map),
        REQ(buffer_unmap), REQ(queue_wait),
    };
#undef REQ
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
        if (req[i].missing)
            return ka__fail(KA_ERR_UNSUPPORTED, "the %s back-end lacks the required hook %s", be->name, req[i].name);
    if (!be->source_append != !be->append_file)
        return ka__fail(KA_ERR_UNSUPPORTED, "the %s back-end sets one of source_append and append_file "
                        "(both or neither)", be->name);
    int graph_hooks = !!be->graph_make + !!be->graph_launch + !!be->graph_update + !!be->graph_release;
    if (graph_hooks != 0 && graph_hooks != 4)
        return ka__fail(KA_ERR_UNSUPPORTED, "the %s back-end sets %d of the 4 graph hooks (none or all)",
                        be->name, graph_hooks);
    int host_hooks = !!be->host_alloc + !!be->host_free + !!be->host_register + !!be->host_unregister;
    if (host_hooks != 0 && host_hooks != 4)
        return ka__fail(KA_ERR_UNSUPPORTED, "the %s back-end sets %d of the 4 host memory hooks (none or all)",
                        be->name, host_hooks);
    return KA_OK;
}

const char *ka_backend_name(ka_backend b) {
    for (uint32_t i = 0; i < ka__nbackends; i++)
        if (ka__backends[i]->kind == b) return ka__backends[i]->name;
    return "unknown";
}
