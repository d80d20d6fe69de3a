/* The fault-injection layer: linked into the tests' ka_inject library in
 * place of src/core/layer.c, over the same objects as libka. Every hook is
 * the back-end's own except launch, which first makes one allocation through
 * libka's allocator: the zero-allocation and heap-call tests, run against
 * it, must report that allocation (the test of the test). */
#include "backend.h"

#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
#define SLOTS 8u /* tables stood over: one per back-end, and OpenCL's PoCL routing layer */
static ka__backend layers[SLOTS];         /* layers[i] stands over under[i] */
static const ka__backend *under[SLOTS];

static ka_status fault_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs,
                              void **ev) {
    ka__free(ka__alloc(16), 16);
    return under[q->dev->ops - layers]->launch(q, k, l, args, nargs, ev);
}

const ka__backend *ka__backend_layer(const ka__backend *be) {
    pthread_mutex_lock(&lock);
    uint32_t i = 0;
    while (i < SLOTS && under[i] && under[i] != be) i++;
    if (i < SLOTS && !under[i]) {
        layers[i] = *be;
        layers[i].launch = fault_launch;
        under[i] = be;
    }
    pthread_mutex_unlock(&lock);
    return i < SLOTS ? &layers[i] : be;
}
