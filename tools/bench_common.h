/* Shared helpers of the `ka bench` commands. */
#ifndef KA_BENCH_COMMON_H
#define KA_BENCH_COMMON_H
#include <ka.h>
#include <stddef.h>
#include <stdint.h>

int64_t bench_now_ns(void);
double bench_median(double *v, int n);
double bench_min(const double *v, int n);
double bench_max(const double *v, int n);
/* Allocation counter installed through ka_set_allocator. */
void bench_count_allocs(int on);
uint64_t bench_allocs(void);

/* The raw OpenCL device behind an "opencl:N" selector (libka's flat order),
 * and the build options libka uses for it, so raw loops run the same code. */
struct _cl_device_id;
struct _cl_device_id *bench_cl_device(const char *selector);
const char *bench_cl_options(struct _cl_device_id *dev);

int bench_launch_main(int argc, char **argv);
int bench_wait_main(int argc, char **argv);
int bench_route_main(int argc, char **argv);
int bench_compile_main(int argc, char **argv);
int bench_saxpy_main(int argc, char **argv);
#endif
