/* Tracing: launches, transfers, fills, finishes and waits as spans timed on
 * the host, for a Chrome trace file (KA_TRACE=file.json) and a user's tracer
 * (ka_set_tracer).
 *
 * The layer. A device opened while tracing is asked for calls its back-end
 * through a copy of the back-end's table whose command hooks are wrapped
 * (ka__backend_layer, chosen once at device open). A device opened without it
 * calls the back-end directly: its launch path is the untraced one, with no
 * test of a flag. The core's waits test one global flag (ka__tracing), set
 * once a traced device exists.
 *
 * The file. Opened once per process, at the first device open, without
 * blocking (O_NONBLOCK: a FIFO without a reader would block the open) and
 * only when it is a regular file; a name that does not fit a path once "%p"
 * is expanded is refused rather than cut short. Refused or failing, it is
 * logged and tracing to a file is off; the device opens all the same.
 * Spans go into an array of fixed-size records allocated when the file is
 * opened (KA_TRACE_BUFFER records, default 4096): a traced call copies its
 * record in under a lock and allocates nothing. A full array is written to
 * the file at once (the call that filled it pays for the write), nothing is
 * dropped. The file is valid JSON after every successful write: the events
 * are followed by the closing text, which the next write overwrites. It is
 * written when the array is full, when a traced device is closed, and at
 * exit (atexit); spans recorded after the last of these by a program that
 * crashes are lost, the file stays valid. A write that fails (disk full, file
 * size limit) is logged once, outside the lock; the file is cut back to the
 * end of its last complete write and closed, so it stays a valid document
 * (the cut frees what the failed write took, so the closing text fits where
 * it was), and is no longer written; traced calls go on (records are no
 * longer kept). */
#include "trace.h"
#include "ka_internal.h"
#include "backend.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The tables a layer can stand over: one per back-end, and a back-end's own
 * layer (OpenCL's PoCL routing) beside its plain table; a device whose
 * table finds no slot is not traced. */
#define SLOTS 8u

_Atomic bool ka__tracing;

enum { NAME_MAX_ = 48, TRACKS = 1024 };

typedef struct rec {
    uint32_t kind;  /* ka_trace_kind */
    int32_t status;
    uint32_t dims;
    uint64_t queue;
    int64_t t0, t1;
    uint64_t bytes;
    uint64_t global[3], local[3];
    const char *dev; /* the device's name: records are written before their device closes */
    char name[NAME_MAX_];
} rec;

static struct {
    pthread_mutex_t open_lock;  /* layers and the file's opening */
    bool file_tried;
    ka__backend layers[SLOTS];  /* layers[i] stands over under[i] */
    const ka__backend *under[SLOTS];
    _Atomic(ka_tracer_fn) fn;
    void *_Atomic user;
    _Atomic uint32_t lock;      /* the records and the file */
    FILE *f;                    /* NULL once a write failed */
    char path[PATH_MAX];        /* the file's name, "%p" expanded */
    long body_end;              /* where the closing text starts */
    long valid_end;             /* body_end of the last complete write; -1 before the first */
    bool any;                   /* an event was written */
    rec *buf;
    uint32_t cap, n;
    int64_t origin;             /* ts 0 of the file */
    int pid;
    uint32_t tracks[TRACKS];    /* queue tracks named in the file so far */
    uint32_t ntracks;
} T = {.open_lock = PTHREAD_MUTEX_INITIALIZER};

void ka_set_tracer(ka_tracer_fn fn, void *user) {
    atomic_store(&T.user, user);
    atomic_store(&T.fn, fn);
}

static const ka__backend *under_dev(const ka__device *d) { return T.under[d->ops - T.layers]; }
static const ka__backend *under(const ka__queue *q) { return under_dev(q->dev); }

static const char *const kind_names[] = {"", "launch", "write", "read", "copy", "fill", "finish", "wait"};

/* A name as a JSON string's content: identifiers pass, anything else is '?'.
 * EOF when a write failed. */
static int put_name(FILE *f, const char *s) {
    for (; *s; s++)
        if (fputc((*s >= 32 && *s < 127 && *s != '"' && *s != '\\') ? *s : '?', f) == EOF) return EOF;
    return 0;
}

/* The path for a message: its first bytes when it is long. */
#define SHORT_PATH(p) (strlen(p) > 200 ? 200 : (int)strlen(p)), (p), (strlen(p) > 200 ? "..." : "")

#define TRACE_HEAD "{\"traceEvents\":["
#define TRACE_TAIL "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"libka " KA_VERSION_STRING "\"}}\n"

/* A file whose write failed, cut back, closed and logged outside T.lock (the
 * logger is the user's code). */
typedef struct failed_file {
    FILE *f;
    int err;
    long valid_end; /* T.valid_end when it failed */
} failed_file;

/* The file as its last complete write left it: cut at that write's closing
 * text, which is written again (the empty document before any). */
static bool restore(int fd, long valid_end) {
    off_t at = valid_end < 0 ? 0 : (off_t)valid_end;
    const char *text = valid_end < 0 ? TRACE_HEAD TRACE_TAIL : TRACE_TAIL;
    size_t n = strlen(text);
    return ftruncate(fd, at) == 0 && pwrite(fd, text, n, at) == (ssize_t)n;
}

static void report(failed_file x) {
    if (!x.f) return;
    int fd = fcntl(fileno(x.f), F_DUPFD_CLOEXEC, 0);
    fclose(x.f); /* retries what is buffered, which may land past the cut: cut after */
    bool whole = fd >= 0 && restore(fd, x.valid_end);
    if (fd >= 0) close(fd);
    ka__log(KA_LOG_ERROR, "KA_TRACE: cannot write %.*s%s: %s; tracing to the file is off (%s)", SHORT_PATH(T.path),
            strerror(x.err), whole ? "it holds the spans written before" : "it may be incomplete");
}

/* Notes the first failure of a write (a negative result, as every stdio call
 * here gives on failure). */
#define CHECK(call)                                        \
    do {                                                   \
        if ((call) < 0 && !err) err = errno ? errno : EIO; \
    } while (0)

/* Writes the records and the closing text; under T.lock. On the file's first
 * failure it is taken out of T (no longer written) and returned for report. */
static failed_file flush_locked(void) {
    if (!T.f) return (failed_file){0};
    FILE *f = T.f;
    int err = 0;
    CHECK(fseek(f, T.body_end, SEEK_SET));
    for (uint32_t i = 0; i < T.n && !err; i++) {
        const rec *r = &T.buf[i];
        CHECK(fputs(T.any ? ",\n" : "\n", f));
        T.any = true;
        /* A queue's track is its handle's slot; named before its first span. */
        unsigned tid = (unsigned)(uint32_t)r->queue;
        uint32_t t = 0;
        while (t < T.ntracks && T.tracks[t] != tid) t++;
        if (t == T.ntracks && t < TRACKS) {
            T.tracks[T.ntracks++] = tid;
            CHECK(fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"queue %u (",
                          T.pid, tid, tid));
            CHECK(put_name(f, r->dev));
            CHECK(fputs(")\"}},\n", f));
        }
        CHECK(fputs("{\"name\":\"", f));
        CHECK(put_name(f, r->name));
        CHECK(fprintf(f, "\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%u,\"args\":{",
                      kind_names[r->kind], (double)(r->t0 - T.origin) / 1e3, (double)(r->t1 - r->t0) / 1e3, T.pid, tid));
        if (r->kind == KA_TRACE_LAUNCH && r->dims)
            CHECK(fprintf(f, "\"dims\":%u,\"global\":[%llu,%llu,%llu],\"local\":[%llu,%llu,%llu],", r->dims,
                          (unsigned long long)r->global[0], (unsigned long long)r->global[1],
                          (unsigned long long)r->global[2], (unsigned long long)r->local[0],
                          (unsigned long long)r->local[1], (unsigned long long)r->local[2]));
        if (r->bytes) CHECK(fprintf(f, "\"bytes\":%llu,", (unsigned long long)r->bytes));
        CHECK(fprintf(f, "\"queue\":%llu,\"status\":\"%s\"}}", (unsigned long long)r->queue,
                      ka_status_name((ka_status)r->status)));
    }
    T.n = 0;
    if (!err) {
        long end = ftell(f);
        CHECK(end);
        T.body_end = end;
    }
    if (!err) CHECK(fputs(TRACE_TAIL, f));
    if (!err) CHECK(fflush(f));
    if (!err && ferror(f)) err = EIO;
    if (!err) {
        T.valid_end = T.body_end;
        return (failed_file){0};
    }
    T.f = NULL;
    return (failed_file){f, err, T.valid_end};
}

static void add(const rec *r) {
    failed_file x = {0};
    ka__spin_lock(&T.lock);
    if (T.f) {
        if (T.n == T.cap) x = flush_locked();
        if (T.f) T.buf[T.n++] = *r;
    }
    ka__spin_unlock(&T.lock);
    report(x);
}

static void flush_all(void) {
    ka__spin_lock(&T.lock);
    failed_file x = flush_locked();
    ka__spin_unlock(&T.lock);
    report(x);
}

/* KA_TRACE's name into T.path, "%p" replaced by the process id: one file per
 * MPI rank (or other process) instead of every process writing the same one.
 * False when it does not fit a path. */
static bool expand_path(const char *path) {
    char pid[24];
    size_t np = (size_t)snprintf(pid, sizeof pid, "%d", (int)getpid()), n = 0;
    for (const char *c = path; *c; c++) {
        const char *s = c;
        size_t k = 1;
        if (c[0] == '%' && c[1] == 'p') s = pid, k = np, c++;
        if (k >= sizeof T.path - n) return false;
        memcpy(T.path + n, s, k);
        n += k;
    }
    T.path[n] = 0;
    return true;
}

static const char *file_kind(mode_t m) {
    return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISSOCK(m) ? "a socket" : S_ISDIR(m) ? "a directory" : S_ISLNK(m) ? "a symbolic link" : "something else";
}

/* T.path for writing, emptied: only a regular file, and no symbolic link
 * (O_NOFOLLOW, as the kernel cache's files), opened without blocking (a
 * FIFO's writer would wait for a reader). NULL, logged, when it cannot be. */
static FILE *open_path(void) {
    const char *path = T.path;
    int fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0666);
    struct stat s;
    if (fd < 0) {
        int e = errno; /* ENXIO: a FIFO without a reader; ELOOP: a symbolic link */
        if (lstat(path, &s) == 0 && !S_ISREG(s.st_mode))
            ka__log(KA_LOG_ERROR, "KA_TRACE: %.*s%s is %s, not a regular file (%s); tracing to a file is off",
                    SHORT_PATH(path), file_kind(s.st_mode), strerror(e));
        else
            ka__log(KA_LOG_ERROR, "KA_TRACE: cannot open %.*s%s: %s; tracing to a file is off", SHORT_PATH(path),
                    strerror(e));
        return NULL;
    }
    int e = 0, fl = 0;
    FILE *f = NULL;
    if (fstat(fd, &s) != 0) e = errno;
    else if (!S_ISREG(s.st_mode)) {
        ka__log(KA_LOG_ERROR, "KA_TRACE: %.*s%s is %s, not a regular file; tracing to a file is off", SHORT_PATH(path),
                file_kind(s.st_mode));
        close(fd);
        return NULL;
    } else if (ftruncate(fd, 0) != 0 || (fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 ||
               !(f = fdopen(fd, "w")))
        e = errno;
    if (!f) {
        close(fd);
        ka__log(KA_LOG_ERROR, "KA_TRACE: cannot write %.*s%s: %s; tracing to a file is off", SHORT_PATH(path),
                strerror(e));
    }
    return f;
}

/* Opens KA_TRACE's file once (under open_lock); false when there is none
 * (or no longer: a write failed). */
static bool open_file(void) {
    if (T.file_tried) {
        ka__spin_lock(&T.lock);
        bool on = T.f != NULL;
        ka__spin_unlock(&T.lock);
        return on;
    }
    T.file_tried = true;
    const char *path = getenv("KA_TRACE");
    if (!path || !*path) return false;
    uint32_t cap = 4096;
    const char *b = getenv("KA_TRACE_BUFFER");
    if (b && *b) {
        char *end;
        errno = 0;
        long v = strtol(b, &end, 10);
        if (*end || errno || end == b || v < 16 || v > (1 << 24))
            ka__log(KA_LOG_WARN, "KA_TRACE_BUFFER='%.32s' is not a number of records from 16 to %d: %s", b, 1 << 24,
                    *end || errno || end == b ? "ignored" : "clamped");
        if (!*end && !errno && end != b) cap = v < 16 ? 16 : v > (1 << 24) ? 1u << 24 : (uint32_t)v;
    }
    if (!expand_path(path)) {
        ka__log(KA_LOG_ERROR, "KA_TRACE: the file name %.64s... (%zu bytes, at most %d once %%p is expanded): %s; "
                "tracing to a file is off", path, strlen(path), (int)sizeof T.path - 1, strerror(ENAMETOOLONG));
        return false;
    }
    rec *buf = ka__alloc(sizeof *buf * cap);
    if (!buf) {
        ka__log(KA_LOG_ERROR, "KA_TRACE: no memory for %u records; tracing to a file is off", cap);
        return false;
    }
    FILE *f = open_path();
    if (!f) {
        ka__free(buf, sizeof *buf * cap);
        return false;
    }
    T.valid_end = -1;
    if (fputs(TRACE_HEAD, f) < 0 || (T.body_end = ftell(f)) < 0) {
        report((failed_file){f, errno ? errno : EIO, -1});
        ka__free(buf, sizeof *buf * cap);
        return false;
    }
    T.buf = buf;
    T.cap = cap;
    T.origin = ka__now_ns();
    T.pid = (int)getpid();
    T.f = f;
    flush_all();
    atexit(flush_all);
    return true;
}

/* ---- spans ---------------------------------------------------------------- */
static bool traced(const ka__device *d) {
    return (uintptr_t)d->ops - (uintptr_t)T.layers < sizeof T.layers;
}

static void begin(const ka__queue *q, ka_trace_event *te) {
    te->queue = q->id;
    te->end = 0;
    te->t_ns = ka__now_ns();
    ka_tracer_fn fn = atomic_load_explicit(&T.fn, memory_order_acquire);
    if (fn) fn(te, atomic_load_explicit(&T.user, memory_order_relaxed));
}

void ka__trace_end(const ka__queue *q, ka_trace_event *te, ka_status st) {
    int64_t t0 = te->t_ns;
    te->t_ns = ka__now_ns();
    te->end = 1;
    te->status = st;
    ka_tracer_fn fn = atomic_load_explicit(&T.fn, memory_order_acquire);
    if (fn) fn(te, atomic_load_explicit(&T.user, memory_order_relaxed));
    if (!T.buf) return;
    rec r = {.kind = te->kind, .status = st, .dims = te->dims, .queue = te->queue, .t0 = t0, .t1 = te->t_ns,
             .bytes = te->bytes, .dev = q->dev->info.name};
    for (int d = 0; d < 3; d++) r.global[d] = te->global[d], r.local[d] = te->local[d];
    snprintf(r.name, sizeof r.name, "%s", te->name ? te->name : "");
    add(&r);
}

bool ka__trace_device(const ka__device *d) { return traced(d); }

bool ka__trace_begin(const ka__queue *q, ka_trace_event *te) {
    if (!traced(q->dev)) return false;
    begin(q, te);
    return true;
}

/* ---- the wrapped hooks ------------------------------------------------------ */
#define SPAN(q, te, call)                      \
    do {                                       \
        begin(q, &te);                         \
        ka_status st_ = (call);                \
        ka__trace_end(q, &te, st_);               \
        return st_;                            \
    } while (0)

static ka_status t_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs, void **ev) {
    ka_trace_event te = {.kind = KA_TRACE_LAUNCH, .name = k->name, .dims = l->dims};
    for (int d = 0; d < 3; d++) te.global[d] = l->global[d], te.local[d] = l->local[d];
    SPAN(q, te, under(q)->launch(q, k, l, args, nargs, ev));
}

static ka_status t_write(ka__queue *q, ka__buffer *b, size_t off, size_t n, const void *src, void **ev, bool block) {
    ka_trace_event te = {.kind = KA_TRACE_WRITE, .name = "ka_buffer_write", .bytes = n};
    SPAN(q, te, under(q)->buffer_write(q, b, off, n, src, ev, block));
}

static ka_status t_read(ka__queue *q, ka__buffer *b, size_t off, size_t n, void *dst, void **ev, bool block) {
    ka_trace_event te = {.kind = KA_TRACE_READ, .name = "ka_buffer_read", .bytes = n};
    SPAN(q, te, under(q)->buffer_read(q, b, off, n, dst, ev, block));
}

static ka_status t_copy(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n, void **ev, bool block) {
    ka_trace_event te = {.kind = KA_TRACE_COPY, .name = "ka_buffer_copy", .bytes = n};
    SPAN(q, te, under(q)->buffer_copy(q, s, so, d, dof, n, ev, block));
}

static ka_status t_fill(ka__queue *q, ka__buffer *b, const void *pat, size_t psz, size_t off, size_t n, void **ev, bool block) {
    ka_trace_event te = {.kind = KA_TRACE_FILL, .name = "ka_buffer_fill", .bytes = n};
    SPAN(q, te, under(q)->buffer_fill(q, b, pat, psz, off, n, ev, block));
}

static ka_status t_finish(ka__queue *q) {
    ka_trace_event te = {.kind = KA_TRACE_FINISH, .name = "ka_queue_finish"};
    SPAN(q, te, under(q)->queue_finish(q));
}

static ka_status t_graph_launch(ka__queue *q, ka__graph *g, void **ev) {
    ka_trace_event te = {.kind = KA_TRACE_LAUNCH, .name = "ka_graph_launch"};
    SPAN(q, te, under(q)->graph_launch(q, g, ev));
}

static void t_device_close(ka__device *d) {
    flush_all();
    under_dev(d)->device_close(d);
}

const ka__backend *ka__trace_layer(const ka__backend *be) {
    pthread_mutex_lock(&T.open_lock);
    bool on = open_file() || atomic_load(&T.fn);
    uint32_t i = 0;
    while (i < SLOTS && T.under[i] && T.under[i] != be) i++;
    if (on && i < SLOTS && !T.under[i]) {
        ka__backend *t = &T.layers[i];
        *t = *be;
        t->device_close = t_device_close;
        t->launch = t_launch;
        t->buffer_write = t_write;
        t->buffer_read = t_read;
        t->buffer_copy = t_copy;
        t->buffer_fill = t_fill;
        t->queue_finish = t_finish;
        if (be->graph_launch) t->graph_launch = t_graph_launch;
        T.under[i] = be;
    }
    pthread_mutex_unlock(&T.open_lock);
    if (!on || i == SLOTS) return be;
    atomic_store(&ka__tracing, true);
    return &T.layers[i];
}
