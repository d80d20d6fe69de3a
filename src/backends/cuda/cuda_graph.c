/* Recorded launch graphs as CUDA graphs (the graph hooks of backend.h).
 *
 * graph_make builds one CUgraph from the recording with explicit nodes, a
 * linear chain in recording order (each node depends on the previous node
 * that does work; empty ranges and transfers are left out): kernel nodes
 * whose parameters come from ka__cuda_kernel_params, as cuLaunchKernel's do,
 * memcpy nodes for copies and memset nodes for fills. It instantiates it once;
 * a replay is one cuGraphLaunch plus, when asked, a pooled event recorded
 * behind it. ka_graph_set_arg rebuilds the node's parameters and applies them
 * to the executable graph (cuGraphExecKernelNodeSetParams: replays already
 * enqueued keep the old values).
 *
 * The driver copies kernel parameters when a node is added or set, but they
 * point into the graph's own storage (the range and args of the node, its
 * mem, the local-memory offsets here), so an update refills them in place:
 * no allocation after graph_make.
 *
 * KA_ERR_UNSUPPORTED from graph_make makes the core replay node by node
 * through the ordinary hooks, which is always correct: a driver without the
 * graph entry points (older than 12.0), a fill whose pattern is not 1, 2 or 4
 * bytes repeated (memset nodes take no other element size), a recording with
 * nothing to enqueue, or a kernel or buffer released before ka_graph_end
 * (every replay then fails cleanly in the core's check). */
#include "cuda_internal.h"
#include "graph.h"

#include <string.h>

#ifdef KA_HAVE_CUDA

/* A kernel node's parameters, in the graph's storage. */
typedef struct cugk {
    CUDA_KERNEL_NODE_PARAMS p; /* kernelParams: into cugraph.params */
    uint64_t *vals;            /* local-memory offsets, by argument: into cugraph.vals */
} cugk;

/* ka__graph.native */
typedef struct cugraph {
    ka__cudev *d;
    CUgraph graph;
    CUgraphExec exec;
    cugk *kn;                  /* by node index; launch nodes only */
    uint32_t nkn;
    void **params;             /* nargs + 1 per launch node */
    size_t nparams;
    uint64_t *vals;            /* nargs per launch node */
    size_t nvals;
} cugraph;


static CUdeviceptr dptr(uint64_t buffer, size_t off) {
    ka__buffer *b = ka__resolve(buffer, KA__T_BUFFER);
    return (CUdeviceptr)(uintptr_t)b->native + (CUdeviceptr)off;
}

static void cugraph_free(cugraph *cg) {
    if (cg->exec) ka__cu.cuGraphExecDestroy(cg->exec); /* one in flight is freed when it completes */
    if (cg->graph) ka__cu.cuGraphDestroy(cg->graph);
    ka__free(cg->kn, sizeof(cugk) * cg->nkn);
    ka__free(cg->params, sizeof(void *) * cg->nparams);
    ka__free(cg->vals, sizeof(uint64_t) * cg->nvals);
    ka__free(cg, sizeof *cg);
}

/* What the CUDA graph cannot hold, found before anything is made; counts
 * the parameter storage. */
static bool representable(const ka__graph *g, size_t *nparams, size_t *nvals) {
    uint32_t work = 0;
    *nparams = *nvals = 0;
    for (uint32_t i = 0; i < g->n; i++) {
        const ka__gnode *nd = &g->nodes[i];
        if (!ka__gnode_does_work(nd)) continue;
        work++;
        switch (nd->type) {
        case KA__GN_LAUNCH:
            /* Kernels and buffers: checked live by the core before graph_make. */
            *nparams += nd->nargs + 1u;
            *nvals += nd->nargs;
            break;
        case KA__GN_COPY: break;
        default:
            /* A memset node sets 1-, 2- or 4-byte elements: a longer pattern
             * fits only when it is one such element repeated. */
            if (ka__cuda_fill_period(nd->pattern, nd->psz) > 4) return false;
        }
    }
    return work != 0;
}

/* Adds node nd after dep (none when NULL). */
static ka_status add_node(cugraph *cg, ka__gnode *nd, cugk *kn, CUgraphNode prev, CUgraphNode *out) {
    const CUgraphNode *dep = prev ? &prev : NULL;
    size_t ndep = prev ? 1 : 0;
    CUresult r;
    if (nd->type == KA__GN_LAUNCH) {
        ka_status st = ka__cuda_kernel_params("ka_graph_end", nd->k, &nd->l, nd->args, nd->nargs, kn->p.kernelParams,
                                              kn->vals, &kn->p);
        if (st != KA_OK) return st;
        r = ka__cu.cuGraphAddKernelNode(out, cg->graph, dep, ndep, &kn->p);
        return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuGraphAddKernelNode");
    }
    if (nd->type == KA__GN_COPY) {
        /* One row: pitches and heights 0 ("not specified"), so no pitch limit applies. */
        CUDA_MEMCPY3D c = {
            .srcMemoryType = CU_MEMORYTYPE_DEVICE,
            .srcDevice = dptr(nd->buf[0], nd->off[0]),
            .dstMemoryType = CU_MEMORYTYPE_DEVICE,
            .dstDevice = dptr(nd->buf[1], nd->off[1]),
            .WidthInBytes = nd->n,
            .Height = 1,
            .Depth = 1,
        };
        r = ka__cu.cuGraphAddMemcpyNode(out, cg->graph, dep, ndep, &c, cg->d->ctx);
        return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuGraphAddMemcpyNode");
    }
    /* The pattern's period (1, 2 or 4: checked by representable) is the
     * element; offset and size are multiples of the pattern, hence of it. */
    size_t per = ka__cuda_fill_period(nd->pattern, nd->psz);
    CUDA_MEMSET_NODE_PARAMS m = {
        .dst = dptr(nd->buf[0], nd->off[0]),
        .value = ka__cuda_fill_value(nd->pattern, per),
        .elementSize = (unsigned int)per,
        .width = nd->n / per,
        .height = 1,
    };
    r = ka__cu.cuGraphAddMemsetNode(out, cg->graph, dep, ndep, &m, cg->d->ctx);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuGraphAddMemsetNode");
}

ka_status ka__cuda_graph_make(ka__graph *g) {
    size_t nparams, nvals;
    if (!ka__cuda_has_graphs() || !representable(g, &nparams, &nvals)) return KA_ERR_UNSUPPORTED;
    ka__cudev *d = g->dev->native;
    ka_status st = ka__cuda_bind(d);
    if (st != KA_OK) return st;
    cugraph *cg = ka__calloc(1, sizeof *cg);
    if (!cg) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_graph_end: out of memory");
    cg->d = d;
    cg->nkn = g->n;
    cg->nparams = nparams;
    cg->nvals = nvals ? nvals : 1; /* no 0-byte request */
    cg->kn = ka__calloc(g->n, sizeof(cugk));
    cg->params = ka__calloc(cg->nparams, sizeof(void *));
    cg->vals = ka__calloc(cg->nvals, sizeof(uint64_t));
    if (!cg->kn || !cg->params || !cg->vals) {
        cugraph_free(cg);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_graph_end: out of memory");
    }
    CUresult r = ka__cu.cuGraphCreate(&cg->graph, 0);
    if (r != CUDA_SUCCESS) {
        cg->graph = NULL;
        cugraph_free(cg);
        return ka__cu_fail(r, "cuGraphCreate");
    }
    CUgraphNode prev = NULL;
    size_t pat = 0, vat = 0;
    for (uint32_t i = 0; i < g->n && st == KA_OK; i++) {
        ka__gnode *nd = &g->nodes[i];
        nd->native = NULL;
        if (!ka__gnode_does_work(nd)) continue;
        cugk *kn = &cg->kn[i];
        if (nd->type == KA__GN_LAUNCH) {
            kn->p.kernelParams = cg->params + pat;
            kn->vals = cg->vals + vat;
            pat += nd->nargs + 1u;
            vat += nd->nargs;
        }
        CUgraphNode node = NULL;
        if ((st = add_node(cg, nd, kn, prev, &node)) == KA_OK) nd->native = prev = node;
    }
    if (st == KA_OK && (r = ka__cu.cuGraphInstantiateWithFlags(&cg->exec, cg->graph, 0)) != CUDA_SUCCESS) {
        cg->exec = NULL;
        st = ka__cu_fail(r, "cuGraphInstantiateWithFlags");
    }
    if (st != KA_OK) {
        for (uint32_t i = 0; i < g->n; i++) g->nodes[i].native = NULL;
        cugraph_free(cg);
        return st;
    }
    g->native = cg;
    return KA_OK;
}

/* As cuda_launch enqueues: the event popped first (an exhausted pool leaves
 * nothing enqueued), recorded behind the graph. */
ka_status ka__cuda_graph_launch(ka__queue *kq, ka__graph *g, void **ev) {
    ka__cuq *q = kq->native;
    cugraph *cg = g->native;
    ka_status st = ka__cuda_bind(q->d);
    if (KA_UNLIKELY(st != KA_OK)) return st;
    ka__cuev *e = NULL;
    if (ev && KA_UNLIKELY(!(e = ka__cuda_event_pop(q)))) return KA_ERR_EVENT_POOL_EXHAUSTED;
    return ka__cuda_event_after(e, ka__cu.cuGraphLaunch(cg->exec, q->stream), "cuGraphLaunch", ev);
}

ka_status ka__cuda_graph_update(ka__graph *g, uint32_t node) {
    cugraph *cg = g->native;
    ka__gnode *nd = &g->nodes[node];
    if (!nd->native) return KA_OK; /* an empty range: not in the CUDA graph */
    cugk *kn = &cg->kn[node];
    CUDA_KERNEL_NODE_PARAMS p;
    ka_status st = ka__cuda_bind(cg->d);
    if (st != KA_OK) return st;
    st = ka__cuda_kernel_params("ka_graph_set_arg", nd->k, &nd->l, nd->args, nd->nargs, kn->p.kernelParams, kn->vals, &p);
    if (st != KA_OK) return st;
    CUresult r = ka__cu.cuGraphExecKernelNodeSetParams(cg->exec, (CUgraphNode)nd->native, &p);
    if (r != CUDA_SUCCESS) return ka__cu_fail(r, "cuGraphExecKernelNodeSetParams");
    kn->p = p;
    return KA_OK;
}

void ka__cuda_graph_release(ka__graph *g) {
    cugraph *cg = g->native;
    if (!cg) return;
    (void)ka__cuda_bind(cg->d);
    cugraph_free(cg);
    for (uint32_t i = 0; i < g->n; i++) g->nodes[i].native = NULL;
    g->native = NULL;
}

#endif
