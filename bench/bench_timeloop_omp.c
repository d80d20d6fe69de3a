/* The reference loops of ka-bench timeloop, as a user would write them:
 * serial, and one OpenMP `parallel for` over the rows per time step. Built
 * with OpenMP's flags and, where the compiler takes them, the code flags
 * libka's host back-end gives kernels (-O3 -march=native
 * -ffp-contract=off), whatever the build type: libka is compared with
 * the loops compiled as well as its kernels are. */
#include "bench_timeloop.h"

#ifdef _OPENMP
#include <omp.h>
#endif

void timeloop_serial(float *a, float *b, size_t n, int steps) {
    for (int s = 0; s < steps; s++) {
        float *dst = s & 1 ? a : b;
        const float *src = s & 1 ? b : a;
        for (size_t y = 0; y < n; y++) heat_row(dst, src, n, y);
    }
}

void timeloop_omp(float *a, float *b, size_t n, int steps) {
    for (int s = 0; s < steps; s++) {
        float *dst = s & 1 ? a : b;
        const float *src = s & 1 ? b : a;
#pragma omp parallel for schedule(static)
        for (size_t y = 0; y < n; y++) heat_row(dst, src, n, y);
    }
}

int timeloop_omp_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 0;
#endif
}
