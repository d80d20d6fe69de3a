/* Plans of the primitives: the kernels built once for (device, type,
 * operator) and the scratch buffers sized for the largest n, so calls
 * allocate nothing. The primitive-specific parts are each primitive's hooks
 * (prims.h); this file checks the desc, sets the default layout, composes the
 * source and builds it. */
#include "prims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src_common.h"

static const ka__prim_impl *impl_of(ka_prim_kind k) {
    static const ka__prim_impl *const all[] = {&ka__prim_reduce, &ka__prim_scan, &ka__prim_sort,
                                               &ka__prim_searchsorted, &ka__prim_segreduce,
                                               &ka__prim_select, &ka__prim_histogram};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->kind == k) return all[i];
    return NULL;
}

static void plan_free(ka_prims_plan *p) {
    for (int i = 0; i < KA__PLAN_BUFFERS; i++)
        if (p->b[i].id) ka_buffer_release(p->b[i]);
    if (p->prog.id) ka_program_release(p->prog);
    p->magic = 0;
    ka__free(p, sizeof *p);
}

ka_status ka_prims_plan_release(ka_prims_plan *p) {
    KA__ENTRY();
    if (!p) return KA_OK;
    if (p->magic != KA__PLAN_MAGIC)
        return ka__fail(KA_ERR_INVALID_HANDLE, "not a live plan");
    plan_free(p);
    return KA_OK;
}

static ka_status scratch(ka_prims_plan *p, int i, size_t bytes, int init, const void *data, const char *what) {
    size_t sz = bytes ? bytes : 8;
    ka_status st = !init ? ka_buffer_create(p->dev, sz, &p->b[i])
                 : data  ? ka_buffer_create_with(p->dev, sz, data, &p->b[i])
                         : ka_buffer_create_zeroed(p->dev, sz, &p->b[i]);
    if (st != KA_OK) {
        char d[256];
        snprintf(d, sizeof d, "%s", ka__detail_message());
        return ka__fail(st, "scratch for %s (%zu bytes): %s", what, bytes, d);
    }
    return KA_OK;
}

ka_status ka__plan_scratch(ka_prims_plan *p, int i, size_t bytes, const char *what) {
    return scratch(p, i, bytes, 0, NULL, what);
}

ka_status ka__plan_scratch_init(ka_prims_plan *p, int i, size_t bytes, const void *data, const char *what) {
    return scratch(p, i, bytes, 1, data, what);
}

uint64_t ka__plan_static_local(const ka_prims_plan *p) {
    return p->di->local_mem_size < 49152 ? p->di->local_mem_size : 49152;
}

/* The program's source: the layout's defines, the user's expressions as
 * macros, the primitive's own defines, the common source, the user's
 * definitions, the operators built on them, the primitive's kernels. */
static char *compose(const ka_prims_plan *p, const ka_prims_desc *d, const ka__prim_impl *im, int no_subgroups,
                     size_t *capp) {
    const char *usrc = d->source ? d->source : "";
    size_t cap = strlen(ka__prims_src_common) + strlen(ka__prims_src_ops) + strlen(im->src) + strlen(usrc) +
                 sizeof p->defs + 1024 + (d->op ? strlen(d->op) : 0) + (d->identity ? strlen(d->identity) : 0) +
                 (d->map ? strlen(d->map) : 0) + (d->predicate ? strlen(d->predicate) : 0);
    char *s = ka__alloc(cap);
    if (!s) return NULL;
    *capp = cap;
    size_t n = (size_t)snprintf(s, cap, "#define TID %d\n#define WG %u\n#define K %u\n#define CONTIG %d\n%s",
                                (int)p->dtype, p->wg, p->tile / p->wg, p->contig,
                                no_subgroups ? "#define KA_PRIMS_NO_SUBGROUPS 1\n" : "");
    if (d->op)
        n += (size_t)snprintf(s + n, cap - n, "#define PRIMS_USER_OP(a, b) (%s)\n#define PRIMS_USER_IDENTITY (%s)\n",
                              d->op, d->identity);
    if (d->map) n += (size_t)snprintf(s + n, cap - n, "#define PRIMS_USER_MAP(x) (%s)\n", d->map);
    if (d->predicate) n += (size_t)snprintf(s + n, cap - n, "#define PRIMS_USER_PREDICATE(x) (%s)\n", d->predicate);
    snprintf(s + n, cap - n, "%s%s\n%s\n%s%s", p->defs, ka__prims_src_common, usrc, ka__prims_src_ops, im->src);
    return s;
}

static size_t dtype_size(ka_dtype t) {
    return t == KA_DTYPE_I32 || t == KA_DTYPE_U32 || t == KA_DTYPE_F32 ? 4 : 8;
}

/* Both public makers' body: a call of one public function from another
 * would leave the inner one's name current. */
static ka_status plan_create(ka_device dev, const ka_prims_desc *d, ka_prims_plan **out) {
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!d) return ka__fail(KA_ERR_INVALID_ARGUMENT, "desc is NULL");
    const ka__prim_impl *im = impl_of(d->kind);
    if (!im) return ka__fail(KA_ERR_INVALID_ARGUMENT, "unknown kind %d", (int)d->kind);
    if (d->dtype < KA_DTYPE_I32 || d->dtype > KA_DTYPE_F64)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "unknown dtype %d", (int)d->dtype);
    if (d->max_n == 0) return ka__fail(KA_ERR_INVALID_ARGUMENT, "max_n is 0");
    if (!d->op != !d->identity)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "an operator needs both op and identity");
    if (d->op && d->kind != KA_PRIM_REDUCE && d->kind != KA_PRIM_SCAN && d->kind != KA_PRIM_SEGMENTED_REDUCE)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "a %s plan takes no operator", ka__prim_name(d->kind));
    if (d->map && !d->op)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "map is applied with a user operator only (set op)");
    if (d->predicate && d->kind != KA_PRIM_SELECT)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "a %s plan takes no predicate", ka__prim_name(d->kind));
    if (d->bins && d->kind != KA_PRIM_HISTOGRAM)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "bins is for histogram plans");
    if (d->flags && d->kind != KA_PRIM_SORT)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "flags 0x%x not valid for %s", d->flags,
                        ka__prim_name(d->kind));
    const ka_device_info *di;
    ka_status st = ka_device_get_info(dev, &di);
    if (st != KA_OK) return st;
    if (d->dtype == KA_DTYPE_F64 && !di->has_double)
        return ka__fail(KA_ERR_UNSUPPORTED, "%s has no double", di->name);
    size_t esize = dtype_size(d->dtype);
    if (d->max_n > SIZE_MAX / 8 / esize) return ka__fail(KA_ERR_INVALID_ARGUMENT, "max_n %zu too large", d->max_n);

    ka_prims_plan *p = ka__calloc(1, sizeof *p);
    if (!p) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    p->magic = KA__PLAN_MAGIC;
    p->kind = d->kind, p->dtype = d->dtype, p->flags = d->flags, p->max_n = d->max_n, p->esize = esize;
    p->bins = d->bins, p->user_op = d->op != NULL, p->predicate = d->predicate != NULL;
    p->dev = dev, p->di = di;
    /* GPUs: 256 work-items of 8 scan elements each, 8 groups per
     * multiprocessor; CPUs: 64 of 16, 4 groups per core. */
    const char *lay = getenv("KA_PRIMS_LAYOUT"); /* tests: "gpu" runs the GPU layout on a CPU */
    int cpu = di->is_cpu && !(lay && !strcmp(lay, "gpu"));
    uint32_t wg = cpu ? 64 : 256, kk = cpu ? 16 : 8;
    while (wg > di->max_workgroup_size && wg > 1) wg /= 2;
    p->wg = wg, p->tile = wg * kk, p->contig = cpu;
    uint64_t groups = (uint64_t)(di->compute_units ? di->compute_units : 1) * (cpu ? 4 : 8);
    const char *env = getenv("KA_PRIMS_GROUPS"); /* tests: many groups over a small input */
    if (env && atoi(env) > 0) groups = (uint64_t)atoi(env);
    p->max_groups = groups;

    st = im->setup ? im->setup(p, d) : KA_OK;
    if (st == KA_OK) {
        const char *sg = getenv("KA_PRIMS_SUBGROUPS"); /* "0": the local-memory scans on CUDA too */
        size_t cap = 0;
        char *src = compose(p, d, im, sg && !strcmp(sg, "0"), &cap);
        if (!src) st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
        else {
            ka_build_options bo = {.name = "prims"};
            st = ka_program_build(dev, src, &bo, &p->prog);
            ka__free(src, cap);
        }
    }
    const char *const *names = !p->contig && im->gpu_kernels ? im->gpu_kernels : im->kernels;
    for (int i = 0; st == KA_OK && names[i]; i++) st = ka_kernel_get(p->prog, names[i], NULL, &p->k[i]);
    if (st == KA_OK && im->alloc) st = im->alloc(p);
    if (st != KA_OK) {
        plan_free(p);
        return st;
    }
    *out = p;
    return KA_OK;
}

ka_status ka_prims_plan_create(ka_device dev, ka_prim_kind kind, ka_dtype dtype, size_t max_n, uint32_t flags,
                               ka_prims_plan **out) {
    KA__ENTRY();
    ka_prims_desc d = {.kind = kind, .dtype = dtype, .max_n = max_n, .flags = flags};
    return plan_create(dev, &d, out);
}

ka_status ka_prims_plan_create_desc(ka_device dev, const ka_prims_desc *d, ka_prims_plan **out) {
    KA__ENTRY();
    return plan_create(dev, d, out);
}
