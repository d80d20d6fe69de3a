/* Recorded launch graphs: recording on a queue, replay, argument updates.
 * Recording keeps what ka_launch, ka_buffer_copy and ka_buffer_fill checked
 * and computed (the signature check, the padded geometry), so a replay only
 * checks that the kernels and buffers it names are still alive and enqueues:
 * through the back-end's own graph when it has one (CUDA), else node by node
 * through the ordinary launch and transfer hooks (routed like any launch). */
#include "args.h"
#include "event.h"
#include "graph.h"

#include <stdio.h>
#include <string.h>

/* A launch node's arrays hold at least one element (no 0-byte request). */
static size_t slots(uint32_t nargs) { return nargs ? nargs : 1; }

/* A KA_ARG_BYTES value's place in a node's storage: its size rounded to 16,
 * once for the value and once more for the room to undo a set_arg. */
static size_t bytes_room(uint32_t size) { return ((size_t)size + 15u) & ~(size_t)15; }

void ka__graph_free(ka__graph *g) {
    if (!g) return;
    if (g->native) ka__be_graph_release(g);
    for (uint32_t i = 0; i < g->n; i++) {
        ka__gnode *nd = &g->nodes[i];
        if (nd->type != KA__GN_LAUNCH) continue;
        ka__free(nd->args, sizeof(ka_arg) * slots(nd->nargs));
        ka__free(nd->mem, sizeof(void *) * slots(nd->nargs));
        ka__free(nd->bytes, nd->nbytes);
    }
    ka__free(g->nodes, sizeof(ka__gnode) * g->cap);
    ka__free(g, sizeof *g);
}

/* A new zeroed node at the end of the recording. */
static ka_status node_new(ka__graph *g, ka__gnode **out) {
    if (g->n == g->cap) {
        uint32_t ncap = g->cap ? g->cap * 2 : 16;
        ka__gnode *nn = ka__calloc(ncap, sizeof *nn);
        if (!nn) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory recording a graph");
        if (g->n) memcpy(nn, g->nodes, sizeof *nn * g->n);
        ka__free(g->nodes, sizeof(ka__gnode) * g->cap);
        g->nodes = nn;
        g->cap = ncap;
    }
    *out = &g->nodes[g->n];
    memset(*out, 0, sizeof **out);
    return KA_OK;
}

static ka_status no_event(ka_event *ev) {
    if (!ev) return KA_OK;
    return ka__fail(KA_ERR_INVALID_ARGUMENT,
                    "the queue is recording a graph: a recorded command has no event (ka_graph_launch gives one "
                    "for the whole graph)");
}

ka_status ka__graph_add_launch(ka__queue *q, ka__kernel *k, uint64_t kernel, const ka__launch *l, const ka_arg *args,
                               uint32_t nargs, ka_event *ev) {
    ka_status st = no_event(ev);
    if (st != KA_OK) return st;
    if (k->prog->asserts) /* its record is the queue's, chosen per launch */
        return ka__fail(KA_ERR_UNSUPPORTED, "kernel '%s' calls ka_assert: a graph cannot record it", k->name);
    ka__graph *g = q->rec;
    /* ka_launch's one-compare check leaves garbage of exactly a parameter's
     * likely word to the back-end; a recording is refused it now, not at
     * every replay. */
    void *scratch[KA_MAX_ARGS];
    if ((st = ka__args_check_full(k, q->dev, args, nargs, scratch)) != KA_OK) return st;
    size_t nbytes = 0;
    for (uint32_t i = 0; i < nargs; i++)
        if (args[i].kind == KA_ARG_BYTES) nbytes += 2 * bytes_room(args[i].size);
    ka__gnode *nd = NULL; /* set by node_new on success (gcc -O3 cannot see it) */
    if ((st = node_new(g, &nd)) != KA_OK) return st;
    nd->args = ka__alloc(sizeof(ka_arg) * slots(nargs));
    nd->mem = ka__calloc(slots(nargs), sizeof(void *));
    nd->bytes = nbytes ? ka__alloc(nbytes) : NULL;
    if (!nd->args || !nd->mem || (nbytes && !nd->bytes)) {
        ka__free(nd->args, sizeof(ka_arg) * slots(nargs));
        ka__free(nd->mem, sizeof(void *) * slots(nargs));
        ka__free(nd->bytes, nbytes);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory recording a graph");
    }
    nd->type = KA__GN_LAUNCH;
    nd->nargs = nargs;
    nd->kernel = kernel;
    nd->k = k;
    nd->l = *l;
    nd->l.mem = nd->mem;
    nd->l.argp = NULL; /* ka_launch's stack */
    nd->nbytes = nbytes;
    size_t at = 0;
    for (uint32_t i = 0; i < nargs; i++) {
        nd->args[i] = args[i];
        if (args[i].kind == KA_ARG_BUFFER) nd->mem[i] = l->mem[i];
        if (args[i].kind == KA_ARG_BYTES) { /* the bytes, not the caller's pointer */
            memcpy(nd->bytes + at, args[i].u.ptr, args[i].size);
            nd->args[i].u.ptr = nd->bytes + at;
            at += 2 * bytes_room(args[i].size); /* the value, then room to save it */
        }
    }
    g->n++;
    g->launches++;
    return KA_OK;
}

ka_status ka__graph_add_copy(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n, ka_event *ev) {
    ka_status st = no_event(ev);
    ka__gnode *nd = NULL; /* set by node_new on success (gcc -O3 cannot see it) */
    if (st != KA_OK || (st = node_new(q->rec, &nd)) != KA_OK) return st;
    nd->type = KA__GN_COPY;
    nd->buf[0] = s->id;
    nd->buf[1] = d->id;
    nd->off[0] = so;
    nd->off[1] = dof;
    nd->n = n;
    q->rec->n++;
    return KA_OK;
}

ka_status ka__graph_add_fill(ka__queue *q, ka__buffer *b, const void *pattern, size_t psz, size_t off, size_t n,
                             ka_event *ev) {
    ka_status st = no_event(ev);
    ka__gnode *nd = NULL; /* set by node_new on success (gcc -O3 cannot see it) */
    if (st != KA_OK || (st = node_new(q->rec, &nd)) != KA_OK) return st;
    nd->type = KA__GN_FILL;
    nd->buf[0] = b->id;
    nd->off[0] = off;
    nd->n = n;
    memcpy(nd->pattern, pattern, psz);
    nd->psz = (uint32_t)psz;
    q->rec->n++;
    return KA_OK;
}

ka_status ka_graph_begin(ka_queue queue) {
    KA__ENTRY();
    KA__PIN(ka__queue, q, qs, queue, KA__T_QUEUE);
    ka_status st = KA_OK;
    ka__graph *g;
    if (q->rec) st = ka__fail(KA_ERR_INVALID_ARGUMENT, "the queue is already recording a graph");
    else if (!(g = ka__calloc(1, sizeof *g))) st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    else {
        g->dev = q->dev;
        q->rec = g;
    }
    ka__unpin(qs);
    return st;
}

ka_status ka_graph_last_node(ka_queue queue, ka_graph_node *out) {
    KA__ENTRY();
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "out is NULL");
    out->index = UINT32_MAX;
    KA__PIN(ka__queue, q, qs, queue, KA__T_QUEUE);
    ka_status st = KA_OK;
    if (!q->rec) st = ka__fail(KA_ERR_INVALID_ARGUMENT, "the queue is not recording (ka_graph_begin)");
    else if (!q->rec->n) st = ka__fail(KA_ERR_INVALID_ARGUMENT, "nothing recorded yet");
    else out->index = q->rec->n - 1;
    ka__unpin(qs);
    return st;
}

ka_status ka_graph_end(ka_queue queue, ka_graph *out) {
    KA__ENTRY();
    if (out) out->id = 0;
    KA__PIN(ka__queue, q, qs, queue, KA__T_QUEUE);
    ka__graph *g = q->rec;
    q->rec = NULL;
    ka__unpin(qs);
    if (!g) return ka__fail(KA_ERR_INVALID_ARGUMENT, "the queue is not recording (ka_graph_begin)");
    /* From here the recording is the graph's or discarded: the queue is free. */
    if (!out) {
        ka__graph_free(g);
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "out is NULL (the recording is discarded)");
    }
    if (!g->n) {
        ka__graph_free(g);
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "nothing was recorded");
    }
    g->last = g->n;
    for (uint32_t i = 0; i < g->n; i++)
        if (ka__gnode_does_work(&g->nodes[i])) g->last = i;
    ka_status st = ka__graph_check_live(g);
    if (st == KA_OK && ka__be_has_graphs(g->dev) && (st = ka__be_graph_make(g)) == KA_ERR_UNSUPPORTED) st = KA_OK;
    if (st != KA_OK) {
        ka__graph_free(g);
        return st;
    }
    if (!(g->id = ka__handle_new(KA__T_GRAPH, g))) {
        ka__graph_free(g);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for a handle");
    }
    atomic_fetch_add(&g->dev->live, 1);
    out->id = g->id;
    return KA_OK;
}

/* Every kernel and buffer the graph names is still alive: checked before
 * anything is enqueued. */
ka_status ka__graph_check_live(const ka__graph *g) {
    for (uint32_t i = 0; i < g->n; i++) {
        const ka__gnode *nd = &g->nodes[i];
        if (nd->type == KA__GN_LAUNCH) {
            if (ka__resolve(nd->kernel, KA__T_KERNEL) != nd->k)
                return ka__fail(KA_ERR_INVALID_HANDLE, "node %u: its kernel (or its program) was released", i);
            for (uint32_t a = 0; a < nd->nargs; a++)
                if (nd->args[a].kind == KA_ARG_BUFFER && !ka__resolve(nd->args[a].u.buffer, KA__T_BUFFER))
                    return ka__fail(KA_ERR_INVALID_HANDLE, "node %u (kernel '%s'): argument %u's buffer was released", i, nd->k->name, a);
        } else {
            for (int b = 0; b < (nd->type == KA__GN_COPY ? 2 : 1); b++)
                if (!ka__resolve(nd->buf[b], KA__T_BUFFER))
                    return ka__fail(KA_ERR_INVALID_HANDLE, "node %u (%s): a buffer was released", i,
                                    nd->type == KA__GN_COPY ? "copy" : "fill");
        }
    }
    return KA_OK;
}

/* Node by node through the ordinary hooks; the last node that enqueues
 * anything gets the event. Copies and fills are enqueued without blocking. */
static ka_status replay(ka__queue *q, const ka__graph *g, void **ev) {
    ka_status st = KA_OK;
    for (uint32_t i = 0; i < g->n && st == KA_OK; i++) {
        const ka__gnode *nd = &g->nodes[i];
        void **evp = i == g->last && ev ? ev : NULL;
        switch (nd->type) {
        case KA__GN_LAUNCH:
            if (nd->l.items) st = ka__be_launch(q, nd->k, &nd->l, nd->args, nd->nargs, evp);
            break;
        case KA__GN_COPY:
            if (nd->n)
                st = ka__be_buffer_copy(q, ka__resolve(nd->buf[0], KA__T_BUFFER), nd->off[0],
                                        ka__resolve(nd->buf[1], KA__T_BUFFER), nd->off[1], nd->n, evp, false);
            break;
        default:
            if (nd->n)
                st = ka__be_buffer_fill(q, ka__resolve(nd->buf[0], KA__T_BUFFER), nd->pattern, nd->psz, nd->off[0],
                                        nd->n, evp, false);
        }
    }
    return st;
}

static ka_status graph_launch(ka__queue *q, ka__graph *g, ka_event *ev) {
    if (KA_UNLIKELY(g->dev != q->dev))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "the graph and the queue are on different devices");
    if (KA_UNLIKELY(q->rec))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "the queue is recording a graph");
    ka_status st = ka__graph_check_live(g);
    if (KA_UNLIKELY(st != KA_OK)) return st;
    ka__event *e = NULL;
    if (ev && (st = ka__event_acquire(q, &e)) != KA_OK) return st;
    void *native = NULL;
    if (g->native) st = ka__be_graph_launch(q, g, e ? &native : NULL);
    else if (g->last < g->n) st = replay(q, g, e ? &native : NULL);
    if (KA_UNLIKELY(atomic_load_explicit(&q->hooks, memory_order_relaxed) & KA__QH_DEBUG) && st == KA_OK)
        for (uint32_t i = 0; i < g->n; i++) /* KA_DEBUG: the launch nodes' buffers checked at the next wait */
            if (g->nodes[i].type == KA__GN_LAUNCH)
                ka__debug_note_launch(q, g->nodes[i].k, g->nodes[i].args, g->nodes[i].nargs);
    return ka__event_publish(e, st, native, ev);
}

/* One replay or update of a graph at a time: a second is refused, not raced. */
static bool graph_enter(ka__graph *g, ka_status *st) {
    if (KA_LIKELY(!atomic_exchange_explicit(&g->busy, 1, memory_order_acquire))) return true;
    *st = ka__fail(KA_ERR_IN_USE, "another thread is replaying or updating this graph");
    return false;
}
static void graph_leave(ka__graph *g) { atomic_store_explicit(&g->busy, 0, memory_order_release); }

ka_status ka_graph_launch(ka_queue queue, ka_graph graph, ka_event *ev) {
    KA__ENTRY();
    if (ev) ev->id = 0;
    ka__slot *qs, *gs;
    ka__queue *q = ka__pin(queue.id, KA__T_QUEUE, &qs);
    if (KA_UNLIKELY(!q)) return ka__fail_handle(KA__T_QUEUE, __func__);
    ka__graph *g = ka__pin(graph.id, KA__T_GRAPH, &gs);
    if (KA_UNLIKELY(!g)) {
        ka__unpin(qs);
        return ka__fail_handle(KA__T_GRAPH, __func__);
    }
    ka_status st;
    if (graph_enter(g, &st)) {
        st = graph_launch(q, g, ev);
        graph_leave(g);
    }
    ka__unpin(gs);
    ka__unpin(qs);
    return st;
}

static ka_status set_arg(ka__graph *g, uint32_t node, uint32_t index, ka_arg arg) {
    if (node >= g->n) return ka__fail(KA_ERR_INVALID_ARGUMENT, "node %u, the graph has %u", node, g->n);
    ka__gnode *nd = &g->nodes[node];
    if (nd->type != KA__GN_LAUNCH)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "node %u is a %s, not a launch", node,
                        nd->type == KA__GN_COPY ? "copy" : "fill");
    if (ka__resolve(nd->kernel, KA__T_KERNEL) != nd->k)
        return ka__fail(KA_ERR_INVALID_HANDLE, "node %u: its kernel was released", node);
    if (index >= nd->nargs)
        return ka__fail(KA_ERR_ARG_COUNT, "node %u: kernel '%s' takes %u arguments, index %u", node,
                        nd->k->name, nd->nargs, index);
    const ka_arg *old = &nd->args[index];
    if (arg.kind == KA_ARG_BYTES && !(old->kind == KA_ARG_BYTES && old->size == arg.size))
        return ka__fail(KA_ERR_ARG_TYPE,
                        "node %u: kernel '%s' argument %u ('%s'): bytes must keep the size recorded "
                        "(%u bytes of bytes)",
                        node, nd->k->name, index, nd->k->sig[index].name, old->kind == KA_ARG_BYTES ? old->size : 0);
    /* The whole argument list checked as a recording checks it (local memory
     * is a sum over the arguments). */
    ka_arg args[KA_MAX_ARGS];
    void *mem[KA_MAX_ARGS];
    memcpy(args, nd->args, sizeof(ka_arg) * nd->nargs);
    args[index] = arg;
    ka_status st = ka__args_check_full(nd->k, g->dev, args, nd->nargs, mem);
    if (st != KA_OK) { /* the check's message, said of the node */
        char why[512];
        snprintf(why, sizeof why, "%s", ka__detail_message());
        return ka__fail(st, "node %u: %s", node, why);
    }
    ka_arg saved = *old;
    void *saved_mem = nd->mem[index];
    /* Bytes go into the graph's storage (the same size); the old value to
     * the room recorded after it, to undo a failed update. */
    uint8_t *value = (uint8_t *)old->u.ptr, *undo = value + bytes_room(arg.size);
    if (arg.kind == KA_ARG_BYTES) {
        memcpy(undo, value, arg.size);
        memcpy(value, arg.u.ptr, arg.size);
    } else {
        nd->args[index] = arg;
        if (arg.kind == KA_ARG_BUFFER) nd->mem[index] = mem[index];
    }
    if (g->native && (st = ka__be_graph_update(g, node)) != KA_OK) {
        /* The executable graph keeps the old value: so does the node. */
        if (arg.kind == KA_ARG_BYTES) memcpy(value, undo, arg.size);
        nd->args[index] = saved;
        nd->mem[index] = saved_mem;
    }
    return st;
}

ka_status ka_graph_set_arg(ka_graph graph, ka_graph_node node, uint32_t index, ka_arg arg) {
    KA__ENTRY();
    KA__PIN(ka__graph, g, gs, graph, KA__T_GRAPH);
    ka_status st;
    if (graph_enter(g, &st)) {
        st = set_arg(g, node.index, index, arg);
        graph_leave(g);
    }
    ka__unpin(gs);
    return st;
}

ka_status ka_graph_get_info(ka_graph graph, ka_graph_info *out) {
    KA__ENTRY();
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "out is NULL");
    KA__PIN(ka__graph, g, gs, graph, KA__T_GRAPH);
    out->nodes = g->n;
    out->launches = g->launches;
    out->native = g->native != NULL;
    ka__unpin(gs);
    return KA_OK;
}

ka_status ka_graph_release(ka_graph graph) {
    KA__ENTRY();
    ka__graph *g = ka__resolve(graph.id, KA__T_GRAPH);
    if (!g || !ka__handle_retire(graph.id))
        return ka__fail_handle(KA__T_GRAPH, __func__);
    ka__handle_free(g->id);
    ka__device *d = g->dev;
    ka__graph_free(g);
    atomic_fetch_sub(&d->live, 1);
    return KA_OK;
}
