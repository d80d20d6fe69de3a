/* Recorded launch graphs (graph.c): what the core keeps of a recording. A
 * back-end's graph hooks (backend.h) read it through objects.h's graph view
 * (graph_view.c). Not installed. */
#ifndef KA_GRAPH_H
#define KA_GRAPH_H

#include "backend.h"
#include "ka_internal.h"

typedef struct ka__gnode {
    uint32_t type;             /* enum ka__gnode_type (objects.h) */
    uint32_t nargs;
    /* launch */
    uint64_t kernel;           /* its handle: checked live at each replay */
    ka__kernel *k;             /* the object, while that handle is live */
    ka__launch l;              /* padded geometry as recorded; l.mem = mem; items 0: an empty range */
    ka_arg *args;              /* nargs, the graph's copy; KA_ARG_BYTES point into bytes */
    void **mem;                /* nargs: natives of the buffer arguments (current) */
    uint8_t *bytes;            /* the KA_ARG_BYTES values (nbytes), then as much room to undo a set_arg */
    size_t nbytes;
    /* copy (buf[0] -> buf[1]) and fill (buf[0]) */
    uint64_t buf[2];           /* buffer handles: checked live at each replay */
    size_t off[2], n;
    uint8_t pattern[128];
    uint32_t psz;
} ka__gnode;

struct ka__graph {
    uint64_t id;
    ka__device *dev;
    ka__gnode *nodes;
    uint32_t n, cap, launches;
    uint32_t last;             /* the last node that enqueues something (n when none does) */
    _Atomic uint32_t busy;     /* a replay or set_arg is running: a second is KA_ERR_IN_USE */
    void *native;              /* the back-end's executable graph; NULL: replayed node by node */
};

/* The back-end's graph hooks (backend.h), for graphs it made. */
static inline ka_status ka__be_graph_make(ka__graph *g) { return g->dev->ops->graph_make(g); }
static inline ka_status ka__be_graph_launch(ka__queue *q, ka__graph *g, void **ev) { return q->dev->ops->graph_launch(q, g, ev); }
static inline ka_status ka__be_graph_update(ka__graph *g, uint32_t node) { return g->dev->ops->graph_update(g, node); }
static inline void ka__be_graph_release(ka__graph *g) { g->dev->ops->graph_release(g); }

/* Whether a node enqueues anything (an empty range or transfer does not). */
static inline bool ka__gnode_does_work(const ka__gnode *nd) {
    return nd->type == KA__GN_LAUNCH ? nd->l.items != 0 : nd->n != 0;
}
/* KA_OK when every kernel and buffer the graph names is live; else
 * KA_ERR_INVALID_HANDLE naming the node.
 * A back-end's graph_make may rely on it: ka_graph_end checks first. */
ka_status ka__graph_check_live(const ka__graph *g);

/* Recording, called by ka_launch, ka_buffer_copy and ka_buffer_fill once
 * their checks passed on a queue with q->rec set. */
ka_status ka__graph_add_launch(ka__queue *q, ka__kernel *k, uint64_t kernel, const ka__launch *l, const ka_arg *args,
                               uint32_t nargs, ka_event *ev);
ka_status ka__graph_add_copy(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n, ka_event *ev);
ka_status ka__graph_add_fill(ka__queue *q, ka__buffer *b, const void *pattern, size_t psz, size_t off, size_t n,
                             ka_event *ev);
/* Frees a recording (queue release while recording). */
void ka__graph_free(ka__graph *g);

#endif
