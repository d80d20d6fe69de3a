/* OpenMP references of ka-bench that are not a time loop: a copy split
 * over all threads, the bandwidth a C user's threaded code gets. Built with
 * OpenMP's flags; without OpenMP the copy is serial. */
#include "bench_common.h"

#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

void bench_omp_copy(void *dst, const void *src, size_t bytes) {
#pragma omp parallel
    {
#ifdef _OPENMP
        size_t t = (size_t)omp_get_thread_num(), n = (size_t)omp_get_num_threads();
#else
        size_t t = 0, n = 1;
#endif
        size_t lo = bytes * t / n & ~(size_t)63, hi = t + 1 == n ? bytes : bytes * (t + 1) / n & ~(size_t)63;
        if (hi > lo) memcpy((char *)dst + lo, (const char *)src + lo, hi - lo);
    }
}

double bench_omp_region_ns(int iters) {
    int64_t t0 = bench_now_ns();
    for (int i = 0; i < iters; i++) {
#pragma omp parallel
        {
            __asm__ __volatile__("" ::: "memory"); /* a region with nothing in it, kept */
        }
    }
    return (double)(bench_now_ns() - t0) / iters;
}

int bench_omp_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 0;
#endif
}
