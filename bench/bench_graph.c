/* ka-bench graph: the cost per kernel of one time step of K small launches (a
 * chain on one buffer), made three ways in one process, interleaved: K
 * ka_launch calls, one ka_graph_launch of the same launches recorded, and the
 * raw driver: on CUDA K cuLaunchKernel and one cuGraphLaunch of the same
 * chain captured (bench_cuda.c); on OpenCL K clEnqueueNDRangeKernel on the
 * device libka's launch runs on. Each timed block is I steps and the queue's
 * finish. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_cuda.h"

/* One chain step per kernel: y = y/2 + a*x, a different in each launch, so
 * the order matters. With x in 1..5 and a in 1..7 every product is exact and
 * the sum the only rounding, the same on host and device, with or without
 * fused multiply-add: results compare bit for bit. */
static const char ka_src[] = "KA_KERNEL(chain, KA_GLOBAL float *y, KA_CONST(float) x, float a) {\n"
                             "    if (!ka_in_range()) return;\n"
                             "    size_t i = ka_global_id(0);\n"
                             "    y[i] = 0.5f * y[i] + a * x[i];\n"
                             "}\n";
/* The raw forms take libka's parameters: the 32-byte range first. */
static const char cl_src[] = "__kernel void chain(ulong4 nd, __global float *y, __global const float *x, float a) {\n"
                             "    size_t i = get_global_id(0);\n"
                             "    if (i >= nd.x) return;\n"
                             "    y[i] = 0.5f * y[i] + a * x[i];\n"
                             "}\n";
static const char cu_src[] =
    "struct nd_t { unsigned long long x, y, z, w; };\n"
    "extern \"C\" __global__ void chain(const nd_t nd, float *y, const float *__restrict__ x, float a) {\n"
    "    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= nd.x) return;\n"
    "    y[i] = 0.5f * y[i] + a * x[i];\n"
    "}\n";

enum { WG = 64, CHECK_STEPS = 3, WARM_STEPS = 20, MAX_KERNELS = 1000 };
/* Goals the figures are read against (printed, not asserted). */
#define GOAL_H200_NS 600.0
#define GOAL_H200_OVER_RAW_GRAPH 1.1
#define GOAL_POCL_OVER_LAUNCH 0.8

static const char usage[] =
    "usage: ka-bench graph [--device SEL] [--kernels K] [--items N] [--iterations I] [--reps R] [--json]\n"
    "  One time step is K launches of a small kernel over N floats (y = y/2 + a*x, a different per\n"
    "  launch, work-group 64), all on one buffer. ns per kernel of a step made three ways, interleaved:\n"
    "  K ka_launch calls (no events), one ka_graph_launch of a graph recorded from the same launches,\n"
    "  and the raw driver on the same device: on CUDA K cuLaunchKernel and one cuGraphLaunch of the\n"
    "  same chain captured into a CUDA graph; on OpenCL K clEnqueueNDRangeKernel, each kernel's\n"
    "  arguments set once (with PoCL routing, on `basic` with the clFlush that runs each, as libka's\n"
    "  inline launch does). A timed block is I steps and the queue's finish; R interleaved repetitions,\n"
    "  median [min, max]. Every way is warmed up, then checked once (3 steps from the same start,\n"
    "  against the host and ka_launch's result).\n"
    "  K: 1 to 1000; N: 1 to 16777216; I: at least 1; R: 1 to 100000.\n"
    "  Default: --kernels 10 --items 1024 --iterations 200 --reps 9.\n";

#define CHECK(call) BENCH_CHECK("graph", call)

/* The raw OpenCL chain: one cl_kernel per launch of the step, its arguments
 * set once (the least a raw loop can do per step), in libka's context. */
typedef struct rawcl {
    int flush;
    cl_command_queue q;
    cl_program prog;
    cl_kernel k[MAX_KERNELS];
    cl_mem y, x;
    size_t global;
} rawcl;

static int rawcl_init(rawcl *r, cl_context ctx, cl_device_id dev, const float *a, int kernels, size_t n) {
    cl_int err;
    r->q = clCreateCommandQueue(ctx, dev, 0, &err);
    if (err) return err;
    const char *s = cl_src;
    r->prog = clCreateProgramWithSource(ctx, 1, &s, NULL, &err);
    if (err) return err;
    if ((err = clBuildProgram(r->prog, 1, &dev, bench_cl_options(dev), NULL, NULL))) return err;
    r->y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * sizeof(float), NULL, &err);
    if (err) return err;
    r->x = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * sizeof(float), NULL, &err);
    if (err) return err;
    cl_ulong nd[4] = {n, 1, 1, 1};
    r->global = (n + WG - 1) / WG * WG;
    for (int j = 0; j < kernels; j++) {
        r->k[j] = clCreateKernel(r->prog, "chain", &err);
        if (err) return err;
        if ((err = clSetKernelArg(r->k[j], 0, sizeof nd, nd)) ||
            (err = clSetKernelArg(r->k[j], 1, sizeof(cl_mem), &r->y)) ||
            (err = clSetKernelArg(r->k[j], 2, sizeof(cl_mem), &r->x)) ||
            (err = clSetKernelArg(r->k[j], 3, sizeof(float), &a[j])))
            return err;
    }
    return 0;
}

static void rawcl_fini(rawcl *r, int kernels) {
    for (int j = 0; j < kernels; j++)
        if (r->k[j]) clReleaseKernel(r->k[j]);
    if (r->x) clReleaseMemObject(r->x);
    if (r->y) clReleaseMemObject(r->y);
    if (r->prog) clReleaseProgram(r->prog);
    if (r->q) clReleaseCommandQueue(r->q);
}

/* The timed loops: ns per step, or -1 when a call failed. Not inlined, so
 * callgrind can count each alone (bench/callgrind_graph.sh). */
__attribute__((noinline)) double bench_graph_rawcl_steps(rawcl *r, int kernels, int iters) {
    const size_t local = WG;
    cl_int err = 0;
    int64_t t0 = bench_now_ns();
    for (int it = 0; it < iters; it++)
        for (int j = 0; j < kernels; j++) {
            err |= clEnqueueNDRangeKernel(r->q, r->k[j], 1, NULL, &r->global, &local, 0, NULL, NULL);
            if (r->flush) err |= clFlush(r->q);
        }
    err |= clFinish(r->q);
    int64_t t1 = bench_now_ns();
    return err ? -1 : (double)(t1 - t0) / iters;
}

typedef struct kachain {
    ka_queue q;
    ka_kernel k;
    ka_range range;
    ka_arg (*args)[3]; /* kernels */
    int kernels;
    ka_graph g;
} kachain;

__attribute__((noinline)) double bench_graph_ka_steps(const kachain *c, int iters) {
    int st = 0;
    int64_t t0 = bench_now_ns();
    for (int it = 0; it < iters; it++)
        for (int j = 0; j < c->kernels; j++) st |= ka_launch(c->q, c->k, &c->range, c->args[j], 3, NULL);
    st |= ka_queue_finish(c->q);
    int64_t t1 = bench_now_ns();
    return st ? -1 : (double)(t1 - t0) / iters;
}

__attribute__((noinline)) double bench_graph_replays(const kachain *c, int iters) {
    int st = 0;
    int64_t t0 = bench_now_ns();
    for (int it = 0; it < iters; it++) st |= ka_graph_launch(c->q, c->g, NULL);
    st |= ka_queue_finish(c->q);
    int64_t t1 = bench_now_ns();
    return st ? -1 : (double)(t1 - t0) / iters;
}

/* The ways, in the order of the table. */
enum { KA_LAUNCH, KA_GRAPH, RAW_LAUNCH, RAW_GRAPH, NWAYS };
static const char *keys[NWAYS] = {"ka_launch", "graph", "raw_launch", "raw_graph"};

/* y after `steps` steps from y0, as the kernels compute it. */
static void expected(float *y, const float *y0, const float *x, const float *a, int kernels, size_t n, int steps) {
    memcpy(y, y0, n * sizeof *y);
    for (int s = 0; s < steps; s++)
        for (int j = 0; j < kernels; j++)
            for (size_t i = 0; i < n; i++) {
                float ax = a[j] * x[i];
                y[i] = 0.5f * y[i] + ax;
            }
}

static int compare(const float *got, const float *want, size_t n, const char *what, const char *against) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float))) {
            fprintf(stderr, "ka-bench graph: %s: element %zu is %.9g, %s gives %.9g\n", what, i, (double)got[i], against,
                    (double)want[i]);
            return 1;
        }
    return 0;
}

static double ratio(double a, double b) { return a > 0 && b > 0 ? a / b : 0; }

int bench_graph_main(int argc, char **argv) {
    static const struct option lo[] = {BENCH_OPT_DEVICE, BENCH_OPT_ITERATIONS, BENCH_OPT_REPS, BENCH_OPT_JSON,
                                       {"kernels", required_argument, NULL, 'k'}, {"items", required_argument, NULL, 'n'},
                                       BENCH_OPT_END};
    bench_opts o = {.iters = 200, .reps = 9};
    int kernels = 10;
    uint64_t items = 1024;
    cli cl;
    cli_init(&cl, "ka-bench graph", usage, argc, argv, "h", lo);
    const char *arg;
    for (int r; (r = cli_next(&cl, &arg)) != CLI_END;) {
        int st;
        switch (r) {
        case 'k':
            if (cli_int(&cl, arg, 1, MAX_KERNELS, &kernels)) return KA_EXIT_USAGE;
            break;
        case 'n':
            if (cli_u64(&cl, arg, 1, 1u << 24, &items)) return KA_EXIT_USAGE;
            break;
        default:
            if ((st = bench_option(&cl, r, arg, &o)) >= 0) return st;
        }
    }
    const size_t n = (size_t)items, bytes = n * sizeof(float);
    const int iters = o.iters, reps = o.reps;
    ka_device dev;
    if (cli_device_open(&cl, o.sel, &dev)) return KA_EXIT_FAIL;
    const ka_device_info *di;
    ka_device_get_info(dev, &di);
    const int is_cuda = di->backend == KA_BACKEND_CUDA;
    ka_native_device nat = {0};
    if (di->backend == KA_BACKEND_OPENCL) ka_device_get_native(dev, &nat);
    if (!is_cuda && !nat.device) {
        fprintf(stderr, "ka-bench graph: needs an OpenCL or CUDA device (got %s)\n", di->selector);
        return 1;
    }
    const int is_pocl = !is_cuda && strstr(di->platform, "Portable Computing Language") != NULL;

    float *a = malloc(sizeof(float) * (size_t)kernels), *x = malloc(bytes), *y0 = malloc(bytes), *want = malloc(bytes),
          *got = malloc(bytes), *ref = malloc(bytes);
    for (int j = 0; j < kernels; j++) a[j] = (float)(j % 7 + 1);
    for (size_t i = 0; i < n; i++) x[i] = (float)(i % 5 + 1), y0[i] = (float)(i % 3);

    kachain c = {.kernels = kernels};
    ka_program prog;
    ka_buffer y, xb;
    CHECK(ka_queue_create(dev, NULL, &c.q));
    CHECK(ka_program_build(dev, ka_src, NULL, &prog));
    CHECK(ka_kernel_get(prog, "chain", NULL, &c.k));
    CHECK(ka_buffer_create(dev, bytes, &y));
    CHECK(ka_buffer_create(dev, bytes, &xb));
    CHECK(ka_buffer_write(c.q, xb, 0, x, bytes));
    c.range = (ka_range){.dims = 1, .size = {n}, .workgroup = {WG}};
    c.args = malloc(sizeof *c.args * (size_t)kernels);
    for (int j = 0; j < kernels; j++) {
        c.args[j][0] = ka_arg_buffer(y);
        c.args[j][1] = ka_arg_buffer(xb);
        c.args[j][2] = ka_arg_f32(a[j]);
    }
    CHECK(ka_graph_begin(c.q));
    for (int j = 0; j < kernels; j++) CHECK(ka_launch(c.q, c.k, &c.range, c.args[j], 3, NULL));
    CHECK(ka_graph_end(c.q, &c.g));
    ka_graph_info gi;
    CHECK(ka_graph_get_info(c.g, &gi));

    /* Where libka's launch runs: with PoCL routing, `basic` for this size. */
    ka_queue_stats qs;
    ka_queue_get_stats(c.q, &qs);
    const size_t padded = (n + WG - 1) / WG * WG;
    const int routed = nat.inline_device && qs.inline_max_items >= padded;
    const char *path = is_cuda ? "cuda" : routed ? "routed" : "direct";

    char why[4096] = "";
    bench_cu *cu = NULL;
    uint64_t cy = 0, cx = 0;
    static rawcl rc; /* 8 KiB of kernels: not on the stack */
    int have[NWAYS] = {1, 1, 1, is_cuda};
    if (is_cuda) {
        if (!(cu = bench_cu_open(dev, why, sizeof why)) || bench_cu_build(cu, cu_src, "chain", why, sizeof why) ||
            bench_cu_alloc(cu, bytes, &cy) || bench_cu_alloc(cu, bytes, &cx) || bench_cu_write(cu, cx, x, bytes) ||
            bench_cu_chain_graph(cu, cy, cx, a, kernels, (unsigned)n, WG, why, sizeof why)) {
            fprintf(stderr, "ka-bench graph: no raw CUDA comparison: %s\n", why);
            if (cu && cy) bench_cu_free(cu, cy);
            if (cu && cx) bench_cu_free(cu, cx);
            bench_cu_close(cu);
            cu = NULL;
            have[RAW_LAUNCH] = have[RAW_GRAPH] = 0;
        }
    } else {
        memset(&rc, 0, sizeof rc);
        rc.flush = routed;
        cl_int err = rawcl_init(&rc, nat.context, routed ? nat.inline_device : nat.device, a, kernels, n);
        if (!err) err = clEnqueueWriteBuffer(rc.q, rc.x, CL_TRUE, 0, bytes, x, 0, NULL, NULL);
        if (err) {
            fprintf(stderr, "ka-bench graph: raw OpenCL set-up failed (error %d)\n", err);
            return 1;
        }
    }

    /* One block of `steps` steps of way w: ns per step, -1 on a failed call. */
#define RUN(w, steps)                                                                                                \
    ((w) == KA_LAUNCH    ? bench_graph_ka_steps(&c, steps)                                                           \
     : (w) == KA_GRAPH   ? bench_graph_replays(&c, steps)                                                            \
     : is_cuda           ? bench_cu_chain_loop(cu, cy, cx, a, kernels, (unsigned)n, WG, steps, (w) == RAW_GRAPH)      \
                         : bench_graph_rawcl_steps(&rc, kernels, steps))

    /* Warm up (PoCL builds a work-group function at a kernel's first launch
     * of a local size; a CUDA graph's first launch uploads it), then check
     * CHECK_STEPS steps of each way from y0. */
    int bad = 0;
    expected(want, y0, x, a, kernels, n, CHECK_STEPS);
    for (int w = 0; w < NWAYS && !bad; w++) {
        if (!have[w]) continue;
        if (RUN(w, WARM_STEPS) < 0) {
            fprintf(stderr, "ka-bench graph: %s: a call failed while warming up: %s\n", keys[w],
                    w < RAW_LAUNCH ? ka_last_error() : "raw driver error");
            return 1;
        }
        cl_int err = 0;
        if (w < RAW_LAUNCH) CHECK(ka_buffer_write(c.q, y, 0, y0, bytes));
        else if (is_cuda) err = bench_cu_write(cu, cy, y0, bytes);
        else err = clEnqueueWriteBuffer(rc.q, rc.y, CL_TRUE, 0, bytes, y0, 0, NULL, NULL);
        double ok = err ? -1 : RUN(w, CHECK_STEPS);
        if (w < RAW_LAUNCH) CHECK(ka_buffer_read(c.q, got, y, 0, bytes));
        else if (is_cuda) err |= bench_cu_read(cu, got, cy, bytes);
        else err |= clEnqueueReadBuffer(rc.q, rc.y, CL_TRUE, 0, bytes, got, 0, NULL, NULL);
        if (ok < 0 || err) {
            fprintf(stderr, "ka-bench graph: %s: a call failed while checking\n", keys[w]);
            return 1;
        }
        bad |= compare(got, want, n, keys[w], "the host");
        if (w == KA_LAUNCH) memcpy(ref, got, bytes);
        else bad |= compare(got, ref, n, keys[w], "ka_launch");
    }
    if (bad) return 1;

    double *t[NWAYS];
    for (int w = 0; w < NWAYS; w++) t[w] = calloc((size_t)reps, sizeof(double));
    int nways = 0, ways[NWAYS];
    for (int w = 0; w < NWAYS; w++)
        if (have[w]) ways[nways++] = w;
    for (int rep = 0; rep < reps; rep++)
        for (int turn = 0; turn < nways; turn++) {
            int w = ways[(turn + rep) % nways]; /* rotate the order, so drift favours none */
            double ns = RUN(w, iters);
            if (ns < 0) {
                fprintf(stderr, "ka-bench graph: %s: a call failed: %s\n", keys[w],
                        w < RAW_LAUNCH ? ka_last_error() : "raw driver error");
                return 1;
            }
            t[w][rep] = ns / kernels;
        }
#undef RUN

    double med[NWAYS] = {0}, mn[NWAYS] = {0}, mx[NWAYS] = {0};
    for (int w = 0; w < NWAYS; w++) {
        if (have[w]) med[w] = bench_median(t[w], reps), mn[w] = bench_min(t[w], reps), mx[w] = bench_max(t[w], reps);
        free(t[w]);
    }
    const char *raw_kind = is_cuda  ? "cuLaunchKernel"
                           : routed ? "clEnqueueNDRangeKernel+clFlush"
                                    : "clEnqueueNDRangeKernel";
    const double g_l = ratio(med[KA_GRAPH], med[KA_LAUNCH]), g_rg = ratio(med[KA_GRAPH], med[RAW_GRAPH]);
    const double l_rl = ratio(med[KA_LAUNCH], med[RAW_LAUNCH]), g_rl = ratio(med[KA_GRAPH], med[RAW_LAUNCH]);
    if (o.json) {
        printf("{\"device\":\"%s\",\"selector\":\"%s\",\"path\":\"%s\",\"kernels\":%d,\"items\":%zu,\"workgroup\":%d,"
               "\"iterations\":%d,\"reps\":%d,\"graph_nodes\":%u,\"native\":%u,\"checked\":true,\"raw_launch_kind\":\"%s\"",
               di->name, di->selector, path, kernels, n, WG, iters, reps, gi.nodes, gi.native, raw_kind);
        for (int w = 0; w < NWAYS; w++)
            if (have[w])
                printf(",\"%s_ns_per_kernel\":%.1f,\"%s_min\":%.1f,\"%s_max\":%.1f", keys[w], med[w], keys[w], mn[w],
                       keys[w], mx[w]);
        printf(",\"graph_over_ka_launch\":%.4f", g_l);
        if (have[RAW_LAUNCH]) printf(",\"ka_launch_over_raw_launch\":%.4f,\"graph_over_raw_launch\":%.4f", l_rl, g_rl);
        if (have[RAW_GRAPH]) printf(",\"graph_over_raw_graph\":%.4f", g_rg);
        if (is_cuda)
            printf(",\"goal_device\":\"NVIDIA H200\",\"goal_graph_ns_per_kernel\":%.0f,\"goal_graph_over_raw_graph\":%.2f",
                   GOAL_H200_NS, GOAL_H200_OVER_RAW_GRAPH);
        if (is_pocl) printf(",\"goal_device\":\"PoCL\",\"goal_graph_over_ka_launch\":%.2f", GOAL_POCL_OVER_LAUNCH);
        printf("}\n");
    } else {
        printf("ka-bench graph on %s (%s): a step of %d launches over %zu floats (work-group %d), %d steps x %d "
               "interleaved reps, ns per kernel (median [min, max]); path %s; graph of %u nodes replayed %s; "
               "result checked\n",
               di->name, di->selector, kernels, n, WG, iters, reps, path, gi.nodes,
               gi.native ? "natively (the driver's graph)" : "node by node");
        static const char *names[NWAYS] = {"ka_launch x K", "ka_graph_launch", "raw launch x K", "raw CUDA graph"};
        printf("%-18s %-26s %s\n", "way", "ns per kernel", "per step, us");
        for (int w = 0; w < NWAYS; w++) {
            if (!have[w]) continue;
            char s[64];
            snprintf(s, sizeof s, "%.0f [%.0f, %.0f]", med[w], mn[w], mx[w]);
            printf("%-18s %-26s %.2f\n", names[w], s, med[w] * kernels / 1e3);
        }
        printf("raw launch = %s%s\n", raw_kind,
               is_cuda ? "; raw CUDA graph = one cuGraphLaunch of the chain captured" : "");
        printf("graph / ka_launch: %.3f", g_l);
        if (is_pocl) printf("   [goal on PoCL: at most %.1f]", GOAL_POCL_OVER_LAUNCH);
        printf("\n");
        if (have[RAW_LAUNCH]) printf("ka_launch / raw launch: %.3f; graph / raw launch: %.3f\n", l_rl, g_rl);
        if (is_cuda) {
            printf("graph: %.0f ns per kernel   [goal on an NVIDIA H200: at most %.0f]\n", med[KA_GRAPH], GOAL_H200_NS);
            if (have[RAW_GRAPH])
                printf("graph / raw CUDA graph: %.3f   [goal on an NVIDIA H200: at most %.1f]\n", g_rg,
                       GOAL_H200_OVER_RAW_GRAPH);
        }
    }
    if (cu) {
        bench_cu_free(cu, cy), bench_cu_free(cu, cx);
        bench_cu_close(cu);
    } else if (!is_cuda) {
        rawcl_fini(&rc, kernels);
    }
    ka_graph_release(c.g);
    ka_buffer_release(y), ka_buffer_release(xb);
    ka_program_release(prog);
    ka_queue_release(c.q);
    ka_device_close(dev);
    free(c.args), free(a), free(x), free(y0), free(want), free(got), free(ref);
    return 0;
}
