/* Status table, per-thread error detail, logger. */
#include "ka_internal.h"

#include <stdio.h>
#include <string.h>

const char *ka_strerror(ka_status s) {
    switch (s) {
#define KA__MSG(name, value, msg) case KA_##name: return msg;
        KA_STATUS_MAP(KA__MSG)
#undef KA__MSG
    }
    return "unknown status";
}

const char *ka_status_name(ka_status s) {
    switch (s) {
#define KA__NAME(name, value, msg) case KA_##name: return "KA_" #name;
        KA_STATUS_MAP(KA__NAME)
#undef KA__NAME
    }
    return "KA_UNKNOWN";
}

/* Fixed-size per-thread buffer: no allocation on error paths, and build logs
 * are truncated rather than copied to the heap. */
#define KA__DETAIL_MAX 8192
static _Thread_local char detail[KA__DETAIL_MAX];

const char *ka_last_error(void) { return detail; }

static ka_log_fn log_fn;
static void *log_user;

void ka_set_logger(ka_log_fn fn, void *user) {
    log_user = user;
    log_fn = fn;
}

void ka__log(ka_log_level lvl, const char *fmt, ...) {
    ka_log_fn fn = log_fn;
    /* No logger: silent, but for warnings and errors under KA_DEBUG (debug.c). */
    if (!fn && (lvl > KA_LOG_WARN || !ka__debug_printing())) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (fn) fn(lvl, msg, log_user);
    else fprintf(stderr, "libka: %s\n", msg);
}

ka_status ka__fail(ka_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    if (log_fn) log_fn(KA_LOG_DEBUG, detail, log_user);
    return s;
}

void ka__append_detail(const char *text) {
    size_t n = strlen(detail);
    if (n + 1 >= sizeof detail) return;
    snprintf(detail + n, sizeof detail - n, "%s", text);
}

const char *ka_version(void) { return KA_VERSION_STRING; }
