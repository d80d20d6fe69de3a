/* Clock, futex wrappers and the spin lock's slow path: the few system calls
 * the waits, the event completion, the host back-end's threads and the spin
 * locks build on (declared in ka_internal.h). None of it knows about events. */
#include "ka_internal.h"

#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int64_t ka__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void ka__futex_wait(_Atomic uint32_t *addr, uint32_t val, int64_t timeout_ns) {
    struct timespec ts, *tp = NULL;
    if (timeout_ns != INT64_MAX) {
        if (timeout_ns <= 0) return;
        ts.tv_sec = timeout_ns / 1000000000;
        ts.tv_nsec = timeout_ns % 1000000000;
        tp = &ts;
    }
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, val, tp, NULL, 0);
}

void ka__futex_wake_all(_Atomic uint32_t *addr) {
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* ka__spin_lock (ka_internal.h) found the lock held: spin a little, then yield. */
void ka__spin_wait(_Atomic uint32_t *l) {
    for (int i = 0;; i++) {
        if (!atomic_load_explicit(l, memory_order_relaxed) && !atomic_exchange_explicit(l, 1, memory_order_acquire))
            return;
        if (i < 64) ka__cpu_relax();
        else sched_yield();
    }
}
