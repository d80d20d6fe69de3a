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
 * (every replay then fails cleanly in the core's check).
 *
 * The recording is read through the core's graph view (objects.h:
 * ka__graph_node); the CUDA node of each recorded node is kept here. */
#include "cuda_internal.h"

#include <string.h>

#ifdef KA_HAVE_CUDA

/* A recorded node's CUDA node and, for a launch, its parameters, in the
 * graph's storage. */
typedef struct ka__cu_knode {
    CUgraphNode node;          /* NULL: the node enqueues nothing (not in the CUDA graph) */
    CUDA_KERNEL_NODE_PARAMS kp; /* kernelParams: into ka__cu_graph.params */
    uint64_t *vals;            /* local-memory offsets, by argument: into ka__cu_graph.vals */
} ka__cu_knode;

/* The graph's native (ka__graph_native) */
typedef struct ka__cu_graph {
    ka__cu_dev *nd;
    CUgraph graph;
    CUgraphExec exec;
    ka__cu_knode *kn;          /* by node index */
    uint32_t nkn;
    void **params;             /* nargs + 1 per launch node */
    size_t nparams;
    uint64_t *vals;            /* nargs per launch node */
    size_t nvals;
} ka__cu_graph;

static CUdeviceptr dptr(void *mem, size_t off) { return (CUdeviceptr)(uintptr_t)mem + (CUdeviceptr)off; }

static void graph_free(ka__cu_graph *ng) {
    if (ng->exec) ka__cu.cuGraphExecDestroy(ng->exec); /* one in flight is freed when it completes */
    if (ng->graph) ka__cu.cuGraphDestroy(ng->graph);
    ka__free(ng->kn, sizeof(ka__cu_knode) * ng->nkn);
    ka__free(ng->params, sizeof(void *) * ng->nparams);
    ka__free(ng->vals, sizeof(uint64_t) * ng->nvals);
    ka__free(ng, sizeof *ng);
}

/* What the CUDA graph cannot hold, found before anything is made; counts
 * the parameter storage. */
static bool representable(const ka__graph *g, size_t *nparams, size_t *nvals) {
    uint32_t work = 0;
    *nparams = *nvals = 0;
    for (uint32_t i = 0, nn = ka__graph_node_count(g); i < nn; i++) {
        ka__gnode_view gn;
        ka__graph_node(g, i, &gn);
        if (!gn.work) continue;
        work++;
        switch (gn.type) {
        case KA__GN_LAUNCH:
            /* Kernels and buffers: checked live by the core before graph_make. */
            *nparams += gn.nargs + 1u;
            *nvals += gn.nargs;
            break;
        case KA__GN_COPY: break;
        default:
            /* A memset node sets 1-, 2- or 4-byte elements: a longer pattern
             * fits only when it is one such element repeated. */
            if (ka__cuda_fill_period(gn.pattern, gn.psz) > 4) return false;
        }
    }
    return work != 0;
}

/* Adds node gn after dep (none when NULL). */
static ka_status add_node(ka__cu_graph *ng, const ka__gnode_view *gn, ka__cu_knode *kn, CUgraphNode prev, CUgraphNode *out) {
    const CUgraphNode *dep = prev ? &prev : NULL;
    size_t ndep = prev ? 1 : 0;
    CUresult r;
    if (gn->type == KA__GN_LAUNCH) {
        ka_status st = ka__cuda_kernel_params(gn->k, gn->l, gn->args, gn->nargs, kn->kp.kernelParams,
                                              kn->vals, &kn->kp);
        if (st != KA_OK) return st;
        r = ka__cu.cuGraphAddKernelNode(out, ng->graph, dep, ndep, &kn->kp);
        return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuGraphAddKernelNode");
    }
    if (gn->type == KA__GN_COPY) {
        /* One row: pitches and heights 0 ("not specified"), so no pitch limit applies. */
        CUDA_MEMCPY3D c = {
            .srcMemoryType = CU_MEMORYTYPE_DEVICE,
            .srcDevice = dptr(gn->mem[0], gn->off[0]),
            .dstMemoryType = CU_MEMORYTYPE_DEVICE,
            .dstDevice = dptr(gn->mem[1], gn->off[1]),
            .WidthInBytes = gn->n,
            .Height = 1,
            .Depth = 1,
        };
        r = ka__cu.cuGraphAddMemcpyNode(out, ng->graph, dep, ndep, &c, ng->nd->ctx);
        return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuGraphAddMemcpyNode");
    }
    /* The pattern's period (1, 2 or 4: checked by representable) is the
     * element; offset and size are multiples of the pattern, hence of it. */
    size_t per = ka__cuda_fill_period(gn->pattern, gn->psz);
    CUDA_MEMSET_NODE_PARAMS m = {
        .dst = dptr(gn->mem[0], gn->off[0]),
        .value = ka__cuda_fill_value(gn->pattern, per),
        .elementSize = (unsigned int)per,
        .width = gn->n / per,
        .height = 1,
    };
    r = ka__cu.cuGraphAddMemsetNode(out, ng->graph, dep, ndep, &m, ng->nd->ctx);
    return r == CUDA_SUCCESS ? KA_OK : ka__cu_fail(r, "cuGraphAddMemsetNode");
}

ka_status ka__cuda_graph_make(ka__graph *g) {
    size_t nparams, nvals;
    if (!ka__cuda_has_graphs() || !representable(g, &nparams, &nvals)) return KA_ERR_UNSUPPORTED; /* no detail: the core replays */
    ka__cu_dev *nd = ka__graph_device(g)->native;
    ka_status st = ka__cuda_bind(nd);
    if (st != KA_OK) return st;
    ka__cu_graph *ng = ka__calloc(1, sizeof *ng);
    if (!ng) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    uint32_t nn = ka__graph_node_count(g);
    ng->nd = nd;
    ng->nkn = nn;
    ng->nparams = nparams;
    ng->nvals = nvals ? nvals : 1; /* no 0-byte request */
    ng->kn = ka__calloc(nn, sizeof(ka__cu_knode));
    ng->params = ka__calloc(ng->nparams, sizeof(void *));
    ng->vals = ka__calloc(ng->nvals, sizeof(uint64_t));
    if (!ng->kn || !ng->params || !ng->vals) {
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    CUresult r = ka__cu.cuGraphCreate(&ng->graph, 0);
    if (r != CUDA_SUCCESS) {
        ng->graph = NULL;
        st = ka__cu_fail(r, "cuGraphCreate");
        goto fail;
    }
    CUgraphNode prev = NULL;
    size_t pat = 0, vat = 0;
    for (uint32_t i = 0; i < nn; i++) {
        ka__gnode_view gn;
        ka__graph_node(g, i, &gn);
        if (!gn.work) continue;
        ka__cu_knode *kn = &ng->kn[i];
        if (gn.type == KA__GN_LAUNCH) {
            kn->kp.kernelParams = ng->params + pat;
            kn->vals = ng->vals + vat;
            pat += gn.nargs + 1u;
            vat += gn.nargs;
        }
        CUgraphNode node = NULL;
        if ((st = add_node(ng, &gn, kn, prev, &node)) != KA_OK) goto fail;
        kn->node = prev = node;
    }
    if ((r = ka__cu.cuGraphInstantiateWithFlags(&ng->exec, ng->graph, 0)) != CUDA_SUCCESS) {
        ng->exec = NULL;
        st = ka__cu_fail(r, "cuGraphInstantiateWithFlags");
        goto fail;
    }
    ka__graph_set_native(g, ng);
    return KA_OK;

fail:
    graph_free(ng); /* what was made: graph_free skips the rest */
    return st;
}

/* As ka__cuda_launch enqueues: the event popped first (an exhausted pool leaves
 * nothing enqueued), recorded behind the graph. */
ka_status ka__cuda_graph_launch(ka__queue *q, ka__graph *g, void **ev) {
    ka__cu_queue *nq = q->native;
    ka__cu_graph *ng = ka__graph_native(g);
    ka_status st = ka__cuda_bind(nq->nd);
    if (KA_UNLIKELY(st != KA_OK)) return st;
    KA__CU_EVENT_BEGIN(nq, ev, ne);
    return ka__cuda_event_after(ne, ka__cu.cuGraphLaunch(ng->exec, nq->stream), "cuGraphLaunch", ev);
}

ka_status ka__cuda_graph_update(ka__graph *g, uint32_t node) {
    ka__cu_graph *ng = ka__graph_native(g);
    ka__cu_knode *kn = &ng->kn[node];
    if (!kn->node) return KA_OK; /* an empty range: not in the CUDA graph */
    ka__gnode_view gn;
    ka__graph_node(g, node, &gn);
    CUDA_KERNEL_NODE_PARAMS kp;
    ka_status st = ka__cuda_bind(ng->nd);
    if (st != KA_OK) return st;
    st = ka__cuda_kernel_params(gn.k, gn.l, gn.args, gn.nargs, kn->kp.kernelParams, kn->vals, &kp);
    if (st != KA_OK) return st;
    CUresult r = ka__cu.cuGraphExecKernelNodeSetParams(ng->exec, kn->node, &kp);
    if (r != CUDA_SUCCESS) return ka__cu_fail(r, "cuGraphExecKernelNodeSetParams");
    kn->kp = kp;
    return KA_OK;
}

void ka__cuda_graph_release(ka__graph *g) {
    ka__cu_graph *ng = ka__graph_native(g);
    if (!ng) return;
    (void)ka__cuda_bind(ng->nd);
    graph_free(ng);
    ka__graph_set_native(g, NULL);
}

#endif
