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
 * The file. Spans go into an array of fixed-size records allocated when the
 * file is opened (KA_TRACE_BUFFER records, default 4096): a traced call
 * copies its record in under a lock and allocates nothing. A full array is
 * written to the file at once (the call that filled it pays for the write),
 * nothing is dropped. The file is valid JSON after every write: the events
 * are followed by the closing text, which the next write overwrites. It is
 * written when the array is full, when a traced device is closed, and at
 * exit (atexit); spans recorded after the last of these by a program that
 * crashes are lost, the file stays valid. */
#include "trace.h"
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The back-end kinds a layer can stand over: ka_backend values 0..KINDS-1. */
#define KINDS 4u

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
    ka__backend layers[KINDS];  /* by ka_backend */
    const ka__backend *under[KINDS];
    _Atomic(ka_tracer_fn) fn;
    void *_Atomic user;
    _Atomic uint32_t lock;      /* the records and the file */
    FILE *f;
    long body_end;              /* where the closing text starts */
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

static const ka__backend *under(const ka__queue *q) { return T.under[q->dev->ops->kind]; }

static const char *const kind_names[] = {"", "launch", "write", "read", "copy", "fill", "finish", "wait"};

/* A name as a JSON string's content: identifiers pass, anything else is '?'. */
static void put_name(FILE *f, const char *s) {
    for (; *s; s++) fputc((*s >= 32 && *s < 127 && *s != '"' && *s != '\\') ? *s : '?', f);
}

/* Writes the records and the closing text; under T.lock. */
static void flush_locked(void) {
    if (!T.f) return;
    FILE *f = T.f;
    fseek(f, T.body_end, SEEK_SET);
    for (uint32_t i = 0; i < T.n; i++) {
        const rec *r = &T.buf[i];
        fputs(T.any ? ",\n" : "\n", f);
        T.any = true;
        /* A queue's track is its handle's slot; named before its first span. */
        unsigned tid = (unsigned)(uint32_t)r->queue;
        uint32_t t = 0;
        while (t < T.ntracks && T.tracks[t] != tid) t++;
        if (t == T.ntracks && t < TRACKS) {
            T.tracks[T.ntracks++] = tid;
            fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"queue %u (", T.pid,
                    tid, tid);
            put_name(f, r->dev);
            fputs(")\"}},\n", f);
        }
        fputs("{\"name\":\"", f);
        put_name(f, r->name);
        fprintf(f, "\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%u,\"args\":{",
                kind_names[r->kind], (double)(r->t0 - T.origin) / 1e3, (double)(r->t1 - r->t0) / 1e3, T.pid, tid);
        if (r->kind == KA_TRACE_LAUNCH && r->dims)
            fprintf(f, "\"dims\":%u,\"global\":[%llu,%llu,%llu],\"local\":[%llu,%llu,%llu],", r->dims,
                    (unsigned long long)r->global[0], (unsigned long long)r->global[1], (unsigned long long)r->global[2],
                    (unsigned long long)r->local[0], (unsigned long long)r->local[1], (unsigned long long)r->local[2]);
        if (r->bytes) fprintf(f, "\"bytes\":%llu,", (unsigned long long)r->bytes);
        fprintf(f, "\"queue\":%llu,\"status\":\"%s\"}}", (unsigned long long)r->queue, ka_status_name((ka_status)r->status));
    }
    T.n = 0;
    T.body_end = ftell(f);
    fputs("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"libka " KA_VERSION_STRING "\"}}\n", f);
    fflush(f);
}

static void add(const rec *r) {
    ka__spin_lock(&T.lock);
    if (T.buf) {
        if (T.n == T.cap) flush_locked();
        T.buf[T.n++] = *r;
    }
    ka__spin_unlock(&T.lock);
}

static void flush_all(void) {
    ka__spin_lock(&T.lock);
    flush_locked();
    ka__spin_unlock(&T.lock);
}

/* Opens KA_TRACE's file once (under open_lock); false when there is none. */
static bool open_file(void) {
    if (T.file_tried) return T.f != NULL;
    T.file_tried = true;
    const char *path = getenv("KA_TRACE");
    if (!path || !*path) return false;
    uint32_t cap = 4096;
    const char *b = getenv("KA_TRACE_BUFFER");
    if (b && *b) {
        long v = strtol(b, NULL, 10);
        cap = v < 16 ? 16 : v > (1 << 24) ? 1u << 24 : (uint32_t)v;
    }
    /* "%p" in the name is the process id: one file per MPI rank (or other
     * process) instead of every process writing the same one. */
    char name[4096];
    size_t n = 0;
    for (const char *c = path; *c && n + 24 < sizeof name; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            n += (size_t)snprintf(name + n, sizeof name - n, "%d", (int)getpid());
            c++;
        } else {
            name[n++] = *c;
        }
    }
    name[n] = 0;
    path = name;
    rec *buf = ka__alloc(sizeof *buf * cap);
    FILE *f = buf ? fopen(path, "w") : NULL;
    if (!f) {
        if (buf) ka__free(buf, sizeof *buf * cap);
        ka__log(KA_LOG_ERROR, "KA_TRACE: cannot write %s: tracing to a file is off", path);
        return false;
    }
    fputs("{\"traceEvents\":[", f);
    T.body_end = ftell(f);
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
    uint32_t k = (uint32_t)d->ops->kind;
    return k < KINDS && d->ops == &T.layers[k];
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

static ka_status t_write(ka__queue *q, ka__buffer *b, size_t off, size_t n, const void *src, void **ev) {
    ka_trace_event te = {.kind = KA_TRACE_WRITE, .name = "ka_buffer_write", .bytes = n};
    SPAN(q, te, under(q)->buffer_write(q, b, off, n, src, ev));
}

static ka_status t_read(ka__queue *q, ka__buffer *b, size_t off, size_t n, void *dst, void **ev) {
    ka_trace_event te = {.kind = KA_TRACE_READ, .name = "ka_buffer_read", .bytes = n};
    SPAN(q, te, under(q)->buffer_read(q, b, off, n, dst, ev));
}

static ka_status t_copy(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n, void **ev) {
    ka_trace_event te = {.kind = KA_TRACE_COPY, .name = "ka_buffer_copy", .bytes = n};
    SPAN(q, te, under(q)->buffer_copy(q, s, so, d, dof, n, ev));
}

static ka_status t_fill(ka__queue *q, ka__buffer *b, const void *pat, size_t psz, size_t off, size_t n, void **ev) {
    ka_trace_event te = {.kind = KA_TRACE_FILL, .name = "ka_buffer_fill", .bytes = n};
    SPAN(q, te, under(q)->buffer_fill(q, b, pat, psz, off, n, ev));
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
    T.under[d->ops->kind]->device_close(d);
}

const ka__backend *ka__trace_layer(const ka__backend *be) {
    if ((unsigned)be->kind >= KINDS) return be;
    pthread_mutex_lock(&T.open_lock);
    bool on = open_file() || atomic_load(&T.fn);
    if (on && !T.under[be->kind]) {
        ka__backend *t = &T.layers[be->kind];
        *t = *be;
        t->device_close = t_device_close;
        t->launch = t_launch;
        t->buffer_write = t_write;
        t->buffer_read = t_read;
        t->buffer_copy = t_copy;
        t->buffer_fill = t_fill;
        t->queue_finish = t_finish;
        if (be->graph_launch) t->graph_launch = t_graph_launch;
        T.under[be->kind] = be;
    }
    pthread_mutex_unlock(&T.open_lock);
    if (!on) return be;
    atomic_store(&ka__tracing, true);
    return &T.layers[be->kind];
}
