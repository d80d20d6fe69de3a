/* ka-bench route: launch + wait time against work size on PoCL's two
 * devices (raw OpenCL on `basic` and on the threaded device) and through
 * libka's routed queue; the measured crossover; and saxpy on 16M floats
 * through the routed queue against the threaded device alone. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

static const char *ka_src = "KA_KERNEL(saxpy, KA_GLOBAL float *y, KA_GLOBAL const float *x, float a) {\n"
                            "    if (!ka_in_range()) return;\n"
                            "    size_t i = ka_global_id(0);\n"
                            "    y[i] = a * x[i] + y[i];\n"
                            "}\n";
static const char *raw_src = "__kernel void saxpy(ulong4 nd, __global float *y, __global const float *x, float a) {\n"
                             "    size_t i = get_global_id(0);\n"
                             "    if (i >= nd.x) return;\n"
                             "    y[i] = a * x[i] + y[i];\n"
                             "}\n";

typedef struct rawdev {
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    cl_kernel k;
    cl_mem x, y;
    int flush;
} rawdev;

static int raw_open(rawdev *r, cl_device_id d, size_t maxn, int flush) {
    cl_int err;
    r->flush = flush;
    r->ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    r->q = clCreateCommandQueue(r->ctx, d, 0, &err);
    r->prog = clCreateProgramWithSource(r->ctx, 1, &raw_src, NULL, &err);
    err |= clBuildProgram(r->prog, 1, &d, bench_cl_options(d), NULL, NULL);
    r->k = clCreateKernel(r->prog, "saxpy", &err);
    r->x = clCreateBuffer(r->ctx, CL_MEM_READ_WRITE, maxn * 4, NULL, &err);
    r->y = clCreateBuffer(r->ctx, CL_MEM_READ_WRITE, maxn * 4, NULL, &err);
    float zero = 0;
    err |= clEnqueueFillBuffer(r->q, r->x, &zero, 4, 0, maxn * 4, 0, NULL, NULL);
    err |= clEnqueueFillBuffer(r->q, r->y, &zero, 4, 0, maxn * 4, 0, NULL, NULL);
    err |= clFinish(r->q);
    return err != 0;
}

static void raw_close(rawdev *r) {
    clReleaseMemObject(r->x);
    clReleaseMemObject(r->y);
    clReleaseKernel(r->k);
    clReleaseProgram(r->prog);
    clReleaseCommandQueue(r->q);
    clReleaseContext(r->ctx);
}

/* Work-group of 64 (PoCL 3.1 needs the global size padded to it). */
static double raw_loop(rawdev *r, size_t n, int iters) {
    size_t local = 64, global = (n + 63) / 64 * 64;
    cl_ulong nd[4] = {n, 1, 1, 1};
    float a = 2.0f;
    clSetKernelArg(r->k, 0, sizeof nd, nd);
    int64_t t0 = bench_now_ns();
    for (int i = 0; i < iters; i++) {
        cl_event e;
        clSetKernelArg(r->k, 1, sizeof(cl_mem), &r->y);
        clSetKernelArg(r->k, 2, sizeof(cl_mem), &r->x);
        clSetKernelArg(r->k, 3, sizeof a, &a);
        clEnqueueNDRangeKernel(r->q, r->k, 1, NULL, &global, &local, 0, NULL, &e);
        if (r->flush) clFlush(r->q);
        clWaitForEvents(1, &e);
        clReleaseEvent(e);
    }
    return (double)(bench_now_ns() - t0) / iters;
}

static double ka_loop(ka_queue q, ka_kernel k, ka_buffer y, ka_buffer x, size_t n, int iters) {
    ka_arg args[] = {ka_arg_buffer(y), ka_arg_buffer(x), ka_arg_f32(2.0f)};
    ka_range r = {.dims = 1, .size = {n}, .workgroup = {64}};
    int64_t t0 = bench_now_ns();
    for (int i = 0; i < iters; i++) {
        ka_event ev;
        ka_launch(q, k, &r, args, 3, &ev);
        ka_event_wait(ev, KA_WAIT_FOREVER);
        ka_event_release(ev);
    }
    return (double)(bench_now_ns() - t0) / iters;
}

static int iters_for(size_t n) {
    if (n <= 4096) return 300;
    if (n <= 262144) return 60;
    if (n <= 1u << 20) return 20;
    return 6;
}

static const char usage[] =
    "usage: ka-bench route [--device SEL] [--reps R] [--max N] [--json]\n"
    "  saxpy launch + wait by work size, 64 to N items by 4x, on PoCL's two devices (raw OpenCL)\n"
    "  and through libka's routed queue; the measured crossover; the build cost of routing; and\n"
    "  saxpy over N floats routed against the threaded device alone. Needs PoCL with routing.\n"
    "  --reps R   repetitions, 1 to 100000 (default 5)\n"
    "  --max N    the largest size, 64 to 2^40 items (default 16777216)\n";

int bench_route_main(int argc, char **argv) {
    static const struct option lo[] = {BENCH_OPT_DEVICE, BENCH_OPT_REPS, BENCH_OPT_JSON,
                                       {"max", required_argument, NULL, 'm'}, BENCH_OPT_END};
    bench_opts o = {.reps = 5};
    uint64_t maxn = 1u << 24;
    cli c;
    cli_init(&c, "ka-bench route", usage, argc, argv, "h", lo);
    const char *arg;
    for (int r; (r = cli_next(&c, &arg)) != CLI_END;) {
        int st;
        if (r == 'm') {
            if (cli_u64(&c, arg, 64, (uint64_t)1 << 40, &maxn)) return KA_EXIT_USAGE;
        } else if ((st = bench_option(&c, r, arg, &o)) >= 0) {
            return st;
        }
    }
    const char *sel = o.sel;
    int reps = o.reps, json = o.json;
    ka_device dev;
    ka_queue routed, threaded;
    ka_program prog;
    ka_kernel k;
    ka_buffer x, y;
    if (cli_device_open(&c, sel, &dev)) return KA_EXIT_FAIL;
    if (ka_queue_create(dev, NULL, &routed) ||
        ka_queue_create(dev, &(ka_queue_config){.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF}, &threaded) ||
        ka_program_build(dev, ka_src, NULL, &prog) || ka_kernel_get(prog, "saxpy", NULL, &k) ||
        ka_buffer_create(dev, maxn * 4, &x) || ka_buffer_create(dev, maxn * 4, &y)) {
        fprintf(stderr, "ka-bench route: %s\n", ka_last_error());
        return 1;
    }
    float zero = 0;
    ka_buffer_fill(routed, x, 0, &zero, 4, maxn * 4, NULL);
    ka_buffer_fill(routed, y, 0, &zero, 4, maxn * 4, NULL);
    const ka_device_info *di;
    ka_device_get_info(dev, &di);
    ka_native_device nat = {0};
    ka_device_get_native(dev, &nat);
    ka_queue_stats qs;
    ka_queue_get_stats(routed, &qs);
    if (!nat.device || !nat.inline_device) {
        fprintf(stderr, "ka-bench route: %s has no PoCL routing (needs PoCL with its basic device)\n", di->name);
        return 1;
    }
    rawdev basic, pthr;
    if (raw_open(&basic, nat.inline_device, maxn, 1) || raw_open(&pthr, nat.device, maxn, 0)) {
        fprintf(stderr, "ka-bench route: raw OpenCL set-up failed\n");
        return 1;
    }
    /* Build cost of routing: the threaded device's build at ka_program_build,
     * and the build for `basic` that the first small launch of a kernel makes.
     * A fresh program each time (a define makes its source unique, so PoCL's
     * own cache, keyed by the preprocessed source, misses: a cold build).
     * libka's persistent cache is off here (KA_CACHE is read at each build),
     * so the second build measures PoCL's cache, not libka's. */
    double build_ms = 0, inline_build_ms = 0, build_warm_ms = 0, inline_build_warm_ms = 0;
    {
        const char *was = getenv("KA_CACHE");
        char *saved = was ? strdup(was) : NULL;
        setenv("KA_CACHE", "0", 1);
        char defs[64];
        snprintf(defs, sizeof defs, "KA_BENCH_UNIQUE=%lld", (long long)bench_now_ns());
        const char *dl[] = {defs};
        ka_build_options bo = {.defines = dl, .num_defines = 1};
        for (int warm = 0; warm < 2; warm++) {
            ka_program p2;
            ka_kernel k2;
            int64_t t0 = bench_now_ns();
            if (ka_program_build(dev, ka_src, &bo, &p2) || ka_kernel_get(p2, "saxpy", NULL, &k2)) {
                fprintf(stderr, "ka-bench route: %s\n", ka_last_error());
                return 1;
            }
            int64_t t1 = bench_now_ns();
            ka_loop(routed, k2, y, x, 64, 1); /* first inline launch: builds for basic */
            int64_t t2 = bench_now_ns();
            ka_loop(routed, k2, y, x, 64, 1);
            int64_t t3 = bench_now_ns();
            double b = (double)(t1 - t0) / 1e6, ib = (double)((t2 - t1) - (t3 - t2)) / 1e6;
            if (warm) build_warm_ms = b, inline_build_warm_ms = ib;
            else build_ms = b, inline_build_ms = ib;
            ka_program_release(p2);
        }
        if (saved) setenv("KA_CACHE", saved, 1);
        else unsetenv("KA_CACHE");
        free(saved);
    }
    size_t sizes[32];
    int ns = 0;
    for (size_t n = 64; n <= maxn && ns < 32; n *= 4) sizes[ns++] = n;
    double basic_ns[32], pthr_ns[32], routed_ns[32];
    double *v[3];
    for (int j = 0; j < 3; j++) v[j] = calloc((size_t)reps, sizeof(double));
    for (int s = 0; s < ns; s++) {
        size_t n = sizes[s];
        int it = iters_for(n);
        /* warm-up: PoCL compiles each local size lazily, per device */
        raw_loop(&basic, n, 2);
        raw_loop(&pthr, n, 2);
        ka_loop(routed, k, y, x, n, 2);
        for (int rep = 0; rep < reps; rep++)
            for (int j = 0; j < 3; j++) {
                int m = (j + rep) % 3;
                v[m][rep] = m == 0 ? raw_loop(&basic, n, it) : m == 1 ? raw_loop(&pthr, n, it) : ka_loop(routed, k, y, x, n, it);
            }
        basic_ns[s] = bench_median(v[0], reps);
        pthr_ns[s] = bench_median(v[1], reps);
        routed_ns[s] = bench_median(v[2], reps);
    }
    /* The smallest size from which the threaded device wins at every larger size. */
    size_t crossover = 0;
    for (int s = ns - 1; s >= 0 && pthr_ns[s] < basic_ns[s]; s--) crossover = sizes[s];
    /* saxpy on the largest size: routed queue against the threaded device alone */
    size_t n = maxn;
    double sr[16], st[16];
    int sreps = reps > 16 ? 16 : reps;
    for (int rep = 0; rep < sreps; rep++) {
        if (rep % 2) {
            sr[rep] = ka_loop(routed, k, y, x, n, 4);
            st[rep] = ka_loop(threaded, k, y, x, n, 4);
        } else {
            st[rep] = ka_loop(threaded, k, y, x, n, 4);
            sr[rep] = ka_loop(routed, k, y, x, n, 4);
        }
    }
    double sr_ns = bench_median(sr, sreps), st_ns = bench_median(st, sreps);
    double bytes = 12.0 * (double)n; /* read x and y, write y */
    if (json) {
        printf("{\"device\":\"%s\",\"reps\":%d,\"inline_max_items\":%llu,\"crossover_items\":%zu,\"sizes\":[", di->name, reps,
               (unsigned long long)qs.inline_max_items, crossover);
        for (int s = 0; s < ns; s++) printf("%s%zu", s ? "," : "", sizes[s]);
        printf("],\"basic_ns\":[");
        for (int s = 0; s < ns; s++) printf("%s%.0f", s ? "," : "", basic_ns[s]);
        printf("],\"pthread_ns\":[");
        for (int s = 0; s < ns; s++) printf("%s%.0f", s ? "," : "", pthr_ns[s]);
        printf("],\"routed_ns\":[");
        for (int s = 0; s < ns; s++) printf("%s%.0f", s ? "," : "", routed_ns[s]);
        printf("],\"build_ms\":%.1f,\"inline_build_ms\":%.1f,\"build_warm_ms\":%.1f,\"inline_build_warm_ms\":%.1f",
               build_ms, inline_build_ms, build_warm_ms, inline_build_warm_ms);
        printf(",\"routed_wait_ns\":%.0f,\"pthread_wait_ns\":%.0f,\"saxpy_items\":%zu,\"saxpy_routed_gbs\":%.2f,"
               "\"saxpy_pthread_gbs\":%.2f,\"saxpy_ratio\":%.4f}\n",
               routed_ns[0], pthr_ns[0], n, bytes / sr_ns, bytes / st_ns, sr_ns / st_ns);
    } else {
        printf("ka-bench route on %s: saxpy launch + wait, ns (median of %d interleaved reps)\n", di->name, reps);
        printf("%10s %14s %14s %14s\n", "items", "raw basic", "raw pthread", "ka routed");
        for (int s = 0; s < ns; s++)
            printf("%10zu %14.0f %14.0f %14.0f\n", sizes[s], basic_ns[s], pthr_ns[s], routed_ns[s]);
        printf("measured crossover: the threaded device wins from %zu items (routing limit in effect: %llu;\n"
               "set KA_INLINE_MAX_ITEMS to change it)\n",
               crossover, (unsigned long long)qs.inline_max_items);
        printf("build: %.1f ms for the threaded device, %.1f ms more for basic at the first small launch "
               "(with PoCL's cache warm: %.1f and %.1f ms)\n",
               build_ms, inline_build_ms, build_warm_ms, inline_build_warm_ms);
        printf("saxpy %zu floats: routed %.2f GB/s, threaded alone %.2f GB/s, ratio %.3f\n", n, bytes / sr_ns,
               bytes / st_ns, sr_ns / st_ns);
    }
    for (int j = 0; j < 3; j++) free(v[j]);
    raw_close(&basic);
    raw_close(&pthr);
    ka_buffer_release(x);
    ka_buffer_release(y);
    ka_program_release(prog);
    ka_queue_release(routed);
    ka_queue_release(threaded);
    ka_device_close(dev);
    return 0;
}
