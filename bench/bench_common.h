/* Helpers of the `ka-bench` benchmarks: the options they share, timing,
 * statistics, allocation counting, raw OpenCL build options; options are
 * parsed with cli.h. */
#ifndef KA_BENCH_COMMON_H
#define KA_BENCH_COMMON_H
#include <ka.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h> /* BENCH_CHECK */

#include "bench_list.h"
#include "cli.h"

/* The most repetitions a benchmark takes (each keeps a few doubles). */
#define BENCH_MAX_REPS 100000

/* The options benchmarks share. A benchmark lists the ones it takes in its
 * long options (BENCH_OPT_*, then BENCH_OPT_END) and passes every option its
 * own switch does not take to bench_option. */
typedef struct bench_opts {
    const char *sel; /* --device SEL */
    int iters;       /* --iterations N, 1 to INT_MAX */
    int reps;        /* --reps R, 1 to BENCH_MAX_REPS */
    int json;        /* --json */
} bench_opts;
#define BENCH_OPT_DEVICE {"device", required_argument, NULL, 'd'}
#define BENCH_OPT_ITERATIONS {"iterations", required_argument, NULL, 'i'}
#define BENCH_OPT_REPS {"reps", required_argument, NULL, 'r'}
#define BENCH_OPT_JSON {"json", no_argument, NULL, 'j'}
#define BENCH_OPT_END {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}
/* -1 when r was a shared option (taken into *o), else the exit status: a
 * bad value (KA_EXIT_USAGE), or cli_default's for anything else. */
int bench_option(const cli *c, int r, const char *arg, bench_opts *o);

/* A libka call in a benchmark's main: on failure, prints "ka-bench NAME:
 * the call: the detail" and returns KA_EXIT_FAIL. */
#define BENCH_CHECK(name, call)                                                              \
    do {                                                                                     \
        if ((call) != KA_OK) {                                                               \
            fprintf(stderr, "ka-bench " name ": %s: %s\n", #call, ka_last_error());        \
            return KA_EXIT_FAIL;                                                             \
        }                                                                                    \
    } while (0)

int64_t bench_now_ns(void);
/* memcpy split over OpenMP's threads, in 64-byte-aligned slabs (bench_omp.c). */
void bench_omp_copy(void *dst, const void *src, size_t bytes);
/* ns per empty `#pragma omp parallel` region, over iters of them; the threads
 * an OpenMP region uses, 0 when built without OpenMP (regions are then serial). */
double bench_omp_region_ns(int iters);
int bench_omp_threads(void);
/* Sleeps 50 ms: long enough for spinning idle threads (libgomp's, libka's
 * pool) to go to sleep before the next timed run. */
void bench_quiet(void);
double bench_median(double *v, int n);
double bench_min(const double *v, int n);
double bench_max(const double *v, int n);
/* Allocation counter installed through ka_set_allocator. */
void bench_count_allocs(int on);
uint64_t bench_allocs(void);

/* The build options libka uses for a raw OpenCL device, so raw loops run the same code. */
struct _cl_device_id;
const char *bench_cl_options(struct _cl_device_id *dev);

/* Each benchmark's entry: argv[0] is its name ("launch"); the options follow. */
#define BENCH_DECLARE(name, entry, summary) int entry(int argc, char **argv);
BENCH_LIST(BENCH_DECLARE)
#undef BENCH_DECLARE
#endif
