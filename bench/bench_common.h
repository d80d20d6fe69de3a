/* Helpers of the `ka-bench` benchmarks: timing, statistics, allocation
 * counting, raw OpenCL device lookup; options are parsed with cli.h. */
#ifndef KA_BENCH_COMMON_H
#define KA_BENCH_COMMON_H
#include <ka.h>
#include <stddef.h>
#include <stdint.h>

#include "bench_list.h"
#include "cli.h"

/* The most repetitions a benchmark takes (each keeps a few doubles). */
#define BENCH_MAX_REPS 100000

int64_t bench_now_ns(void);
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
