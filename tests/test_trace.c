/* Timing and tracing on the default device: ka_event_elapsed_ns on profiling
 * queues (routed small launches, threaded large ones, transfers) and its
 * errors; ka_set_tracer's spans; the KA_TRACE file, checked as JSON by
 * tests/check_trace.py, with a buffer of 16 records (several writes) and
 * after a program that exits without closing its device; KA_TRACE files that
 * cannot be used (a FIFO, /dev/full, a name too long, writes that fail: the
 * file left valid), each in a process of its own (the file is chosen once per process). */
#define _XOPEN_SOURCE 700 /* nftw */
#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *src =
    "KA_KERNEL(saxpy, KA_GLOBAL float *y, KA_GLOBAL const float *x, float a, uint n) {\n"
    "    if (!ka_in_range()) return;\n"
    "    size_t i = ka_global_id(0);\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n"
    "KA_KERNEL(spin, KA_GLOBAL uint *out, uint iters) {\n"
    "    if (!ka_in_range()) return;\n"
    "    uint v = (uint)ka_global_id(0);\n"
    "    for (uint k = 0; k < iters; k++) v = v * 1664525u + 1013904223u;\n"
    "    out[ka_global_id(0)] = v;\n"
    "}\n";


static char g_trace[256];
static char g_self[512];

/* ---- a tracer counting spans by kind ---------------------------------- */
static _Atomic uint32_t g_begins[8], g_ends[8], g_saxpy_ends;
static _Atomic uint64_t g_saxpy_global, g_qid; /* spans of queue g_qid are counted */

static void tracer(const ka_trace_event *ev, void *user) {
    assert_ptr_equal(user, &g_begins);
    assert_true(ev->kind >= KA_TRACE_LAUNCH && ev->kind <= KA_TRACE_WAIT);
    assert_non_null(ev->name);
    assert_true(ev->queue != 0);
    if (ev->queue != atomic_load(&g_qid)) return;
    if (!ev->end) {
        atomic_fetch_add(&g_begins[ev->kind], 1);
        return;
    }
    atomic_fetch_add(&g_ends[ev->kind], 1);
    if (ev->kind == KA_TRACE_LAUNCH && !strcmp(ev->name, "saxpy")) {
        atomic_fetch_add(&g_saxpy_ends, 1);
        atomic_store(&g_saxpy_global, ev->global[0]);
        assert_int_equal(ev->status, KA_OK);
        assert_int_equal(ev->dims, 1);
        assert_true(ev->local[0] >= 1);
    }
}

/* saxpy of n items: 2 writes, a launch with an event and its wait, a fill,
 * a copy, a read, a finish and a ka_wait_all. Checks the result. */
static void saxpy_round(ka_device dev, ka_queue q, uint32_t n) {
    ka_program p;
    ka_kernel k;
    KA_OK_OR_FAIL(ka_program_build(dev, src, NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "saxpy", NULL, &k));
    float *hx = malloc(n * sizeof *hx), *hy = malloc(n * sizeof *hy);
    assert_non_null(hx);
    assert_non_null(hy);
    for (uint32_t i = 0; i < n; i++) hx[i] = (float)i, hy[i] = 1.0f;
    ka_buffer x, y, z;
    KA_OK_OR_FAIL(ka_buffer_create(dev, n * sizeof(float), &x));
    KA_OK_OR_FAIL(ka_buffer_create(dev, n * sizeof(float), &y));
    KA_OK_OR_FAIL(ka_buffer_create(dev, n * sizeof(float), &z));
    KA_OK_OR_FAIL(ka_buffer_write(q, x, 0, hx, n * sizeof(float)));
    KA_OK_OR_FAIL(ka_buffer_write(q, y, 0, hy, n * sizeof(float)));
    ka_arg args[] = {ka_arg_buffer(y), ka_arg_buffer(x), ka_arg_f32(2.0f), ka_arg_u32(n)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {n}}, args, 4, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    float zero = 0;
    KA_OK_OR_FAIL(ka_buffer_fill(q, z, 0, &zero, sizeof zero, n * sizeof(float), NULL));
    KA_OK_OR_FAIL(ka_buffer_copy(q, z, 0, y, 0, n * sizeof(float), &ev));
    KA_OK_OR_FAIL(ka_wait_all(&ev, 1, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_queue_finish(q));
    KA_OK_OR_FAIL(ka_buffer_read(q, hy, z, 0, n * sizeof(float)));
    for (uint32_t i = 0; i < n; i++) assert_float_equal(hy[i], 2.0f * (float)i + 1.0f, 1e-3f * (2.0f * (float)i + 1.0f));
    free(hx);
    free(hy);
    KA_OK_OR_FAIL(ka_buffer_release(x));
    KA_OK_OR_FAIL(ka_buffer_release(y));
    KA_OK_OR_FAIL(ka_buffer_release(z));
    KA_OK_OR_FAIL(ka_program_release(p));
}

/* ---- timing ------------------------------------------------------------- */
/* Launches of `items` work-items of a kernel that loops: small ones run
 * inline on PoCL's `basic` device, large ones on the threaded device. */
static void timed_launch(ka_queue q, ka_kernel k, ka_buffer out, uint64_t items, uint32_t iters) {
    ka_arg a[] = {ka_arg_buffer(out), ka_arg_u32(iters)};
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {items}}, a, 2, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    uint64_t ns = 0;
    KA_OK_OR_FAIL(ka_event_elapsed_ns(ev, &ns));
    /* A kernel of items * iters dependent multiply-adds takes some time on
     * any device; no upper bound (the machine may be loaded). */
    assert_true(ns > 0);
    KA_OK_OR_FAIL(ka_event_release(ev));
}

static void test_elapsed(void **state) {
    (void)state;
    ka_device dev;
    KA_OK_OR_FAIL(ka_device_open(NULL, &dev));
    ka_queue q, plain;
    KA_OK_OR_FAIL(ka_queue_create(dev, &(ka_queue_config){.spin_ns = -1, .profiling = 1}, &q));
    KA_OK_OR_FAIL(ka_queue_create(dev, NULL, &plain));
    ka_program p;
    ka_kernel k;
    KA_OK_OR_FAIL(ka_program_build(dev, src, NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "spin", NULL, &k));
    /* Threaded, though adaptive routing's table goes up to 2^22 items: a size
     * class's first launches take the seed model's path, inline only up to
     * 20000 * c / (c - 1) items on c cores (40000 at most). */
    const uint64_t big = 1u << 19;
    ka_buffer out;
    KA_OK_OR_FAIL(ka_buffer_create(dev, big * 4, &out));
    ka_queue_stats before, after;
    KA_OK_OR_FAIL(ka_queue_get_stats(q, &before));
    timed_launch(q, k, out, 64, 2000); /* routed inline where PoCL routes */
    timed_launch(q, k, out, 64, 2000);
    timed_launch(q, k, out, big, 20);  /* on the threaded device */
    KA_OK_OR_FAIL(ka_queue_get_stats(q, &after));
    if (before.inline_max_items) assert_int_equal(after.inline_launches - before.inline_launches, 2);
    /* A transfer with an event times too: a 2 MB write copies for far longer
     * than the drivers' resolution (1 ns OpenCL, 0.5 us CUDA), so it is > 0. */
    uint32_t v[256] = {0}; /* the null device's write, below */
    void *host = calloc(1, big * 4);
    assert_non_null(host);
    ka_event ev;
    KA_OK_OR_FAIL(ka_buffer_write_async(q, out, 0, host, big * 4, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    free(host);
    uint64_t ns = 0;
    KA_OK_OR_FAIL(ka_event_elapsed_ns(ev, &ns));
    assert_true(ns > 0);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_event_elapsed_ns(ev, NULL));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_event_elapsed_ns(ev, &ns));
    EXPECT_DETAIL("ka_event_elapsed_ns");
    /* An empty range ran nothing: 0 ns. */
    ka_arg a[] = {ka_arg_buffer(out), ka_arg_u32(1)};
    KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {0}}, a, 2, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_elapsed_ns(ev, &ns));
    assert_int_equal(ns, 0);
    KA_OK_OR_FAIL(ka_event_release(ev));
    /* A queue without profiling: a clear refusal. */
    KA_OK_OR_FAIL(ka_launch(plain, k, &(ka_range){.dims = 1, .size = {64}}, a, 2, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_EXPECT(KA_ERR_UNSUPPORTED, ka_event_elapsed_ns(ev, &ns));
    EXPECT_DETAIL("profiling");
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_release(out));
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_OK_OR_FAIL(ka_queue_release(q));
    KA_OK_OR_FAIL(ka_queue_release(plain));
    KA_OK_OR_FAIL(ka_device_close(dev));
    /* The null back-end times nothing. */
    KA_OK_OR_FAIL(ka_device_open("null", &dev));
    KA_OK_OR_FAIL(ka_queue_create(dev, &(ka_queue_config){.profiling = 1}, &q));
    KA_OK_OR_FAIL(ka_buffer_create(dev, sizeof v, &out));
    KA_OK_OR_FAIL(ka_buffer_write_async(q, out, 0, v, sizeof v, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_EXPECT(KA_ERR_UNSUPPORTED, ka_event_elapsed_ns(ev, &ns));
    EXPECT_DETAIL("null");
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_release(out));
    KA_OK_OR_FAIL(ka_queue_release(q));
    KA_OK_OR_FAIL(ka_device_close(dev));
}

/* ---- tracing ------------------------------------------------------------ */
static int check_file(const char *args) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 %s %s %s", KA_TRACE_CHECK, g_trace, args);
    return system(cmd);
}

/* Spans of two rounds (a routed and a threaded saxpy) reach the tracer and
 * the file; with 16 records the buffer is written out several times. */
static void test_trace(void **state) {
    (void)state;
    ka_device dev;
    KA_OK_OR_FAIL(ka_device_open(NULL, &dev));
    ka_queue q;
    KA_OK_OR_FAIL(ka_queue_create(dev, NULL, &q));
    atomic_store(&g_qid, q.id);
    saxpy_round(dev, q, 1000);
    saxpy_round(dev, q, 300007);
    KA_OK_OR_FAIL(ka_queue_release(q)); /* finishes the queue: a span too */
    KA_OK_OR_FAIL(ka_device_close(dev)); /* writes the file */
    assert_int_equal(atomic_load(&g_saxpy_ends), 2);
    assert_true(atomic_load(&g_saxpy_global) >= 300007); /* the padded range */
    /* by kind: launch, write, read, copy, fill, finish, wait */
    static const uint32_t want[8] = {0, 2, 4, 2, 2, 2, 3, 4};
    for (int kd = KA_TRACE_LAUNCH; kd <= KA_TRACE_WAIT; kd++) {
        uint32_t b = atomic_load(&g_begins[kd]), e = atomic_load(&g_ends[kd]);
        if (b != want[kd] || e != want[kd]) fail_msg("kind %d: %u begins, %u ends, expected %u", kd, b, e, want[kd]);
    }
    char args[256];
    snprintf(args, sizeof args, "queue=%llu saxpy=2 launch=2 write=4 read=2 copy=2 fill=2 finish=3 wait=4",
             (unsigned long long)q.id);
    assert_int_equal(check_file(args), 0);
}

/* Traced launches and waits allocate nothing, while the 16 records are
 * written out several times over; so does ka_event_elapsed_ns. */
static void test_trace_no_alloc(void **state) {
    (void)state;
    ka_device dev;
    KA_OK_OR_FAIL(ka_device_open(NULL, &dev));
    ka_queue q;
    KA_OK_OR_FAIL(ka_queue_create(dev, &(ka_queue_config){.spin_ns = -1, .profiling = 1}, &q));
    ka_program p;
    ka_kernel k;
    KA_OK_OR_FAIL(ka_program_build(dev, src, NULL, &p));
    KA_OK_OR_FAIL(ka_kernel_get(p, "spin", NULL, &k));
    ka_buffer out;
    KA_OK_OR_FAIL(ka_buffer_create(dev, 4096, &out));
    ka_arg a[] = {ka_arg_buffer(out), ka_arg_u32(4)};
    for (int i = 0; i < 120; i++) {
        if (i == 20) heap_start(); /* after the warm-up */
        ka_event ev;
        uint64_t ns;
        KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {1024}}, a, 2, &ev));
        KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_event_elapsed_ns(ev, &ns));
        KA_OK_OR_FAIL(ka_event_release(ev));
    }
    assert_int_equal(heap_stop(), 0);
    KA_OK_OR_FAIL(ka_buffer_release(out));
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_OK_OR_FAIL(ka_queue_release(q));
    KA_OK_OR_FAIL(ka_device_close(dev));
}

/* A program that exits without closing its device still leaves valid JSON. */
static void test_trace_at_exit(void **state) {
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "KA_TRACE=%s.exit %s --exit-without-close", g_trace, g_self);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "python3 %s %s.exit saxpy=1 launch=1 write=2 read=1 copy=1 fill=1 finish=1 wait=2",
             KA_TRACE_CHECK, g_trace);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s.exit", g_trace);
    unlink(cmd);
}

static int exit_without_close(void) {
    ka_device dev;
    ka_queue q;
    if (ka_device_open(NULL, &dev) || ka_queue_create(dev, NULL, &q)) return 1;
    saxpy_round(dev, q, 1000);
    exit(0); /* device and queue left open: atexit writes the file */
}

/* ---- KA_TRACE files that cannot be used ----------------------------------
 * Each case runs this program again (run_child) with a mode and KA_TRACE's
 * value; the child checks what its logger got and exits 0 when all is well. */
static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_trace_msgs;   /* KA_TRACE's errors and warnings */
static char g_trace_msg[512];

static void trace_logger(ka_log_level level, const char *msg, void *user) {
    (void)user;
    if (level > KA_LOG_WARN || !strstr(msg, "KA_TRACE")) return;
    pthread_mutex_lock(&g_log_lock);
    if (!g_trace_msgs++) snprintf(g_trace_msg, sizeof g_trace_msg, "%s", msg);
    fprintf(stderr, "logged: %s\n", msg);
    pthread_mutex_unlock(&g_log_lock);
}

/* 0 when exactly one KA_TRACE message was logged and it holds each of the
 * texts (NULL ends them); else says why, 1. */
static int one_message(const char *what, ...) {
    pthread_mutex_lock(&g_log_lock);
    int n = g_trace_msgs;
    char msg[sizeof g_trace_msg];
    memcpy(msg, g_trace_msg, sizeof msg);
    pthread_mutex_unlock(&g_log_lock);
    if (n != 1) {
        fprintf(stderr, "%s: %d KA_TRACE messages logged, expected 1\n", what, n);
        return 1;
    }
    va_list ap;
    va_start(ap, what);
    for (const char *t; (t = va_arg(ap, const char *));)
        if (!strstr(msg, t)) {
            fprintf(stderr, "%s: the message \"%s\" lacks \"%s\"\n", what, msg, t);
            va_end(ap);
            return 1;
        }
    va_end(ap);
    return 0;
}

static int child_start(const char *path) {
    setenv("KA_TRACE", path, 1);
    setenv("KA_TRACE_BUFFER", "16", 1);
    ka_set_logger(trace_logger, NULL);
    return 0;
}

/* This program with a mode and KA_TRACE's value; its exit status. */
static int run_child(const char *mode, const char *trace) {
    char *argv[] = {g_self, (char *)mode, (char *)trace, NULL};
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, g_self, NULL, NULL, argv, environ), 0);
    int st;
    while (waitpid(pid, &st, 0) < 0) assert_int_equal(errno, EINTR);
    if (WIFSIGNALED(st)) fail_msg("%s: killed by signal %d", mode, WTERMSIG(st));
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* A FIFO that nobody reads: the device opens (a writer's open of a FIFO
 * would block until a reader comes), the file is refused and logged. A
 * watchdog opens the FIFO for reading after 60 s, which lets a blocked open
 * return, and fails the case. */
static _Atomic int g_opened, g_dog_fired;

static void *fifo_watchdog(void *path) {
    for (int i = 0; i < 600 && !atomic_load(&g_opened); i++) nanosleep(&(struct timespec){0, 100000000}, NULL);
    if (atomic_load(&g_opened)) return NULL;
    atomic_store(&g_dog_fired, 1);
    (void)open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* kept open: the writer gets no SIGPIPE */
    return NULL;
}

static int fifo_child(const char *path) {
    child_start(path);
    pthread_t dog;
    if (pthread_create(&dog, NULL, fifo_watchdog, (void *)path)) return 1;
    ka_device dev;
    ka_status st = ka_device_open(NULL, &dev);
    atomic_store(&g_opened, 1);
    pthread_join(dog, NULL);
    if (atomic_load(&g_dog_fired)) {
        fprintf(stderr, "ka_device_open was still blocked on the FIFO after 60 s\n");
        return 1;
    }
    if (st != KA_OK) {
        fprintf(stderr, "ka_device_open: %s\n", ka_status_name(st));
        return 1;
    }
    ka_queue q;
    if (ka_queue_create(dev, NULL, &q)) return 1;
    saxpy_round(dev, q, 1000); /* the device works, untraced */
    if (ka_queue_release(q) || ka_device_close(dev)) return 1;
    return one_message("FIFO", "KA_TRACE", path, "FIFO", "not a regular file", strerror(ENXIO), (char *)NULL);
}

static void test_trace_fifo(void **state) {
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s.fifo", g_trace);
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0);
    int r = run_child("--fifo", path);
    unlink(path);
    assert_int_equal(r, 0);
}

/* A device that takes no data (/dev/full: every write fails): refused at
 * open as not a regular file, logged once; the device works untraced. */
static int device_file_child(const char *path) {
    child_start(path);
    ka_device dev;
    ka_queue q;
    if (ka_device_open(NULL, &dev) || ka_queue_create(dev, NULL, &q)) {
        fprintf(stderr, "ka_device_open: %s\n", ka_last_error());
        return 1;
    }
    saxpy_round(dev, q, 1000);
    if (ka_queue_release(q) || ka_device_close(dev)) return 1;
    return one_message("/dev/full", "KA_TRACE", path, "a character device", "not a regular file", (char *)NULL);
}

static void test_trace_dev_full(void **state) {
    (void)state;
    struct stat s;
    assert_int_equal(stat("/dev/full", &s), 0);
    assert_true(S_ISCHR(s.st_mode));
    assert_int_equal(run_child("--device-file", "/dev/full"), 0);
}

/* A name longer than a path can be: refused and logged, never written under
 * a name cut short. The directories of the name exist as far as a path can
 * reach, so a name cut anywhere short of PATH_MAX could be created. */
static char g_long_root[300];

static int long_path_child(const char *path) {
    child_start(path);
    ka_device dev;
    ka_status st = ka_device_open(NULL, &dev);
    if (st != KA_OK) {
        fprintf(stderr, "ka_device_open: %s\n", ka_status_name(st));
        return 1;
    }
    if (ka_device_close(dev)) return 1;
    char head[41]; /* the message shows the name's first bytes */
    snprintf(head, sizeof head, "%s", path);
    return one_message("long name", "KA_TRACE", head, strerror(ENAMETOOLONG), (char *)NULL);
}

static int g_files_found;
static int count_file(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s;
    (void)f;
    if (flag == FTW_F || flag == FTW_SL) {
        fprintf(stderr, "found %.80s... (%zu bytes)\n", p, strlen(p));
        g_files_found++;
    }
    return 0;
}
static int remove_entry(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s;
    (void)flag;
    (void)f;
    return remove(p);
}

static void test_trace_long_name(void **state) {
    (void)state;
    snprintf(g_long_root, sizeof g_long_root, "%s.long", g_trace);
    nftw(g_long_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    enum { LEN = 5000 };
    char *path = malloc(LEN + 1);
    assert_non_null(path);
    size_t n = (size_t)snprintf(path, LEN + 1, "%s", g_long_root);
    assert_int_equal(mkdir(path, 0700), 0);
    while (n + 201 < LEN) { /* directories of 200 bytes' names, made while they fit a path */
        path[n++] = '/';
        memset(path + n, 'd', 200);
        n += 200;
        path[n] = 0;
        if (n < 4095) assert_int_equal(mkdir(path, 0700), 0);
    }
    path[n++] = '/';
    memset(path + n, 'f', LEN - n);
    path[LEN] = 0;
    assert_int_equal(strlen(path), LEN);
    int r = run_child("--long-path", path);
    g_files_found = 0;
    assert_int_equal(nftw(g_long_root, count_file, 16, FTW_PHYS), 0);
    nftw(g_long_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(path);
    assert_int_equal(r, 0);
    assert_int_equal(g_files_found, 0);
}

/* Writes that fail (the file size limit, its signal ignored): the first
 * failure is logged once, the file is no longer written, and the traced
 * calls go on working while the 16 records fill up again and again. The
 * file is left a valid document: the spans of the last complete write. */
static int write_fails_child(const char *path) {
    child_start(path);
    ka_device dev;
    ka_queue q;
    ka_program p;
    ka_kernel k;
    ka_buffer out;
    if (ka_device_open(NULL, &dev) || ka_queue_create(dev, NULL, &q) || ka_program_build(dev, src, NULL, &p) ||
        ka_kernel_get(p, "spin", NULL, &k) || ka_buffer_create(dev, 4096, &out))
        return 1;
    ka_arg a[] = {ka_arg_buffer(out), ka_arg_u32(4)};
    /* Launches before the limit: the kernel is built and cached for both of
     * PoCL's routes (the first launches time both), files the limit would stop. */
    const int warm = 8, launches = 208;
    for (int i = 0; i < launches; i++) {
        if (i == warm) {
            struct rlimit rl;
            if (signal(SIGXFSZ, SIG_IGN) == SIG_ERR || getrlimit(RLIMIT_FSIZE, &rl)) return 1;
            rl.rlim_cur = 4096;
            if (setrlimit(RLIMIT_FSIZE, &rl)) return 1;
        }
        ka_event ev;
        ka_status st = ka_launch(q, k, &(ka_range){.dims = 1, .size = {1024}}, a, 2, &ev);
        if (st == KA_OK) st = ka_event_wait(ev, KA_WAIT_FOREVER);
        if (st == KA_OK) st = ka_event_release(ev);
        if (st != KA_OK) {
            fprintf(stderr, "launch %d: %s\n", i, ka_status_name(st));
            return 1;
        }
    }
    if (ka_buffer_release(out) || ka_program_release(p) || ka_queue_release(q) || ka_device_close(dev)) return 1;
    struct stat s;
    if (stat(path, &s) || s.st_size > 4096) return 1;
    return one_message("write failure", "KA_TRACE", path, strerror(EFBIG), "holds the spans written before",
                       (char *)NULL);
}

static void test_trace_write_fails(void **state) {
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s.full", g_trace);
    int r = run_child("--write-fails", path);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 %s %s", KA_TRACE_CHECK, path);
    int valid = system(cmd);
    unlink(path);
    assert_int_equal(r, 0);
    assert_int_equal(valid, 0);
}

int main(int argc, char **argv) {
    ssize_t n = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
    if (n <= 0) return 1;
    g_self[n] = 0;
    if (argc > 1 && !strcmp(argv[1], "--exit-without-close")) return exit_without_close();
    if (argc > 2 && !strcmp(argv[1], "--fifo")) return fifo_child(argv[2]);
    if (argc > 2 && !strcmp(argv[1], "--device-file")) return device_file_child(argv[2]);
    if (argc > 2 && !strcmp(argv[1], "--long-path")) return long_path_child(argv[2]);
    if (argc > 2 && !strcmp(argv[1], "--write-fails")) return write_fails_child(argv[2]);
    snprintf(g_trace, sizeof g_trace, "%s/test_trace_%d.json", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    /* Both before the first device opens: tracing is chosen there. */
    setenv("KA_TRACE", g_trace, 1);
    setenv("KA_TRACE_BUFFER", "16", 1);
    ka_set_tracer(tracer, &g_begins);
    heap_install();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elapsed),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_trace_no_alloc),
        cmocka_unit_test(test_trace_at_exit),
        cmocka_unit_test(test_trace_fifo),
        cmocka_unit_test(test_trace_dev_full),
        cmocka_unit_test(test_trace_long_name),
        cmocka_unit_test(test_trace_write_fails),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(g_trace);
    return r;
}
