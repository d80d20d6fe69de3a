/* KA_DEBUG on the host device: buffers whose end touches an inaccessible
 * page, and a fault handler that turns a kernel's access to it into an
 * error instead of a crash (host_internal.h).
 *
 * A guarded buffer is its own mapping: an inaccessible page, the data, its
 * last byte rounded up to 64 (the alignment every buffer keeps), then
 * inaccessible pages (as many as the core's guard zone has). A kernel that
 * reads or writes past the end, beyond the padding to 64 bytes, faults on
 * the first byte it touches; the padding itself is the core's pattern zone,
 * so a write there is still found at the next wait. An access before the
 * start faults once it leaves the data's first page.
 *
 * While a guarded device's kernel runs, its thread holds a recovery point
 * (sigsetjmp); the handler, on SIGSEGV or SIGBUS in such a thread, notes the
 * address and jumps back to it, and the launch fails with the buffer and
 * the offset named. A fault in any other thread, or outside a kernel, goes
 * to the handler that was there before (the default: the process stops, as
 * it would have). */
#define _GNU_SOURCE
#include "host_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

/* A guarded buffer's mapping, listed per device under guard_lock. */
typedef struct ka__hguard {
    struct ka__hguard *next;
    ka__buffer *b;
    char *map, *data;
    size_t map_bytes;
} ka__hguard;

static __thread ka__hfault *cur_fault __attribute__((tls_model("initial-exec")));

static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t handler_users;
static struct sigaction old_segv, old_bus;

static void on_fault(int sig, siginfo_t *si, void *uc) {
    ka__hfault *f = cur_fault;
    /* si_code > 0: the kernel's, a fault of this thread's own access; one
     * another process or thread sent (kill, tgkill) is passed on. */
    if (f && si->si_code > 0) {
        cur_fault = NULL;
        ka__fiber_escape(); /* off a work-item's fiber: what the sanitizers must hear */
        f->addr = si->si_addr;
        f->sig = sig;
#if defined(__x86_64__)
        f->write = (((ucontext_t *)uc)->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#else
        f->write = -1;
#endif
        siglongjmp(f->jb, 1);
    }
    /* Not a kernel's: whoever handled it before. */
    const struct sigaction *old = sig == SIGBUS ? &old_bus : &old_segv;
    if ((old->sa_flags & SA_SIGINFO) && old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
        old->sa_sigaction(sig, si, uc);
    } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
        old->sa_handler(sig);
    } else if (si->si_code > 0) {
        /* The default (an ignored fault would repeat for ever: as the
         * default too): returning re-runs the access, which now stops the
         * process. */
        signal(sig, SIG_DFL);
    } else if (old->sa_handler == SIG_DFL) {
        /* Sent, not a fault: what the default does with it. */
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

/* Whether the handler of sig is ours. */
static bool ours(int sig) {
    struct sigaction cur;
    return !sigaction(sig, NULL, &cur) && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_fault;
}

/* Under handler_lock: ours for SIGSEGV and SIGBUS, the ones replaced kept
 * to pass other faults on to. */
static ka_status install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if ((!ours(SIGSEGV) && sigaction(SIGSEGV, &sa, &old_segv)) || (!ours(SIGBUS) && sigaction(SIGBUS, &sa, &old_bus)))
        return ka__fail(KA_ERR_DEVICE, "KA_DEBUG: cannot install the fault handler: %s", strerror(errno));
    return KA_OK;
}

static ka_status handler_hold(void) {
    pthread_mutex_lock(&handler_lock);
    ka_status st = handler_users ? KA_OK : install();
    if (st == KA_OK) handler_users++;
    pthread_mutex_unlock(&handler_lock);
    return st;
}

void ka__host_fault_ready(void) {
    if (ours(SIGSEGV) && ours(SIGBUS)) return;
    /* The application (or a test harness) installed its own since: ours
     * again, passing other faults on to it. */
    pthread_mutex_lock(&handler_lock);
    if (handler_users) (void)install();
    pthread_mutex_unlock(&handler_lock);
}

static void handler_drop(void) {
    pthread_mutex_lock(&handler_lock);
    if (handler_users && !--handler_users) {
        /* Put back what was there, unless the application has replaced ours. */
        if (ours(SIGSEGV)) sigaction(SIGSEGV, &old_segv, NULL);
        if (ours(SIGBUS)) sigaction(SIGBUS, &old_bus, NULL);
    }
    pthread_mutex_unlock(&handler_lock);
}

ka__hfault *ka__host_fault_arm(ka__hfault *f) {
    ka__hfault *outer = cur_fault;
    cur_fault = f;
    return outer;
}

void ka__host_fault_disarm(ka__hfault *outer) { cur_fault = outer; }

ka_status ka__host_guard_alloc(ka__buffer *b) {
    ka__hdev *hd = b->dev->native;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t padded = (b->bytes + 63) & ~(size_t)63;
    if (!padded) padded = 64;
    size_t after = b->guard > page ? (b->guard + page - 1) / page * page : page;
    if (padded > SIZE_MAX - 2 * page - after)
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "%zu bytes is too large", b->bytes);
    size_t data_pages = (padded + page - 1) / page * page, map_bytes = page + data_pages + after;
    ka__hguard *g = ka__calloc(1, sizeof *g);
    if (!g) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    char *m = mmap(NULL, map_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        ka__free(g, sizeof *g);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "KA_DEBUG: cannot map %zu bytes for a guarded buffer: %s", map_bytes,
                        strerror(errno));
    }
    if (mprotect(m + page, data_pages, PROT_READ | PROT_WRITE)) {
        int e = errno;
        munmap(m, map_bytes);
        ka__free(g, sizeof *g);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "KA_DEBUG: cannot make a guarded buffer's pages: %s", strerror(e));
    }
    ka_status st = handler_hold();
    if (st != KA_OK) {
        munmap(m, map_bytes);
        ka__free(g, sizeof *g);
        return st;
    }
    g->b = b;
    g->map = m;
    g->map_bytes = map_bytes;
    g->data = m + page + data_pages - padded;
    /* The core's pattern zone shrinks to the padding: past it, the pages fault. */
    b->guard = padded - b->bytes;
    b->native = g->data;
    pthread_mutex_lock(&hd->guard_lock);
    g->next = hd->guards;
    hd->guards = g;
    pthread_mutex_unlock(&hd->guard_lock);
    atomic_store_explicit(&hd->guarded, true, memory_order_relaxed);
    return KA_OK;
}

bool ka__host_guard_free(ka__buffer *b) {
    ka__hdev *hd = b->dev->native;
    if (!atomic_load_explicit(&hd->guarded, memory_order_relaxed)) return false;
    ka__hguard *g = NULL;
    pthread_mutex_lock(&hd->guard_lock);
    for (ka__hguard **pp = &hd->guards; *pp; pp = &(*pp)->next)
        if ((*pp)->b == b) {
            g = *pp;
            *pp = g->next;
            break;
        }
    pthread_mutex_unlock(&hd->guard_lock);
    if (!g) return false;
    ka__host_defer(hd, KA__HD_MAPPING, g->map, g->map_bytes);
    ka__free(g, sizeof *g);
    handler_drop();
    return true;
}

void ka__host_fault_message(ka__hdev *hd, const ka__hfault *f, const char *kernel, char *out, size_t cap) {
    const char *how = f->write > 0 ? "written" : f->write == 0 ? "read" : "accessed";
    const char *a = f->addr;
    pthread_mutex_lock(&hd->guard_lock);
    for (ka__hguard *g = hd->guards; g; g = g->next) {
        if (a < g->map || a >= g->map + g->map_bytes) continue;
        if (a >= g->data)
            snprintf(out, cap, "buffer 0x%llx of %zu bytes was %s past its end: byte %zu, by kernel '%s' (KA_DEBUG: "
                     "the kernel's part stopped there)", (unsigned long long)g->b->id, g->b->bytes, how,
                     (size_t)(a - g->data), kernel);
        else
            snprintf(out, cap, "buffer 0x%llx of %zu bytes was %s before its start: %zu bytes before, by kernel '%s' "
                     "(KA_DEBUG: the kernel's part stopped there)", (unsigned long long)g->b->id, g->b->bytes, how,
                     (size_t)(g->data - a), kernel);
        pthread_mutex_unlock(&hd->guard_lock);
        return;
    }
    pthread_mutex_unlock(&hd->guard_lock);
    snprintf(out, cap, "kernel '%s' %s address %p, in no buffer of the device (a %s; KA_DEBUG: the kernel's part "
             "stopped there)", kernel, f->write > 0 ? "wrote to" : f->write == 0 ? "read" : "accessed", f->addr,
             f->sig == SIGBUS ? "bus error" : "segmentation fault");
}

void ka__host_guard_fini(ka__hdev *hd) {
    /* Buffers are released before their device: nothing is listed. */
    while (hd->guards) {
        ka__hguard *g = hd->guards;
        hd->guards = g->next;
        munmap(g->map, g->map_bytes);
        ka__free(g, sizeof *g);
        handler_drop();
    }
}
