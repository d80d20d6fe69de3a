/* ka-bench saxpy: memory bandwidth of a saxpy (y = a*x + y: 12 bytes moved
 * per element) launched through libka, against the device's own copy
 * bandwidth measured in the same process (bytes read + written): libka's
 * ka_buffer_copy everywhere, and on CUDA also raw cuMemcpyDtoDAsync and the
 * same saxpy through raw cuLaunchKernel. Every figure is launch (or copy) +
 * wait, per call; repetitions interleaved, medians. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_cuda.h"

static const char *ka_src =
    "KA_KERNEL(saxpy, KA_GLOBAL float *y, KA_CONST(float) x, float a, uint n) {\n"
    "    if (!ka_in_range()) return;\n"
    "    size_t i = ka_global_id(0);\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n";
static const char *cu_src =
    "struct nd_t { unsigned long long x, y, z, w; };\n"
    "extern \"C\" __global__ void saxpy(const nd_t nd, float *y, const float *__restrict__ x, float a, unsigned n) {\n"
    "    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= nd.x) return;\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n";

/* KA_SAXPY_SPIN waits on a queue that spins 10 ms before sleeping (the default
 * spin is 50 us on GPUs, shorter than the kernel); the PIPE rows launch I times
 * and wait once, the kernel's own bandwidth without a wait per launch. */
/* RAW_ON_KA: the raw kernel and loop on libka's buffers (their CUdeviceptrs):
 * apart from RAW_SAXPY only in where the memory lies. */
enum { KA_SAXPY, KA_SAXPY_SPIN, KA_SAXPY_PIPE, KA_COPY, RAW_SAXPY, RAW_SAXPY_PIPE, RAW_COPY, OMP_COPY, RAW_ON_KA, NKINDS };
static const char *names[NKINDS] = {"ka saxpy (launch + ka_event_wait)", "ka saxpy, queue spin 10 ms",
                                    "ka saxpy, I launches + 1 wait", "ka_buffer_copy (blocking)",
                                    "raw saxpy (cuLaunchKernel + stream sync)", "raw saxpy, I launches + 1 sync",
                                    "raw cuMemcpyDtoDAsync + stream sync", "memcpy over all threads (OpenMP)",
                                    "raw saxpy on libka's buffers (+ sync)"};
static const char *keys[NKINDS] = {"ka_saxpy", "ka_saxpy_spin", "ka_saxpy_pipelined", "ka_copy",
                                   "raw_saxpy", "raw_saxpy_pipelined", "copy", "omp_copy", "raw_on_ka_saxpy"};

static const char usage[] =
    "usage: ka-bench saxpy [--device SEL] [--n N] [--wg W] [--iterations I] [--reps R] [--json]\n"
    "  saxpy over N floats (12 bytes per element) through libka against the device's copy bandwidth\n"
    "  (a copy of N floats: 8 bytes per element, read + written) in the same process; on CUDA also raw\n"
    "  cuMemcpyDtoDAsync and the same saxpy through cuLaunchKernel; on CPUs also memcpy split over all\n"
    "  threads with OpenMP (the reference there). Each figure is one call + its wait\n"
    "  (rows marked so: I launches, one wait), I calls per repetition, R interleaved repetitions, medians.\n"
    "  N: 1 to 4294967295 (decimal, or hexadecimal after 0x); W: 1 to 4294967295 (the device sets the\n"
    "  real limit); I: at least 1; R: 1 to 100000.\n"
    "  Default: N = 256M on GPUs, 16M on CPUs,\n"
    "  --wg 256 --iterations 5 --reps 11.\n";

/* Expected y after k saxpys with x = 1, y0 = 2, a = 0.5: exact in float for k < 2^20. */
static int check(const float *v, size_t n, int k, const char *what) {
    float want = 2.0f + 0.5f * (float)k;
    for (size_t i = 0; i < n; i++)
        if (v[i] != want) {
            fprintf(stderr, "ka-bench saxpy: %s: element %zu is %g, want %g\n", what, i, (double)v[i], (double)want);
            return 1;
        }
    return 0;
}

#define CHECK(call) BENCH_CHECK("saxpy", call)

int bench_saxpy_main(int argc, char **argv) {
    static const struct option lo[] = {BENCH_OPT_DEVICE, BENCH_OPT_ITERATIONS, BENCH_OPT_REPS, BENCH_OPT_JSON,
                                       {"n", required_argument, NULL, 'n'}, {"wg", required_argument, NULL, 'g'},
                                       BENCH_OPT_END};
    bench_opts o = {.iters = 5, .reps = 11};
    uint64_t n = 0, wg64;
    unsigned wg = 256;
    cli cl;
    cli_init(&cl, "ka-bench saxpy", usage, argc, argv, "h", lo);
    const char *arg;
    for (int r; (r = cli_next(&cl, &arg)) != CLI_END;) {
        int st;
        switch (r) {
        case 'n':
            if (cli_u64(&cl, arg, 1, UINT32_MAX, &n)) return KA_EXIT_USAGE;
            break;
        case 'g':
            if (cli_u64(&cl, arg, 1, UINT32_MAX, &wg64)) return KA_EXIT_USAGE;
            wg = (unsigned)wg64;
            break;
        default:
            if ((st = bench_option(&cl, r, arg, &o)) >= 0) return st;
        }
    }
    const char *sel = o.sel;
    int iters = o.iters, reps = o.reps, json = o.json;
    ka_device dev;
    ka_queue q, qspin;
    if (cli_device_open(&cl, sel, &dev)) return KA_EXIT_FAIL;
    const ka_device_info *di;
    ka_device_get_info(dev, &di);
    if (!n) n = di->is_cpu ? 16u << 20 : 256u << 20;
    const size_t bytes = (size_t)n * sizeof(float);
    CHECK(ka_queue_create(dev, NULL, &q));
    CHECK(ka_queue_create(dev, &(ka_queue_config){.spin_ns = 10000000}, &qspin));
    ka_program prog;
    ka_kernel k;
    ka_buffer x, y, z;
    CHECK(ka_program_build(dev, ka_src, NULL, &prog));
    CHECK(ka_kernel_get(prog, "saxpy", NULL, &k));
    CHECK(ka_buffer_create(dev, bytes, &x));
    CHECK(ka_buffer_create(dev, bytes, &y));
    CHECK(ka_buffer_create(dev, bytes, &z));
    const float one = 1.0f, two = 2.0f;
    CHECK(ka_buffer_fill(q, x, 0, &one, 4, bytes, NULL));
    CHECK(ka_buffer_fill(q, y, 0, &two, 4, bytes, NULL));
    CHECK(ka_buffer_fill(q, z, 0, &two, 4, bytes, NULL));
    ka_arg args[] = {ka_arg_buffer(y), ka_arg_buffer(x), ka_arg_f32(0.5f), ka_arg_u32((uint32_t)n)};
    ka_range range = {.dims = 1, .size = {n}, .workgroup = {wg}};

    /* Raw CUDA: its own x and y (cuMemAlloc), its copy goes x -> y's twin. */
    char why[4096] = "";
    bench_cu *cu = di->backend == KA_BACKEND_CUDA ? bench_cu_open(dev, why, sizeof why) : NULL;
    uint64_t rx = 0, ry = 0, rz = 0;
    if (cu && (bench_cu_build(cu, cu_src, "saxpy", why, sizeof why) || bench_cu_alloc(cu, bytes, &rx) ||
               bench_cu_alloc(cu, bytes, &ry) || bench_cu_alloc(cu, bytes, &rz) ||
               bench_cu_fill32(cu, rx, 0x3f800000u, (size_t)n) || bench_cu_fill32(cu, ry, 0x40000000u, (size_t)n))) {
        fprintf(stderr, "ka-bench saxpy: raw CUDA set-up failed: %s\n", why);
        return 1;
    }
    if (di->backend == KA_BACKEND_CUDA && !cu) fprintf(stderr, "ka-bench saxpy: no raw CUDA comparison: %s\n", why);
    /* CPUs: the reference is memcpy split over all threads, what a C user's
     * threaded code moves; in host memory of its own, first touched by it. */
    char *ob = di->is_cpu ? malloc(2 * bytes) : NULL;
    if (ob) memset(ob, 0, 2 * bytes);
    int have[NKINDS] = {1, 1, 1, 1, cu != NULL, cu != NULL, cu != NULL, ob != NULL, cu != NULL};
    ka_native_buffer nx = {0}, ny = {0};
    if (cu) {
        CHECK(ka_buffer_get_native(x, &nx));
        CHECK(ka_buffer_get_native(y, &ny));
    }
    int ka_runs = 0, raw_runs = 0;

    double *t[NKINDS];
    for (int j = 0; j < NKINDS; j++) t[j] = calloc((size_t)reps, sizeof(double));
    for (int rep = -1; rep < reps; rep++) { /* rep -1 warms up */
        int it = rep < 0 ? 1 : iters;
        for (int turn = 0; turn < NKINDS; turn++) {
            int j = (turn + (rep < 0 ? 0 : rep)) % NKINDS; /* rotate the order, so drift favours none */
            if (!have[j]) continue;
            double ns = 0;
            if (j == KA_SAXPY || j == KA_SAXPY_SPIN || j == KA_SAXPY_PIPE) {
                ka_queue qq = j == KA_SAXPY_SPIN ? qspin : q;
                int64_t t0 = bench_now_ns();
                for (int i = 0; i < it; i++) {
                    ka_event ev;
                    if (j == KA_SAXPY_PIPE && i < it - 1) {
                        CHECK(ka_launch(qq, k, &range, args, 4, NULL));
                        continue;
                    }
                    CHECK(ka_launch(qq, k, &range, args, 4, &ev));
                    CHECK(ka_event_wait(ev, KA_WAIT_FOREVER));
                    ka_event_release(ev);
                }
                ns = (double)(bench_now_ns() - t0) / it;
                ka_runs += it;
            } else if (j == KA_COPY) {
                int64_t t0 = bench_now_ns();
                for (int i = 0; i < it; i++) { /* each waited for: the copy as a blocking call costs */
                    ka_event ev;
                    CHECK(ka_buffer_copy(q, z, 0, x, 0, bytes, &ev));
                    CHECK(ka_event_wait(ev, KA_WAIT_FOREVER));
                    ka_event_release(ev);
                }
                ns = (double)(bench_now_ns() - t0) / it;
            } else if (j == OMP_COPY) {
                int64_t t0 = bench_now_ns();
                for (int i = 0; i < it; i++) bench_omp_copy(ob + bytes, ob, bytes);
                ns = (double)(bench_now_ns() - t0) / it;
            } else if (j == RAW_ON_KA) { /* on libka's y: counted with libka's runs */
                ns = bench_cu_saxpy(cu, (uint64_t)(uintptr_t)ny.address, (uint64_t)(uintptr_t)nx.address, 0.5f,
                                    (unsigned)n, wg, it, 1);
                ka_runs += it;
            } else if (j == RAW_SAXPY || j == RAW_SAXPY_PIPE) {
                ns = bench_cu_saxpy(cu, ry, rx, 0.5f, (unsigned)n, wg, it, j == RAW_SAXPY);
                raw_runs += it;
            } else {
                ns = bench_cu_copy(cu, rz, rx, bytes, it);
            }
            if (rep >= 0) t[j][rep] = ns;
        }
    }

    /* Check both saxpys: the first and the last 64K elements. */
    size_t m = n < 65536 ? (size_t)n : 65536;
    float *h = malloc(m * sizeof *h);
    int bad = 0;
    CHECK(ka_buffer_read(q, h, y, 0, m * sizeof *h));
    bad |= check(h, m, ka_runs, "ka saxpy, head");
    CHECK(ka_buffer_read(q, h, y, bytes - m * sizeof *h, m * sizeof *h));
    bad |= check(h, m, ka_runs, "ka saxpy, tail");
    if (cu) {
        bad |= bench_cu_read(cu, h, ry, m * sizeof *h) || check(h, m, raw_runs, "raw saxpy, head");
        bad |= bench_cu_read(cu, h, ry + bytes - m * sizeof *h, m * sizeof *h) || check(h, m, raw_runs, "raw saxpy, tail");
    }
    free(h);

    double med[NKINDS], mn[NKINDS], mx[NKINDS], moved[NKINDS];
    for (int j = 0; j < NKINDS; j++) {
        med[j] = have[j] ? bench_median(t[j], reps) : 0;
        mn[j] = have[j] ? bench_min(t[j], reps) : 0;
        mx[j] = have[j] ? bench_max(t[j], reps) : 0;
        moved[j] = (double)n * (j == KA_COPY || j == RAW_COPY || j == OMP_COPY ? 8.0 : 12.0);
        free(t[j]);
    }
#define GBPS(j, v) ((v) > 0 ? moved[j] / (v) : 0) /* bytes per ns = GB/s */
    int ref = cu ? RAW_COPY : ob ? OMP_COPY : KA_COPY;
    free(ob);
    ka_queue_stats qst = {0}; /* how the default queue's waits ended (rows ka saxpy and I launches + 1 wait) */
    ka_queue_get_stats(q, &qst);
    if (json) {
        printf("{\"device\":\"%s\",\"selector\":\"%s\",\"n\":%llu,\"workgroup\":%u,\"iterations\":%d,\"reps\":%d,"
               "\"saxpy_bytes\":%.0f,\"copy_bytes\":%.0f,\"checked\":%s",
               di->name, di->selector, (unsigned long long)n, wg, iters, reps, moved[KA_SAXPY], moved[KA_COPY], bad ? "false" : "true");
        for (int j = 0; j < NKINDS; j++)
            if (have[j])
                printf(",\"%s_ns\":%.0f,\"%s_min_ns\":%.0f,\"%s_max_ns\":%.0f,\"%s_gbps\":%.1f,\"%s_best_gbps\":%.1f",
                       keys[j], med[j], keys[j], mn[j], keys[j], mx[j], keys[j], GBPS(j, med[j]), keys[j],
                       GBPS(j, mn[j]));
        printf(",\"copy_reference\":\"%s\",\"saxpy_vs_copy\":%.4f", keys[ref],
               GBPS(ref, med[ref]) > 0 ? GBPS(KA_SAXPY, med[KA_SAXPY]) / GBPS(ref, med[ref]) : 0);
        printf(",\"saxpy_pipelined_vs_copy\":%.4f",
               GBPS(ref, med[ref]) > 0 ? GBPS(KA_SAXPY_PIPE, med[KA_SAXPY_PIPE]) / GBPS(ref, med[ref]) : 0);
        if (cu)
            printf(",\"ka_vs_raw_saxpy\":%.4f,\"ka_vs_raw_saxpy_pipelined\":%.4f",
                   med[KA_SAXPY] > 0 ? med[RAW_SAXPY] / med[KA_SAXPY] : 0,
                   med[KA_SAXPY_PIPE] > 0 ? med[RAW_SAXPY_PIPE] / med[KA_SAXPY_PIPE] : 0);
        if (cu)
            printf(",\"ka_saxpy_time_over_raw\":%.4f,\"raw_on_ka_time_over_raw\":%.4f",
                   med[RAW_SAXPY] > 0 ? med[KA_SAXPY] / med[RAW_SAXPY] : 0,
                   med[RAW_SAXPY] > 0 ? med[RAW_ON_KA] / med[RAW_SAXPY] : 0);
        printf(",\"ka_waits_polled\":%llu,\"ka_waits_slept\":%llu", (unsigned long long)qst.waits_polled,
               (unsigned long long)qst.waits_slept);
        printf("}\n");
    } else {
        printf("ka-bench saxpy on %s (%s): n = %llu floats (saxpy %.0f MB, copy %.0f MB moved), work-group %u, "
               "%d calls x %d interleaved reps; result %s\n",
               di->name, di->selector, (unsigned long long)n, moved[KA_SAXPY] / 1e6, moved[KA_COPY] / 1e6, wg, iters, reps,
               bad ? "WRONG" : "checked");
        printf("%-42s %-28s %10s %10s\n", "what", "us per call (median [min, max])", "GB/s", "best GB/s");
        for (int j = 0; j < NKINDS; j++) {
            if (!have[j]) continue;
            char c[64];
            snprintf(c, sizeof c, "%.1f [%.1f, %.1f]", med[j] / 1e3, mn[j] / 1e3, mx[j] / 1e3);
            printf("%-42s %-28s %10.1f %10.1f\n", names[j], c, GBPS(j, med[j]), GBPS(j, mn[j]));
        }
        printf("ka saxpy / %s: %.3f of the copy bandwidth (%.3f with I launches + 1 wait)\n", names[ref],
               GBPS(ref, med[ref]) > 0 ? GBPS(KA_SAXPY, med[KA_SAXPY]) / GBPS(ref, med[ref]) : 0,
               GBPS(ref, med[ref]) > 0 ? GBPS(KA_SAXPY_PIPE, med[KA_SAXPY_PIPE]) / GBPS(ref, med[ref]) : 0);
        if (cu)
            printf("ka saxpy (default queue) time / raw saxpy + stream sync: %.3f; the raw loop on libka's buffers: "
                   "%.3f\n",
                   med[RAW_SAXPY] > 0 ? med[KA_SAXPY] / med[RAW_SAXPY] : 0,
                   med[RAW_SAXPY] > 0 ? med[RAW_ON_KA] / med[RAW_SAXPY] : 0);
        printf("default queue's waits: %llu ended while polling, %llu slept\n", (unsigned long long)qst.waits_polled,
               (unsigned long long)qst.waits_slept);
    }
    if (cu) {
        bench_cu_free(cu, rx), bench_cu_free(cu, ry), bench_cu_free(cu, rz);
        bench_cu_close(cu);
    }
    ka_buffer_release(x), ka_buffer_release(y), ka_buffer_release(z);
    ka_program_release(prog);
    ka_queue_release(q);
    ka_queue_release(qspin);
    ka_device_close(dev);
    return bad;
}
