/* ka-bench timeloop: a 2-D heat-equation time loop (one 5-point stencil
 * launch per step, ping-pong buffers) through libka's default queue, against
 * the same loop in serial C and with an OpenMP `parallel for` (the loop a C
 * user would write instead), for grid sizes 16 to 4096. Per size: a warm-up
 * that also checks the three results equal bit for bit, then R repetitions
 * interleaved (serial, OpenMP, libka), each S steps and its final wait;
 * medians, in us per step. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "bench_timeloop.h"

static const char *ka_src =
    "KA_KERNEL(heat, KA_GLOBAL float *dst, KA_GLOBAL const float *src, uint n) {\n"
    "    if (!ka_in_range()) return;\n"
    "    size_t x = ka_global_id(0), y = ka_global_id(1), i = y * n + x;\n"
    "    if (x == 0 || y == 0 || x == n - 1 || y == n - 1) { dst[i] = src[i]; return; }\n"
    "    dst[i] = ((((src[i] + src[i - 1]) + src[i + 1]) + src[i - n]) + src[i + n]) * 0.2f;\n"
    "}\n";

static const char usage[] =
    "usage: ka-bench timeloop [--device SEL] [--sizes N,N,...] [--steps S] [--wg X,Y] [--reps R] [--json]\n"
    "  A 2-D heat-equation time loop on an N x N float grid, one 5-point stencil per step with\n"
    "  ping-pong buffers: serial C, OpenMP `parallel for` over the rows ($OMP_NUM_THREADS threads,\n"
    "  default all cores) and libka's default queue (one launch per step, one wait per run), in\n"
    "  microseconds per step and as ratios. The three results are checked equal bit for bit.\n"
    "  The serial and OpenMP loops are compiled -O3 -ffp-contract=off whatever the build type, on\n"
    "  x86-64 for the best vector ISA of the running CPU (AVX-512, AVX2 or baseline clones).\n"
    "  N: 3 to 16384 each, up to 16 sizes (default 16,64,256,1024,4096); S: steps per run, 1 to\n"
    "  1000000 (default: 2^22 / N^2, at least 10 and at most 2000); R: interleaved repetitions,\n"
    "  medians (default 7). X,Y: libka's work-group, 1 to 1024 each (default: libka's choice).\n";

#define MAX_SIZES 16
enum { SERIAL, OPENMP, LIBKA, NIMPL };
static const char *keys[NIMPL] = {"serial", "openmp", "ka"};

typedef struct kaloop {
    ka_queue q;
    ka_kernel k;
    ka_buffer a, b;
    uint32_t wg[2]; /* --wg; 0, 0: libka's choice */
} kaloop;

static ka_status timeloop_ka(const kaloop *L, size_t n, int steps) {
    ka_range r = {.dims = 2, .size = {n, n}, .workgroup = {L->wg[0], L->wg[1]}};
    for (int s = 0; s < steps; s++) {
        ka_arg args[] = {ka_arg_buffer(s & 1 ? L->a : L->b), ka_arg_buffer(s & 1 ? L->b : L->a), ka_arg_u32((uint32_t)n)};
        ka_status st = ka_launch(L->q, L->k, &r, args, 3, NULL);
        if (st != KA_OK) return st;
    }
    return ka_queue_finish(L->q);
}

/* Cold interior, a hot top edge and a pattern, so every cell changes. */
static void init_grid(float *g, size_t n) {
    for (size_t y = 0; y < n; y++)
        for (size_t x = 0; x < n; x++) g[y * n + x] = y == 0 ? 100.0f : (float)((x * 7 + y * 13) % 17) * 0.25f;
}

/* Comma-separated sizes into out; their count, or -1. */
static int parse_sizes(const cli *c, const char *arg, uint64_t *out) {
    int k = 0;
    const char *p = arg;
    for (;;) {
        char tok[32];
        size_t len = strcspn(p, ",");
        if (k == MAX_SIZES || len == 0 || len >= sizeof tok) {
            cli_error(c, "--sizes '%s': want 1 to %d sizes, each 3 to 16384, separated by commas", arg, MAX_SIZES);
            return -1;
        }
        memcpy(tok, p, len);
        tok[len] = 0;
        if (cli_u64(c, tok, 3, 16384, &out[k])) return -1;
        k++;
        if (!p[len]) return k;
        p += len + 1;
    }
}

#define CHECK(call) BENCH_CHECK("timeloop", call)

typedef struct row {
    uint64_t n;
    int steps;
    double us[NIMPL];
    double inline_fraction; /* of libka's timed launches, ran in the calling thread */
    int equal;              /* the three results equal bit for bit */
} row;

/* One size: warm-up and check, then the interleaved repetitions. */
static int run_size(const kaloop *L0, ka_device dev, uint64_t n, int steps, int reps, row *out) {
    size_t cells = (size_t)(n * n), bytes = cells * sizeof(float);
    float *a[NIMPL], *b[NIMPL];
    for (int j = 0; j < NIMPL; j++) {
        a[j] = malloc(bytes);
        b[j] = malloc(bytes);
        if (!a[j] || !b[j]) {
            fprintf(stderr, "ka-bench timeloop: out of memory for %llu x %llu\n", (unsigned long long)n, (unsigned long long)n);
            return KA_EXIT_FAIL;
        }
        init_grid(a[j], n);
        memcpy(b[j], a[j], bytes);
    }
    kaloop L = *L0;
    CHECK(ka_buffer_create(dev, bytes, &L.a));
    CHECK(ka_buffer_create(dev, bytes, &L.b));
    CHECK(ka_buffer_write(L.q, L.a, 0, a[LIBKA], bytes));
    CHECK(ka_buffer_write(L.q, L.b, 0, a[LIBKA], bytes));
    /* Warm-up, and the check: the same even number of steps on each. PoCL
     * builds a kernel's work-group function at its first launch of a local
     * size; libka's routing measures both paths in its first launches. */
    int warm = steps < 64 ? 64 : steps;
    warm += warm & 1;
    timeloop_serial(a[SERIAL], b[SERIAL], n, warm);
    timeloop_omp(a[OPENMP], b[OPENMP], n, warm);
    CHECK(timeloop_ka(&L, n, warm));
    CHECK(ka_buffer_read(L.q, a[LIBKA], L.a, 0, bytes));
    out->equal = !memcmp(a[SERIAL], a[OPENMP], bytes) && !memcmp(a[SERIAL], a[LIBKA], bytes);
    double *t[NIMPL];
    for (int j = 0; j < NIMPL; j++) t[j] = malloc(sizeof(double) * (size_t)reps);
    uint64_t inl = 0;
    for (int r = 0; r < reps; r++)
        for (int j = 0; j < NIMPL; j++) {
            ka_queue_stats s0, s1;
            ka_queue_get_stats(L.q, &s0);
            /* The previous runtime's idle threads spin on for milliseconds
             * (libgomp's GOMP_SPINCOUNT, libka's pool): each run starts once
             * they sleep, not competing with them for cores. */
            bench_quiet();
            int64_t t0 = bench_now_ns();
            if (j == SERIAL) timeloop_serial(a[j], b[j], n, steps);
            else if (j == OPENMP) timeloop_omp(a[j], b[j], n, steps);
            else CHECK(timeloop_ka(&L, n, steps));
            t[j][r] = (double)(bench_now_ns() - t0) / steps;
            ka_queue_get_stats(L.q, &s1);
            inl += s1.inline_launches - s0.inline_launches;
        }
    out->n = n;
    out->steps = steps;
    out->inline_fraction = (double)inl / ((double)reps * steps);
    for (int j = 0; j < NIMPL; j++) {
        out->us[j] = bench_median(t[j], reps) / 1e3;
        free(t[j]);
        free(a[j]);
        free(b[j]);
    }
    ka_buffer_release(L.a);
    ka_buffer_release(L.b);
    return 0;
}

int bench_timeloop_main(int argc, char **argv) {
    static const struct option lo[] = {BENCH_OPT_DEVICE, BENCH_OPT_REPS, BENCH_OPT_JSON,
                                       {"sizes", required_argument, NULL, 'z'}, {"steps", required_argument, NULL, 's'},
                                       {"wg", required_argument, NULL, 'g'}, BENCH_OPT_END};
    bench_opts o = {.reps = 7};
    uint64_t sizes[MAX_SIZES] = {16, 64, 256, 1024, 4096}, steps_opt = 0;
    uint32_t wg[2] = {0, 0};
    int nsizes = 5;
    cli cl;
    cli_init(&cl, "ka-bench timeloop", usage, argc, argv, "h", lo);
    const char *arg;
    for (int r; (r = cli_next(&cl, &arg)) != CLI_END;) {
        int st;
        switch (r) {
        case 'z':
            if ((nsizes = parse_sizes(&cl, arg, sizes)) < 0) return KA_EXIT_USAGE;
            break;
        case 's':
            if (cli_u64(&cl, arg, 1, 1000000, &steps_opt)) return KA_EXIT_USAGE;
            break;
        case 'g': {
            char x[16];
            const char *comma = strchr(arg, ',');
            size_t len = comma ? (size_t)(comma - arg) : 0;
            uint64_t wx, wy;
            if (!comma || !len || len >= sizeof x) {
                cli_error(&cl, "--wg '%s': want X,Y, each 1 to 1024", arg);
                return KA_EXIT_USAGE;
            }
            memcpy(x, arg, len);
            x[len] = 0;
            if (cli_u64(&cl, x, 1, 1024, &wx) || cli_u64(&cl, comma + 1, 1, 1024, &wy)) return KA_EXIT_USAGE;
            wg[0] = (uint32_t)wx, wg[1] = (uint32_t)wy;
            break;
        }
        default:
            if ((st = bench_option(&cl, r, arg, &o)) >= 0) return st;
        }
    }
    ka_device dev;
    if (cli_device_open(&cl, o.sel, &dev)) return KA_EXIT_FAIL;
    const ka_device_info *di;
    ka_device_get_info(dev, &di);
    kaloop L = {.wg = {wg[0], wg[1]}};
    ka_program prog;
    CHECK(ka_queue_create(dev, NULL, &L.q));
    CHECK(ka_program_build(dev, ka_src, NULL, &prog));
    CHECK(ka_kernel_get(prog, "heat", NULL, &L.k));
    ka_queue_stats qs;
    ka_queue_get_stats(L.q, &qs);
    row rows[MAX_SIZES];
    int bad = 0;
    for (int i = 0; i < nsizes; i++) {
        uint64_t n = sizes[i], auto_steps = (4u << 20) / (n * n);
        int steps = steps_opt ? (int)steps_opt : auto_steps < 10 ? 10 : auto_steps > 2000 ? 2000 : (int)auto_steps;
        int st = run_size(&L, dev, n, steps, o.reps, &rows[i]);
        if (st) return st;
        if (!rows[i].equal) {
            fprintf(stderr, "ka-bench timeloop: %llu x %llu: the three results differ\n", (unsigned long long)n,
                    (unsigned long long)n);
            bad = 1;
        }
        if (!o.json) {
            if (i == 0) {
                printf("ka-bench timeloop on %s (%s): OpenMP %d threads%s; libka's default queue (routing limit %llu "
                       "work-items); %d interleaved reps, medians\n",
                       di->name, di->selector, bench_omp_threads(), bench_omp_threads() ? "" : " (built without OpenMP: serial)",
                       (unsigned long long)qs.inline_max_items, o.reps);
                printf("%6s %6s %12s %12s %12s %10s %10s %8s %6s\n", "N", "steps", "serial us", "openmp us", "libka us",
                       "ka/omp", "ka/serial", "inline", "equal");
            }
            const row *w = &rows[i];
            printf("%6llu %6d %12.2f %12.2f %12.2f %10.3f %10.3f %7.0f%% %6s\n", (unsigned long long)w->n, w->steps,
                   w->us[SERIAL], w->us[OPENMP], w->us[LIBKA], w->us[LIBKA] / w->us[OPENMP], w->us[LIBKA] / w->us[SERIAL],
                   100 * w->inline_fraction, w->equal ? "yes" : "NO");
            fflush(stdout);
        }
    }
    if (o.json) {
        printf("{\"device\":\"%s\",\"selector\":\"%s\",\"omp_threads\":%d,\"inline_max_items\":%llu,\"reps\":%d,"
               "\"workgroup\":[%u,%u],\"checked\":%s,\"sizes\":[",
               di->name, di->selector, bench_omp_threads(), (unsigned long long)qs.inline_max_items, o.reps, wg[0], wg[1],
               bad ? "false" : "true");
        for (int i = 0; i < nsizes; i++) {
            const row *w = &rows[i];
            printf("%s{\"n\":%llu,\"steps\":%d", i ? "," : "", (unsigned long long)w->n, w->steps);
            for (int j = 0; j < NIMPL; j++) printf(",\"%s_us\":%.3f", keys[j], w->us[j]);
            printf(",\"ka_over_openmp\":%.4f,\"ka_over_serial\":%.4f,\"ka_inline_fraction\":%.4f,\"equal\":%s}",
                   w->us[LIBKA] / w->us[OPENMP], w->us[LIBKA] / w->us[SERIAL], w->inline_fraction,
                   w->equal ? "true" : "false");
        }
        printf("]}\n");
    }
    ka_program_release(prog);
    ka_queue_release(L.q);
    ka_device_close(dev);
    return bad;
}
