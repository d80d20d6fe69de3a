/* Host memory for transfers: ka_host_alloc/free (page-locked on CUDA) and
 * ka_host_register/unregister. Every block and registration is recorded, so
 * a pointer libka did not hand out (or a double free) is refused with an
 * error instead of reaching free() or the driver, and a device with blocks
 * alive refuses to close (they count in its `live`). Off the hot path: one
 * mutex over a list. */
#include "ka_internal.h"
#include "backend.h"

#include <stdlib.h>
#include <unistd.h>

typedef struct block {
    struct block *next;
    ka__device *dev;
    void *ptr;
    size_t bytes;
    bool registered; /* ka_host_register's (the memory is the caller's) */
} block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static block *blocks;

/* The entry of (d, ptr), unlinked from the list; NULL if none. Under lock. */
static block *take(ka__device *d, void *ptr, bool registered) {
    for (block **p = &blocks; *p; p = &(*p)->next)
        if ((*p)->dev == d && (*p)->ptr == ptr && (*p)->registered == registered) {
            block *b = *p;
            *p = b->next;
            return b;
        }
    return NULL;
}

/* Does [ptr, ptr + bytes) overlap a recorded range of d? Under lock. */
static bool overlaps(ka__device *d, const void *ptr, size_t bytes) {
    uintptr_t lo = (uintptr_t)ptr, hi = lo + bytes;
    for (block *b = blocks; b; b = b->next)
        if (b->dev == d && lo < (uintptr_t)b->ptr + b->bytes && (uintptr_t)b->ptr < hi) return true;
    return false;
}

/* The machine's memory: no allocator can give a block larger than this, and
 * asking some (ASan's, by default) for one aborts the process. */
static size_t phys_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return SIZE_MAX;
    return (uint64_t)pages > SIZE_MAX / (uint64_t)page ? SIZE_MAX : (size_t)pages * (size_t)page;
}

static ka_status record(ka__device *d, void *ptr, size_t bytes, bool registered) {
    block *b = ka__alloc(sizeof *b);
    if (!b) return KA_ERR_OUT_OF_MEMORY;
    *b = (block){NULL, d, ptr, bytes, registered};
    pthread_mutex_lock(&lock);
    b->next = blocks;
    blocks = b;
    pthread_mutex_unlock(&lock);
    atomic_fetch_add(&d->live, 1);
    return KA_OK;
}

ka_status ka_host_alloc(ka_device dev, size_t bytes, void **ptr) {
    KA__ENTRY();
    if (!ptr) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ptr is NULL");
    *ptr = NULL;
    KA__PIN(ka__device, d, ds, dev, KA__T_DEVICE);
    ka_status st = KA_OK;
    void *p = NULL;
    if (bytes == 0) st = ka__fail(KA_ERR_INVALID_ARGUMENT, "size is 0");
    else if (bytes > phys_bytes())
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "%zu bytes is more than the machine's memory (%zu bytes)", bytes,
                      phys_bytes());
    else if (ka__be_has_host_memory(d)) st = ka__be_host_alloc(d, bytes, &p);
    /* Plain memory elsewhere, aligned for CL_MEM_USE_HOST_PTR's zero copy.
     * The user's memory, not libka's: not through ka_set_allocator's hook. */
    else if (posix_memalign(&p, KA_HOST_ALIGN, bytes) != 0)
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of host memory for %zu bytes", bytes);
    if (st == KA_OK && record(d, p, bytes, false) != KA_OK) {
        if (ka__be_has_host_memory(d)) ka__be_host_free(d, p);
        else free(p);
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (st == KA_OK) *ptr = p;
    ka__unpin(ds);
    return st;
}

/* Ends a block of ka_host_alloc (registered false: the memory is freed) or a
 * registration (true: only unregistered), whichever (dev, ptr) recorded; an
 * unrecorded pointer is refused with `what` in the detail. */
static ka_status drop(ka_device dev, void *ptr, bool registered, const char *what) {
    KA__PIN(ka__device, d, ds, dev, KA__T_DEVICE);
    pthread_mutex_lock(&lock);
    block *b = take(d, ptr, registered);
    pthread_mutex_unlock(&lock);
    ka_status st = KA_OK;
    if (!b) {
        st = ka__fail(KA_ERR_INVALID_ARGUMENT, "%p is %s", ptr, what);
    } else {
        if (!ka__be_has_host_memory(d)) {
            if (!registered) free(ptr);
        } else if (registered) {
            ka__be_host_unregister(d, ptr);
        } else {
            ka__be_host_free(d, ptr);
        }
        ka__free(b, sizeof *b);
        atomic_fetch_sub(&d->live, 1);
    }
    ka__unpin(ds);
    return st;
}

ka_status ka_host_free(ka_device dev, void *ptr) {
    KA__ENTRY();
    if (!ptr) return KA_OK; /* as free(NULL) */
    return drop(dev, ptr, false, "not memory of ka_host_alloc on this device (or freed)");
}

ka_status ka_host_register(ka_device dev, void *ptr, size_t bytes) {
    KA__ENTRY();
    if (!ptr) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ptr is NULL");
    KA__PIN(ka__device, d, ds, dev, KA__T_DEVICE);
    ka_status st = KA_OK;
    pthread_mutex_lock(&lock);
    bool taken = overlaps(d, ptr, bytes);
    pthread_mutex_unlock(&lock);
    if (bytes == 0) st = ka__fail(KA_ERR_INVALID_ARGUMENT, "size is 0");
    else if (bytes > UINTPTR_MAX - (uintptr_t)ptr)
        st = ka__fail(KA_ERR_INVALID_ARGUMENT, "[%p, +%zu) wraps around the end of the address space",
                      ptr, bytes);
    else if (taken)
        st = ka__fail(KA_ERR_INVALID_ARGUMENT,
                      "[%p, +%zu) overlaps memory already registered or from ka_host_alloc", ptr, bytes);
    else if (ka__be_has_host_memory(d)) st = ka__be_host_register(d, ptr, bytes);
    if (st == KA_OK && record(d, ptr, bytes, true) != KA_OK) {
        if (ka__be_has_host_memory(d)) ka__be_host_unregister(d, ptr);
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    }
    ka__unpin(ds);
    return st;
}

ka_status ka_host_unregister(ka_device dev, void *ptr) {
    KA__ENTRY();
    return drop(dev, ptr, true, "not registered on this device");
}
