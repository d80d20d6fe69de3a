/* The view of a recorded graph a back-end's graph hooks read (objects.h):
 * struct ka__graph and its nodes stay the core's (graph.h). Off the hot
 * path: graph_make reads every node once, a replay only the native graph. */
#include "graph.h"

ka__device *ka__graph_device(const ka__graph *g) { return g->dev; }
uint32_t ka__graph_node_count(const ka__graph *g) { return g->n; }
void *ka__graph_native(const ka__graph *g) { return g->native; }
void ka__graph_set_native(ka__graph *g, void *native) { g->native = native; }

static void *buffer_native(uint64_t id) {
    ka__buffer *b = ka__resolve(id, KA__T_BUFFER); /* live: the core checked before the hook */
    return b ? b->native : NULL;
}

void ka__graph_node(const ka__graph *g, uint32_t i, ka__gnode_view *out) {
    const ka__gnode *nd = &g->nodes[i];
    *out = (ka__gnode_view){.type = nd->type, .work = ka__gnode_does_work(nd), .n = nd->n};
    if (nd->type == KA__GN_LAUNCH) {
        out->k = nd->k;
        out->l = &nd->l;
        out->args = nd->args;
        out->nargs = nd->nargs;
        return;
    }
    out->mem[0] = buffer_native(nd->buf[0]);
    out->off[0] = nd->off[0];
    if (nd->type == KA__GN_COPY) {
        out->mem[1] = buffer_native(nd->buf[1]);
        out->off[1] = nd->off[1];
    } else {
        out->pattern = nd->pattern;
        out->psz = nd->psz;
    }
}
