/* ka-bench timeloop: the heat equation's time step, shared by the serial C
 * loop and the OpenMP loop (both in bench_timeloop_omp.c, built with OpenMP's
 * and the reference's own flags), and written the same way in libka's kernel. A
 * 5-point average: u' = (u + left + right + up + down) * 0.2, the explicit
 * heat step at dt = h^2 / 5, boundary cells held. One multiplication, last:
 * no multiply-add for a compiler to contract, so the three results are equal
 * bit for bit whatever -ffp-contract or FP_CONTRACT say. */
#ifndef KA_BENCH_TIMELOOP_H
#define KA_BENCH_TIMELOOP_H
#include <stddef.h>

/* Row y of an n x n grid, n >= 3. */
static inline void heat_row(float *restrict dst, const float *restrict src, size_t n, size_t y) {
    size_t r = y * n;
    if (y == 0 || y == n - 1) {
        for (size_t x = 0; x < n; x++) dst[r + x] = src[r + x];
        return;
    }
    dst[r] = src[r];
    for (size_t i = r + 1; i < r + n - 1; i++)
        dst[i] = ((((src[i] + src[i - 1]) + src[i + 1]) + src[i - n]) + src[i + n]) * 0.2f; /* as the kernel */
    dst[r + n - 1] = src[r + n - 1];
}

/* The serial loop: `steps` steps as timeloop_omp, in one thread. */
void timeloop_serial(float *a, float *b, size_t n, int steps);
/* `steps` steps from a into b and back (ping-pong); the result is in a when
 * steps is even, else in b. */
void timeloop_omp(float *a, float *b, size_t n, int steps);
#endif
