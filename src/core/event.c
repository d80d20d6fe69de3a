/* Event pool and waits.
 *
 * Each queue owns a fixed array of event slots made when the queue is made;
 * a launch pops one from a lock-free stack, a release pushes it back, and the
 * handle's generation changes on release, so a stale handle is detected.
 *
 * Threading: the driver's completion callback (on a driver thread) only does
 * atomic stores, a futex wake, an eventfd write, the user's callback and a
 * lock-free push; it takes no lock that a user thread could hold. */
#include "backend.h"
#include "freelist.h"

#include <errno.h>
#include <stdio.h>
#include <sched.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

/* Default spin before sleeping. On a CPU device the spinning thread takes a
 * core from the workers running the kernel: measured on PoCL (2 cores, quiet
 * machine), a 64-item launch + wait took 21 us with no spin, 26 us with 3 us
 * of spin and 36 us with 10 us (docs/BENCHMARKS.md has a loaded machine's
 * figures too). On a GPU the host is free and a completion callback wakes
 * late (on the H200 machine: libka's callback path 25 us against 10 us
 * polling, docs/BENCHMARKS.md), so a short spin catches short kernels first. */
#define KA__DEFAULT_SPIN_CPU_NS 0
#define KA__DEFAULT_SPIN_GPU_NS 50000
/* The GPU default adapts (wait_spin below): when the shorter of the thread's
 * last two waits on the queue ended within this long, the next spins 1.5
 * times that wait plus the default, never longer than this. A kernel of about
 * 1 ms then costs its waiter what a raw spinning wait costs, where sleeping
 * added 100-300 us (docs/BENCHMARKS.md, H200); longer kernels get the default
 * spin and a sleep. No wait spins longer than this: at most 2 % of a core for
 * a wait of 100 ms or more. */
#define KA__ADAPTIVE_SPIN_MAX_NS 2000000

static _Atomic int64_t default_spin_ns = -1;
/* ka_wait_any sleeps on this counter, bumped by every completion while a
 * wait_any is in progress. */
static _Atomic uint32_t any_seq;
static _Atomic uint32_t any_waiters;

void ka_set_wait_spin(int64_t spin_ns) { atomic_store(&default_spin_ns, spin_ns < 0 ? -1 : spin_ns); }

int64_t ka__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void futex_wait(_Atomic uint32_t *addr, uint32_t val, int64_t timeout_ns) {
    struct timespec ts, *tp = NULL;
    if (timeout_ns != INT64_MAX) {
        if (timeout_ns <= 0) return;
        ts.tv_sec = timeout_ns / 1000000000;
        ts.tv_nsec = timeout_ns % 1000000000;
        tp = &ts;
    }
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, val, tp, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *addr) {
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void ka__spin_wait(_Atomic uint32_t *l) {
    for (int i = 0;; i++) {
        if (!atomic_load_explicit(l, memory_order_relaxed) && !atomic_exchange_explicit(l, 1, memory_order_acquire))
            return;
        if (i < 64) cpu_relax();
        else sched_yield();
    }
}

/* ---- pool -------------------------------------------------------------- */
/* The free list (freelist.h) over the queue's slots: free_head is its head,
 * each slot's `next` its link. */
static void push_free(ka__queue *q, ka__event *e) {
    ka__freelist_push(&q->free_head, &e->next, (uint32_t)(e - q->events) + 1);
}

static _Atomic uint32_t *slot_link(void *pool, uint32_t idx1) { return &((ka__queue *)pool)->events[idx1 - 1].next; }

ka_status ka__events_init(ka__queue *q, uint32_t n) {
    q->events = ka__calloc(n, sizeof(ka__event));
    if (!q->events) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_queue_create: out of memory for %u events", n);
    q->nevents = n;
    atomic_init(&q->free_head, 0);
    for (uint32_t i = 0; i < n; i++) {
        ka__event *e = &q->events[i];
        e->q = q;
        e->id = ka__handle_new(KA__T_EVENT, e);
        if (!e->id) {
            /* Not ka__events_fini: the array must be freed with the size it
             * was allocated with, n events, not the i with handles. */
            for (uint32_t j = 0; j < i; j++) ka__handle_free(q->events[j].id);
            ka__free(q->events, sizeof(ka__event) * n);
            q->events = NULL;
            q->nevents = 0;
            return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_queue_create: out of memory for event handles");
        }
    }
    for (uint32_t i = n; i-- > 0;) push_free(q, &q->events[i]);
    return KA_OK;
}

void ka__events_fini(ka__queue *q) {
    if (!q->events) return;
    for (uint32_t i = 0; i < q->nevents; i++) {
        ka__event *e = &q->events[i];
        ka__handle_drain(e->id); /* calls on the event in other threads return first */
        if (e->native) ka__be_event_release(q, e->native);
        if (e->stale_native) ka__be_event_release(q, e->stale_native);
        ka__handle_free(e->id);
    }
    ka__free(q->events, sizeof(ka__event) * (q->nevents ? q->nevents : 1));
    q->events = NULL;
}

/* A released event whose command is complete can still be held by its armed
 * completion callback: the driver runs callbacks a moment after completion (a
 * waiter may have seen it done by polling, or woke at mark_done before the
 * callback dropped its reference). A pool that looks empty while such events
 * exist waits for their callbacks, for at most 2 s (a loaded machine can keep
 * the driver's thread off a core that long). Off the hot path. */
static bool held_by_callback(ka__queue *q) {
    if (atomic_load(&q->callbacks_running)) return true;
    for (uint32_t i = 0; i < q->nevents; i++) {
        ka__event *e = &q->events[i];
        /* done and released, yet held: only its callback holds it */
        if (atomic_load(&e->released) && atomic_load(&e->refs) > 0 && atomic_load(&e->state) == KA__EV_DONE)
            return true;
    }
    return false;
}

static bool settle_callbacks(ka__queue *q) {
    /* A short grace for any pending callback (a snapshot of the slots can
     * miss one that is between its steps), up to 2 s while one is seen
     * holding a released, completed slot. */
    int64_t start = ka__now_ns();
    while (!ka__freelist_peek(&q->free_head) && atomic_load(&q->callbacks_pending)) {
        int64_t t = ka__now_ns() - start;
        if (t > 2000000000 || (t > 2000000 && !held_by_callback(q))) break;
        sched_yield();
    }
    return ka__freelist_peek(&q->free_head) != 0;
}

ka_status ka__event_acquire(ka__queue *q, ka__event **out) {
    uint32_t idx;
    while (KA_UNLIKELY(!(idx = ka__freelist_pop(&q->free_head, slot_link, q)))) {
        /* Look again (a callback may have pushed a slot since the first
         * look), and wait for callbacks that hold released slots. */
        uint32_t pending = atomic_load(&q->callbacks_pending); /* before the head: a callback pushes, then counts down */
        if (ka__freelist_peek(&q->free_head) || (pending && settle_callbacks(q))) continue;
        return ka__fail(KA_ERR_EVENT_POOL_EXHAUSTED,
                        "the queue's %u event slots are all in use: release events after waiting, or raise "
                        "ka_queue_config.event_capacity (%u completion callbacks pending)",
                        q->nevents, atomic_load(&q->callbacks_pending));
    }
    ka__event *e = &q->events[idx - 1];
    if (e->stale_native) {
        ka__be_event_release(q, e->stale_native);
        e->stale_native = NULL;
    }
    e->native = NULL;
    e->fn = NULL;
    e->fn_user = NULL;
    atomic_store_explicit(&e->status, KA_OK, memory_order_relaxed);
    atomic_store_explicit(&e->refs, 1, memory_order_relaxed);
    atomic_store_explicit(&e->cb_armed, 0, memory_order_relaxed);
    atomic_store_explicit(&e->user_cb, 0, memory_order_relaxed);
    atomic_store_explicit(&e->notify, 0, memory_order_relaxed);
    atomic_store_explicit(&e->released, 0, memory_order_relaxed);
    atomic_store_explicit(&e->sleepers, 0, memory_order_relaxed);
    atomic_store_explicit(&e->state, KA__EV_PENDING, memory_order_release);
    *out = e;
    return KA_OK;
}

static void unref(ka__event *e) {
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) != 1) return;
    /* The native event may be the one whose callback is running now: release
     * it when the slot is next used, not from inside its own callback. */
    e->stale_native = e->native;
    e->native = NULL;
    atomic_store_explicit(&e->state, KA__EV_FREE, memory_order_release);
    push_free(e->q, e);
}

/* Returns an acquired slot unused (the enqueue failed). */
void ka__event_abandon(ka__event *e) { unref(e); }

/* Writes the queue's eventfd if a notification was asked for (1 -> 2). An
 * event with none stays at 0, so ka_event_notify still works after a wait
 * armed the driver's callback and it fired. */
static void notify_fd(ka__event *e) {
    uint32_t asked = 1;
    if (atomic_compare_exchange_strong(&e->notify, &asked, 2) && e->q->efd >= 0) {
        uint64_t one = 1;
        ssize_t r = write(e->q->efd, &one, sizeof one);
        (void)r; /* EAGAIN only at counter overflow; the fd stays readable */
    }
}

/* Runs the user's callback if one is armed (1 -> 2). An event with none stays
 * at 0, so ka_event_on_complete still works after a wait armed the driver's
 * callback and it fired. */
static void fire_user(ka__event *e, ka_status st) {
    uint32_t armed = 1;
    if (atomic_compare_exchange_strong(&e->user_cb, &armed, 2)) e->fn(st, e->fn_user);
}

/* Marks the event done (once); wakes sleepers. */
static void mark_done(ka__event *e, ka_status st) {
    uint32_t expect = KA__EV_PENDING;
    atomic_store_explicit(&e->status, st, memory_order_relaxed);
    /* seq_cst on state and sleepers: either the sleeper sees DONE before it
     * sleeps, or this sees the sleeper and wakes it. A wake is a system call,
     * so it is skipped when nobody sleeps (the common, short-kernel case). */
    if (atomic_compare_exchange_strong(&e->state, &expect, KA__EV_DONE)) {
        if (atomic_load(&e->sleepers)) futex_wake_all(&e->state);
        if (atomic_load(&any_waiters)) {
            atomic_fetch_add(&any_seq, 1);
            futex_wake_all(&any_seq);
        }
    }
}

void ka__event_bind(ka__event *e, void *native) {
    e->native = native;
    if (!native) mark_done(e, KA_OK);
}

/* The driver's completion callback. */
void ka__event_native_done(void *ctx, ka_status st) {
    ka__event *e = ctx;
    ka__queue *q = e->q;
    atomic_fetch_add_explicit(&q->callbacks, 1, memory_order_relaxed);
    atomic_fetch_add(&q->callbacks_running, 1);
    mark_done(e, st);
    st = (ka_status)atomic_load(&e->status);
    fire_user(e, st);
    notify_fd(e);
    unref(e);
    atomic_fetch_sub(&q->callbacks_running, 1);
    atomic_fetch_sub_explicit(&q->callbacks_pending, 1, memory_order_release);
}

static ka_status arm_callback(ka__event *e) {
    if (atomic_exchange(&e->cb_armed, 1)) return KA_OK;
    ka__queue *q = e->q;
    atomic_fetch_add(&e->refs, 1);
    atomic_fetch_add(&q->callbacks_pending, 1);
    ka_status st = ka__be_event_callback(q, e->native, ka__event_native_done, e);
    if (st != KA_OK) {
        atomic_fetch_sub(&q->callbacks_pending, 1);
        atomic_store(&e->cb_armed, 0);
        unref(e);
    }
    return st;
}

void ka__queue_wait_callbacks(ka__queue *q) {
    while (atomic_load_explicit(&q->callbacks_pending, memory_order_acquire)) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

/* ---- waits ------------------------------------------------------------- */
static ka__event *lookup(ka_event ev) {
    ka__event *e = ka__resolve(ev.id, KA__T_EVENT);
    if (KA_UNLIKELY(!e || atomic_load_explicit(&e->state, memory_order_acquire) == KA__EV_FREE)) return NULL;
    return e;
}

/* lookup(), the event's slot pinned for the call: a release of its queue in
 * another thread waits for the call (ka__events_fini drains the slots). */
static ka__event *pin_event(ka_event ev, ka__slot **s) {
    ka__event *e = ka__pin(ev.id, KA__T_EVENT, s);
    if (KA_UNLIKELY(e && atomic_load_explicit(&e->state, memory_order_acquire) == KA__EV_FREE)) {
        ka__unpin(*s);
        return NULL;
    }
    return e;
}

/* The user's handle keeps the slot, and with it the native event, until
 * ka_event_release (a wait racing its own event's release is the caller's race). */
/* where: "" or a prefix naming the call and event ("ka_wait_all: event 3: "). */
static ka_status failed_status(ka__event *e, ka_status st, const char *where) {
    const char *why = e->native ? ka__be_event_error(e->q, e->native) : NULL;
    if (why) return ka__fail(st, "%sevent: the command failed on the device: %s (%s)", where, why, ka_status_name(st));
    return ka__fail(st, "%sevent: the command failed on the device (%s)", where, ka_status_name(st));
}

static ka_status done_status(ka__event *e) {
    ka_status st = (ka_status)atomic_load_explicit(&e->status, memory_order_acquire);
    return KA_LIKELY(st == KA_OK) ? KA_OK : failed_status(e, st, "");
}

/* Asks the driver; marks done if so. true when done. */
static bool poll_once(ka__event *e) {
    if (atomic_load_explicit(&e->state, memory_order_acquire) == KA__EV_DONE) return true;
    ka_status st = KA_OK;
    int r = ka__be_event_query(e->q, e->native, &st);
    if (r == 0) return false;
    mark_done(e, r > 0 ? KA_OK : st);
    return true;
}

static int64_t spin_of(ka__queue *q) {
    int64_t s = atomic_load_explicit(&default_spin_ns, memory_order_relaxed);
    if (q->spin_ns >= 0) return q->spin_ns;
    if (s >= 0) return s;
    return q->dev->info.is_cpu ? KA__DEFAULT_SPIN_CPU_NS : KA__DEFAULT_SPIN_GPU_NS;
}

/* now + ns, saturating at INT64_MAX (now >= 0, ns >= 0). */
static int64_t add_sat(int64_t now, int64_t ns) { return ns > INT64_MAX - now ? INT64_MAX : now + ns; }

/* How long this thread's last two real waits (ones that did not find their
 * event complete at the first poll) on a queue lasted, from the end of the
 * first poll to completion seen: the adaptive spin's memory, for 4 queues,
 * direct-mapped by handle. Per thread, so no sharing and no lock; a thread
 * that waits on a queue in a loop is the case it serves. Two waits, so one
 * outlier (a wait behind several queued kernels) does not end the spin. */
static _Thread_local __attribute__((tls_model("initial-exec"))) struct recent_wait {
    uint64_t queue;
    int64_t ns[2];
} recent_waits[4];

/* The spin of one ka_event_wait, and *rw, the memory to update when the wait
 * ends (NULL when the spin does not adapt). An explicit spin (the queue's, or
 * ka_set_wait_spin's) is used as given; so is the CPU default (0). The GPU
 * default adapts to the queue's recent waits on this thread. */
static int64_t wait_spin(ka__queue *q, struct recent_wait **rw) {
    *rw = NULL;
    if (q->spin_ns >= 0 || atomic_load_explicit(&default_spin_ns, memory_order_relaxed) >= 0 || q->dev->info.is_cpu)
        return spin_of(q);
    struct recent_wait *r = &recent_waits[q->id * 0x9e3779b97f4a7c15u >> 62];
    *rw = r;
    int64_t ns = r->ns[0] < r->ns[1] ? r->ns[0] : r->ns[1];
    if (r->queue != q->id || ns > KA__ADAPTIVE_SPIN_MAX_NS) return KA__DEFAULT_SPIN_GPU_NS;
    int64_t s = ns + ns / 2 + KA__DEFAULT_SPIN_GPU_NS;
    return s < KA__ADAPTIVE_SPIN_MAX_NS ? s : KA__ADAPTIVE_SPIN_MAX_NS;
}

static void remember(struct recent_wait *rw, ka__queue *q, int64_t start) {
    if (!rw) return;
    int64_t ns = ka__now_ns() - start;
    if (rw->queue != q->id) {
        rw->queue = q->id;
        rw->ns[1] = ns;
    } else {
        rw->ns[1] = rw->ns[0];
    }
    rw->ns[0] = ns;
}

/* Back-ends whose blocking wait (event_wait) sleeps in the driver and
 * wakes when the command completes, without a thread of libka's in between:
 * CUDA (its pooled events are CU_EVENT_BLOCKING_SYNC). An unbounded wait past
 * its spin blocks there, so its thread wakes once, where the completion
 * callback path wakes the callback thread first and then the waiter. Not
 * OpenCL: NVIDIA's clWaitForEvents spins, and PoCL's callbacks already run
 * on its own threads. */
static bool driver_wait_sleeps(const ka__queue *q) { return q->dev->ops->flags & KA__BE_WAIT_SLEEPS; }

static int64_t deadline_of(int64_t timeout_ns) {
    if (timeout_ns == KA_WAIT_FOREVER) return INT64_MAX;
    if (timeout_ns <= 0) return 0;
    return add_sat(ka__now_ns(), timeout_ns);
}

static ka_status polled(ka__event *e) {
    atomic_fetch_add_explicit(&e->q->waits_polled, 1, memory_order_relaxed);
    return done_status(e);
}

static ka_status wait_one(ka__event *e, int64_t deadline) {
    if (poll_once(e)) return polled(e);
    if (deadline == 0) return ka__fail(KA_ERR_TIMEOUT, "ka_event_wait: not complete");
    ka__queue *q = e->q;
    /* Commands need not start before a flush; a wait is a flush point. */
    ka__be_queue_flush(q);
    struct recent_wait *rw;
    int64_t spin = wait_spin(q, &rw), start = ka__now_ns();
    if (spin > 0) {
        /* Until min(start + spin, deadline), without overflow for any spin. On
         * a GPU each poll is a driver call and the host is free: poll without
         * pausing long, so completion is seen within about one query's time. On
         * a CPU device the poll takes a lock the device's workers need: pause
         * between polls. */
        int64_t now = start, until = spin >= deadline - now ? deadline : now + spin;
        int relax = q->dev->info.is_cpu ? 16 : 1;
        while (now < until) {
            for (int i = 0; i < relax; i++) cpu_relax();
            if (poll_once(e)) {
                remember(rw, q, start);
                return polled(e);
            }
            now = ka__now_ns();
        }
    }
    atomic_fetch_add_explicit(&q->waits_slept, 1, memory_order_relaxed);
    if (deadline == INT64_MAX && driver_wait_sleeps(q)) {
        /* Block in the driver: the one wake is the driver's. A bounded wait
         * cannot (the driver's wait has no timeout): it takes the callback
         * path below. */
        ka_status st = ka__be_event_wait(q, e->native);
        mark_done(e, st);
        remember(rw, q, start);
        return done_status(e);
    }
    if (arm_callback(e) != KA_OK) {
        /* No callback: the driver's own blocking wait for an unbounded wait,
         * else short sleeps between polls. */
        if (deadline == INT64_MAX) {
            ka_status st = ka__be_event_wait(q, e->native);
            mark_done(e, st);
            remember(rw, q, start);
            return done_status(e);
        }
        while (!poll_once(e)) {
            if (ka__now_ns() >= deadline) return ka__fail(KA_ERR_TIMEOUT, "ka_event_wait: timed out");
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
        return done_status(e);
    }
    atomic_fetch_add(&e->sleepers, 1);
    while (atomic_load(&e->state) == KA__EV_PENDING) {
        int64_t left = deadline == INT64_MAX ? INT64_MAX : deadline - ka__now_ns();
        if (left <= 0) {
            atomic_fetch_sub(&e->sleepers, 1);
            return ka__fail(KA_ERR_TIMEOUT, "ka_event_wait: timed out");
        }
        futex_wait(&e->state, KA__EV_PENDING, left);
    }
    atomic_fetch_sub(&e->sleepers, 1);
    remember(rw, q, start);
    return done_status(e);
}

ka_status ka_event_wait(ka_event ev, int64_t timeout_ns) {
    ka__slot *s;
    ka__event *e = pin_event(ev, &s);
    if (KA_UNLIKELY(!e)) return ka__fail(KA_ERR_INVALID_HANDLE, "ka_event_wait: invalid, released or stale event");
    ka_status st = wait_one(e, deadline_of(timeout_ns));
    ka__unpin(s);
    return st;
}

ka_status ka_wait_all(const ka_event *evs, uint32_t n, int64_t timeout_ns) {
    if (n && !evs) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_wait_all: events is NULL");
    for (uint32_t i = 0; i < n; i++)
        if (!lookup(evs[i])) return ka__fail(KA_ERR_INVALID_HANDLE, "ka_wait_all: event %u is invalid or stale", i);
    int64_t deadline = deadline_of(timeout_ns);
    ka_status first = KA_OK;
    uint32_t first_at = 0;
    for (uint32_t i = 0; i < n; i++) {
        ka__slot *s;
        ka__event *e = pin_event(evs[i], &s);
        if (!e) return ka__fail(KA_ERR_INVALID_HANDLE, "ka_wait_all: event %u was released while waiting", i);
        ka_status st = wait_one(e, deadline);
        ka__unpin(s);
        if (st == KA_ERR_TIMEOUT) return st;
        if (st != KA_OK && first == KA_OK) first = st, first_at = i;
    }
    if (first == KA_OK) return KA_OK;
    /* The detail of the first failure (the driver's error name), not of the last. */
    char where[48];
    snprintf(where, sizeof where, "ka_wait_all: event %u: ", first_at);
    return failed_status(lookup(evs[first_at]), first, where);
}

static ka_status wait_any(ka__event **es, uint32_t n, int64_t timeout_ns, uint32_t *index);

ka_status ka_wait_any(const ka_event *evs, uint32_t n, int64_t timeout_ns, uint32_t *index) {
    if (!n || !evs || !index) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_wait_any: needs events, a count and index");
    ka__event *es[KA_MAX_ARGS];
    if (n > KA_MAX_ARGS) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_wait_any: at most %d events", KA_MAX_ARGS);
    ka__slot *ss[KA_MAX_ARGS];
    for (uint32_t i = 0; i < n; i++)
        if (!(es[i] = pin_event(evs[i], &ss[i]))) {
            for (uint32_t j = 0; j < i; j++) ka__unpin(ss[j]);
            return ka__fail(KA_ERR_INVALID_HANDLE, "ka_wait_any: event %u is invalid or stale", i);
        }
    ka_status st = wait_any(es, n, timeout_ns, index);
    for (uint32_t i = 0; i < n; i++) ka__unpin(ss[i]);
    return st;
}

static ka_status wait_any(ka__event **es, uint32_t n, int64_t timeout_ns, uint32_t *index) {
    int64_t deadline = deadline_of(timeout_ns);
    int64_t spin_until = -1;
    bool armed = false;
    ka_status st = KA_ERR_TIMEOUT;
    for (;;) {
        uint32_t seq = atomic_load(&any_seq);
        uint32_t hit = n;
        for (uint32_t i = 0; i < n && hit == n; i++)
            if (poll_once(es[i])) hit = i;
        if (hit < n) {
            *index = hit;
            st = KA_OK;
            break;
        }
        int64_t now = ka__now_ns();
        if (now >= deadline) break;
        if (spin_until < 0) {
            for (uint32_t i = 0; i < n; i++) ka__be_queue_flush(es[i]->q);
            spin_until = add_sat(now, spin_of(es[0]->q));
        }
        if (now < spin_until) {
            for (int i = 0; i < 16; i++) cpu_relax();
            continue;
        }
        if (!armed) {
            atomic_fetch_add(&any_waiters, 1);
            for (uint32_t i = 0; i < n; i++) arm_callback(es[i]);
            armed = true;
            continue; /* re-check before sleeping: a completion may predate the count */
        }
        /* Sleep in slices of at most 1 ms: an event whose callback could not be
         * armed is still polled. */
        int64_t left = deadline - now;
        futex_wait(&any_seq, seq, left < 1000000 ? left : 1000000);
    }
    if (armed) atomic_fetch_sub(&any_waiters, 1);
    if (st == KA_OK) return done_status(es[*index]);
    return ka__fail(KA_ERR_TIMEOUT, "ka_wait_any: none complete");
}

ka_status ka_event_release(ka_event ev) {
    ka__slot *s;
    ka__event *e = pin_event(ev, &s);
    if (KA_UNLIKELY(!e)) return ka__fail(KA_ERR_INVALID_HANDLE, "ka_event_release: invalid, released or stale event");
    e->id = ka__handle_renew(e->id);
    atomic_store_explicit(&e->released, 1, memory_order_relaxed);
    unref(e);
    ka__unpin(s);
    return KA_OK;
}

static ka_status on_complete(ka__event *e, ka_event_fn fn, void *user);

ka_status ka_event_on_complete(ka_event ev, ka_event_fn fn, void *user) {
    ka__slot *s;
    ka__event *e = pin_event(ev, &s);
    if (!e) return ka__fail(KA_ERR_INVALID_HANDLE, "ka_event_on_complete: invalid, released or stale event");
    ka_status st = fn ? on_complete(e, fn, user) : ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_event_on_complete: fn is NULL");
    ka__unpin(s);
    return st;
}

static ka_status on_complete(ka__event *e, ka_event_fn fn, void *user) {
    if (atomic_load(&e->user_cb) != 0)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_event_on_complete: the event already has a callback");
    e->fn = fn;
    e->fn_user = user;
    atomic_store(&e->user_cb, 1);
    uint32_t expect;
    if (poll_once(e)) {
        fire_user(e, (ka_status)atomic_load(&e->status));
        return KA_OK;
    }
    ka__be_queue_flush(e->q);
    ka_status st = arm_callback(e);
    if (st != KA_OK) {
        /* Take the callback back unless the completion raced us and ran it. */
        expect = 1;
        if (atomic_compare_exchange_strong(&e->user_cb, &expect, 0)) return st;
    }
    return KA_OK;
}

static ka_status notify(ka__event *e);

ka_status ka_event_notify(ka_event ev) {
    ka__slot *s;
    ka__event *e = pin_event(ev, &s);
    if (!e) return ka__fail(KA_ERR_INVALID_HANDLE, "ka_event_notify: invalid, released or stale event");
    ka_status st = notify(e);
    ka__unpin(s);
    return st;
}

static ka_status notify(ka__event *e) {
    if (e->q->efd < 0) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_event_notify: call ka_queue_fd on the queue first");
    uint32_t expect = 0;
    if (!atomic_compare_exchange_strong(&e->notify, &expect, 1)) return KA_OK;
    if (poll_once(e)) {
        notify_fd(e);
        return KA_OK;
    }
    ka__be_queue_flush(e->q);
    ka_status st = arm_callback(e);
    if (st != KA_OK) {
        expect = 1;
        if (atomic_compare_exchange_strong(&e->notify, &expect, 0)) return st;
    }
    return KA_OK;
}
