/* KA_DEBUG, the checking mode for development (docs/API.md "Debug mode",
 * docs/DESIGN.md): guard zones after buffers, checked at waits and at
 * release, and warnings and errors printed when no logger is set. The full argument
 * check of each launch is launch.c's. A device reads KA_DEBUG once, at open;
 * without it nothing here runs (ka__warn aside), and launches and waits pay
 * one test of a flag the queue already has. */
#include "ka_internal.h"
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The pattern: one 4 KiB page repeated, whose bytes vary with the offset,
 * so a kernel's stores of any one value, zero included, change it; a zone
 * is filled and compared a page at a time (memcpy, memcmp). */
#define PAGE 4096u
static uint8_t page[PAGE];
static pthread_once_t page_once = PTHREAD_ONCE_INIT;
static void page_make(void) {
    for (uint32_t i = 0; i < PAGE; i++) page[i] = (uint8_t)(0xA5u ^ (i * 0x9Du) ^ (i >> 8));
}

static void pattern_fill(uint8_t *p, size_t n) {
    for (size_t at = 0; at < n; at += PAGE) memcpy(p + at, page, n - at < PAGE ? n - at : PAGE);
}

int ka__debug_enabled(void) {
    const char *v = getenv("KA_DEBUG");
    if (!v || !*v) return 0;
    return strcmp(v, "0") && strcasecmp(v, "off") && strcasecmp(v, "no") && strcasecmp(v, "false");
}

/* Devices open with KA_DEBUG: warnings and errors print while one is,
 * whatever the environment says now. */
static _Atomic uint32_t debug_devices;

bool ka__debug_printing(void) {
    return atomic_load_explicit(&debug_devices, memory_order_relaxed) || ka__debug_enabled();
}

void ka__warn(const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ka__log(KA_LOG_WARN, "%s", msg);
}

ka_status ka__debug_device_open(ka__device *d) {
    d->debug = ka__debug_enabled();
    if (!d->debug) return KA_OK;
    /* The scratch now, not at the first buffer: a failing call later leaves
     * nothing of its own behind. */
    if (ka__be_has_guards(d) && !(d->dbg_scratch = ka__alloc(KA__GUARD_MAX))) {
        d->debug = false;
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for KA_DEBUG's guard-zone scratch");
    }
    pthread_once(&page_once, page_make);
    atomic_fetch_add(&debug_devices, 1);
    pthread_mutex_init(&d->dbg_lock, NULL);
    ka__log(KA_LOG_INFO, "ka_device_open: %s: KA_DEBUG is on (full launch checks, guard zones %s)", d->info.name,
            ka__be_has_guards(d) ? "after every buffer the device allocates" : "not kept by this back-end");
    return KA_OK;
}

void ka__debug_device_close(ka__device *d) {
    if (!d->debug) return;
    ka__free(d->dbg_scratch, KA__GUARD_MAX);
    d->dbg_scratch = NULL;
    pthread_mutex_destroy(&d->dbg_lock);
    atomic_fetch_sub(&debug_devices, 1);
}

/* A sixteenth of the buffer in whole 4 KiB pages, at least one page, at
 * most KA__GUARD_MAX: a page takes an off-by-one, or a kernel without a
 * bounds check over a range padded to whole work-groups (up to 1024 items of
 * 4 bytes); the sixteenth takes index errors that grow with the buffer (a
 * row too many of a matrix) on larger ones; the cap bounds the memory and
 * each check's read. A longer overrun is still detected (it starts in the
 * zone), but what it writes past the zone is not absorbed. */
size_t ka__debug_guard_size(const ka__device *d, size_t bytes) {
    if (!d->debug || !ka__be_has_guards(d)) return 0;
    size_t g = bytes / 16 > KA__GUARD_MAX ? KA__GUARD_MAX : (bytes / 16 + 4095) & ~(size_t)4095;
    if (g < 4096) g = 4096;
    uint64_t cap = d->info.max_alloc_size;
    if (bytes > SIZE_MAX - g || (cap && bytes + g > cap)) /* no room: the user's size first */
        g = cap && cap > bytes ? (size_t)(cap - bytes) : 0;
    return g;
}

static void list_add(ka__device *d, ka__buffer *b) {
    b->dbg.prev = NULL;
    b->dbg.next = d->dbg_head;
    if (d->dbg_head) d->dbg_head->dbg.prev = b;
    d->dbg_head = b;
}

static void list_remove(ka__device *d, ka__buffer *b) {
    if (b->dbg.prev) b->dbg.prev->dbg.next = b->dbg.next;
    else d->dbg_head = b->dbg.next;
    if (b->dbg.next) b->dbg.next->dbg.prev = b->dbg.prev;
    b->dbg.next = b->dbg.prev = NULL;
}

ka_status ka__debug_buffer_made(ka__buffer *b) {
    ka__device *d = b->dev;
    pthread_mutex_lock(&d->dbg_lock);
    pattern_fill(d->dbg_scratch, b->guard);
    ka_status st = ka__be_buffer_guard(b, d->dbg_scratch, true);
    if (st == KA_OK) list_add(d, b);
    pthread_mutex_unlock(&d->dbg_lock);
    return st;
}

/* Under dbg_lock: b's guard read and compared; on an overrun the failure
 * (logged as an error too) and the pattern written again, so the next
 * check reports only a new overrun. */
static ka_status check_one(ka__buffer *b) {
    ka__device *d = b->dev;
    uint8_t *z = d->dbg_scratch;
    ka_status st = ka__be_buffer_guard(b, z, false);
    if (st != KA_OK) return st;
    size_t first = SIZE_MAX, last = 0, changed = 0;
    for (size_t at = 0; at < b->guard; at += PAGE) {
        size_t n = b->guard - at < PAGE ? b->guard - at : PAGE;
        if (KA_LIKELY(!memcmp(z + at, page, n))) continue;
        for (size_t i = 0; i < n; i++)
            if (z[at + i] != page[i]) {
                if (first == SIZE_MAX) first = at + i;
                last = at + i;
                changed++;
            }
    }
    b->dbg.q = NULL;
    if (first == SIZE_MAX) return KA_OK;
    char who[160];
    if (b->dbg.kernel[0])
        snprintf(who, sizeof who, "the last kernel launched with it: '%s' (argument %u)", b->dbg.kernel, b->dbg.arg);
    else
        snprintf(who, sizeof who, "no kernel was launched with it");
    st = ka__fail(KA_ERR_OUT_OF_BOUNDS,
                  "buffer 0x%llx of %zu bytes was written past its end: bytes %zu to %zu changed (%zu of its "
                  "%zu-byte guard zone); %s", (unsigned long long)b->id, b->bytes, b->bytes + first, b->bytes + last, changed, b->guard, who);
    ka__log(KA_LOG_ERROR, "%s", ka_last_error());
    pattern_fill(z, b->guard);
    if (ka__be_buffer_guard(b, z, true) != KA_OK) /* its detail replaced the overrun's: put that back */
        st = ka__fail(KA_ERR_OUT_OF_BOUNDS,
                      "buffer 0x%llx of %zu bytes was written past its end, from byte %zu; %s (its guard zone "
                      "could not be restored)", (unsigned long long)b->id, b->bytes, b->bytes + first, who);
    return st;
}

ka_status ka__debug_buffer_release(ka__buffer *b) {
    ka__device *d = b->dev;
    pthread_mutex_lock(&d->dbg_lock);
    list_remove(d, b);
    ka_status st = check_one(b);
    pthread_mutex_unlock(&d->dbg_lock);
    return st;
}

void ka__debug_note_launch(ka__queue *q, const ka__kernel *k, const ka_arg *args, uint32_t nargs) {
    ka__device *d = q->dev;
    pthread_mutex_lock(&d->dbg_lock);
    for (uint32_t i = 0; i < nargs; i++) {
        if (args[i].kind != KA_ARG_BUFFER) continue;
        /* Checked live by the launch; a release since is the user's race. */
        ka__buffer *b = ka__resolve(args[i].u.buffer, KA__T_BUFFER);
        if (!b || !b->guard) continue;
        b->dbg.q = q;
        b->dbg.arg = i;
        if (b->dbg.kid != k->id) { /* the name copied only when the kernel changes */
            b->dbg.kid = k->id;
            snprintf(b->dbg.kernel, sizeof b->dbg.kernel, "%s", k->name);
        }
    }
    pthread_mutex_unlock(&d->dbg_lock);
}

ka_status ka__debug_check(ka__queue *q) {
    ka__device *d = q->dev;
    ka_status first = KA_OK;
    char msg[1024] = "";
    pthread_mutex_lock(&d->dbg_lock);
    for (ka__buffer *b = d->dbg_head; b; b = b->dbg.next) {
        if (b->dbg.q != q) continue;
        ka_status st = check_one(b);
        if (st != KA_OK && first == KA_OK) {
            first = st;
            snprintf(msg, sizeof msg, "%s", ka__detail_message());
        }
    }
    pthread_mutex_unlock(&d->dbg_lock);
    if (first == KA_OK) return KA_OK;
    return ka__fail(first, "%s", msg); /* the first overrun's detail; every one was logged */
}
