/* Generation-counted handles: slot index (low 32 bits) + generation (high).
 * Slots live in fixed chunks that never move, so a lookup is two loads and a
 * compare and needs no lock; allocation of slots happens off the hot path. */
#include "ka_internal.h"

#include <sched.h>
#include <time.h>

ka__slot *_Atomic ka__chunks[KA__MAX_CHUNKS];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t nchunks;     /* chunks allocated */
static uint32_t free_head;   /* index of first free slot, 0 = none */
static uint32_t live;        /* slots in use; all chunks go when it reaches 0 */
/* Generations come from one process-wide counter, so an id never repeats
 * (until 2^32 handles) even after the chunks were freed and made anew. */
static _Atomic uint32_t gen_counter;

static uint32_t next_gen(void) {
    uint32_t g;
    do g = atomic_fetch_add_explicit(&gen_counter, 1, memory_order_relaxed) + 1;
    while (g == 0);
    return g;
}

static void release_all_chunks(void) {
    for (uint32_t c = 0; c < nchunks; c++) {
        ka__slot *p = atomic_exchange(&ka__chunks[c], NULL);
        ka__free(p, sizeof(ka__slot) * KA__CHUNK_SIZE);
    }
    nchunks = 0;
    free_head = 0;
}

static bool grow(void) {
    if (nchunks == KA__MAX_CHUNKS) return false;
    ka__slot *c = ka__calloc(KA__CHUNK_SIZE, sizeof(ka__slot));
    if (!c) return false;
    uint32_t base = nchunks << KA__CHUNK_BITS;
    for (uint32_t i = KA__CHUNK_SIZE; i-- > 0;) {
        uint32_t idx = base + i;
        if (idx == 0) continue; /* index 0 is never a valid handle */
        c[i].next_free = free_head;
        free_head = idx;
    }
    atomic_store_explicit(&ka__chunks[nchunks], c, memory_order_release);
    nchunks++;
    return true;
}

uint64_t ka__handle_new(enum ka__type type, void *obj) {
    pthread_mutex_lock(&lock);
    if (!free_head && !grow()) {
        if (live == 0) release_all_chunks();
        pthread_mutex_unlock(&lock);
        return 0;
    }
    uint32_t idx = free_head;
    ka__slot *s = ka__slot_of(idx);
    free_head = s->next_free;
    live++;
    atomic_store_explicit(&s->obj, obj, memory_order_relaxed);
    atomic_store_explicit(&s->type, (uint32_t)type, memory_order_relaxed);
    uint32_t gen = next_gen();
    atomic_store_explicit(&s->gen, gen, memory_order_release);
    pthread_mutex_unlock(&lock);
    return ((uint64_t)gen << 32) | idx;
}

uint64_t ka__handle_renew(uint64_t id) {
    ka__slot *s = ka__slot_of(id);
    /* Per-slot step: renew is on the event hot path, the shared counter is not. */
    uint32_t old = (uint32_t)(id >> 32), g = old + 1;
    if (g == 0) g = 1;
    /* Of two threads renewing one id (a double release), one wins. */
    if (!atomic_compare_exchange_strong_explicit(&s->gen, &old, g, memory_order_acq_rel, memory_order_relaxed)) return 0;
    return ((uint64_t)g << 32) | (uint32_t)id;
}

/* After the slot's generation went to 0: waits until no call has it pinned.
 * Calls in flight are short (an enqueue; an inline launch runs its kernel;
 * ka_kernel_get may compile): yield, then sleep in short steps. */
static void wait_unpinned(ka__slot *s) {
    for (uint32_t i = 0; atomic_load_explicit(&s->pins, memory_order_seq_cst); i++) {
        if (i < 64) sched_yield();
        else nanosleep(&(struct timespec){0, 50000}, NULL);
    }
    atomic_thread_fence(memory_order_acquire);
}

bool ka__handle_retire(uint64_t id) {
    ka__slot *s = ka__slot_of(id);
    uint32_t g = (uint32_t)(id >> 32);
    if (!s || !g || !atomic_compare_exchange_strong_explicit(&s->gen, &g, 0, memory_order_seq_cst, memory_order_relaxed))
        return false;
    wait_unpinned(s);
    return true;
}

void ka__handle_drain(uint64_t id) {
    ka__slot *s = ka__slot_of(id);
    if (!s) return;
    atomic_store_explicit(&s->gen, 0, memory_order_seq_cst);
    wait_unpinned(s);
}

void ka__handle_free(uint64_t id) {
    if (!id) return;
    pthread_mutex_lock(&lock);
    ka__slot *s = ka__slot_of(id);
    /* ka__handle_renew steps a slot's generation past the counter; lift the
     * counter above every generation this slot has had, so the slot's next
     * handle cannot equal one of its stale ids (0: retired, id's is last). */
    uint32_t last = atomic_load_explicit(&s->gen, memory_order_relaxed);
    if (!last || (int32_t)((uint32_t)(id >> 32) - last) > 0) last = (uint32_t)(id >> 32);
    uint32_t c = atomic_load_explicit(&gen_counter, memory_order_relaxed);
    while ((int32_t)(last - c) > 0 &&
           !atomic_compare_exchange_weak_explicit(&gen_counter, &c, last, memory_order_relaxed, memory_order_relaxed)) {
    }
    atomic_store_explicit(&s->gen, 0, memory_order_release); /* 0 matches no id */
    atomic_store_explicit(&s->type, KA__T_FREE, memory_order_relaxed);
    atomic_store_explicit(&s->obj, NULL, memory_order_relaxed);
    s->next_free = free_head;
    free_head = (uint32_t)id;
    if (--live == 0) release_all_chunks();
    pthread_mutex_unlock(&lock);
}
