/* Every wait:
 * - ka_event_wait, ka_wait_all, ka_wait_any and their spin (ka_set_wait_spin,
 *   the queue's spin_ns, the adaptive GPU default), and the checks a wait on
 *   a queue with hooks runs after it (ka_assert's record, KA_DEBUG's guards;
 *   ka_queue_finish runs them too);
 * - ka_queue_wait_event, a wait enqueued on the device;
 * - at queue release, the wait for pending completion callbacks.
 *
 * A wait polls first; past its spin it sleeps: in the driver where the
 * back-end's blocking wait sleeps (KA__BE_WAIT_SLEEPS), else on a futex
 * woken by the completion callback (event.c). */
#include "event.h"
#include "trace.h"

#include <stdio.h>
#include <time.h>

/* ---- one event's wait: poll, spin, sleep -------------------------------- */
/* Default spin before sleeping. On a CPU device the spinning thread takes a
 * core from the workers running the kernel, and a long kernel must not cost
 * a core: none. On a GPU the host is free and a completion callback wakes
 * late, so a short spin catches short kernels first (docs/DESIGN.md, "Events
 * and waits"; the figures behind both: docs/BENCHMARKS.md). */
#define KA__DEFAULT_SPIN_CPU_NS 0
#define KA__DEFAULT_SPIN_GPU_NS 50000
/* The GPU default adapts (wait_spin below): the next wait spins 1.5 times
 * the longer of the thread's last two waits on the queue that ended within
 * this long, plus the default, never longer than this (neither did: the
 * default). The longer, so a queue that alternates two kernels (a copy and a
 * saxpy) spins long enough for both; within the limit, so one long wait (one
 * behind several queued kernels) does not stop the spin. A kernel of about
 * 1 ms then costs its waiter what a raw spinning wait costs, where sleeping
 * adds a wake's latency (docs/BENCHMARKS.md, the H200's waits); longer
 * kernels get the default spin and a sleep. No wait spins longer than this:
 * at most 2 % of a core for a wait of 100 ms or more. */
#define KA__ADAPTIVE_SPIN_MAX_NS 2000000

static _Atomic int64_t default_spin_ns = -1;

void ka_set_wait_spin(int64_t spin_ns) { atomic_store(&default_spin_ns, spin_ns < 0 ? -1 : spin_ns); }

static ka__event *lookup(ka_event ev) {
    ka__event *e = ka__resolve(ev.id, KA__T_EVENT);
    if (KA_UNLIKELY(!e || atomic_load_explicit(&e->state, memory_order_acquire) == KA__EV_FREE)) return NULL;
    return e;
}

/* The user's handle keeps the slot, and with it the native event, until
 * ka_event_release (a wait racing its own event's release is the caller's race). */
/* where: "" or a prefix naming the event ("event 3: "). */
static ka_status failed_status(ka__event *e, ka_status st, const char *where) {
    const char *why = e->native ? ka__be_event_error(e->q, e->native) : NULL;
    if (why) return ka__fail(st, "%sevent: the command failed on the device: %s (%s)", where, why, ka_status_name(st));
    return ka__fail(st, "%sevent: the command failed on the device (%s)", where, ka_status_name(st));
}

static ka_status done_status(ka__event *e) {
    ka_status st = (ka_status)atomic_load_explicit(&e->status, memory_order_acquire);
    return KA_LIKELY(st == KA_OK) ? KA_OK : failed_status(e, st, "");
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
    int64_t a = r->ns[0] <= KA__ADAPTIVE_SPIN_MAX_NS ? r->ns[0] : -1;
    int64_t b = r->ns[1] <= KA__ADAPTIVE_SPIN_MAX_NS ? r->ns[1] : -1;
    int64_t ns = a > b ? a : b;
    if (r->queue != q->id || ns < 0) return KA__DEFAULT_SPIN_GPU_NS;
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
static bool driver_wait_sleeps(const ka__queue *q) { return ka__be_wait_sleeps(q->dev); }

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
    if (ka__event_poll(e)) return polled(e);
    if (deadline == 0) return ka__fail(KA_ERR_TIMEOUT, "not complete");
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
            for (int i = 0; i < relax; i++) ka__cpu_relax();
            if (ka__event_poll(e)) {
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
        ka__event_mark_done(e, st);
        remember(rw, q, start);
        return done_status(e);
    }
    if (ka__event_arm_callback(e) != KA_OK) {
        /* No callback: the driver's own blocking wait for an unbounded wait,
         * else short sleeps between polls. */
        if (deadline == INT64_MAX) {
            ka_status st = ka__be_event_wait(q, e->native);
            ka__event_mark_done(e, st);
            remember(rw, q, start);
            return done_status(e);
        }
        while (!ka__event_poll(e)) {
            if (ka__now_ns() >= deadline) return ka__fail(KA_ERR_TIMEOUT, "timed out");
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
            return ka__fail(KA_ERR_TIMEOUT, "timed out");
        }
        ka__futex_wait(&e->state, KA__EV_PENDING, left);
    }
    atomic_fetch_sub(&e->sleepers, 1);
    remember(rw, q, start);
    return done_status(e);
}

/* ---- after a wait ------------------------------------------------------- */
/* ka_assert: a kernel whose program calls ka_assert takes the queue's
 * assertion record as a hidden last argument (the back-ends pass it); the
 * first failing work-item fills it. A wait on a queue that launched such a
 * kernel (KA__QH_ASSERTS) reads the record afterwards. */
static ka_status assert_check(ka__queue *q) {
    uint32_t r[KA__ASSERT_WORDS] = {0};
    ka_status st = ka__be_assert_take(q, r);
    if (st != KA_OK) return st;
    if (!r[0]) return KA_OK;
    uint64_t g[3];
    for (int d = 0; d < 3; d++) g[d] = r[2 + 2 * d] | (uint64_t)r[3 + 2 * d] << 32;
    uint64_t kid = r[8] | (uint64_t)r[9] << 32;
    ka__slot *ks;
    ka__kernel *k = ka__pin(kid, KA__T_KERNEL, &ks);
    st = ka__fail(KA_ERR_KERNEL_FAILED,
                  "ka_assert failed in kernel '%s', line %u of the program's source, work-item (%llu,%llu,%llu)",
                  k ? k->name : "(released)", r[1], (unsigned long long)g[0], (unsigned long long)g[1],
                  (unsigned long long)g[2]);
    if (k) ka__unpin(ks);
    return st;
}

ka_status ka__wait_checks(ka__queue *q) {
    uint32_t h = atomic_load_explicit(&q->hooks, memory_order_relaxed);
    ka_status st = KA_OK;
    if (h & KA__QH_ASSERTS) st = assert_check(q);
    if ((h & KA__QH_DEBUG) && st == KA_OK) st = ka__debug_check(q);
    return st;
}

/* ---- ka_event_wait, ka_wait_all, ka_wait_any ----------------------------- */
/* A wait on a queue with hooks (q->hooks): a traced span, the assertion
 * record and KA_DEBUG's guard zones read after. */
static ka_status __attribute__((noinline, cold)) wait_hooked(ka__event *e, int64_t timeout_ns) {
    ka_trace_event te;
    bool traced = ka__trace_waits(e->q, &te, "ka_event_wait");
    ka_status st = wait_one(e, deadline_of(timeout_ns));
    if (st == KA_OK) st = ka__wait_checks(e->q);
    if (traced) ka__trace_end(e->q, &te, st);
    return st;
}

/* On the launch path: named on its failure branches only (KA__FAILED); the
 * hooked branch names the call first, as its checks log what they find. */
ka_status ka_event_wait(ka_event ev, int64_t timeout_ns) {
    ka__slot *s;
    ka__event *e = ka__event_pin(ev, &s);
    if (KA_UNLIKELY(!e)) return ka__fail_handle(KA__T_EVENT, __func__);
    ka_status st = KA_UNLIKELY(atomic_load_explicit(&e->q->hooks, memory_order_relaxed))
                       ? (KA__ENTRY(), wait_hooked(e, timeout_ns))
                       : wait_one(e, deadline_of(timeout_ns));
    ka__unpin(s);
    return KA__FAILED(st);
}

static ka_status wait_all(const ka_event *evs, uint32_t n, int64_t timeout_ns);

ka_status ka_wait_all(const ka_event *evs, uint32_t n, int64_t timeout_ns) {
    KA__ENTRY();
    if (n && !evs) return ka__fail(KA_ERR_INVALID_ARGUMENT, "events is NULL");
    for (uint32_t i = 0; i < n; i++)
        if (!lookup(evs[i])) return ka__fail(KA_ERR_INVALID_HANDLE, "event %u is invalid or stale", i);
    ka__slot *s = NULL;
    /* Traced: the span's queue is the first event's, pinned for the call. */
    ka__event *e0 = KA_UNLIKELY(n && atomic_load_explicit(&ka__tracing, memory_order_relaxed)) ? ka__event_pin(evs[0], &s) : NULL;
    ka_trace_event te;
    bool traced = e0 && ka__trace_waits(e0->q, &te, "ka_wait_all");
    ka_status st = wait_all(evs, n, timeout_ns);
    if (KA_UNLIKELY(traced)) ka__trace_end(e0->q, &te, st);
    if (e0) ka__unpin(s);
    return st;
}

static ka_status wait_all(const ka_event *evs, uint32_t n, int64_t timeout_ns) {
    int64_t deadline = deadline_of(timeout_ns);
    ka_status first = KA_OK;
    uint32_t first_at = 0;
    const ka__queue *checked = NULL;
    char assert_msg[640] = ""; /* a failed check's detail (ka_assert, KA_DEBUG), kept past later waits */
    for (uint32_t i = 0; i < n; i++) {
        ka__slot *s;
        ka__event *e = ka__event_pin(evs[i], &s);
        if (!e) return ka__fail(KA_ERR_INVALID_HANDLE, "event %u was released while waiting", i);
        ka_status st = wait_one(e, deadline);
        if (KA_UNLIKELY(atomic_load_explicit(&e->q->hooks, memory_order_relaxed) & (KA__QH_ASSERTS | KA__QH_DEBUG)) &&
            st == KA_OK && e->q != checked) {
            checked = e->q;
            if ((st = ka__wait_checks(e->q)) != KA_OK && first == KA_OK)
                snprintf(assert_msg, sizeof assert_msg, "%s", ka__detail_message());
        }
        ka__unpin(s);
        if (st == KA_ERR_TIMEOUT) return st;
        if (st != KA_OK && first == KA_OK) first = st, first_at = i;
    }
    if (first == KA_OK) return KA_OK;
    if (assert_msg[0]) return ka__fail(first, "%s", assert_msg);
    /* The detail of the first failure (the driver's error name), not of the last. */
    char where[48];
    snprintf(where, sizeof where, "event %u: ", first_at);
    return failed_status(lookup(evs[first_at]), first, where);
}

static ka_status wait_any(ka__event **es, uint32_t n, int64_t timeout_ns, uint32_t *index);

ka_status ka_wait_any(const ka_event *evs, uint32_t n, int64_t timeout_ns, uint32_t *index) {
    KA__ENTRY();
    if (!n || !evs || !index) return ka__fail(KA_ERR_INVALID_ARGUMENT, "needs events, a count and index");
    ka__event *es[KA_MAX_ARGS];
    if (n > KA_MAX_ARGS) return ka__fail(KA_ERR_INVALID_ARGUMENT, "at most %d events", KA_MAX_ARGS);
    ka__slot *ss[KA_MAX_ARGS];
    for (uint32_t i = 0; i < n; i++)
        if (!(es[i] = ka__event_pin(evs[i], &ss[i]))) {
            for (uint32_t j = 0; j < i; j++) ka__unpin(ss[j]);
            return ka__fail(KA_ERR_INVALID_HANDLE, "event %u is invalid or stale", i);
        }
    ka_trace_event te;
    bool traced = ka__trace_waits(es[0]->q, &te, "ka_wait_any");
    ka_status st = wait_any(es, n, timeout_ns, index);
    if (KA_UNLIKELY(traced)) ka__trace_end(es[0]->q, &te, st);
    for (uint32_t i = 0; i < n; i++) ka__unpin(ss[i]);
    return st;
}

static ka_status wait_any(ka__event **es, uint32_t n, int64_t timeout_ns, uint32_t *index) {
    int64_t deadline = deadline_of(timeout_ns);
    int64_t spin_until = -1;
    bool armed = false;
    ka_status st = KA_ERR_TIMEOUT;
    for (;;) {
        uint32_t seq = atomic_load(&ka__any_seq);
        uint32_t hit = n;
        for (uint32_t i = 0; i < n && hit == n; i++)
            if (ka__event_poll(es[i])) hit = i;
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
            for (int i = 0; i < 16; i++) ka__cpu_relax();
            continue;
        }
        if (!armed) {
            atomic_fetch_add(&ka__any_waiters, 1);
            for (uint32_t i = 0; i < n; i++) ka__event_arm_callback(es[i]);
            armed = true;
            continue; /* re-check before sleeping: a completion may predate the count */
        }
        /* Sleep in slices of at most 1 ms: an event whose callback could not be
         * armed is still polled. */
        int64_t left = deadline - now;
        ka__futex_wait(&ka__any_seq, seq, left < 1000000 ? left : 1000000);
    }
    if (armed) atomic_fetch_sub(&ka__any_waiters, 1);
    if (st != KA_OK) return ka__fail(KA_ERR_TIMEOUT, "none complete");
    st = done_status(es[*index]);
    if (KA_UNLIKELY(atomic_load_explicit(&es[*index]->q->hooks, memory_order_relaxed) & (KA__QH_ASSERTS | KA__QH_DEBUG)) &&
        st == KA_OK)
        st = ka__wait_checks(es[*index]->q);
    return st;
}

/* ---- ka_queue_wait_event ------------------------------------------------- */
/* A dependency between queues, enqueued on the device
 * (clEnqueueBarrierWithWaitList, cuStreamWaitEvent), so the host never waits
 * and a copy queue and a compute queue overlap. Allocates nothing. */
ka_status ka_queue_wait_event(ka_queue queue, ka_event ev) {
    KA__ENTRY();
    KA__PIN(ka__queue, q, qs, queue, KA__T_QUEUE);
    ka__slot *es;
    /* Pinned: its queue cannot go (ka__events_fini drains the slots), nor
     * the native event, which the user's reference keeps until release. */
    ka__event *e = ka__event_pin(ev, &es);
    if (KA_UNLIKELY(!e)) {
        ka__unpin(qs);
        return ka__fail_handle(KA__T_EVENT, __func__);
    }
    ka_status st = KA_OK;
    if (KA_UNLIKELY(q->rec)) {
        st = ka__fail(KA_ERR_INVALID_ARGUMENT,
                      "the queue is recording a graph, which holds no dependency on an event "
                      "(wait before ka_graph_launch)");
    } else if (KA_UNLIKELY(e->q->dev != q->dev)) {
        /* Refused even when done, so the answer does not depend on timing. */
        st = ka__fail(KA_ERR_INVALID_ARGUMENT,
                      "the event is of another device's queue (wait for it on the host)");
    } else if (ka__event_poll(e)) {
        /* Done (an inline launch's, a no-op's, or finished): nothing to wait
         * for. A failed command's dependents would never have their input. */
        ka_status es_st = (ka_status)atomic_load_explicit(&e->status, memory_order_acquire);
        if (KA_UNLIKELY(es_st != KA_OK))
            st = ka__fail(es_st, "the event's command failed (%s); nothing was enqueued",
                          ka_status_name(es_st));
    } else if (e->q != q) { /* a queue's own commands are in order already */
        st = ka__be_queue_wait(q, e->native);
    }
    ka__unpin(es);
    ka__unpin(qs);
    return st;
}

/* ---- at queue release ---------------------------------------------------- */
void ka__queue_wait_callbacks(ka__queue *q) {
    while (atomic_load_explicit(&q->callbacks_pending, memory_order_acquire)) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}
