/* ka-bench fork: what a parallel launch costs on a CPU device. A launch +
 * wait of an empty kernel large enough to be split over all the device's
 * threads, against an empty OpenMP parallel region (the fork and join a C
 * user's `parallel for` pays every step), and a 64-item launch + wait (run
 * in the calling thread on the host back-end), in one run, interleaved,
 * medians. */
#include <stdio.h>
#include <stdlib.h>

#include "bench_common.h"

static const char *ka_src = "KA_KERNEL(empty, KA_GLOBAL float *p) { (void)p; }\n";

static const char usage[] =
    "usage: ka-bench fork [--device SEL] [--iterations I] [--reps R] [--json]\n"
    "  ns per launch + wait of an empty kernel of 65536 work-items (split over all of a CPU\n"
    "  device's threads; KA_LAUNCH_ASYNC on OpenCL, so PoCL's routing cannot run it in the\n"
    "  calling thread) and of 64 work-items, against an empty `#pragma omp parallel` region\n"
    "  ($OMP_NUM_THREADS threads, default all cores); I of each per repetition, R interleaved\n"
    "  repetitions, medians. Default: --iterations 2000 --reps 9.\n";

#define CHECK(call) BENCH_CHECK("fork", call)

/* ns per launch + wait of `items` work-items; negative on a failure. */
static double ka_loop(ka_queue q, ka_kernel k, ka_buffer b, uint64_t items, uint32_t flags, int iters) {
    ka_range r = {.dims = 1, .size = {items}, .flags = flags};
    ka_arg a[] = {ka_arg_buffer(b)};
    int64_t t0 = bench_now_ns();
    for (int i = 0; i < iters; i++) {
        ka_event ev;
        if (ka_launch(q, k, &r, a, 1, &ev) != KA_OK || ka_event_wait(ev, KA_WAIT_FOREVER) != KA_OK) return -1;
        ka_event_release(ev);
    }
    return (double)(bench_now_ns() - t0) / iters;
}

int bench_fork_main(int argc, char **argv) {
    static const struct option lo[] = {BENCH_OPT_DEVICE, BENCH_OPT_ITERATIONS, BENCH_OPT_REPS, BENCH_OPT_JSON,
                                       BENCH_OPT_END};
    bench_opts o = {.iters = 2000, .reps = 9};
    cli cl;
    cli_init(&cl, "ka-bench fork", usage, argc, argv, "h", lo);
    const char *arg;
    for (int r; (r = cli_next(&cl, &arg)) != CLI_END;) {
        int st = bench_option(&cl, r, arg, &o);
        if (st >= 0) return st;
    }
    ka_device dev;
    if (cli_device_open(&cl, o.sel, &dev)) return KA_EXIT_FAIL;
    const ka_device_info *di;
    ka_device_get_info(dev, &di);
    ka_queue q;
    ka_program p;
    ka_kernel k;
    ka_buffer b;
    CHECK(ka_queue_create(dev, NULL, &q));
    CHECK(ka_program_build(dev, ka_src, NULL, &p));
    CHECK(ka_kernel_get(p, "empty", NULL, &k));
    CHECK(ka_buffer_create(dev, 64, &b));
    enum { PAR, OMP, INL, N };
    static const char *keys[N] = {"ka_parallel", "omp_region", "ka_inline64"};
    double *t[N];
    for (int j = 0; j < N; j++) t[j] = calloc((size_t)o.reps, sizeof(double));
    /* warm-up */
    /* On PoCL routing would run the empty kernel in the calling thread:
     * the parallel row goes to the threaded device. The host back-end
     * splits it over its pool either way (asynchronous there would add a
     * hand-off to the queue's thread). */
    uint32_t par_flags = di->backend == KA_BACKEND_HOST ? 0 : KA_LAUNCH_ASYNC;
    if (ka_loop(q, k, b, 65536, par_flags, 100) < 0 || ka_loop(q, k, b, 64, 0, 100) < 0) CHECK(KA_ERR_DEVICE);
    bench_omp_region_ns(100);
    for (int r = 0; r < o.reps; r++)
        for (int i = 0; i < N; i++) {
            int j = (i + r) % N; /* rotate the order, so drift favours none */
            double ns = j == OMP   ? bench_omp_region_ns(o.iters)
                        : j == PAR ? ka_loop(q, k, b, 65536, par_flags, o.iters)
                                   : ka_loop(q, k, b, 64, 0, o.iters);
            if (ns < 0) CHECK(KA_ERR_DEVICE);
            t[j][r] = ns;
        }
    double med[N], mn[N], mx[N];
    for (int j = 0; j < N; j++) {
        med[j] = bench_median(t[j], o.reps);
        mn[j] = bench_min(t[j], o.reps);
        mx[j] = bench_max(t[j], o.reps);
        free(t[j]);
    }
    double ratio = med[OMP] > 0 ? med[PAR] / med[OMP] : 0;
    if (o.json) {
        printf("{\"device\":\"%s\",\"selector\":\"%s\",\"threads\":%u,\"omp_threads\":%d,\"iterations\":%d,\"reps\":%d",
               di->name, di->selector, di->compute_units, bench_omp_threads(), o.iters, o.reps);
        for (int j = 0; j < N; j++)
            printf(",\"%s_ns\":%.1f,\"%s_min_ns\":%.1f,\"%s_max_ns\":%.1f", keys[j], med[j], keys[j], mn[j], keys[j], mx[j]);
        printf(",\"parallel_over_omp\":%.4f}\n", ratio);
    } else {
        printf("ka-bench fork on %s (%s): %u compute units, OpenMP %d threads; %d x %d interleaved reps, ns (median "
               "[min, max])\n",
               di->name, di->selector, di->compute_units, bench_omp_threads(), o.iters, o.reps);
        printf("  ka launch + wait, 65536 items (parallel)   %9.1f [%.1f, %.1f]\n", med[PAR], mn[PAR], mx[PAR]);
        printf("  empty OpenMP parallel region               %9.1f [%.1f, %.1f]\n", med[OMP], mn[OMP], mx[OMP]);
        printf("  ka launch + wait, 64 items                 %9.1f [%.1f, %.1f]\n", med[INL], mn[INL], mx[INL]);
        printf("  parallel launch + wait / OpenMP region: %.3f\n", ratio);
    }
    ka_buffer_release(b);
    ka_program_release(p);
    ka_queue_release(q);
    ka_device_close(dev);
    return 0;
}
