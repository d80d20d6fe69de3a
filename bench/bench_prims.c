/* ka-bench primitives: ka_reduce, ka_scan and ka_sort against the device's
 * copy bandwidth (ka_buffer_copy, measured in the same run) and against a
 * plain host reference on the CPU (OpenMP loops over all cores): a reduce
 * loop, a two-pass scan, a parallel LSD radix sort. Every figure is one call
 * + its wait; the kinds interleave within each repetition; medians. The
 * results are checked against the host's. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench_common.h"
#include <ka_prims.h>

static const char usage[] =
    "usage: ka-bench primitives [--device SEL] [--n N] [--sort-n S] [--iterations I] [--reps R] [--json]\n"
    "  ka_reduce (sum of N u32 and of N f32), ka_scan (inclusive, N u32) and ka_sort (S u32 keys) against\n"
    "  ka_buffer_copy of N u32 on the same device and against OpenMP host loops on every core. Reduce is\n"
    "  rated by bytes read / time, scan by bytes read + written, the copy by bytes read + written; sort\n"
    "  in keys per second. I calls per repetition (sort: 1), R interleaved repetitions, medians.\n"
    "  N, S: 1 to 2^34. Default: N = S = 2^28 on GPUs, 2^24 on CPUs; --iterations 3 --reps 7.\n";

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "ka-bench primitives: " __VA_ARGS__);                                      \
        fprintf(stderr, "\n");                                                                     \
        return 1;                                                                                  \
    } while (0)
#define CHECK(call)                                                                                \
    do {                                                                                           \
        if ((call) != KA_OK) FAIL("%s: %s", #call, ka_last_error());                               \
    } while (0)

/* ---- the host reference ------------------------------------------------ */
static uint32_t host_sum_u32(const uint32_t *a, size_t n) {
    uint32_t s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
    for (size_t i = 0; i < n; i++) s += a[i];
    return s;
}
static float host_sum_f32(const float *a, size_t n) {
    float s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
    for (size_t i = 0; i < n; i++) s += a[i];
    return s;
}
static int nthreads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
static int thread_id(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
/* Inclusive scan: each thread sums its block, a serial scan of the block
 * sums, each thread scans its block from its offset. */
static void host_scan_u32(const uint32_t *in, uint32_t *out, size_t n, uint32_t *part) {
    int T = nthreads();
#pragma omp parallel num_threads(T)
    {
        int t = thread_id();
        size_t per = (n + (size_t)T - 1) / (size_t)T, lo = per * (size_t)t < n ? per * (size_t)t : n,
               hi = lo + per < n ? lo + per : n;
        uint32_t s = 0;
        for (size_t i = lo; i < hi; i++) s += in[i];
        part[t] = s;
#pragma omp barrier
        uint32_t c = 0;
        for (int j = 0; j < t; j++) c += part[j];
        for (size_t i = lo; i < hi; i++) out[i] = c += in[i];
    }
}
/* LSD radix sort, 8 bits a pass, each thread a block with its own counts. */
static void host_sort_u32(uint32_t *a, uint32_t *tmp, size_t n, size_t (*cnt)[256]) {
    int T = nthreads();
    for (int shift = 0; shift < 32; shift += 8) {
#pragma omp parallel num_threads(T)
        {
            int t = thread_id();
            size_t per = (n + (size_t)T - 1) / (size_t)T, lo = per * (size_t)t < n ? per * (size_t)t : n,
                   hi = lo + per < n ? lo + per : n;
            size_t *c = cnt[t];
            memset(c, 0, 256 * sizeof *c);
            for (size_t i = lo; i < hi; i++) c[(a[i] >> shift) & 255]++;
#pragma omp barrier
#pragma omp single
            {
                size_t off = 0;
                for (int d = 0; d < 256; d++)
                    for (int j = 0; j < T; j++) {
                        size_t x = cnt[j][d];
                        cnt[j][d] = off;
                        off += x;
                    }
            }
            for (size_t i = lo; i < hi; i++) tmp[c[(a[i] >> shift) & 255]++] = a[i];
        }
        uint32_t *s = a;
        a = tmp, tmp = s;
    }
}

enum { COPY, RED_U32, RED_F32, SCAN, SORT, H_RED_U32, H_RED_F32, H_SCAN, H_SORT, NK };
static const char *names[NK] = {"ka_buffer_copy (N u32)", "ka_reduce sum u32", "ka_reduce sum f32",
                                "ka_scan inclusive u32", "ka_sort u32 keys", "host OpenMP reduce u32",
                                "host OpenMP reduce f32", "host OpenMP scan u32", "host OpenMP radix sort u32"};
static const char *keys[NK] = {"copy", "reduce_u32", "reduce_f32", "scan_u32", "sort_u32",
                               "host_reduce_u32", "host_reduce_f32", "host_scan_u32", "host_sort_u32"};

int bench_prims_main(int argc, char **argv) {
    static const struct option lo[] = {BENCH_OPT_DEVICE, BENCH_OPT_ITERATIONS, BENCH_OPT_REPS, BENCH_OPT_JSON,
                                       {"n", required_argument, NULL, 'n'}, {"sort-n", required_argument, NULL, 's'},
                                       BENCH_OPT_END};
    bench_opts o = {.iters = 3, .reps = 7};
    uint64_t n = 0, sn = 0;
    cli cl;
    cli_init(&cl, "ka-bench primitives", usage, argc, argv, "h", lo);
    const char *arg;
    for (int r; (r = cli_next(&cl, &arg)) != CLI_END;) {
        int st;
        switch (r) {
        case 'n':
            if (cli_u64(&cl, arg, 1, 1ull << 34, &n)) return KA_EXIT_USAGE;
            break;
        case 's':
            if (cli_u64(&cl, arg, 1, 1ull << 34, &sn)) return KA_EXIT_USAGE;
            break;
        default:
            if ((st = bench_option(&cl, r, arg, &o)) >= 0) return st;
        }
    }
    ka_device dev;
    ka_queue q;
    if (cli_device_open(&cl, o.sel, &dev)) return KA_EXIT_FAIL;
    const ka_device_info *di;
    ka_device_get_info(dev, &di);
    if (!n) n = di->is_cpu ? 1u << 24 : 1u << 28;
    if (!sn) sn = n;
    size_t mx = n > sn ? n : sn;
    CHECK(ka_queue_create(dev, NULL, &q));
    ka_prims_plan *pr_u, *pr_f, *ps, *pso;
    CHECK(ka_prims_plan_create(dev, KA_PRIM_REDUCE, KA_DTYPE_U32, n, 0, &pr_u));
    CHECK(ka_prims_plan_create(dev, KA_PRIM_REDUCE, KA_DTYPE_F32, n, 0, &pr_f));
    CHECK(ka_prims_plan_create(dev, KA_PRIM_SCAN, KA_DTYPE_U32, n, 0, &ps));
    CHECK(ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_U32, sn, 0, &pso));

    /* Host data: u32 in [0, 1024), f32 the same values (sums exact below 2^24 per
     * partial are not guaranteed: f32 is checked with a tolerance); sort keys random. */
    uint32_t *hu = malloc(mx * 4), *hout = malloc(mx * 4), *hk = malloc(sn * 4), *htmp = malloc(sn * 4);
    float *hf = malloc(n * 4);
    int T = nthreads();
    uint32_t *part = malloc((size_t)T * 4);
    size_t(*cnt)[256] = malloc((size_t)T * sizeof *cnt);
    if (!hu || !hout || !hk || !htmp || !hf || !part || !cnt) FAIL("out of host memory");
    uint32_t x = 12345;
    for (size_t i = 0; i < mx; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        hu[i] = x & 1023u;
        if (i < n) hf[i] = (float)(x & 1023u) / 1024.0f;
        if (i < sn) hk[i] = x * 2654435761u;
    }
    ka_buffer bu, bf, bout, bk, bk0, bcopy, bres;
    CHECK(ka_buffer_create(dev, n * 4, &bu));
    CHECK(ka_buffer_create(dev, n * 4, &bf));
    CHECK(ka_buffer_create(dev, n * 4, &bout));
    CHECK(ka_buffer_create(dev, n * 4, &bcopy));
    CHECK(ka_buffer_create(dev, sn * 4, &bk));
    CHECK(ka_buffer_create(dev, sn * 4, &bk0));
    CHECK(ka_buffer_create(dev, 16, &bres));
    CHECK(ka_buffer_write(q, bu, 0, hu, n * 4));
    CHECK(ka_buffer_write(q, bf, 0, hf, n * 4));
    CHECK(ka_buffer_write(q, bk0, 0, hk, sn * 4));

    double *t[NK];
    for (int j = 0; j < NK; j++) t[j] = calloc((size_t)o.reps, sizeof(double));
    volatile uint32_t sink_u = 0;
    volatile float sink_f = 0;
    for (int rep = -1; rep < o.reps; rep++) { /* rep -1 warms up (first launches build per local size) */
        int it = rep < 0 ? 1 : o.iters;
        for (int turn = 0; turn < NK; turn++) {
            int j = (turn + (rep < 0 ? 0 : rep)) % NK; /* rotated order: drift favours none */
            int64_t t0 = 0, t1 = 0;
            /* The sorts work in place: fresh keys first, not timed. */
            if (j == SORT) {
                CHECK(ka_buffer_copy(q, bk, 0, bk0, 0, sn * 4, NULL));
                CHECK(ka_queue_finish(q)); /* copies only enqueue: done before the clock starts */
            }
            if (j == H_SORT) memcpy(hout, hk, sn * 4);
            t0 = bench_now_ns();
            for (int i = 0; i < (j == SORT || j == H_SORT ? 1 : it); i++) {
                ka_event ev;
                switch (j) {
                case COPY:
                    CHECK(ka_buffer_copy(q, bcopy, 0, bu, 0, n * 4, &ev));
                    CHECK(ka_event_wait(ev, KA_WAIT_FOREVER));
                    ka_event_release(ev);
                    break;
                case RED_U32:
                    CHECK(ka_reduce(q, pr_u, bres, 0, bu, 0, n, KA_REDUCE_SUM, &ev));
                    CHECK(ka_event_wait(ev, KA_WAIT_FOREVER));
                    ka_event_release(ev);
                    break;
                case RED_F32:
                    CHECK(ka_reduce(q, pr_f, bres, 4, bf, 0, n, KA_REDUCE_SUM, &ev));
                    CHECK(ka_event_wait(ev, KA_WAIT_FOREVER));
                    ka_event_release(ev);
                    break;
                case SCAN:
                    CHECK(ka_scan(q, ps, bout, 0, bu, 0, n, 0, &ev));
                    CHECK(ka_event_wait(ev, KA_WAIT_FOREVER));
                    ka_event_release(ev);
                    break;
                case SORT:
                    CHECK(ka_sort(q, pso, bk, 0, (ka_buffer){0}, 0, sn, &ev));
                    CHECK(ka_event_wait(ev, KA_WAIT_FOREVER));
                    ka_event_release(ev);
                    break;
                case H_RED_U32: sink_u = host_sum_u32(hu, n); break;
                case H_RED_F32: sink_f = host_sum_f32(hf, n); break;
                case H_SCAN: host_scan_u32(hu, htmp, n, part); break;
                case H_SORT: host_sort_u32(hout, htmp, sn, cnt); break;
                }
            }
            t1 = bench_now_ns();
            if (rep >= 0) t[j][rep] = (double)(t1 - t0) / (j == SORT || j == H_SORT ? 1 : it);
        }
    }

    /* Check every result against the host's. */
    int bad = 0;
    uint32_t ru;
    float rf;
    CHECK(ka_buffer_read(q, &ru, bres, 0, 4));
    CHECK(ka_buffer_read(q, &rf, bres, 4, 4));
    uint32_t want_u = host_sum_u32(hu, n);
    double want_f = 0;
    for (size_t i = 0; i < n; i++) want_f += hf[i];
    if (ru != want_u) bad = 1, fprintf(stderr, "ka-bench primitives: reduce u32 %u, host %u\n", ru, want_u);
    if (!(rf > want_f * (1 - 1e-3) && rf < want_f * (1 + 1e-3)))
        bad = 1, fprintf(stderr, "ka-bench primitives: reduce f32 %g, host %g\n", (double)rf, want_f);
    (void)sink_u, (void)sink_f;
    host_scan_u32(hu, htmp, n, part);
    CHECK(ka_buffer_read(q, hout, bout, 0, n * 4));
    for (size_t i = 0; i < n; i++)
        if (hout[i] != htmp[i]) {
            bad = 1;
            fprintf(stderr, "ka-bench primitives: scan[%zu] = %u, host %u\n", i, hout[i], htmp[i]);
            break;
        }
    memcpy(htmp, hk, sn * 4);
    host_sort_u32(htmp, hout, sn, cnt); /* 4 passes: the result is back in htmp */
    CHECK(ka_buffer_read(q, hout, bk, 0, sn * 4));
    for (size_t i = 0; i < sn; i++)
        if (hout[i] != htmp[i]) {
            bad = 1;
            fprintf(stderr, "ka-bench primitives: sort[%zu] = %u, host %u\n", i, hout[i], htmp[i]);
            break;
        }

    double med[NK], mn[NK];
    for (int j = 0; j < NK; j++) med[j] = bench_median(t[j], o.reps), mn[j] = bench_min(t[j], o.reps), free(t[j]);
    double nb = (double)n * 4, copy_gbps = 2 * nb / med[COPY];
    double gbps[NK] = {copy_gbps, nb / med[RED_U32], nb / med[RED_F32], 2 * nb / med[SCAN], 0,
                       nb / med[H_RED_U32], nb / med[H_RED_F32], 2 * nb / med[H_SCAN], 0};
    double gkeys = (double)sn / med[SORT], hgkeys = (double)sn / med[H_SORT];
    if (o.json) {
        printf("{\"device\":\"%s\",\"selector\":\"%s\",\"n\":%llu,\"sort_n\":%llu,\"iterations\":%d,\"reps\":%d,"
               "\"host_threads\":%d,\"checked\":%s",
               di->name, di->selector, (unsigned long long)n, (unsigned long long)sn, o.iters, o.reps, T,
               bad ? "false" : "true");
        for (int j = 0; j < NK; j++) printf(",\"%s_ns\":%.0f,\"%s_min_ns\":%.0f", keys[j], med[j], keys[j], mn[j]);
        printf(",\"copy_gbps\":%.2f,\"reduce_u32_gbps\":%.2f,\"reduce_f32_gbps\":%.2f,\"scan_u32_gbps\":%.2f", copy_gbps,
               gbps[RED_U32], gbps[RED_F32], gbps[SCAN]);
        printf(",\"reduce_u32_vs_copy\":%.4f,\"reduce_f32_vs_copy\":%.4f,\"scan_u32_vs_copy\":%.4f", gbps[RED_U32] / copy_gbps,
               gbps[RED_F32] / copy_gbps, gbps[SCAN] / copy_gbps);
        printf(",\"sort_u32_gkeys\":%.3f,\"host_sort_u32_gkeys\":%.3f", gkeys, hgkeys);
        printf(",\"reduce_u32_vs_host\":%.4f,\"reduce_f32_vs_host\":%.4f,\"scan_u32_vs_host\":%.4f,\"sort_u32_vs_host\":%.4f}\n",
               med[H_RED_U32] / med[RED_U32], med[H_RED_F32] / med[RED_F32], med[H_SCAN] / med[SCAN], med[H_SORT] / med[SORT]);
    } else {
        printf("ka-bench primitives on %s (%s): n = %llu, sort n = %llu, %d calls x %d interleaved reps, host %d "
               "OpenMP threads; results %s\n",
               di->name, di->selector, (unsigned long long)n, (unsigned long long)sn, o.iters, o.reps, T,
               bad ? "WRONG" : "checked");
        printf("%-28s %12s %12s %12s\n", "what", "median us", "best us", "GB/s | Gkey/s");
        for (int j = 0; j < NK; j++)
            printf("%-28s %12.1f %12.1f %12.3f\n", names[j], med[j] / 1e3, mn[j] / 1e3,
                   j == SORT ? gkeys : j == H_SORT ? hgkeys : gbps[j]);
        printf("of the copy bandwidth: reduce u32 %.3f, reduce f32 %.3f, scan %.3f\n", gbps[RED_U32] / copy_gbps,
               gbps[RED_F32] / copy_gbps, gbps[SCAN] / copy_gbps);
        printf("against the host (time ratio, >1: libka faster): reduce u32 %.3f, reduce f32 %.3f, scan %.3f, sort %.3f\n",
               med[H_RED_U32] / med[RED_U32], med[H_RED_F32] / med[RED_F32], med[H_SCAN] / med[SCAN],
               med[H_SORT] / med[SORT]);
    }
    free(hu), free(hout), free(hk), free(htmp), free(hf), free(part), free(cnt);
    ka_buffer_release(bu), ka_buffer_release(bf), ka_buffer_release(bout), ka_buffer_release(bcopy);
    ka_buffer_release(bk), ka_buffer_release(bk0), ka_buffer_release(bres);
    ka_prims_plan_release(pr_u), ka_prims_plan_release(pr_f), ka_prims_plan_release(ps), ka_prims_plan_release(pso);
    ka_queue_release(q);
    ka_device_close(dev);
    return bad;
}
