/* The null back-end: runs nothing, completes everything at once. Selected by
 * "null"; lets tests exercise the core (validation, handles, events,
 * allocation paths) without a driver. A kernel has as many arguments as its
 * KA_KERNEL declaration has parameters (kdecl.h's scanner). */
#include "backend.h"
#include "kdecl.h"

#include <stdio.h>
#include <string.h>

static ka_status n_enumerate(ka_device_info *out, uint32_t cap, uint32_t *n) {
    (void)out;
    (void)cap;
    *n = 0;
    return KA_OK;
}

static ka_status n_device_open(ka__device *d, uint32_t index) {
    (void)index;
    ka_device_info *i = &d->info;
    memset(i, 0, sizeof *i);
    i->backend = KA_BACKEND_NULL;
    snprintf(i->selector, sizeof i->selector, "null");
    snprintf(i->name, sizeof i->name, "null device");
    snprintf(i->platform, sizeof i->platform, "libka null back-end");
    snprintf(i->version, sizeof i->version, "none");
    i->compute_units = 1;
    i->max_workgroup_size = 1024;
    i->max_workgroup[0] = i->max_workgroup[1] = i->max_workgroup[2] = 1024;
    i->preferred_workgroup_multiple = 1;
    i->local_mem_size = 65536;
    i->global_mem_size = i->max_alloc_size = (uint64_t)1 << 30;
    i->max_arg_bytes = 1024;
    return KA_OK;
}

static void n_device_close(ka__device *d) { (void)d; }
static ka_status n_ok_q(ka__queue *q) { (void)q; return KA_OK; }
static ka_status n_queue_create(ka__queue *q, const ka_queue_config *cfg) { (void)q; (void)cfg; return KA_OK; }
static void n_void_q(ka__queue *q) { (void)q; }

static ka_status n_buffer_create(ka__buffer *b) {
    b->native = b->bytes <= SIZE_MAX - b->guard ? ka__calloc(1, b->bytes + b->guard) : NULL;
    return b->native ? KA_OK : ka__fail(KA_ERR_DEVICE_OUT_OF_MEMORY, "null: out of memory for %zu bytes", b->bytes);
}
static void n_buffer_release(ka__buffer *b) {
    if (!b->host) ka__free(b->native, b->bytes + b->guard);
}
/* KA_DEBUG's guard zone: the bytes after the buffer's (no kernel of the
 * null device writes it; the checks run all the same). */
static ka_status n_buffer_guard(ka__buffer *b, void *host, bool write) {
    char *zone = (char *)b->native + b->bytes;
    if (write) memcpy(zone, host, b->guard);
    else memcpy(host, zone, b->guard);
    return KA_OK;
}
static void n_buffer_native(ka__buffer *b, ka_native_buffer *out) { out->address = b->native; } /* host memory */
/* Host memory is the null device's memory: a wrapped buffer is the caller's
 * bytes, used in place as PoCL's are. */
static ka_status n_buffer_wrap(ka__buffer *b) {
    b->native = b->host;
    return KA_OK;
}
static ka_status n_buffer_init(ka__buffer *b, const void *src) {
    if (src) memcpy(b->native, src, b->bytes);
    else memset(b->native, 0, b->bytes);
    return KA_OK;
}
static ka_status n_map(ka__queue *q, ka__buffer *b, size_t off, size_t n, uint32_t flags, void **ptr, void **token) {
    (void)q; (void)n; (void)flags;
    *ptr = (char *)b->native + off;
    *token = NULL;
    return KA_OK;
}
static ka_status n_unmap(ka__queue *q, ka__buffer *b, const struct ka__map *m) {
    (void)q; (void)b; (void)m;
    return KA_OK;
}
/* Every command is complete on return: a pending event never reaches here. */
static ka_status n_queue_wait(ka__queue *q, void *ev) {
    (void)q; (void)ev;
    return KA_OK;
}

static ka_status n_write(ka__queue *q, ka__buffer *b, size_t off, size_t n, const void *src, void **ev, bool block) {
    (void)q;
    memcpy((char *)b->native + off, src, n);
    (void)block; /* complete on return */
    if (ev) *ev = NULL;
    return KA_OK;
}
static ka_status n_read(ka__queue *q, ka__buffer *b, size_t off, size_t n, void *dst, void **ev, bool block) {
    (void)q;
    memcpy(dst, (char *)b->native + off, n);
    (void)block; /* complete on return */
    if (ev) *ev = NULL;
    return KA_OK;
}
static ka_status n_copy(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n, void **ev, bool block) {
    (void)q;
    memcpy((char *)d->native + dof, (char *)s->native + so, n);
    (void)block; /* complete on return */
    if (ev) *ev = NULL;
    return KA_OK;
}
static ka_status n_fill(ka__queue *q, ka__buffer *b, const void *pat, size_t psz, size_t off, size_t n, void **ev, bool block) {
    (void)q;
    for (size_t i = 0; i < n; i += psz) memcpy((char *)b->native + off + i, pat, psz);
    (void)block; /* complete on return */
    if (ev) *ev = NULL;
    return KA_OK;
}

/* Nothing is compiled or cached: the "module" is the program. */
static ka_status n_build_target(ka__build *b) {
    snprintf(b->target_name, sizeof b->target_name, "null");
    b->cache = false;
    return KA_OK;
}
static ka_status n_compile(ka__build *b, void **binary, size_t *size, void **module) {
    (void)binary;
    (void)size;
    if (strstr(b->prog->source, "#error"))
        return ka__fail(KA_ERR_BUILD_FAILED, "null: build failed\nbuild log:\nsource contains #error");
    *module = b->prog;
    return KA_OK;
}
static ka_status n_load(ka__build *b, void *binary, size_t size, void **module) {
    (void)binary;
    (void)size;
    *module = b->prog;
    return KA_OK;
}
static void n_module_release(ka__program *p, void *module, uint32_t target) { (void)p; (void)module; (void)target; }

static ka_status n_kernel_init(ka__kernel *k, uint32_t n) {
    k->nargs = n;
    k->sig = ka__calloc(n ? n : 1, sizeof *k->sig);
    if (!k->sig) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    k->native = k;
    k->max_wg = 1024;
    k->pref_multiple = 1;
    return KA_OK;
}

/* As many parameters as its KA_KERNEL or KA_KERNEL_NOARGS declaration has (kdecl.h). */
static ka_status n_kernel_create(ka__kernel *k) {
    uint32_t n;
    if (ka__kdecl_count(k->prog->source, k->name, &n)) return n_kernel_init(k, n);
    return ka__fail(KA_ERR_KERNEL_NOT_FOUND, "no kernel '%s' in the program", k->name);
}
static void n_kernel_release(ka__kernel *k) { (void)k; }

static const char failed_event = 0;

static ka_status n_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs,
                          void **ev) {
    (void)q; (void)l;
    /* As every back-end does: an unknown kind reaches here only past the
     * core's fast check (garbage of exactly an unknown argument's tag). */
    for (uint32_t i = 0; i < nargs; i++)
        if (args[i].kind < KA_ARG_BUFFER || args[i].kind > KA_ARG_FLOAT)
            return ka__fail(KA_ERR_ARG_TYPE, "kernel '%s' argument %u: unknown argument kind %u", k->name, i,
                            args[i].kind);
    /* A kernel whose name starts with "ka_null_fail" fails on the "device":
     * its event completes with an error, as a faulting kernel's would. */
    if (ev) *ev = !strncmp(k->name, "ka_null_fail", 12) ? (void *)&failed_event : NULL;
    return KA_OK;
}
static int n_query(void *ev, ka_status *st) {
    if (ev != &failed_event) return 1;
    *st = KA_ERR_KERNEL_FAILED;
    return -1;
}
static ka_status n_callback(void *ev, ka__native_cb cb, void *ctx) {
    cb(ctx, ev == &failed_event ? KA_ERR_KERNEL_FAILED : KA_OK);
    return KA_OK;
}
static ka_status n_wait(void *ev) {
    return ev == &failed_event ? ka__fail(KA_ERR_KERNEL_FAILED, "null: the kernel failed") : KA_OK;
}
static void n_release(void *ev) { (void)ev; }
static const char *n_event_error(void *ev) { return ev == &failed_event ? "a ka_null_fail kernel (null back-end)" : NULL; }

const ka__backend ka__null_backend = {
    .version = KA__BACKEND_VERSION, .name = "null", .kind = KA_BACKEND_NULL, .flags = KA__BE_UNLISTED,
    .enumerate = n_enumerate, .device_open = n_device_open, .device_close = n_device_close,
    .queue_create = n_queue_create, .queue_release = n_void_q, .queue_finish = n_ok_q, .queue_flush = n_ok_q,
    .buffer_create = n_buffer_create, .buffer_release = n_buffer_release, .buffer_native = n_buffer_native,
    .buffer_write = n_write, .buffer_read = n_read, .buffer_copy = n_copy, .buffer_fill = n_fill,
    .buffer_wrap = n_buffer_wrap, .buffer_init = n_buffer_init, .buffer_map = n_map, .buffer_unmap = n_unmap,
    .buffer_guard = n_buffer_guard,
    .queue_wait = n_queue_wait,
    .prelude = "", .build_target = n_build_target, .compile = n_compile, .load = n_load,
    .module_release = n_module_release,
    .kernel_create = n_kernel_create, .kernel_release = n_kernel_release,
    .launch = n_launch, .event_query = n_query, .event_callback = n_callback, .event_wait = n_wait,
    .event_release = n_release, .event_error = n_event_error,
};
