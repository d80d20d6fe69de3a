/* The host back-end's launch: the arguments as an array of pointers to their
 * values (on the stack, or copied into the queue's slot or a ring slot for a
 * launch that returns before it has run), the launch's constants, and the
 * kernel's entry run over a static partition of the range: rows (or columns
 * of one row) for kernels without barriers or local memory, work-groups for
 * the others, each group of a kernel with barriers as fibers. A launch of
 * fewer than KA__HOST_INLINE_ITEMS padded work-items runs whole in the
 * calling thread, unless KA_LAUNCH_SPREAD asks for the pool; a larger one
 * starts a run of the pool and returns, and the next command of the queue
 * (or a wait) joins it. Nothing here allocates but the fiber sets the device
 * lacks (host_device.c). */
#include "host_internal.h"

#include <stdio.h>
#include <string.h>

typedef ka__hrun run;

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

/* The run's first failure: st and this thread's detail, which the part
 * that failed just recorded (the message travels to the thread that
 * reports it). */
static void fail(run *r, ka_status st) {
    int32_t ok = KA_OK;
    if (atomic_compare_exchange_strong(&r->status, &ok, (int32_t)st))
        snprintf(r->why, sizeof r->why, "kernel '%s': %s", r->hk->name, ka__detail_message());
}

/* Part p of n of the run; a group of a kernel with barriers takes a fiber
 * set, which *fsp (when not NULL) holds while it runs. */
static void body(run *r, uint32_t p, uint32_t n, ka__fiberset *volatile *fsp) {
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
    if (fsp) *fsp = fs;
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
    if (fsp) *fsp = NULL;
    ka__host_fs_give(r->hd, fs);
}

/* KA_DEBUG with guarded buffers: the part with a recovery point, so a fault
 * (an access past a buffer's end) fails the run instead of the process. */
static __attribute__((noinline)) void guarded(run *r, uint32_t p, uint32_t n) {
    ka__hfault f;
    ka__fiberset *volatile fs = NULL;
    ka__hfault *outer = ka__host_fault_arm(&f);
    if (!sigsetjmp(f.jb, 0)) {
        body(r, p, n, &fs);
        ka__host_fault_disarm(outer);
        return;
    }
    ka__host_fault_disarm(outer);
    if (fs) {
        ka__fiberset_abandon(fs);
        ka__host_fs_give(r->hd, fs);
    }
    /* As an overrun found in a guard zone: for the queue's next wait, once;
     * the command itself completes. */
    char what[320];
    ka__host_fault_message(r->hd, &f, r->hk->name, what, sizeof what);
    ka__log(KA_LOG_ERROR, "%s", what);
    ka__host_record_failure(r->hq, KA_ERR_OUT_OF_BOUNDS, what);
}

static void part(void *ctx, uint32_t p, uint32_t n) {
    run *r = ctx;
    if (KA_UNLIKELY(atomic_load_explicit(&r->hd->guarded, memory_order_relaxed))) guarded(r, p, n);
    else body(r, p, n, NULL);
}

static void run_init(run *r, ka__hqueue *hq, const ka__hcmd *cmd) {
    const ka__hctx *c = &cmd->ctx;
    r->hd = hq->q->dev->native;
    r->hq = hq;
    r->hk = cmd->hk;
    r->c = c;
    r->argv = cmd->argv;
    r->rows = c->gsize[1] * c->gsize[2];
    r->cols = c->gsize[0];
    r->groups = c->ngroups[0] * c->ngroups[1] * c->ngroups[2];
    r->group_items = c->lsize[0] * c->lsize[1] * c->lsize[2];
    atomic_store_explicit(&r->status, KA_OK, memory_order_relaxed);
    r->why[0] = 0;
}

/* Whether a launch runs whole in one thread: few work-items (unless
 * KA_LAUNCH_SPREAD asks for the pool and there are several groups), or a
 * pool of one. */
static bool one_thread(const ka__hdev *hd, uint64_t items, bool spread, uint64_t groups) {
    return (items < KA__HOST_INLINE_ITEMS && !(spread && groups > 1)) || ka__pool_size(hd->pool) == 1;
}

ka_status ka__host_run_launch(ka__hqueue *hq, ka__hcmd *cmd, char *why, size_t cap, bool helper) {
    ka__hdev *hd = hq->q->dev->native;
    run r;
    run_init(&r, hq, cmd);
    if (one_thread(hd, cmd->items, cmd->spread, r.groups)) part(&r, 0, 1);
    else if (helper) ka__pool_run(hd->pool, part, &r);
    else ka__pool_try_run(hd->pool, part, &r);
    ka_status st = (ka_status)atomic_load(&r.status);
    if (st == KA_OK) return KA_OK;
    if (why) snprintf(why, cap, "%s", r.why);
    else ka__fail(st, "%s", r.why);
    return st;
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
    c->hk = k->bk;
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

/* The queue's pool launch has finished its parts (ka__pool_start's hooks,
 * in the thread that ran its last part): settle copies what the slot holds
 * while it is still this run's; after completes the event (its callback may
 * launch again, on this queue too) once the pool and the slot are free. */
static void prun_settle(void *ctx, void *keep[2]) {
    ka__hprun *pr = ctx;
    ka_status st = (ka_status)atomic_load_explicit(&pr->r.status, memory_order_relaxed);
    if (pr->ev) pr->ev->t1 = ka__now_ns();
    atomic_fetch_add_explicit(&pr->hq->afters, 1, memory_order_relaxed); /* the queue's release waits for after */
    ka__host_cmd_settle(pr->hq, pr->ev, st, pr->r.why);
    keep[0] = pr->ev;
    keep[1] = pr->hq;
}

static void prun_after(void *keep[2]) {
    ka__hqueue *hq = keep[1];
    ka__host_cmd_finish(hq->q->dev->native, keep[0]);
    atomic_fetch_sub_explicit(&hq->afters, 1, memory_order_release); /* last: hq may go now */
}

static const ka__pool_done prun_hooks = {prun_settle, prun_after};

/* Whether a launch's by-value arguments fit the bytes a slot copies. */
static bool blob_fits(const ka_arg *args, uint32_t nargs) {
    size_t blob = 0;
    for (uint32_t i = 0; i < nargs; i++)
        if (args[i].kind == KA_ARG_BYTES) blob += (args[i].size + 15) & ~(size_t)15;
    return blob <= KA__HOST_BLOB;
}

/* A launch the queue's worker thread runs (e: its event, or NULL, taken
 * by the command); returns at once. */
static ka_status launch_ring(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs,
                             ka__hev *e) {
    ka__hqueue *hq = q->native;
    ka__hcmd *c = ka__host_cmd_begin(hq);
    ka_status st = prepare(q, k, l, args, nargs, c, true);
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
    return KA_OK;
}

/* A launch over the pool that returns before it has run: its arguments
 * copied into the queue's slot, the pool's run started. The launch's
 * thread, or whoever waits, joins the run later (ka__host_drain, the
 * event's wait); the workers finish it if nobody does. No lock is held
 * while joining: what the join completes may call back into this queue. */
static ka_status launch_pool(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs,
                             void **ev) {
    ka__hqueue *hq = q->native;
    ka__hdev *hd = q->dev->native;
    ka__hprun *pr = hq->prun;
    ka__hev *e = NULL;
    ka_status st = ev ? ka__host_ev_new(hq, &e) : KA_OK;
    if (st != KA_OK) return st;
    bool here = false; /* run it in this thread: the pool cannot take it */
    uint32_t g = 0;
    for (;;) {
        /* Commands in the worker's ring: in order after them, without
         * waiting for them. */
        if (atomic_load_explicit(&hq->pending, memory_order_acquire)) goto ring;
        /* In order; and the slot is free once the queue's last run is done. */
        ka__host_drain(hq);
        ka__spin_lock(&hq->prun_lock);
        uint64_t t = atomic_load_explicit(&hq->prun_ticket, memory_order_acquire);
        if (t && !ka__pool_finished(hd->pool, (uint32_t)t)) { /* another thread launched meanwhile */
            ka__spin_unlock(&hq->prun_lock);
            continue;
        }
        if ((st = prepare(q, k, l, args, nargs, &pr->cmd, true)) != KA_OK) {
            ka__spin_unlock(&hq->prun_lock);
            if (e) {
                ka__host_ev_unref(e);
                ka__host_ev_unref(e);
            }
            return st;
        }
        run_init(&pr->r, hq, &pr->cmd);
        pr->ev = e;
        if (e) e->t0 = q->profiling ? ka__now_ns() : 0;
        if (here || ka__pool_start(hd->pool, part, &pr->r, &prun_hooks, pr, &g)) break;
        /* Another queue's run holds the workers: the queue's worker thread
         * takes the launch, helps that run finish and runs this one over the
         * pool, and ka_launch returns at once (inside a part of this pool,
         * never from a kernel, it runs here). */
        ka__spin_unlock(&hq->prun_lock);
        if (!ka__pool_inside(hd->pool)) goto ring;
        here = true;
    }
    atomic_fetch_add_explicit(&hq->subm, 1, memory_order_acq_rel);
    if (!here) {
        if (e) {
            e->pooled = true;
            e->ticket = g;
        }
        atomic_store_explicit(&hq->prun_ticket, KA__HOST_TICKET | g, memory_order_release);
        ka__spin_unlock(&hq->prun_lock);
    } else {
        uint32_t n = ka__pool_parts(hd->pool);
        for (uint32_t i = 0; i < n; i++) part(&pr->r, i, n);
        void *keep[2];
        prun_settle(pr, keep);
        ka__spin_unlock(&hq->prun_lock);
        prun_after(keep);
    }
    if (ev) *ev = e;
    return KA_OK;
ring:
    st = launch_ring(q, k, l, args, nargs, e);
    if (st == KA_OK && ev) *ev = e;
    return st;
}

ka_status ka__host_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs, void **ev) {
    ka__hqueue *hq = q->native;
    for (uint32_t i = 0; i < nargs; i++)
        if (KA_UNLIKELY(args[i].kind < KA_ARG_BUFFER || args[i].kind > KA_ARG_FLOAT))
            return ka__fail(KA_ERR_ARG_TYPE, "kernel '%s' argument %u: unknown argument kind %u", k->name, i,
                            args[i].kind);
    if (k->prog->asserts) ka__queue_mark_asserts(q);
    if (KA_UNLIKELY(atomic_load_explicit(&((ka__hdev *)q->dev->native)->guarded, memory_order_relaxed))) {
        ka__host_fault_ready();
        ka__queue_mark_asserts(q); /* the waits ask for the faults caught */
    }
    if ((l->flags & KA_LAUNCH_ASYNC) || l->items > hq->sync_max_items) {
        ka__hev *e = NULL;
        ka_status st = ev ? ka__host_ev_new(hq, &e) : KA_OK;
        if (st == KA_OK) st = launch_ring(q, k, l, args, nargs, e);
        if (st == KA_OK && ev) *ev = e;
        return st;
    }
    uint64_t groups = l->global[0] / l->local[0] * (l->global[1] / l->local[1]) * (l->global[2] / l->local[2]);
    /* More by-value bytes than a slot copies: run to completion here, the
     * arguments read where they are. */
    if (!one_thread(q->dev->native, l->items, (l->flags & KA_LAUNCH_SPREAD) != 0, groups) && blob_fits(args, nargs))
        return launch_pool(q, k, l, args, nargs, ev);
    ka__hcmd c;
    ka_status st = prepare(q, k, l, args, nargs, &c, false);
    if (st != KA_OK) return st;
    ka__host_drain(hq);
    int64_t t0 = q->profiling ? ka__now_ns() : 0;
    st = ka__host_run_launch(hq, &c, NULL, 0, false);
    return ka__host_done_event(q, t0, st, ev);
}
