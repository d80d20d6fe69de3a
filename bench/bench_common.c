/* Helpers of the benchmarks (bench_common.h). */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>

#include "bench_common.h"

#include <errno.h>
#include <limits.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int bench_option(const cli *c, int r, const char *arg, bench_opts *o) {
    switch (r) {
    case 'd': o->sel = arg; return -1;
    case 'i': return cli_int(c, arg, 1, INT_MAX, &o->iters) ? KA_EXIT_USAGE : -1;
    case 'r': return cli_int(c, arg, 1, BENCH_MAX_REPS, &o->reps) ? KA_EXIT_USAGE : -1;
    case 'j': o->json = 1; return -1;
    default: return cli_default(c, r, arg);
    }
}

void bench_quiet(void) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
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

const char *bench_cl_options(cl_device_id dev) {
    static char opts[96];
    char ver[64] = "";
    int maj = 1, min = 2;
    clGetDeviceInfo(dev, CL_DEVICE_OPENCL_C_VERSION, sizeof ver, ver, NULL);
    sscanf(ver, "OpenCL C %d.%d", &maj, &min);
    snprintf(opts, sizeof opts, "-cl-std=CL%d.%d -cl-kernel-arg-info", maj, min);
    return opts;
}
