/* The host back-end's launch: the arguments as an array of pointers to their
 * values (on the stack, or copied into a ring slot for an asynchronous
 * launch), the launch's constants, and the kernel's entry run over a static
 * partition of the range: rows (or columns of one row) for kernels without
 * barriers or local memory, work-groups for the others, each group of a
 * kernel with barriers as fibers. A launch of fewer than
 * KA__HOST_INLINE_ITEMS padded work-items runs whole in the calling thread,
 * unless KA_LAUNCH_SPREAD asks for the pool. A failure in a part is
 * reported with the message its thread recorded.
 * Nothing here allocates but the fiber sets the device lacks (host_device.c). */
#include "host_internal.h"

#include <stdio.h>
#include <string.h>

#define KA__HOST_WHY 512

typedef struct run {
    ka__hdev *hd;
    const ka__hkern *hk;
    const ka__hctx *c;
    void *const *argv;
    uint64_t rows, cols, groups, group_items;
    _Atomic int32_t status; /* the first failure of a part */
    char *why;              /* its message, copied in the part's thread */
} run;

typedef struct item_ctx {
    const run *r;
    uint64_t b[3]; /* the group's first global index */
} item_ctx;

static void item(void *ctx, uint32_t i) {
    const item_ctx *ic = ctx;
    const ka__hctx *c = ic->r->c;
    uint64_t l0 = i % c->lsize[0], rest = i / c->lsize[0];
    ic->r->hk->fn.item(c, ic->r->argv, ic->b[0] + l0, ic->b[1] + rest % c->lsize[1], ic->b[2] + rest / c->lsize[1]);
}

static void fail(run *r, ka_status st) {
    int32_t ok = KA_OK;
    if (atomic_compare_exchange_strong(&r->status, &ok, (int32_t)st))
        snprintf(r->why, KA__HOST_WHY, "%s", ka__detail_message());
}

static void part(void *ctx, uint32_t p, uint32_t n) {
    run *r = ctx;
    const ka__hctx *c = r->c;
    if (r->hk->path == KA__HP_ROWS) {
        if (r->rows >= n) {
            r->hk->fn.rows(c, r->argv, r->rows * p / n, r->rows * (p + 1) / n, 0, r->cols);
        } else { /* few rows (1-D): columns, in whole cache lines of floats */
            uint64_t c0 = r->cols * p / n & ~(uint64_t)15, c1 = p + 1 == n ? r->cols : r->cols * (p + 1) / n & ~(uint64_t)15;
            if (c1 > c0) r->hk->fn.rows(c, r->argv, 0, r->rows, c0, c1);
        }
        return;
    }
    uint64_t q0 = r->groups * p / n, q1 = r->groups * (p + 1) / n;
    if (q1 <= q0) return;
    if (r->hk->path == KA__HP_GROUPS) {
        r->hk->fn.groups(c, r->argv, q0, q1);
        return;
    }
    ka__fiberset *fs;
    ka_status st = ka__host_fs_take(r->hd, (uint32_t)r->group_items, &fs);
    if (st != KA_OK) {
        fail(r, st);
        return;
    }
    item_ctx ic = {r, {0, 0, 0}};
    for (uint64_t q = q0; q < q1; q++) {
        ic.b[0] = q % c->ngroups[0] * c->lsize[0];
        ic.b[1] = q / c->ngroups[0] % c->ngroups[1] * c->lsize[1];
        ic.b[2] = q / c->ngroups[0] / c->ngroups[1] * c->lsize[2];
        st = ka__fiberset_run(fs, (uint32_t)r->group_items, item, &ic);
        if (st != KA_OK) {
            fail(r, st);
            break;
        }
    }
    ka__host_fs_give(r->hd, fs);
}

ka_status ka__host_run_launch(ka__device *d, ka__hcmd *cmd) {
    ka__hdev *hd = d->native;
    const ka__hctx *c = &cmd->ctx;
    char why[KA__HOST_WHY];
    run r = {hd, cmd->k->bk, c, cmd->argv, c->gsize[1] * c->gsize[2], c->gsize[0],
             c->ngroups[0] * c->ngroups[1] * c->ngroups[2], c->lsize[0] * c->lsize[1] * c->lsize[2], KA_OK, why};
    if ((cmd->items < KA__HOST_INLINE_ITEMS && !(cmd->spread && r.groups > 1)) || ka__pool_size(hd->pool) == 1)
        part(&r, 0, 1);
    else ka__pool_run(hd->pool, part, &r);
    ka_status st = (ka_status)atomic_load(&r.status);
    return st == KA_OK ? KA_OK : ka__fail(st, "kernel '%s': %s", cmd->k->name, r.why);
}

/* The constants and the argument pointers of a launch into c; values that
 * must outlive the call (async) are copied into c's own storage. */
static ka_status prepare(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs, ka__hcmd *c,
                         bool copy) {
    ka__hqueue *hq = q->native;
    ka__hctx *x = &c->ctx;
    for (int d = 0; d < 3; d++) {
        x->nd[d] = l->nd[d];
        x->gsize[d] = l->global[d];
        x->lsize[d] = l->local[d];
        x->ngroups[d] = l->global[d] / l->local[d];
    }
    x->nd[3] = l->nd[3];
    x->arec = hq->arec;
    x->akid = k->id;
    c->k = k;
    c->items = l->items;
    c->spread = (l->flags & KA_LAUNCH_SPREAD) != 0;
    uint64_t local = 0;
    size_t blob = 0;
    for (uint32_t i = 0; i < nargs; i++) {
        const ka_arg *a = &args[i];
        switch (a->kind) {
        case KA_ARG_BUFFER:
            c->vals[i] = (uint64_t)(uintptr_t)l->mem[i];
            c->argv[i] = &c->vals[i];
            break;
        case KA_ARG_LOCAL:
            local = (local + 15) & ~(uint64_t)15;
            c->vals[i] = local;
            c->argv[i] = &c->vals[i];
            local += a->size;
            break;
        case KA_ARG_BYTES:
            if (!copy) {
                c->argv[i] = (void *)a->u.ptr;
            } else {
                if (a->size > KA__HOST_BLOB - blob)
                    return ka__fail(KA_ERR_UNSUPPORTED, "kernel '%s': an asynchronous launch carries at most %u "
                                    "bytes of by-value arguments", k->name, KA__HOST_BLOB);
                memcpy(c->blob + blob, a->u.ptr, a->size);
                c->argv[i] = c->blob + blob;
                blob += (a->size + 15) & ~(size_t)15;
            }
            break;
        default: /* scalars: the value's bytes start the union (little-endian) */
            memcpy(&c->vals[i], &a->u, sizeof c->vals[i]);
            c->argv[i] = &c->vals[i];
            break;
        }
    }
    if (local > KA__HOST_LOCAL_MEM)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "kernel '%s': %llu bytes of local memory arguments (aligned to 16), "
                        "over the device's %u", k->name, (unsigned long long)local, KA__HOST_LOCAL_MEM);
    return KA_OK;
}

ka_status ka__host_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs, void **ev) {
    ka__hqueue *hq = q->native;
    for (uint32_t i = 0; i < nargs; i++)
        if (KA_UNLIKELY(args[i].kind < KA_ARG_BUFFER || args[i].kind > KA_ARG_FLOAT))
            return ka__fail(KA_ERR_ARG_TYPE, "kernel '%s' argument %u: unknown argument kind %u", k->name, i,
                            args[i].kind);
    if (k->prog->asserts) ka__queue_mark_asserts(q);
    if ((l->flags & KA_LAUNCH_ASYNC) || l->items > hq->sync_max_items) {
        ka__hev *e = NULL;
        ka_status st = ev ? ka__host_ev_new(hq, &e) : KA_OK;
        if (st != KA_OK) return st;
        ka__hcmd *c = ka__host_cmd_begin(hq);
        st = prepare(q, k, l, args, nargs, c, true);
        if (st != KA_OK) {
            /* the slot stays unused: an empty wait in its place */
            c->kind = KA__HC_WAIT;
            c->dep = NULL;
            c->ev = NULL;
            ka__host_cmd_submit(hq);
            if (e) {
                ka__host_ev_unref(e);
                ka__host_ev_unref(e);
            }
            return st;
        }
        c->kind = KA__HC_LAUNCH;
        c->ev = e;
        ka__host_cmd_submit(hq);
        if (ev) *ev = e;
        return KA_OK;
    }
    ka__hcmd c;
    ka_status st = prepare(q, k, l, args, nargs, &c, false);
    if (st != KA_OK) return st;
    ka__host_drain(hq);
    int64_t t0 = q->profiling ? ka__now_ns() : 0;
    st = ka__host_run_launch(q->dev, &c);
    return ka__host_done_event(q, t0, st, ev);
}
