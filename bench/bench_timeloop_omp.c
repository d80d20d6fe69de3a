/* The OpenMP loop of ka-bench timeloop, as a user would write it: one
 * `parallel for` over the rows per time step. The only source of ka-bench
 * built with OpenMP's flags. */
#include "bench_timeloop.h"

#ifdef _OPENMP
#include <omp.h>
#endif

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
