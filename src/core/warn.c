/* Warnings about a user's kernels (build-time scan, launch geometry) and
 * the KA_DEBUG switch that makes the build-time ones errors. */
#include "ka_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ka__debug_enabled(void) {
    static _Atomic int state; /* 0 unread, 1 off, 2 on */
    int s = atomic_load_explicit(&state, memory_order_relaxed);
    if (!s) {
        const char *e = getenv("KA_DEBUG");
        s = e && *e && strcmp(e, "0") ? 2 : 1;
        atomic_store_explicit(&state, s, memory_order_relaxed);
    }
    return s == 2;
}

void ka__warn(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ka__log(KA_LOG_WARN, "%s", msg);
}
