/* The reference loops of ka-bench timeloop, as a user would write them:
 * serial, and one OpenMP `parallel for` over the rows (2-D: n, 3-D: n^2 of
 * them) per time step. Built
 * with OpenMP's flags and -O3 -ffp-contract=off whatever the build type,
 * and on x86-64 as function clones for the best vector ISA the running CPU
 * has (x86-64-v4: AVX-512; v3: AVX2; the baseline), chosen when the
 * program loads: the host back-end compiles kernels -march=native on the
 * machine that runs them, and the binary may have been built elsewhere.
 * The same for the multi-kernel step (--kernels 6): one loop over the rows
 * per kernel. */
#include "bench_timeloop.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define KA_BENCH_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define KA_BENCH_SANITIZED 1
#endif
/* Not in sanitizer builds: the clones' resolver runs while the program is
 * relocated, before ThreadSanitizer's runtime is up, and crashes there. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(KA_BENCH_SANITIZED)
#define BEST_ISA __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define BEST_ISA
#endif

/* Row `row` of the grid: 2-D its y, 3-D z * n + y. */
BEST_ISA static void heat_row_best(float *restrict dst, const float *restrict src, size_t n, int dims, size_t row) {
    if (dims == 3) heat3_row(dst, src, n, row % n, row / n);
    else heat_row(dst, src, n, row);
}

void timeloop_serial(float *a, float *b, size_t n, int dims, int steps) {
    size_t rows = dims == 3 ? n * n : n;
    for (int s = 0; s < steps; s++) {
        float *dst = s & 1 ? a : b;
        const float *src = s & 1 ? b : a;
        for (size_t r = 0; r < rows; r++) heat_row_best(dst, src, n, dims, r);
    }
}

void timeloop_omp(float *a, float *b, size_t n, int dims, int steps) {
    size_t rows = dims == 3 ? n * n : n;
    for (int s = 0; s < steps; s++) {
        float *dst = s & 1 ? a : b;
        const float *src = s & 1 ? b : a;
#pragma omp parallel for schedule(static)
        for (size_t r = 0; r < rows; r++) heat_row_best(dst, src, n, dims, r);
    }
}

BEST_ISA static void sw_row_best(float *g[SW_ARRAYS], int kernel, int src, size_t n, size_t y) {
    int dst = src ^ 1;
    switch (kernel) {
    case 0: sw_fx_row(g[SW_FX], g[SW_H(src)], g[SW_U(src)], n, y); break;
    case 1: sw_fy_row(g[SW_FY], g[SW_H(src)], g[SW_V(src)], n, y); break;
    case 2: sw_h_row(g[SW_HT], g[SW_H(src)], g[SW_FX], g[SW_FY], n, y); break;
    case 3: sw_u_row(g[SW_U(dst)], g[SW_U(src)], g[SW_FX], g[SW_HT], n, y); break;
    case 4: sw_v_row(g[SW_V(dst)], g[SW_V(src)], g[SW_FY], g[SW_HT], n, y); break;
    default: heat_row(g[SW_H(dst)], g[SW_HT], n, y); break;
    }
}

void sw_serial(float *g[SW_ARRAYS], size_t n, int steps) {
    for (int s = 0; s < steps; s++)
        for (int k = 0; k < 6; k++)
            for (size_t y = 0; y < n; y++) sw_row_best(g, k, s & 1, n, y);
}

void sw_omp(float *g[SW_ARRAYS], size_t n, int steps) {
    for (int s = 0; s < steps; s++)
        for (int k = 0; k < 6; k++) {
#pragma omp parallel for schedule(static)
            for (size_t y = 0; y < n; y++) sw_row_best(g, k, s & 1, n, y);
        }
}
