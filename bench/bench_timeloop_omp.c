/* The reference loops of ka-bench timeloop, as a user would write them:
 * serial, and one OpenMP `parallel for` over the rows per time step. Built
 * with OpenMP's flags and -O3 -ffp-contract=off whatever the build type,
 * and on x86-64 as function clones for the best vector ISA the running CPU
 * has (x86-64-v4: AVX-512; v3: AVX2; the baseline), chosen when the
 * program loads: the host back-end compiles kernels -march=native on the
 * machine that runs them, and the binary may have been built elsewhere. */
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

BEST_ISA static void heat_row_best(float *restrict dst, const float *restrict src, size_t n, size_t y) {
    heat_row(dst, src, n, y);
}

void timeloop_serial(float *a, float *b, size_t n, int steps) {
    for (int s = 0; s < steps; s++) {
        float *dst = s & 1 ? a : b;
        const float *src = s & 1 ? b : a;
        for (size_t y = 0; y < n; y++) heat_row_best(dst, src, n, y);
    }
}

void timeloop_omp(float *a, float *b, size_t n, int steps) {
    for (int s = 0; s < steps; s++) {
        float *dst = s & 1 ? a : b;
        const float *src = s & 1 ? b : a;
#pragma omp parallel for schedule(static)
        for (size_t y = 0; y < n; y++) heat_row_best(dst, src, n, y);
    }
}
