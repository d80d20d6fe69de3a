/* The fault-injection layer: linked into the tests' ka_inject library in
 * place of src/core/layer.c, over the same objects as libka. Every hook is
 * the back-end's own except launch, which first makes one allocation through
 * libka's allocator: the zero-allocation and heap-call tests, run against
 * it, must report that allocation (the test of the test). */
#include "backend.h"

#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
#define KINDS 4u /* ka_backend values 0..KINDS-1 */
static ka__backend layers[KINDS];         /* by ka_backend */
static const ka__backend *under[KINDS];

static ka_status fault_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs,
                              void **ev) {
    ka__free(ka__alloc(16), 16);
    return under[q->dev->ops->kind]->launch(q, k, l, args, nargs, ev);
}

const ka__backend *ka__backend_layer(const ka__backend *be) {
    if ((unsigned)be->kind >= KINDS) return be;
    pthread_mutex_lock(&lock);
    if (!under[be->kind]) {
        layers[be->kind] = *be;
        layers[be->kind].launch = fault_launch;
        under[be->kind] = be;
    }
    pthread_mutex_unlock(&lock);
    return &layers[be->kind];
}
