/* ka-bench compile: what the persistent kernel cache saves a new process.
 *
 * Each measurement is a fresh process (this program re-run with --child
 * through posix_spawn), which opens the device (not timed), then times
 * ka_program_build and, separately, the first result: ka_kernel_get + a
 * launch of 2^20 work-items + its wait (PoCL generates the work-group code
 * at the first launch). Per repetition, with fresh directories, in order:
 *   cold    libka's cache empty, the driver's (PoCL's) cache empty: a compile
 *   driver  libka's cache off (KA_CACHE=0), PoCL's cache as `cold` left it:
 *           what a second process got before libka had a cache
 *   second  both caches as `cold` left them: a second process by default
 *   warm    libka's cache filled, PoCL's cache empty: libka's cache alone
 *   steady  both caches as `warm` left them: every later process
 * PoCL's cache is pointed at a temporary directory (POCL_CACHE_DIR), so the
 * user's own caches are neither used nor touched. On CUDA the PoCL variables
 * change nothing: `driver` is a compile, like `cold`. Medians over --reps. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

extern char **environ;

static const char *src =
    "KA_KERNEL(saxpy, KA_GLOBAL float *y, KA_GLOBAL const float *x, float a) {\n"
    "    if (!ka_in_range()) return;\n"
    "    size_t i = ka_global_id(0);\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n"
    "KA_KERNEL(block_sum, KA_GLOBAL float *out, KA_GLOBAL const float *in, KA_LOCAL_ARG(float) tmp) {\n"
    "    size_t l = ka_local_id(0), n = ka_group_size(0);\n"
    "    tmp[l] = ka_in_range() ? in[ka_global_id(0)] : 0.0f;\n"
    "    ka_barrier();\n"
    "    for (size_t s = n / 2; s > 0; s /= 2) {\n"
    "        if (l < s) tmp[l] += tmp[l + s];\n"
    "        ka_barrier();\n"
    "    }\n"
    "    if (l == 0) out[ka_group_id(0)] = tmp[0];\n"
    "}\n"
    "KA_KERNEL(stencil, KA_GLOBAL float *out, KA_GLOBAL const float *in, uint w, uint h) {\n"
    "    if (!ka_in_range()) return;\n"
    "    uint x = (uint)ka_global_id(0), y = (uint)ka_global_id(1);\n"
    "    if (x == 0 || y == 0 || x + 1 >= w || y + 1 >= h) { out[y * w + x] = in[y * w + x]; return; }\n"
    "    out[y * w + x] = 0.2f * (in[y * w + x] + in[y * w + x - 1] + in[y * w + x + 1] +\n"
    "                             in[(y - 1) * w + x] + in[(y + 1) * w + x]);\n"
    "}\n";

#define N (1u << 20)

/* ---- child: one measurement --------------------------------------------- */
static int child(const char *sel) {
    ka_device dev;
    ka_queue q;
    ka_buffer x, y;
    ka_queue_config off = {.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF};
    if (ka_device_open(sel, &dev) || ka_queue_create(dev, &off, &q) || ka_buffer_create(dev, N * 4, &x) ||
        ka_buffer_create(dev, N * 4, &y)) {
        fprintf(stderr, "ka-bench compile: %s\n", ka_last_error());
        return 1;
    }
    float one = 1.0f, two = 2.0f;
    ka_buffer_fill(q, x, 0, &one, 4, N * 4, NULL);
    ka_buffer_fill(q, y, 0, &two, 4, N * 4, NULL);
    ka_queue_finish(q);
    ka_program p;
    ka_kernel k;
    int64_t t0 = bench_now_ns();
    ka_status st = ka_program_build(dev, src, NULL, &p);
    int64_t t1 = bench_now_ns();
    if (st != KA_OK) {
        fprintf(stderr, "ka-bench compile: build: %s\n", ka_last_error());
        return 1;
    }
    ka_arg args[] = {ka_arg_buffer(y), ka_arg_buffer(x), ka_arg_f32(3.0f)};
    ka_range r = {.dims = 1, .size = {N}};
    ka_event ev;
    if (ka_kernel_get(p, "saxpy", NULL, &k) || ka_launch(q, k, &r, args, 3, &ev) ||
        ka_event_wait(ev, KA_WAIT_FOREVER)) {
        fprintf(stderr, "ka-bench compile: first launch: %s\n", ka_last_error());
        return 1;
    }
    int64_t t2 = bench_now_ns();
    ka_event_release(ev);
    float out[4];
    ka_buffer_read(q, out, y, (N - 4) * 4, sizeof out);
    for (int i = 0; i < 4; i++)
        if (out[i] != 5.0f) {
            fprintf(stderr, "ka-bench compile: wrong result %g\n", out[i]);
            return 1;
        }
    uint32_t hits = 0;
    ka_program_cache_hits(p, &hits);
    const ka_device_info *di;
    ka_device_get_info(dev, &di);
    printf("child build_ns=%lld first_ns=%lld hits=%u device=%s\n", (long long)(t1 - t0), (long long)(t2 - t1), hits,
           di->name);
    ka_program_release(p);
    ka_buffer_release(x);
    ka_buffer_release(y);
    ka_queue_release(q);
    ka_device_close(dev);
    return 0;
}

/* ---- parent ------------------------------------------------------------- */
typedef struct result {
    double build_ms, first_ms;
    unsigned hits;
    char device[128];
} result;

static bool overridden(const char *e) {
    static const char *const names[] = {"KA_CACHE=", "KA_CACHE_DIR=", "POCL_CACHE_DIR=", "POCL_KERNEL_CACHE="};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strncmp(e, names[i], strlen(names[i]))) return true;
    return false;
}

/* Runs `ka-bench compile --child` with the given caches; 0 on success. */
static int measure(const char *sel, const char *ka_dir, bool ka_on, const char *pocl_dir, result *res) {
    size_t n = 0;
    while (environ[n]) n++;
    char **envp = calloc(n + 5, sizeof *envp);
    char e_on[32], e_dir[1100], e_pocl[1100];
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!overridden(environ[i])) envp[m++] = environ[i];
    snprintf(e_on, sizeof e_on, "KA_CACHE=%d", ka_on);
    snprintf(e_dir, sizeof e_dir, "KA_CACHE_DIR=%s", ka_dir);
    snprintf(e_pocl, sizeof e_pocl, "POCL_CACHE_DIR=%s", pocl_dir);
    envp[m++] = e_on;
    envp[m++] = e_dir;
    envp[m++] = e_pocl;
    envp[m++] = "POCL_KERNEL_CACHE=1";
    char *argv[] = {"ka-bench", "compile", "--child", "--device", (char *)(sel ? sel : ""), NULL};
    int fds[2];
    if (pipe(fds) != 0) {
        free(envp);
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    pid_t pid;
    int err = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    close(fds[1]);
    if (err) {
        close(fds[0]);
        fprintf(stderr, "ka-bench compile: posix_spawn: %s\n", strerror(err));
        return -1;
    }
    char buf[512] = "";
    size_t got = 0;
    ssize_t r;
    while (got < sizeof buf - 1 && (r = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0) got += (size_t)r;
    buf[got] = 0;
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    long long b = 0, f = 0;
    const char *line = strstr(buf, "child ");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !line ||
        sscanf(line, "child build_ns=%lld first_ns=%lld hits=%u device=%127[^\n]", &b, &f, &res->hits, res->device) != 4) {
        fprintf(stderr, "ka-bench compile: the measuring process failed\n");
        return -1;
    }
    res->build_ms = (double)b / 1e6;
    res->first_ms = (double)f / 1e6;
    return 0;
}

static int rm_entry(const char *path, const struct stat *s, int flag, struct FTW *ftw) {
    (void)s;
    (void)flag;
    (void)ftw;
    return remove(path);
}

enum { COLD, DRIVER, SECOND, WARM, STEADY, NMODES };
static const char *const mode_names[NMODES] = {"cold", "driver", "second", "warm", "steady"};

static const char usage[] =
    "usage: ka-bench compile [--device SEL] [--reps R] [--json] [--keep]\n"
    "  Each mode is a new process; times ka_program_build and the first launch + wait.\n"
    "  cold: libka's and PoCL's caches empty; driver: libka's off, PoCL's as cold left it;\n"
    "  second: both as cold left them; warm: libka's filled, PoCL's empty; steady: both filled.\n"
    "  --reps R   repetitions, 1 to 32 (default 3)\n"
    "  --keep     keep the cache directories (under $TMPDIR, else /tmp)\n";

int bench_compile_main(int argc, char **argv) {
    /* --child: the measuring process this command starts (not for users). */
    static const struct option lo[] = {BENCH_OPT_DEVICE, BENCH_OPT_REPS, BENCH_OPT_JSON,
                                       {"keep", no_argument, NULL, 'k'}, {"child", no_argument, NULL, 'C'},
                                       BENCH_OPT_END};
    bench_opts o = {.reps = 3};
    int is_child = 0, keep = 0;
    cli c;
    cli_init(&c, "ka-bench compile", usage, argc, argv, "h", lo);
    const char *arg;
    for (int r; (r = cli_next(&c, &arg)) != CLI_END;) {
        int st;
        switch (r) {
        case 'r': /* each repetition is two processes: fewer than elsewhere */
            if (cli_int(&c, arg, 1, 32, &o.reps)) return KA_EXIT_USAGE;
            break;
        case 'k': keep = 1; break;
        case 'C': is_child = 1; break;
        default:
            if ((st = bench_option(&c, r, arg, &o)) >= 0) return st;
        }
    }
    const char *sel = o.sel;
    int reps = o.reps, json = o.json;
    if (sel && !*sel) sel = NULL;
    if (is_child) return child(sel);
    const char *tmp = getenv("TMPDIR");
    char root[512];
    snprintf(root, sizeof root, "%s/ka-bench-compile-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root)) {
        fprintf(stderr, "ka-bench compile: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    double build[NMODES][32], first[NMODES][32], total[NMODES][32];
    unsigned hits[NMODES] = {0};
    char device[128] = "";
    int rc = 0;
    for (int rep = 0; rep < reps && !rc; rep++) {
        char ka_dir[600], pa[600], pb[600];
        snprintf(ka_dir, sizeof ka_dir, "%s/%d/libka", root, rep);
        snprintf(pa, sizeof pa, "%s/%d/pocl-a", root, rep);
        snprintf(pb, sizeof pb, "%s/%d/pocl-b", root, rep);
        char d[600];
        snprintf(d, sizeof d, "%s/%d", root, rep);
        mkdir(d, 0700);
        mkdir(pa, 0700);
        mkdir(pb, 0700);
        /* cold fills libka's cache and pocl-a; warm fills pocl-b */
        struct {
            bool ka_on;
            const char *pocl;
        } run[NMODES] = {{true, pa}, {false, pa}, {true, pa}, {true, pb}, {true, pb}};
        for (int m = 0; m < NMODES && !rc; m++) {
            result r;
            if (measure(sel, ka_dir, run[m].ka_on, run[m].pocl, &r)) {
                rc = 1;
                break;
            }
            build[m][rep] = r.build_ms;
            first[m][rep] = r.first_ms;
            total[m][rep] = r.build_ms + r.first_ms;
            hits[m] = r.hits;
            snprintf(device, sizeof device, "%s", r.device);
        }
    }
    if (!keep) nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (rc) return rc;
    double mb[NMODES], mf[NMODES], mt[NMODES];
    for (int m = 0; m < NMODES; m++) {
        mb[m] = bench_median(build[m], reps);
        mf[m] = bench_median(first[m], reps);
        mt[m] = bench_median(total[m], reps);
    }
    if (json) {
        printf("{\"device\":\"%s\",\"reps\":%d,\"cold_ms\":%.3f,\"warm_ms\":%.3f,\"speedup\":%.2f", device, reps, mt[COLD],
               mt[WARM], mt[COLD] / mt[WARM]);
        for (int m = 0; m < NMODES; m++)
            printf(",\"%s_build_ms\":%.3f,\"%s_first_launch_ms\":%.3f,\"%s_total_ms\":%.3f,\"%s_cache_hits\":%u",
                   mode_names[m], mb[m], mode_names[m], mf[m], mode_names[m], mt[m], mode_names[m], hits[m]);
        printf("}\n");
    } else {
        printf("ka-bench compile on %s: new process each, median of %d (ms)\n", device, reps);
        printf("%-8s %12s %14s %10s %6s  %s\n", "mode", "build", "first launch", "total", "hits", "caches");
        static const char *const what[NMODES] = {
            "libka empty, PoCL empty (a compile)", "libka off, PoCL as cold left it (no libka cache)",
            "libka and PoCL as cold left them (a second process)", "libka filled, PoCL empty (libka's cache alone)",
            "libka and PoCL as warm left them (every later process)"};
        for (int m = 0; m < NMODES; m++)
            printf("%-8s %12.2f %14.2f %10.2f %6u  %s\n", mode_names[m], mb[m], mf[m], mt[m], hits[m], what[m]);
        printf("warm (libka's cache alone) against cold: %.1fx faster to the first result (build: %.1fx);\n"
               "steady against driver (PoCL's cache alone): %.1fx\n",
               mt[COLD] / mt[WARM], mb[COLD] / mb[WARM], mt[DRIVER] / mt[STEADY]);
    }
    return 0;
}
