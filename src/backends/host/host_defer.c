/* Deferred releases of the host back-end (host_internal.h). A launch that
 * returns before its kernel has run (a pool launch, KA_LAUNCH_ASYNC) leaves
 * a command that still reads the buffers' memory, the kernel's entry and
 * the program's loaded object; the core frees its own objects at release,
 * so what the command needs is freed here, later.
 *
 * Each queue counts the commands it has enqueued (subm) and completed
 * (done); in order, so a command is complete once done has reached its
 * number. A release with commands in flight records, for each queue that
 * has some, the count enqueued so far, and is carried out when every such
 * queue's done count has reached it: by the thread that completes the last
 * command of them, at a later release, or when the queue is released. A
 * queue that keeps enqueueing never holds a release back: only the commands
 * enqueued before it count. */
#include "host_internal.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <time.h>

typedef struct ka__hdefer {
    struct ka__hdefer *next;
    uint8_t kind; /* enum ka__hdefer_kind */
    void *obj;
    size_t size;
    uint32_t n;   /* queues still short of their mark */
    uint32_t cap; /* entries allocated */
    struct {
        ka__hqueue *hq;
        uint64_t mark;
    } w[];
} ka__hdefer;

static void free_now(uint8_t kind, void *obj, size_t size) {
    switch (kind) {
    case KA__HD_MEMORY:
        ka__free(obj, size);
        break;
    case KA__HD_MODULE: {
        ka__hprog *hp = obj;
        dlclose(hp->dl);
        ka__free(hp, sizeof *hp);
        break;
    }
    case KA__HD_MAPPING:
        munmap(obj, size);
        break;
    default:
        ka__free(obj, size);
        break;
    }
}

static bool busy(ka__hqueue *hq) {
    return atomic_load_explicit(&hq->done, memory_order_acquire) < atomic_load_explicit(&hq->subm, memory_order_acquire);
}

/* Under defer_lock: unlinks the releases no queue holds back (gone: a
 * queue being unlisted, whose commands have all run) into *out. */
static void collect(ka__hdev *hd, const ka__hqueue *gone, ka__hdefer **out) {
    for (ka__hdefer **pp = &hd->deferred; *pp;) {
        ka__hdefer *d = *pp;
        for (uint32_t i = 0; i < d->n;) {
            ka__hqueue *hq = d->w[i].hq;
            if (hq == gone || atomic_load_explicit(&hq->done, memory_order_acquire) >= d->w[i].mark) d->w[i] = d->w[--d->n];
            else i++;
        }
        if (d->n) {
            pp = &d->next;
            continue;
        }
        *pp = d->next;
        d->next = *out;
        *out = d;
        atomic_fetch_sub_explicit(&hd->ndeferred, 1, memory_order_relaxed);
    }
}

/* Outside the lock: a module's dlclose may take a while. */
static void free_list(ka__hdefer *d) {
    while (d) {
        ka__hdefer *next = d->next;
        free_now(d->kind, d->obj, d->size);
        ka__free(d, sizeof *d + (size_t)d->cap * sizeof d->w[0]);
        d = next;
    }
}

/* Waits until every queue of the device has completed what it had
 * enqueued (no allocation): queue by queue, in the order they were made
 * (serials), each for its count enqueued when its turn comes. A queue made
 * later cannot use what is released; one released meanwhile has drained. */
static void wait_marks(ka__hdev *hd) {
    pthread_mutex_lock(&hd->defer_lock);
    uint64_t last = 0, upto = hd->serials;
    pthread_mutex_unlock(&hd->defer_lock);
    for (;;) {
        pthread_mutex_lock(&hd->defer_lock);
        ka__hqueue *next = NULL;
        for (ka__hqueue *hq = hd->queues; hq; hq = hq->next_q)
            if (hq->serial > last && hq->serial <= upto && (!next || hq->serial < next->serial)) next = hq;
        if (!next) {
            pthread_mutex_unlock(&hd->defer_lock);
            return;
        }
        uint64_t serial = last = next->serial, mark = atomic_load_explicit(&next->subm, memory_order_acquire);
        pthread_mutex_unlock(&hd->defer_lock);
        for (;;) {
            pthread_mutex_lock(&hd->defer_lock);
            bool done = true;
            for (ka__hqueue *hq = hd->queues; hq; hq = hq->next_q)
                if (hq->serial == serial) done = atomic_load_explicit(&hq->done, memory_order_acquire) >= mark;
            pthread_mutex_unlock(&hd->defer_lock);
            if (done) break;
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
    }
}

void ka__host_defer(ka__hdev *hd, enum ka__hdefer_kind kind, void *obj, size_t size) {
    pthread_mutex_lock(&hd->defer_lock);
    uint32_t n = 0;
    for (ka__hqueue *hq = hd->queues; hq; hq = hq->next_q) n += busy(hq);
    if (!n) {
        pthread_mutex_unlock(&hd->defer_lock);
        free_now((uint8_t)kind, obj, size);
        return;
    }
    ka__hdefer *d = ka__alloc(sizeof *d + (size_t)n * sizeof d->w[0]);
    if (!d) {
        /* No memory to remember it: wait for those commands instead (only
         * those enqueued so far, as a deferred release would), a few queues
         * at a time. */
        pthread_mutex_unlock(&hd->defer_lock);
        wait_marks(hd);
        free_now((uint8_t)kind, obj, size);
        return;
    }
    d->kind = (uint8_t)kind;
    d->obj = obj;
    d->size = size;
    d->n = 0;
    d->cap = n;
    for (ka__hqueue *hq = hd->queues; hq && d->n < n; hq = hq->next_q)
        if (busy(hq)) {
            d->w[d->n].hq = hq;
            d->w[d->n].mark = atomic_load_explicit(&hq->subm, memory_order_acquire);
            d->n++;
        }
    d->next = hd->deferred;
    hd->deferred = d;
    atomic_fetch_add_explicit(&hd->ndeferred, 1, memory_order_relaxed);
    /* A queue may have completed since it was counted. */
    ka__hdefer *ready = NULL;
    collect(hd, NULL, &ready);
    pthread_mutex_unlock(&hd->defer_lock);
    free_list(ready);
}

void ka__host_reclaim(ka__hdev *hd) {
    if (!atomic_load_explicit(&hd->ndeferred, memory_order_relaxed)) return;
    ka__hdefer *ready = NULL;
    pthread_mutex_lock(&hd->defer_lock);
    collect(hd, NULL, &ready);
    pthread_mutex_unlock(&hd->defer_lock);
    free_list(ready);
}

void ka__host_queue_listed(ka__hdev *hd, ka__hqueue *hq, bool add) {
    ka__hdefer *ready = NULL;
    pthread_mutex_lock(&hd->defer_lock);
    if (add) {
        hq->serial = ++hd->serials;
        hq->next_q = hd->queues;
        hd->queues = hq;
    } else {
        for (ka__hqueue **pp = &hd->queues; *pp; pp = &(*pp)->next_q)
            if (*pp == hq) {
                *pp = hq->next_q;
                break;
            }
        collect(hd, hq, &ready);
    }
    pthread_mutex_unlock(&hd->defer_lock);
    free_list(ready);
}

void ka__host_defer_fini(ka__hdev *hd) {
    /* Every queue is released by now, so nothing holds a release back. */
    ka__hdefer *d = hd->deferred;
    hd->deferred = NULL;
    for (ka__hdefer *e = d; e; e = e->next) e->n = 0;
    free_list(d);
}
