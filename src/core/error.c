/* Status table, per-thread error detail, logger. */
#include "ka_internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
static _Thread_local size_t prefix_len; /* of detail's "<call>: " */
/* The status the detail was recorded with: a failure returned with another
 * status is not the detail's (ka__named then writes the status's text). */
static _Thread_local ka_status detail_status = KA_OK;
_Thread_local const char *ka__call __attribute__((tls_model("initial-exec")));

const char *ka_last_error(void) { return detail; }
const char *ka__detail_message(void) { return detail + prefix_len; }

ka_status ka__fail_status(void) { return detail_status; }

static ka_log_fn log_fn;
static void *log_user;

void ka_set_logger(ka_log_fn fn, void *user) {
    log_user = user;
    log_fn = fn;
}

/* With no logger, the levels printed to stderr: up to KA_LOG_WARN unless
 * $KA_LOG says otherwise ("off", "error", "warn", "info", "debug"); -1: none.
 * Read at each message (they are rare), so a program may change it. */
static int stderr_level(void) {
    const char *v = getenv("KA_LOG");
    if (!v || !*v || !strcasecmp(v, "warn") || !strcasecmp(v, "warning")) return KA_LOG_WARN;
    if (!strcasecmp(v, "off") || !strcmp(v, "0") || !strcasecmp(v, "none")) return -1;
    if (!strcasecmp(v, "error")) return KA_LOG_ERROR;
    if (!strcasecmp(v, "info")) return KA_LOG_INFO;
    if (!strcasecmp(v, "debug") || !strcasecmp(v, "all")) return KA_LOG_DEBUG;
    static _Atomic int told;
    if (!atomic_exchange(&told, 1))
        fprintf(stderr, "libka: KA_LOG='%.32s' is none of off, error, warn, info, debug: warnings and errors are "
                "printed\n", v);
    return KA_LOG_WARN;
}

/* Whether msg is new to this process: the hashes of the messages printed,
 * in a fixed table (no allocation, no lock). Once it is full, nothing is
 * new, and that is said once. */
#define SEEN_SLOTS 512
static bool first_time(const char *msg) {
    static _Atomic uint64_t seen[SEEN_SLOTS];
    static _Atomic int full_told;
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *c = (const unsigned char *)msg; *c; c++) h = (h ^ *c) * 0x100000001b3ull;
    h |= 1; /* 0 marks a free slot */
    for (uint32_t i = 0; i < SEEN_SLOTS; i++) {
        _Atomic uint64_t *slot = &seen[(h + i) % SEEN_SLOTS];
        uint64_t cur = atomic_load_explicit(slot, memory_order_relaxed);
        if (cur == h) return false;
        if (!cur) {
            if (atomic_compare_exchange_strong(slot, &cur, h)) return true;
            if (cur == h) return false;
        }
    }
    if (!atomic_exchange(&full_told, 1))
        fprintf(stderr, "libka: %d distinct warnings printed; further ones are not (set a logger with ka_set_logger "
                "to receive every message)\n", SEEN_SLOTS);
    return false;
}

void ka__log(ka_log_level lvl, const char *fmt, ...) {
    ka_log_fn fn = log_fn;
    /* No logger: warnings and errors to stderr, each distinct one once per
     * process (every one while KA_DEBUG is on: debug.c); $KA_LOG changes
     * the levels printed (off: none). A logger receives everything, stderr
     * nothing. */
    bool debug = false;
    if (!fn) {
        int lim = stderr_level();
        debug = lim >= 0 && lvl <= KA_LOG_WARN && ka__debug_printing();
        if (!debug && (int)lvl > lim) return;
    }
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (fn) fn(lvl, msg, log_user);
    else if (debug || lvl > KA_LOG_WARN || first_time(msg)) fprintf(stderr, "libka: %s\n", msg);
}

/* "<call>: " into detail; its length. */
static size_t put_prefix(const char *call) {
    int n = snprintf(detail, sizeof detail, "%s: ", call ? call : "libka");
    return n < 0 ? 0 : (size_t)n < sizeof detail ? (size_t)n : sizeof detail - 1;
}

ka_status ka__fail(ka_status s, const char *fmt, ...) {
    detail_status = s;
    prefix_len = put_prefix(ka__call);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail + prefix_len, sizeof detail - prefix_len, fmt, ap);
    va_end(ap);
    if (log_fn) log_fn(KA_LOG_DEBUG, detail, log_user);
    return s;
}

ka_status ka__named(ka_status s, const char *call) {
    ka__call = call;
    if (!detail[0] || detail_status != s) return ka__fail(s, "%s", ka_strerror(s));
    if (prefix_len >= 2 && !strncmp(detail, call, prefix_len - 2) && call[prefix_len - 2] == 0) return s; /* named so already */
    size_t n = strlen(call) + 2, body = strlen(detail) - prefix_len;
    if (n + body >= sizeof detail) body = sizeof detail - 1 - n;
    memmove(detail + n, detail + prefix_len, body);
    detail[n + body] = '\0';
    memcpy(detail, call, n - 2);
    memcpy(detail + n - 2, ": ", 2);
    prefix_len = n;
    if (log_fn) log_fn(KA_LOG_DEBUG, detail, log_user); /* as named now */
    return s;
}

ka_status ka__fail_handle(int type, const char *call) {
    static const char *const what[] = {
        [KA__T_DEVICE] = "invalid or released device", [KA__T_QUEUE] = "invalid or released queue",
        [KA__T_BUFFER] = "invalid or released buffer", [KA__T_PROGRAM] = "invalid or released program",
        [KA__T_KERNEL] = "invalid or released kernel", [KA__T_EVENT] = "invalid, released or stale event",
        [KA__T_GRAPH] = "invalid or released graph",
    };
    ka__call = call;
    return ka__fail(KA_ERR_INVALID_HANDLE, "%s", type > 0 && type <= KA__T_GRAPH ? what[type] : "invalid handle");
}

void ka__append_detail(const char *text) {
    size_t n = strlen(detail);
    if (n + 1 >= sizeof detail) return;
    snprintf(detail + n, sizeof detail - n, "%s", text);
}

const char *ka_version(void) { return KA_VERSION_STRING; }
