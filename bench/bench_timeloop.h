/* ka-bench timeloop: the heat equation's time step, shared by the serial C
 * loop and the OpenMP loop (both in bench_timeloop_omp.c, built with OpenMP's
 * and the reference's own flags), and written the same way in libka's kernel
 * and the raw CUDA one. 2-D: a 5-point average, u' = (u + left + right + up +
 * down) * 0.2, the explicit heat step at dt = h^2 / 5; 3-D: a 7-point one,
 * u' = (u + x-1 + x+1 + y-1 + y+1 + z-1 + z+1) * 0.14285715 (1/7); boundary
 * cells held. Summed in that order, one multiplication, last: no multiply-add
 * for a compiler to contract, so all results are equal bit for bit whatever
 * -ffp-contract or FP_CONTRACT say. */
#ifndef KA_BENCH_TIMELOOP_H
#define KA_BENCH_TIMELOOP_H
#include <stddef.h>

/* The row of n cells from r held: copied. */
static inline void held_row(float *restrict dst, const float *restrict src, size_t n, size_t r) {
    for (size_t x = 0; x < n; x++) dst[r + x] = src[r + x];
}

/* Row y of an n x n grid, n >= 3. */
static inline void heat_row(float *restrict dst, const float *restrict src, size_t n, size_t y) {
    size_t r = y * n;
    if (y == 0 || y == n - 1) {
        held_row(dst, src, n, r);
        return;
    }
    dst[r] = src[r];
    for (size_t i = r + 1; i < r + n - 1; i++)
        dst[i] = ((((src[i] + src[i - 1]) + src[i + 1]) + src[i - n]) + src[i + n]) * 0.2f; /* as the kernel */
    dst[r + n - 1] = src[r + n - 1];
}

/* Row y of plane z of an n x n x n grid, n >= 3. */
static inline void heat3_row(float *restrict dst, const float *restrict src, size_t n, size_t y, size_t z) {
    size_t nn = n * n, r = z * nn + y * n;
    if (y == 0 || y == n - 1 || z == 0 || z == n - 1) {
        held_row(dst, src, n, r);
        return;
    }
    dst[r] = src[r];
    for (size_t i = r + 1; i < r + n - 1; i++) /* as the kernels */
        dst[i] = ((((((src[i] + src[i - 1]) + src[i + 1]) + src[i - n]) + src[i + n]) + src[i - nn]) + src[i + nn]) *
                 0.14285715f;
    dst[r + n - 1] = src[r + n - 1];
}

/* The multi-kernel step (--kernels 6): a shallow-water-like step of six
 * stencils over three fields h, u, v (ping-pong: state s read, state s ^ 1
 * written) and three temporaries. Each cell's value is a sum of four values
 * times 0.25, the multiplication last as in heat_row, so every field stays
 * within its initial range and the three implementations agree bit for bit.
 * Neighbours are clamped at the edges (xp: right, xm: left, yp: below, ym:
 * above). g[SW_H(k)], g[SW_U(k)], g[SW_V(k)]: the state k = 0, 1. */
#define SW_H(k) (k)
#define SW_U(k) (2 + (k))
#define SW_V(k) (4 + (k))
#define SW_FX 6
#define SW_FY 7
#define SW_HT 8
#define SW_ARRAYS 9

#define SW_NEIGHBOURS(n, x, y, i)                                                      \
    size_t xp = (x) == (n) - 1 ? (i) : (i) + 1, xm = (x) == 0 ? (i) : (i) - 1;         \
    size_t yp = (y) == (n) - 1 ? (i) : (i) + (n), ym = (y) == 0 ? (i) : (i) - (n);     \
    (void)xp, (void)xm, (void)yp, (void)ym

/* The six kernels, by row; the sixth is heat_row (h from the temporary ht). */
static inline void sw_fx_row(float *restrict fx, const float *restrict h, const float *restrict u, size_t n, size_t y) {
    for (size_t x = 0, i = y * n; x < n; x++, i++) {
        SW_NEIGHBOURS(n, x, y, i);
        fx[i] = ((h[i] + h[xp]) + (u[i] + u[xp])) * 0.25f;
    }
}
static inline void sw_fy_row(float *restrict fy, const float *restrict h, const float *restrict v, size_t n, size_t y) {
    for (size_t x = 0, i = y * n; x < n; x++, i++) {
        SW_NEIGHBOURS(n, x, y, i);
        fy[i] = ((h[i] + h[yp]) + (v[i] + v[yp])) * 0.25f;
    }
}
static inline void sw_h_row(float *restrict ht, const float *restrict h, const float *restrict fx,
                            const float *restrict fy, size_t n, size_t y) {
    for (size_t x = 0, i = y * n; x < n; x++, i++) {
        SW_NEIGHBOURS(n, x, y, i);
        ht[i] = ((h[i] + fx[xm]) + (fx[i] + fy[ym])) * 0.25f;
    }
}
/* u from fx and ht; v the same way from fy along y (sw_v_row). */
static inline void sw_u_row(float *restrict uo, const float *restrict u, const float *restrict fx,
                            const float *restrict ht, size_t n, size_t y) {
    for (size_t x = 0, i = y * n; x < n; x++, i++) {
        SW_NEIGHBOURS(n, x, y, i);
        uo[i] = ((u[i] + fx[i]) + (ht[i] + ht[xp])) * 0.25f;
    }
}
static inline void sw_v_row(float *restrict vo, const float *restrict v, const float *restrict fy,
                            const float *restrict ht, size_t n, size_t y) {
    for (size_t x = 0, i = y * n; x < n; x++, i++) {
        SW_NEIGHBOURS(n, x, y, i);
        vo[i] = ((v[i] + fy[i]) + (ht[i] + ht[yp])) * 0.25f;
    }
}

/* `steps` multi-kernel steps from state 0; the result is in state 0 when
 * steps is even. Serial, and one OpenMP `parallel for` over the rows per
 * kernel. */
void sw_serial(float *g[SW_ARRAYS], size_t n, int steps);
void sw_omp(float *g[SW_ARRAYS], size_t n, int steps);

/* The serial loop: `steps` steps as timeloop_omp, in one thread. */
void timeloop_serial(float *a, float *b, size_t n, int dims, int steps);
/* `steps` steps of the heat equation on an n^dims grid (dims 2 or 3) from a
 * into b and back (ping-pong), one `parallel for` over the grid's rows a
 * step; the result is in a when steps is even, else in b. */
void timeloop_omp(float *a, float *b, size_t n, int dims, int steps);
#endif
