/* Raw CUDA driver API for the `ka-bench` comparisons (bench_cuda.c): loaded
 * with dlopen, on the context libka uses for the device. */
#ifndef KA_BENCH_CUDA_H
#define KA_BENCH_CUDA_H
#include "bench_common.h"

typedef struct bench_cu bench_cu;

/* How the raw launch loop waits for each launch. EVENT_SYNC records the
 * bench's own event (CU_EVENT_DISABLE_TIMING, no blocking sync: the driver's
 * cuEventSynchronize spins or yields). The diagnostic waits (only
 * bench_cu_launch_diag) record either that event or one made with the flags
 * of libka's event pool (CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC):
 *   POLL_DEFAULT:  the EVENT_SYNC event, then while (cuEventQuery == NOT_READY) {}
 *   POLL_BLOCKING: the blocking-sync event, polled the same way
 *   SYNC_BLOCKING: the blocking-sync event, cuEventSynchronize (sleeps) */
enum {
    BENCH_CU_NO_WAIT = 0,
    BENCH_CU_EVENT_SYNC = 1,
    BENCH_CU_STREAM_SYNC = 2,
    BENCH_CU_POLL_DEFAULT = 3,
    BENCH_CU_POLL_BLOCKING = 4,
    BENCH_CU_SYNC_BLOCKING = 5
};

/* NULL with the reason in why when dev is not a CUDA device, libcuda or NVRTC
 * cannot be loaded, or the tool was built without cuda.h. */
bench_cu *bench_cu_open(ka_device dev, char *why, size_t len);
void bench_cu_close(bench_cu *c);
/* Compiles src with NVRTC and keeps the function `name` for the loops below. */
int bench_cu_build(bench_cu *c, const char *src, const char *name, char *why, size_t len);
int bench_cu_alloc(bench_cu *c, size_t bytes, uint64_t *dptr);
void bench_cu_free(bench_cu *c, uint64_t dptr);
int bench_cu_fill32(bench_cu *c, uint64_t dptr, uint32_t v, size_t count);
int bench_cu_read(bench_cu *c, void *dst, uint64_t src, size_t bytes);
/* The built function takes (32-byte range, float *p0, float s1 .. s{nargs-1});
 * one float changes every launch. ns per iteration. */
double bench_cu_launch_loop(bench_cu *c, uint64_t buf, int nargs, int iters, int mode, unsigned n, unsigned local);
/* The same loop with a diagnostic wait (mode BENCH_CU_POLL_DEFAULT,
 * BENCH_CU_POLL_BLOCKING or BENCH_CU_SYNC_BLOCKING), every CUDA call's result
 * checked: ns per iteration, or -1 with the failing call and error in why. */
double bench_cu_launch_diag(bench_cu *c, uint64_t buf, int nargs, int iters, int mode, unsigned n, unsigned local,
                            char *why, size_t len);
/* The built function is saxpy(range, float *y, const float *x, float a, uint n);
 * launch + cuStreamSynchronize (each launch, or only after the last when
 * !sync_each), ns per iteration. */
double bench_cu_saxpy(bench_cu *c, uint64_t y, uint64_t x, float a, unsigned n, unsigned local, int iters,
                      int sync_each);
/* cuMemcpyDtoDAsync + cuStreamSynchronize, ns per copy. */
double bench_cu_copy(bench_cu *c, uint64_t dst, uint64_t src, size_t bytes, int iters);
int bench_cu_write(bench_cu *c, uint64_t dst, const void *src, size_t bytes);
/* A chain of `kernels` launches of the built function chain(range, float *y,
 * const float *x, float a), launch j with a[j], all on one stream. Captures
 * the chain (stream capture) into the raw graph and instantiates it (the
 * graph made before is destroyed): 0, or -1 with the failing call in why. */
int bench_cu_chain_graph(bench_cu *c, uint64_t y, uint64_t x, const float *a, int kernels, unsigned n, unsigned local,
                         char *why, size_t len);
/* iters steps, then cuStreamSynchronize, all timed: each step the chain's
 * cuLaunchKernel calls (graph 0) or one cuGraphLaunch of the raw graph
 * (graph 1). ns per step, or -1 when a call failed. */
double bench_cu_chain_loop(bench_cu *c, uint64_t y, uint64_t x, const float *a, int kernels, unsigned n, unsigned local,
                           int iters, int graph);
/* A time loop of the built function heat(float *dst, const float *src, int n)
 * over an n^dims grid (dims 2 or 3), one launch a step in blocks of
 * block[0] x block[1] (x block[2]) threads, ping-pong: a into b, b into a. */
typedef struct bench_cu_stencil {
    uint64_t a, b;
    int n, dims;
    unsigned block[3];
} bench_cu_stencil;
/* Captures two steps (a -> b, b -> a) into the raw graph and instantiates it
 * (the graph made before is destroyed): 0, or -1 with the failing call in why. */
int bench_cu_stencil_graph(bench_cu *c, const bench_cu_stencil *s, char *why, size_t len);
/* `steps` steps from a (graph 0: a launch each; graph 1: steps / 2 replays of
 * the raw graph, steps even), then cuStreamSynchronize: 0, or -1 with the
 * failing call in why. */
int bench_cu_stencil_steps(bench_cu *c, const bench_cu_stencil *s, int steps, int graph, char *why, size_t len);
#endif
