/* A lock-free free list of pool slots, shared by the core's event pool
 * (event.c) and the CUDA back-end's CUevent pool (cuda_events.c). Not
 * installed.
 *
 * A Treiber stack of slots named by index + 1 (0 ends the list). The head is
 * one 64-bit word: a tag in the upper 32 bits, bumped by every push and pop,
 * and the first slot in the lower 32, so a pop whose head was popped and
 * pushed back meanwhile (ABA) fails its compare-exchange. Each slot's link is
 * an atomic read and written relaxed: a pop reads the link of a slot that
 * another thread may be popping and pushing back at that moment; the tagged
 * compare-exchange then fails and the value read is dropped, but the read
 * itself must not be a data race (ThreadSanitizer reports a plain field).
 * Ordering: a push publishes the slot with a release compare-exchange; a pop
 * acquires it, so what the pusher wrote to the slot is visible to the popper.
 * Slots never leave their pool while it exists, so reading a popped slot's
 * link is always reading valid memory. */
#ifndef KA_FREELIST_H
#define KA_FREELIST_H

#include <stdatomic.h>
#include <stdint.h>

/* The list's head: tag << 32 | first slot's index + 1. */
typedef _Atomic uint64_t ka__freelist;

#define KA__FREELIST_INIT 0

/* The first slot's index + 1, 0 when the list is empty (a snapshot). */
static inline uint32_t ka__freelist_peek(ka__freelist *head) {
    return (uint32_t)atomic_load_explicit(head, memory_order_acquire);
}

/* Pushes the slot named idx1 (index + 1, not 0) whose link is *link. */
static inline void ka__freelist_push(ka__freelist *head, _Atomic uint32_t *link, uint32_t idx1) {
    uint64_t h = atomic_load_explicit(head, memory_order_relaxed);
    do {
        atomic_store_explicit(link, (uint32_t)h, memory_order_relaxed);
    } while (!atomic_compare_exchange_weak_explicit(head, &h, ((h >> 32) + 1) << 32 | idx1, memory_order_release,
                                                    memory_order_relaxed));
}

/* Pops a slot: its index + 1, or 0 when the list is empty. link(pool, idx1)
 * returns slot idx1's link; it is called only for a slot that is (or just
 * was) on the list. The call is inlined where link is a constant function. */
static inline uint32_t ka__freelist_pop(ka__freelist *head, _Atomic uint32_t *(*link)(void *pool, uint32_t idx1),
                                        void *pool) {
    uint64_t h = atomic_load_explicit(head, memory_order_acquire);
    for (;;) {
        uint32_t idx1 = (uint32_t)h;
        if (idx1 == 0) return 0;
        uint32_t next = atomic_load_explicit(link(pool, idx1), memory_order_relaxed);
        if (atomic_compare_exchange_weak_explicit(head, &h, ((h >> 32) + 1) << 32 | next, memory_order_acquire,
                                                  memory_order_acquire))
            return idx1;
    }
}

#endif
