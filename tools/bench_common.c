#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>

#include "bench_common.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- option parsing ------------------------------------------------------ */
void cli_init(cli *c, const char *cmd, const char *usage, int argc, char **argv, const char *shortopts,
              const struct option *longopts) {
    memset(c, 0, sizeof *c);
    c->cmd = cmd;
    c->usage = usage;
    c->argc = argc;
    c->argv = argv;
    c->longopts = longopts;
    /* '-': arguments that are not options come back in order (CLI_ARG), also
     * under POSIXLY_CORRECT; ':': a missing value is told from an unknown option. */
    snprintf(c->shortopts, sizeof c->shortopts, "-:%s", shortopts);
    opterr = 0; /* cli_next reports, naming the option */
    optind = 0; /* glibc: start afresh */
}

int cli_error(const cli *c, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", c->cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help'.\n", c->cmd);
    return KA_EXIT_USAGE;
}

int cli_help(const cli *c) {
    fputs(c->usage, stdout);
    return fflush(stdout) ? KA_EXIT_FAIL : 0;
}

/* How many long options start with the name in `given` ("--name[=value]"). */
static int long_matches(const cli *c, const char *given) {
    size_t len = strcspn(given + 2, "=");
    int n = 0;
    for (const struct option *o = c->longopts; o->name; o++) n += !strncmp(o->name, given + 2, len);
    return n;
}

int cli_next(cli *c, const char **arg) {
    *arg = NULL;
    if (c->done) { /* after "--": all that is left are arguments */
        if (optind >= c->argc) return CLI_END;
        *arg = c->argv[optind++];
        return CLI_ARG;
    }
    int li = -1;
    int r = getopt_long(c->argc, c->argv, c->shortopts, c->longopts, &li);
    const char *given = optind >= 1 && optind <= c->argc ? c->argv[optind - 1] : "";
    int is_long = !strncmp(given, "--", 2);
    int glen = (int)strcspn(given, "=");
    switch (r) {
    case -1:
        c->done = 1;
        return cli_next(c, arg);
    case 1:
        *arg = optarg;
        return CLI_ARG;
    case ':':
        if (is_long) return cli_error(c, "option '%.*s' needs a value", glen, given), CLI_ERROR;
        return cli_error(c, "option '-%c' needs a value", optopt), CLI_ERROR;
    case '?':
        if (is_long && optopt) return cli_error(c, "option '%.*s' takes no value", glen, given), CLI_ERROR;
        if (is_long && long_matches(c, given) > 1)
            return cli_error(c, "option '%.*s' is ambiguous", glen, given), CLI_ERROR;
        if (is_long || !optopt) return cli_error(c, "unknown option '%.*s'", glen, given), CLI_ERROR;
        return cli_error(c, "unknown option '-%c'", optopt), CLI_ERROR;
    default:
        if (li >= 0) snprintf(c->name, sizeof c->name, "--%s", c->longopts[li].name);
        else snprintf(c->name, sizeof c->name, "-%c", r);
        *arg = optarg;
        return r;
    }
}

int cli_u64(const cli *c, const char *v, uint64_t min, uint64_t max, uint64_t *out) {
    const char *why = NULL;
    unsigned long long x = 0;
    if (!v || !*v) {
        why = "is empty";
        v = "";
    } else if (v[0] == '-' && isdigit((unsigned char)v[1])) {
        why = "is negative";
    } else {
        int hex = v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
        const char *d = hex ? v + 2 : v, *p = d;
        while (hex ? isxdigit((unsigned char)*p) : isdigit((unsigned char)*p)) p++;
        if (p == d || *p) {
            why = "is not an integer";
        } else {
            char *end;
            errno = 0;
            x = strtoull(d, &end, hex ? 16 : 10);
            if (errno == ERANGE || *end || x < min || x > max) why = "is out of range";
        }
    }
    if (why) {
        cli_error(c, "%s: '%s' %s (expected an integer from %llu to %llu)", c->name, v, why, (unsigned long long)min,
                  (unsigned long long)max);
        return -1;
    }
    *out = x;
    return 0;
}

int cli_int(const cli *c, const char *v, int min, int max, int *out) {
    uint64_t x;
    if (min < 0 || cli_u64(c, v, (uint64_t)min, (uint64_t)max, &x)) return -1;
    *out = (int)x;
    return 0;
}

int64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median(double *v, int n) {
    double *t = malloc(sizeof *t * (size_t)n);
    memcpy(t, v, sizeof *t * (size_t)n);
    qsort(t, (size_t)n, sizeof *t, cmp);
    double m = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    free(t);
    return m;
}
double bench_min(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}
double bench_max(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] > m ? v[i] : m;
    return m;
}

static _Atomic uint64_t allocs;
static void *count_alloc(size_t n, void *u) {
    (void)u;
    atomic_fetch_add(&allocs, 1);
    return malloc(n);
}
static void count_free(void *p, size_t n, void *u) {
    (void)n;
    (void)u;
    free(p);
}
void bench_count_allocs(int on) {
    static const ka_allocator a = {count_alloc, count_free, NULL};
    ka_set_allocator(on ? &a : NULL);
}
uint64_t bench_allocs(void) { return atomic_load(&allocs); }

cl_device_id bench_cl_device(const char *selector) {
    unsigned idx;
    if (sscanf(selector, "opencl:%u", &idx) != 1) return NULL;
    cl_platform_id plats[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS) return NULL;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        cl_device_id ds[16];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, ds, &nd) != CL_SUCCESS) continue;
        if (idx < nd) return ds[idx];
        idx -= nd;
    }
    return NULL;
}

const char *bench_cl_options(cl_device_id dev) {
    static char opts[96];
    char ver[64] = "";
    int maj = 1, min = 2;
    clGetDeviceInfo(dev, CL_DEVICE_OPENCL_C_VERSION, sizeof ver, ver, NULL);
    sscanf(ver, "OpenCL C %d.%d", &maj, &min);
    snprintf(opts, sizeof opts, "-cl-std=CL%d.%d -cl-kernel-arg-info", maj, min);
    return opts;
}
